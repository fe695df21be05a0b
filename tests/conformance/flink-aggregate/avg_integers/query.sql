SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
CREATE TABLE src (`op` STRING, `id` BIGINT, `grp` STRING, `v` BIGINT) WITH ('connector' = 'filesystem', 'path' = 'input.jsonl', 'format' = 'json');
SELECT grp, SUM(v) AS s, AVG(v) AS a, COUNT(v) AS c FROM FROM_CHANGELOG(input => TABLE src) GROUP BY grp;
