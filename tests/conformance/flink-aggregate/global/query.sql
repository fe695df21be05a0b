SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
CREATE TABLE src (`op` STRING, `x` BIGINT) WITH ('connector' = 'filesystem', 'path' = 'input.jsonl', 'format' = 'json');
SELECT COUNT(*) AS n, SUM(x) AS s, MAX(x) AS m FROM FROM_CHANGELOG(input => TABLE src);
