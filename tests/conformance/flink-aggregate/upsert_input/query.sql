SET 'execution.runtime-mode' = 'streaming';
SET 'parallelism.default' = '1';
-- src: input.jsonl as an upsert stream (`id` BIGINT NOT NULL, `user` STRING, `dwell` BIGINT, `__deleted` STRING, PRIMARY KEY (id) NOT ENFORCED): rows with
-- __deleted = 'true' are DELETE, the others UPDATE_AFTER; built with from_changelog_stream(...,
-- ChangelogMode.upsert()) because FROM_CHANGELOG in Flink 2.3 has no PARTITION BY.
SELECT `user`, COUNT(*) AS n, SUM(dwell) AS total, MAX(dwell) AS longest FROM src GROUP BY `user`;
