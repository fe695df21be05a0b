SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
CREATE TABLE src (`op` STRING, `id` BIGINT, `user` STRING, `url` STRING, `dwell` BIGINT) WITH ('connector' = 'filesystem', 'path' = 'input.jsonl', 'format' = 'json');
SELECT `user`, COUNT(*) AS n, COUNT(url) AS urls, COUNT(DISTINCT url) AS pages, SUM(dwell) AS total, MIN(dwell) AS shortest, MAX(dwell) AS longest, AVG(dwell) AS mean, MAX(url) AS last_page, FIRST_VALUE(url) AS first_url, LAST_VALUE(url) AS last_url FROM FROM_CHANGELOG(input => TABLE src) GROUP BY `user`;
