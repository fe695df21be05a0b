SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
CREATE TABLE src (`op` STRING, `g` STRING, `x` BIGINT, `s` STRING) WITH ('connector' = 'filesystem', 'path' = 'input.jsonl', 'format' = 'json');
SELECT g, COUNT(*) AS n, COUNT(x) AS nx, COUNT(DISTINCT s) AS ds, SUM(x) AS sx, MIN(x) AS lo, MAX(s) AS hi, AVG(x) AS ax FROM FROM_CHANGELOG(input => TABLE src) GROUP BY g;
