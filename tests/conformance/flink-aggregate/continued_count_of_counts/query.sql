SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
CREATE TABLE src (`op` STRING, `user` STRING, `cnt` BIGINT) WITH ('connector' = 'filesystem', 'path' = 'input.jsonl', 'format' = 'json');
SELECT cnt, COUNT(*) AS freq FROM FROM_CHANGELOG(input => TABLE src) GROUP BY cnt;
