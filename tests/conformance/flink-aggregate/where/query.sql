SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
CREATE TABLE src (`op` STRING, `id` BIGINT, `user` STRING, `url` STRING, `dwell` BIGINT) WITH ('connector' = 'filesystem', 'path' = 'input.jsonl', 'format' = 'json');
SELECT `user`, COUNT(*) AS n, SUM(dwell) AS total, MAX(url) AS last_page FROM FROM_CHANGELOG(input => TABLE src) WHERE dwell > 10 AND url IS NOT NULL AND `user` <> 'u03' GROUP BY `user`;
