SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
CREATE TABLE src (`user` STRING, `url` STRING, `cTime` STRING) WITH ('connector' = 'filesystem', 'path' = 'input.jsonl', 'format' = 'json');
SELECT `user`, COUNT(url) AS cnt FROM src GROUP BY `user`;
