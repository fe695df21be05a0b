SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
CREATE TABLE src (`op` STRING, `g` STRING, `x` BIGINT) WITH ('connector' = 'filesystem', 'path' = 'input.jsonl', 'format' = 'json');
SELECT g, COUNT(*) AS n, SUM(x) AS s, MAX(x) AS m, COUNT(DISTINCT x) AS d FROM FROM_CHANGELOG(input => TABLE src) GROUP BY g;
