SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
CREATE TABLE src (`op` STRING, `id` BIGINT, `account` STRING, `amount` DECIMAL(10, 2), `ratio` DOUBLE) WITH ('connector' = 'filesystem', 'path' = 'input.jsonl', 'format' = 'json');
SELECT account, SUM(amount) AS total, AVG(amount) AS mean, MIN(amount) AS lo, MAX(amount) AS hi, SUM(ratio) AS rsum, AVG(ratio) AS rmean, MAX(ratio) AS rmax FROM FROM_CHANGELOG(input => TABLE src) GROUP BY account;
