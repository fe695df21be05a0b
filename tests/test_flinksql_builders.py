"""The SQL builders of cdc.flink.sql, called as the CLI will call them: the text they print
(the harness flink/harness/flink_check.py runs the same builders in Flink 2.3)."""

from __future__ import annotations

import pytest

from cdc.core.errors import UsageError
from cdc.core.kinds import ALL_KINDS, DELETE, INSERT, UPDATE_AFTER
from cdc.flink import sql as fs

COLS = {"id": "BIGINT", "name": "STRING", "op": "STRING"}
DEFAULT = {k.name: k for k in ALL_KINDS}
UPSERT = {"c, r": INSERT, "u": UPDATE_AFTER, "d": DELETE}
FILE = fs.Source("/data/in.jsonl", "jsonl")
KAFKA = fs.Source("-", "jsonl", connector="kafka", topic="orders", bootstrap_servers="localhost:9092")


def statements(sql: str) -> list[str]:
    body = "\n".join(line for line in sql.splitlines() if not line.startswith("--"))
    return [s.strip().rstrip(";") + ";" for s in body.split(";\n") if s.strip().rstrip(";")]


def test_every_script_sets_streaming_mode_first() -> None:
    sql = fs.from_changelog_sql("cdc from-changelog", FILE, COLS, "op", DEFAULT)
    assert sql.startswith("-- cdc from-changelog: the same job in Apache Flink SQL 2.3 (sql-client.sh -f)\n")
    assert statements(sql)[0] == "SET 'execution.runtime-mode' = 'streaming';"
    assert statements(sql)[-1] == "SELECT `id`, `name` FROM FROM_CHANGELOG(\n  input => TABLE `cdc_input`\n);"


def test_unknown_flink_version_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="2.2"):
        fs.from_changelog_sql("cdc from-changelog", FILE, COLS, "op", DEFAULT, flink_version="2.2")


def test_upsert_from_changelog_is_rows_with_kinds_on_2_3_and_partitions_on_2_4() -> None:
    with pytest.raises(UsageError) as err:
        fs.from_changelog_sql("cdc", FILE, COLS, "op", UPSERT)
    assert "--key" in (err.value.hint or "")
    rows = fs.from_changelog_sql("cdc", FILE, COLS, "op", UPSERT, ["id"])
    assert "FROM FROM_CHANGELOG(" not in rows and "END AS `op`, `id`, `name`\nFROM `cdc_input`;" in rows
    sql = fs.from_changelog_sql("cdc", FILE, COLS, "op", UPSERT, ["id"], flink_version="2.4")
    assert "input => TABLE `cdc_input` PARTITION BY `id`" in sql
    assert "SELECT `id`, `name` FROM FROM_CHANGELOG(" in sql  # cdc's column order, not the key first


def test_kafka_source_and_sink() -> None:
    sink = fs.Sink("kafka", topic="changes", bootstrap_servers="localhost:9092")
    parts = statements(fs.from_changelog_sql("cdc", KAFKA, COLS, "op", DEFAULT, sink=sink))
    assert "'connector' = 'kafka'" in parts[1] and "'topic' = 'orders'" in parts[1]
    assert "'properties.bootstrap.servers' = 'localhost:9092'" in parts[1]
    assert "'scan.startup.mode' = 'earliest-offset'" in parts[1]
    assert parts[2].startswith("CREATE TEMPORARY VIEW `cdc_result` AS\nSELECT `id`, `name` FROM FROM_CHANGELOG(")
    assert parts[3].startswith("CREATE TABLE `cdc_output` (\n  `op` STRING,\n  `id` BIGINT,")
    assert "'topic' = 'changes'" in parts[3]
    assert parts[4] == (
        "INSERT INTO `cdc_output`\nSELECT `op`, `id`, `name` FROM TO_CHANGELOG(\n  input => TABLE `cdc_result`,\n"
        "  op => DESCRIPTOR(`op`),\n  op_mapping => MAP['INSERT', '+I', 'UPDATE_BEFORE', '-U', 'UPDATE_AFTER', '+U', "
        "'DELETE', '-D']\n);"
    )


def test_kafka_needs_topic_and_servers() -> None:
    with pytest.raises(UsageError, match="topic"):
        fs.from_changelog_sql("cdc", fs.Source("-", "jsonl", connector="kafka"), COLS, "op", DEFAULT)
    with pytest.raises(UsageError, match="stdin"):
        fs.from_changelog_sql("cdc", fs.Source("-", "jsonl"), COLS, "op", DEFAULT)


def test_debezium_metadata_from_kafka_sets_utc() -> None:
    source = fs.Source("-", "debezium", connector="kafka", topic="t", bootstrap_servers="h:9092")
    sql = fs.debezium_sql("cdc", source, {"id": "BIGINT"}, False, [("ingestion-timestamp", "ts")])
    assert "SET 'table.local-time-zone' = 'UTC';" in sql
    assert "`ts` TIMESTAMP_LTZ(3) METADATA FROM 'value.ingestion-timestamp' VIRTUAL" in sql
    assert "SELECT `id`, `ts` FROM `cdc_input`;" in sql


def test_raw_values_refuse_timestamp_metadata() -> None:
    source = fs.Source("-", "debezium", connector="kafka", topic="t", bootstrap_servers="h:9092")
    info = fs.DebeziumInfo(raw_values=True)
    with pytest.raises(UsageError, match="epoch milliseconds"):
        fs.debezium_sql("cdc", source, {"id": "BIGINT"}, False, [("source.timestamp", "ts")], info=info)
    sql = fs.debezium_sql("cdc", source, {"id": "BIGINT"}, False, [("source.table", "tbl")], info=info)
    assert "`tbl` STRING METADATA FROM 'value.source.table' VIRTUAL" in sql


def test_debezium_key_normalizes_by_primary_key() -> None:
    sql = fs.debezium_sql("cdc", FILE.__class__("/x.jsonl", "debezium"), {"id": "BIGINT"}, False, key=["id"])
    assert "PRIMARY KEY (`id`) NOT ENFORCED" in sql
    assert "SET 'table.exec.source.cdc-events-duplicate' = 'true';" in sql


@pytest.mark.parametrize(
    ("info", "key", "match"),
    [
        (fs.DebeziumInfo(raw_columns={"id": "BIGINT", "p": "STRING"}), (), "Connect Decimal"),
        (fs.DebeziumInfo(raw_columns={"id": "BIGINT", "p": "BIGINT"}), (), "logical type"),
        (fs.DebeziumInfo(text_tombstones=True), (), "'null' lines"),
        (fs.DebeziumInfo(toast=True), ("id",), "__debezium_unavailable_value"),
        (fs.DebeziumInfo(null_before=True), ("id",), "no before image"),
        (fs.DebeziumInfo(partial_before=True), (), "lacks columns"),
        (fs.DebeziumInfo(partial_after=True), ("id",), "after image lacks columns"),
        (fs.DebeziumInfo(rejected="a record with op 'm'"), (), "skips it"),
        (fs.DebeziumInfo(unsupported="a record with type 'bootstrap-insert'"), (), "does not give the rows cdc emits"),
        (fs.DebeziumInfo(tables=frozenset({"db.a", "db.b"})), (), "2 tables"),
    ],
)
def test_debezium_inputs_flink_reads_otherwise_are_refused(info: fs.DebeziumInfo, key: tuple[str], match: str) -> None:
    columns = {"id": "BIGINT", "p": "DECIMAL(10, 2)" if "Decimal" in match else "DATE"}
    with pytest.raises(UsageError, match=match):
        fs.debezium_sql("cdc", fs.Source("/x.jsonl", "debezium"), columns, False, key=key, info=info)


@pytest.mark.parametrize(("fmt", "name"), [("canal", "canal-json"), ("maxwell", "maxwell-json"), ("ogg", "ogg-json")])
def test_decode_envelopes(fmt: str, name: str) -> None:
    sql = fs.decode_sql(fs.Source("/x.jsonl", fmt), {"id": "BIGINT"}, skip=True)
    assert f"'format' = '{name}'" in sql and f"'{name}.ignore-parse-errors' = 'true'" in sql
    assert sql.startswith(f"-- cdc decode --envelope {fmt}:")
    source = fs.Source("-", fmt, connector="kafka", topic="t", bootstrap_servers="h:9092")
    key = next(iter(fs.ENVELOPE_METADATA[fmt]))
    assert f"METADATA FROM 'value.{key}' VIRTUAL" in fs.decode_sql(source, {"id": "BIGINT"}, metadata=[(key, "m")])
    with pytest.raises(UsageError, match="has no metadata"):
        fs.decode_sql(source, {"id": "BIGINT"}, metadata=[("nonsense", "m")])


def test_debezium_encode_writes_flinks_split_form_only() -> None:
    sink = fs.Sink("kafka", topic="out", bootstrap_servers="h:9092")
    with pytest.raises(UsageError, match="one u event"):
        fs.debezium_encode_sql(FILE, COLS, sink, split_updates=False)
    parts = statements(fs.debezium_encode_sql(FILE, {"op": "STRING", "id": "BIGINT"}, sink))
    assert "'format' = 'debezium-json'" in parts[3] and "`op`" not in parts[3]
    assert parts[4] == "INSERT INTO `cdc_output`\nSELECT `id` FROM `cdc_changelog`;"


def test_materialize_is_the_changelog_shown_as_a_table() -> None:
    sql = fs.materialize_sql(FILE, COLS)
    assert "SET 'sql-client.execution.result-mode' = 'table';" in sql
    assert sql.rstrip().endswith("SELECT `id`, `name` FROM `cdc_changelog`;")
    keyed = fs.materialize_sql(FILE, COLS, keys=["id"])  # each key's last change, when +I/+U
    assert keyed.rstrip().endswith("SELECT `id`, `name` FROM `cdc_last`\nWHERE TRIM(`op`) IN ('+I', '+U');")
    sink = fs.Sink("upsert-kafka", topic="t", bootstrap_servers="h:9092", key=["id"])
    parts = statements(fs.materialize_sql(FILE, COLS, keys=["id"], sink=sink))
    assert "PRIMARY KEY (`id`) NOT ENFORCED" in parts[-2] and "'connector' = 'upsert-kafka'" in parts[-2]
    assert parts[-1] == "INSERT INTO `cdc_output`\nSELECT `id`, `name` FROM `cdc_changelog`;"


def test_replay_append_is_keep_last_on_event_time() -> None:
    cols = {"user": "STRING", "url": "STRING", "t": "TIMESTAMP(6)"}
    sql = fs.replay_sql(FILE, cols, ["user"], input_mode="append", order_by="t")
    assert "`t` TIMESTAMP(3),\n  WATERMARK FOR `t` AS `t`" in sql
    assert "ROW_NUMBER() OVER (PARTITION BY `user` ORDER BY `t` DESC) AS `cdc_rownum`" in sql
    upsert = fs.replay_sql(FILE, cols, ["user"], input_mode="append", order_by="t", emit="upsert")
    assert "op_mapping => MAP['INSERT', '+I', 'UPDATE_AFTER', '+U', 'DELETE', '-D']" in upsert
    with pytest.raises(UsageError, match="event-time"):
        fs.replay_sql(FILE, {"user": "STRING", "n": "DOUBLE"}, ["user"], input_mode="append", order_by="n")


def test_replay_upsert_reads_upsert_kafka_or_normalizes_by_lag() -> None:
    lag = fs.replay_sql(FILE, COLS, ["id"], input_mode="upsert")
    assert "LAG(`name`) OVER (PARTITION BY `id` ORDER BY `cdc_time`)" in lag
    source = fs.Source("-", "jsonl", connector="upsert-kafka", topic="t", bootstrap_servers="h:9092", key=["id"])
    sql = fs.replay_sql(source, {"id": "BIGINT", "name": "STRING"}, ["id"], input_mode="upsert")
    assert "'connector' = 'upsert-kafka'" in sql and "PRIMARY KEY (`id`) NOT ENFORCED" in sql
    assert "'key.format' = 'json'" in sql and "'value.format' = 'json'" in sql
    with pytest.raises(UsageError, match="delete-when"):
        fs.replay_sql(source, COLS, ["id"], input_mode="upsert", delete_when=("__deleted", "true"))
    changelog = fs.replay_sql(FILE, COLS, ["id"], input_mode="changelog")
    assert "WHERE `op` IS NULL OR TRIM(`op`) <> '-U'" in changelog
    with pytest.raises(UsageError, match="kind column 'op'"):
        fs.replay_sql(FILE, {"id": "BIGINT", "name": "STRING"}, ["id"], input_mode="changelog")


def test_aggregate_is_a_group_by() -> None:
    cols = {"user": "STRING", "url": "STRING", "n": "BIGINT"}
    aggs = [("cnt", "COUNT", None, False), ("urls", "count", "url", True), ("total", "SUM", "n", False)]
    sql = fs.aggregate_sql(FILE, cols, ["user"], aggs, where="`n` > 0")
    assert sql.rstrip().endswith(
        "SELECT `user`, COUNT(*) AS `cnt`, COUNT(DISTINCT `url`) AS `urls`, SUM(`n`) AS `total`\n"
        "FROM `cdc_input`\nWHERE `n` > 0\nGROUP BY `user`;"
    )
    changelog = fs.aggregate_sql(FILE, COLS, ["name"], [("c", "COUNT", None, False)], input_mode="changelog")
    assert "FROM `cdc_changelog`" in changelog
    with pytest.raises(UsageError, match="only COUNT"):
        fs.aggregate_sql(FILE, cols, ["user"], [("s", "SUM", None, False)])


def test_scan_records_sees_what_flink_would_meet() -> None:
    info = fs.scan_records(
        [
            None,
            {"op": "c", "after": {"id": 1, "v": "x"}, "source": {"db": "d", "table": "t"}},
            {"op": "u", "before": {"id": 1}, "after": {"id": 1, "v": "y"}, "source": {"db": "d", "table": "u"}},
            {"op": "m", "source": {"db": "d", "table": "t"}},
        ]
    )
    assert info.text_tombstones and info.partial_before and info.rejected == "a record with op 'm'"
    assert info.tables == {"d.t", "d.u"} and not info.null_before and not info.toast
    canal = fs.scan_records([{"type": "ALTER", "database": "d", "table": "t"}], "canal")
    assert canal.rejected == "a record with type 'ALTER'"
    maxwell = fs.scan_records([{"type": "bootstrap-insert", "database": "d", "table": "t", "data": {}}], "maxwell")
    assert maxwell.unsupported == "a record with type 'bootstrap-insert'"
    ogg = fs.scan_records(
        [
            {"op_type": "I", "table": "S.T", "after": {"ID": 1, "N": "a"}},
            {"op_type": "U", "table": "S.T", "after": {"ID": 1}},
        ],
        "ogg",
    )
    assert ogg.partial_after and ogg.null_before


def test_canal_table_filter() -> None:
    source = fs.Source("/x.jsonl", "canal")
    info = fs.DebeziumInfo(tables=frozenset({"shop.a", "shop.b"}))
    sql = fs.decode_sql(source, {"id": "BIGINT"}, info=info, table_include="a")
    assert "'canal-json.table.include' = 'a'" in sql
    with pytest.raises(UsageError, match="no database / table filter"):
        fs.decode_sql(fs.Source("/x.jsonl", "maxwell"), {"id": "BIGINT"}, table_include="a")


def test_aggregate_result_types_are_flinks() -> None:
    assert fs.agg_type("COUNT", None) == fs.agg_type("count", "STRING") == "BIGINT"
    assert fs.agg_type("SUM", "DECIMAL(10, 2)") == "DECIMAL(38, 2)"
    assert fs.agg_type("AVG", "DECIMAL(10, 2)") == "DECIMAL(38, 6)"
    assert fs.agg_type("AVG", "BIGINT") == "BIGINT"  # Flink's AVG of integers is an integer
    assert fs.agg_type("MAX", "DOUBLE") == fs.agg_type("FIRST_VALUE", "DOUBLE") == "DOUBLE"


def test_aggregate_without_group_by_is_one_global_row() -> None:
    sql = fs.aggregate_sql(FILE, {"x": "BIGINT"}, [], [("n", "COUNT", None, False), ("s", "SUM", "x", False)])
    assert statements(sql)[-1] == "SELECT COUNT(*) AS `n`, SUM(`x`) AS `s`\nFROM `cdc_input`;"


def test_keyed_state_findings_of_a_sample() -> None:
    rows = [
        {"op": "INSERT", "k": 1, "v": "a"},
        {"op": "+I", "k": 1, "v": "b"},  # an insert of an existing key
        {"op": "-U", "k": 2, "v": "x"},  # a retraction of an absent row, and no +U follows
    ]
    assert fs.keyed_findings(rows, "op", ["k"]) == "insert of an existing key 1, retraction of an absent row 1"
    assert fs.dangling_retractions(rows, "op", ["k"]) == "a -U that no +U follows 1"
    paired = [{"op": "-U", "k": 1, "v": "a"}, {"op": "+U", "k": 1, "v": "b"}, {"op": "-U", "k": 1, "v": "b"}]
    assert fs.dangling_retractions(paired[:2], "op", ["k"]) == ""
    assert fs.dangling_retractions(paired, "op", ["k"]) == "a -U that no +U follows 1"


def test_scan_records_of_canal_follows_the_table_filter() -> None:
    alter = {"type": "ALTER", "database": "shop", "table": "orders", "data": None}
    update = {"type": "UPDATE", "database": "shop", "table": "products", "data": [{"id": "1"}], "old": None}
    assert fs.scan_records([alter, update], "canal").rejected == "a record with type 'ALTER'"
    only_products = fs.scan_records([alter, update], "canal", table_include="prod.*")
    assert only_products.rejected == "" and "without 'old'" in only_products.unsupported
    assert fs.scan_records([alter, update], "canal", table_include="prod").unsupported == ""  # a whole-name match


def test_replay_append_of_text_times_checks_the_sample() -> None:
    cols = {"k": "STRING", "t": "STRING"}
    with pytest.raises(UsageError, match="'2024-01-01T00:00:00'"):
        fs.replay_sql(
            FILE, cols, ["k"], input_mode="append", order_by="t", sample=[{"k": "a", "t": "2024-01-01T00:00:00"}]
        )
    sql = fs.replay_sql(
        FILE, cols, ["k"], input_mode="append", order_by="t", sample=[{"k": "a", "t": "2024-01-01 00:00:00.5"}]
    )
    assert "`t` TIMESTAMP(3)" in sql
