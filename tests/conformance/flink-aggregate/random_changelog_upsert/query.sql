SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
CREATE TABLE src (`op` STRING, `id` BIGINT, `user` STRING, `url` STRING, `dwell` BIGINT) WITH ('connector' = 'filesystem', 'path' = 'input.jsonl', 'format' = 'json');
-- emitted for a sink with PRIMARY KEY (`user`) NOT ENFORCED (no UPDATE_BEFORE)
SELECT `user`, COUNT(*) AS n, SUM(dwell) AS total, MIN(dwell) AS shortest, AVG(dwell) AS mean FROM FROM_CHANGELOG(input => TABLE src) GROUP BY `user`;
