SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
CREATE TABLE src (`user` STRING, `url` STRING, `dwell` BIGINT, `ts` BIGINT) WITH ('connector' = 'filesystem', 'path' = 'input.jsonl', 'format' = 'json');
-- emitted for a sink with PRIMARY KEY (`user`, `url`) NOT ENFORCED (no UPDATE_BEFORE)
SELECT `user`, url, COUNT(*) AS n, SUM(dwell) AS total, MAX(dwell) AS longest FROM src GROUP BY `user`, url;
