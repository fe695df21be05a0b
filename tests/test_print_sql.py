"""--print-sql: the Flink SQL that does the same job, checked for each flag combination and for
the conformance cases (it must name the op column and mapping that produced Flink's output)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import CONFORMANCE, SAMPLES, run_cdc, write_csv, write_jsonl, write_parquet

ORACLE = CONFORMANCE / "flink-oracle"


def statements(sql: str) -> list[str]:
    """Split SQL into statements, checking quotes and brackets balance (a structural check)."""
    body = "\n".join(line for line in sql.splitlines() if not line.startswith("--"))
    out, current, depth, quote = [], "", 0, None
    for ch in body:
        current += ch
        if quote:
            if ch == quote:
                quote = None
            continue
        if ch in "'`":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            assert depth >= 0, f"unbalanced bracket in {current!r}"
        elif ch == ";" and depth == 0:
            out.append(current.strip())
            current = ""
    assert quote is None and depth == 0 and not current.strip(), "unterminated SQL"
    assert all(re.match(r"(SET|CREATE (TEMPORARY VIEW|TABLE)|SELECT|INSERT INTO)\b", s) for s in out), out
    assert out[0] == "SET 'execution.runtime-mode' = 'streaming';", "streaming mode first (batch rejects the PTFs)"
    return out


def refusal_of(args: list[object]) -> str:
    result = run_cdc([*args, "--print-sql"])
    assert result.returncode == 2, (result.returncode, result.stdout.decode())
    assert not result.stdout, "a refused script prints no SQL"
    return result.stderr.decode()


def sql_of(args: list[object]) -> str:
    result = run_cdc([*args, "--print-sql"])
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


@pytest.mark.parametrize("name", sorted(p.name for p in ORACLE.iterdir() if p.name.startswith(("from_", "to_"))))
def test_conformance_cases_print_the_call_that_produced_them(name: str) -> None:
    case = ORACLE / name
    args = json.loads((case / "args.json").read_text())
    sql = sql_of([args["command"], case / "input.jsonl", *args["flags"]])
    parts = statements(sql)
    function = "FROM_CHANGELOG" if args["command"] == "from-changelog" else "TO_CHANGELOG"
    call = parts[-1]
    assert call.startswith("SELECT `") and f" FROM {function}(" in call
    flags = args["flags"]
    if "--op" in flags:
        assert f"op => DESCRIPTOR(`{flags[flags.index('--op') + 1]}`)" in call
    else:
        assert "op => DESCRIPTOR" not in call  # Flink's default op column
    if name.startswith("from_custom"):
        assert "op_mapping => MAP['c, r', 'INSERT', 'ub', 'UPDATE_BEFORE', 'ua', 'UPDATE_AFTER', 'd', 'DELETE']" in call
    if name == "to_delflag":
        assert "op_mapping => MAP['INSERT, UPDATE_AFTER', 'false', 'DELETE', 'true']" in call
    if name == "to_filter":
        assert "op_mapping => MAP['INSERT', 'I', 'UPDATE_AFTER', 'U']" in call
    if name in ("to_default", "to_named") or name.startswith("from_default"):
        assert "op_mapping" not in call  # the default mapping is Flink's default
    assert "`id` BIGINT" in parts[1] and "`ratio` DOUBLE" in parts[1]  # types from the first rows


@pytest.mark.parametrize("name", sorted(p.name for p in ORACLE.iterdir() if p.name.startswith("dbz_")))
def test_debezium_cases_declare_a_debezium_json_table(name: str) -> None:
    sql = sql_of(["debezium-decode", ORACLE / name / "input.jsonl"])
    _, create, select = statements(sql)
    assert "'format' = 'debezium-json'" in create
    assert ("'debezium-json.schema-include' = 'true'" in create) == name.startswith("dbz_schema")
    assert "`id` BIGINT" in create and "`name` STRING" in create
    assert select == "SELECT `id`, `name`, `score`, `ratio`, `flag` FROM `cdc_input`;"


def test_upsert_mapping_with_key_is_written_as_rows_with_their_kind_on_flink_2_3() -> None:
    """Defect 1: Flink 2.3 has no PARTITION BY on FROM_CHANGELOG ('Only tables with set semantics
    may be partitioned'), and a table with +U but no -U needs a key: the upsert changelog is written
    as cdc writes it, each row with its kind (an unmapped code fails the job, as it fails cdc)."""
    parts = statements(sql_of(["from-changelog", SAMPLES / "flat-cdc.jsonl", "--preset", "debezium", "--key", "id"]))
    assert "PARTITION BY" not in parts[-1] and "FROM_CHANGELOG" not in parts[-1]
    assert parts[-1].startswith("SELECT CASE `__op` WHEN 'c' THEN '+I' WHEN 'r' THEN '+I' WHEN 'u' THEN '+U'")
    assert "'invalid op code '" in parts[-1] and " END AS `op`, `id`, `email`" in parts[-1]
    err = refusal_of(["from-changelog", SAMPLES / "flat-cdc.jsonl", "--preset", "debezium"])
    assert "requires a key" in err


def test_retract_mapping_with_key_needs_no_partition_on_2_3() -> None:
    args = ["from-changelog", SAMPLES / "flat-cdc.jsonl", "--op", "__op", "-m", "c, r=INSERT", "-m", "x=UPDATE_BEFORE"]
    call = statements(sql_of([*args, "-m", "u=UPDATE_AFTER", "-m", "d=DELETE", "--key", "id"]))[-1]
    assert "PARTITION BY" not in call and "input => TABLE `cdc_input`" in call


def test_skip_is_a_view_of_mapped_codes() -> None:
    """Defect 2: Flink 2.3 ignores unknown named arguments, error_handling => 'SKIP' among them."""
    parts = statements(sql_of(["from-changelog", SAMPLES / "orders-bad-op.jsonl", "--on-error", "skip"]))
    assert "error_handling" not in "".join(parts)
    assert parts[2] == (
        "CREATE TEMPORARY VIEW `cdc_kept` AS\nSELECT * FROM `cdc_input`\n"
        "WHERE `op` IN ('INSERT', 'UPDATE_BEFORE', 'UPDATE_AFTER', 'DELETE');"
    )
    assert "input => TABLE `cdc_kept`" in parts[3]


def test_drop_removes_the_codes_of_dropped_kinds() -> None:
    parts = statements(sql_of(["from-changelog", SAMPLES / "orders-bad-op.jsonl", "--drop", "UPDATE_BEFORE"]))
    assert "WHERE `op` IS NULL OR `op` NOT IN ('UPDATE_BEFORE');" in parts[2]


def test_csv_header_row_is_filtered_out(tmp_path: Path) -> None:
    """Defect 5: 'csv.ignore-first-line' is not an option of Flink 2.3's csv format."""
    src = write_csv(tmp_path / "in.csv", [{"op": "INSERT", "amount": "1.5"}, {"op": "DELETE", "amount": None}])
    parts = statements(sql_of(["from-changelog", src]))
    assert "'format' = 'csv'" in parts[1] and "`amount` STRING" in parts[1]  # CSV values are text
    assert "ignore-first-line" not in parts[1] and "'csv.null-literal' = ''" in parts[1]
    assert parts[2] == (
        "CREATE TEMPORARY VIEW `cdc_rows` AS\nSELECT * FROM `cdc_input`\n"
        "WHERE `op` IS DISTINCT FROM 'op'\n   OR `amount` IS DISTINCT FROM 'amount';"
    )
    assert "input => TABLE `cdc_rows`" in parts[3]
    tsv = write_csv(tmp_path / "in.tsv", [{"op": "INSERT", "a": "1"}], delimiter="\t")
    assert "'csv.field-delimiter'" in sql_of(["from-changelog", tsv])


def test_csv_with_quoted_empty_strings_is_refused() -> None:
    err = refusal_of(["from-changelog", SAMPLES / "orders-ops.csv"])
    assert 'quoted empty fields ("")' in err


def test_parquet_source(tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "in.parquet", [{"op": "INSERT", "n": 1, "x": 1.5}])
    parquet_sql = sql_of(["from-changelog", src])
    assert "'format' = 'parquet'" in parquet_sql and "`n` BIGINT" in parquet_sql


def test_to_changelog_reads_changelog_rows_through_a_view() -> None:
    parts = statements(sql_of(["to-changelog", SAMPLES / "product-prices.jsonl", "--drop", "UPDATE_BEFORE"]))
    assert parts[2].startswith("CREATE TEMPORARY VIEW `cdc_changelog` AS")
    assert "'+I, INSERT', 'INSERT'" in parts[2]
    assert "op_mapping => MAP['INSERT', 'INSERT', 'UPDATE_AFTER', 'UPDATE_AFTER', 'DELETE', 'DELETE']" in parts[3]


def test_to_changelog_from_debezium_includes_the_schema_envelope() -> None:
    """Defect 3: to-changelog --input-format debezium declared no schema-include."""
    case = ORACLE / "dbz_schema_0" / "input.jsonl"
    parts = statements(sql_of(["to-changelog", "--input-format", "debezium", case]))
    assert len(parts) == 3 and "'format' = 'debezium-json'" in parts[1]
    assert "'debezium-json.schema-include' = 'true'" in parts[1]


def test_connect_decimal_is_refused() -> None:
    """Defect 4: Flink's debezium-json cannot read Kafka Connect's base64 Decimal."""
    for command in (["debezium-decode"], ["to-changelog", "--input-format", "debezium"]):
        err = refusal_of([*command, SAMPLES / "mysql-inventory.jsonl"])
        assert "Connect Decimal" in err and "decimal.handling.mode=string" in err


def test_raw_values_declare_the_values_as_sent() -> None:
    err = refusal_of(["debezium-decode", SAMPLES / "mysql-inventory.jsonl", "--raw-values"])
    assert "'null' lines" in err  # Flink: Corrupt Debezium JSON message 'null'
    parts = statements(
        sql_of(["debezium-decode", SAMPLES / "mysql-inventory.jsonl", "--raw-values", "--on-error", "skip"])
    )
    assert "`price` STRING" in parts[1] and "`updated_at` BIGINT" in parts[1]
    assert "'debezium-json.ignore-parse-errors' = 'true'" in parts[1]


def test_debezium_metadata_needs_kafka() -> None:
    args = ["debezium-decode", ORACLE / "dbz_0" / "input.jsonl", "--metadata", "source.table=tbl"]
    assert "Kafka" in refusal_of(args)


def test_toast_placeholder_and_missing_before_images_are_refused() -> None:
    err = refusal_of(["debezium-decode", SAMPLES / "postgres-default-identity.jsonl", "--key", "id"])
    assert "__debezium_unavailable_value" in err


def test_print_sql_writes_no_output_file(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [{"op": "INSERT", "id": 1}])
    out = tmp_path / "out.jsonl"
    assert run_cdc(["from-changelog", src, "-o", out, "--print-sql"]).returncode == 0
    assert not out.exists()


def test_decode_canal_needs_one_table_and_skips_ddl() -> None:
    err = refusal_of(["decode", SAMPLES / "canal-products.jsonl"])
    assert "2 tables" in err and "--table-include" in err
    args = ["decode", SAMPLES / "canal-products.jsonl", "--table-include", "products", "--on-error", "skip"]
    create = statements(sql_of(args))[1]
    assert "'format' = 'canal-json'" in create and "'canal-json.table.include' = 'products'" in create
    assert "'canal-json.ignore-parse-errors' = 'true'" in create  # Flink fails on an ALTER; cdc skips it


def test_decode_maxwell_bootstrap_and_ogg_compressed_updates_are_refused() -> None:
    assert "bootstrap-insert" in refusal_of(["decode", SAMPLES / "maxwell-products.jsonl"])
    args = ["decode", SAMPLES / "maxwell-products.jsonl", "--bootstrap", "skip", "--on-error", "skip"]
    assert "'format' = 'maxwell-json'" in statements(sql_of(args))[1]
    assert "after image lacks columns" in refusal_of(["decode", SAMPLES / "ogg-products.jsonl"])


def test_aggregate_is_a_streaming_group_by() -> None:
    args = ["aggregate", SAMPLES / "clicks.jsonl", "--input-mode", "append", "-g", "user", "-a", "cnt=COUNT(*)"]
    parts = statements(sql_of(args))
    assert parts[-1] == "SELECT `user`, COUNT(*) AS `cnt` FROM `cdc_input` GROUP BY `user`;"
    changelog = statements(
        sql_of(["aggregate", SAMPLES / "product-prices.jsonl", "-g", "product_name", "-a", "n=COUNT(*)"])
    )
    assert changelog[-1].endswith("FROM `cdc_changelog` GROUP BY `product_name`;")
    upsert = [
        "aggregate",
        SAMPLES / "flat-cdc.jsonl",
        "--input-mode",
        "upsert",
        "--key",
        "id",
        "-g",
        "plan",
        "-a",
        "n=COUNT(*)",
    ]
    keyed = statements(sql_of(upsert))  # normalized by key (LAG state), then grouped
    assert any(p.startswith("CREATE TEMPORARY VIEW `cdc_replayed`") for p in keyed)
    assert keyed[-1].endswith("FROM `cdc_changelog` GROUP BY `plan`;")


def test_change_feed_commit_pairing_is_refused() -> None:
    err = refusal_of(["from-changelog", SAMPLES / "delta-cdf-orders.csv", "--preset", "delta-cdf"])
    assert "pairs each commit's pre- and post-images" in err
    args = ["from-changelog", SAMPLES / "delta-cdf-orders.csv", "--op", "_change_type", "-m", "insert=INSERT"]
    args += ["-m", "update_preimage=UPDATE_BEFORE", "-m", "update_postimage=UPDATE_AFTER", "-m", "delete=DELETE"]
    assert "FROM FROM_CHANGELOG(" in statements(sql_of(args))[-1]


# --- defects the harness found by running every command line's script (flink/harness/results.md) -------------------


def _canal(rows: list[dict[str, str]], old: list[dict[str, str]] | None, kind: str = "UPDATE", **more: object) -> dict:
    types = {"id": 4, "name": 12, "w": 7}
    return {"data": rows, "old": old, "type": kind, "database": "db", "table": "t", "isDdl": False,
            "sqlType": types, "es": 1, "ts": 2, **more}  # fmt: skip


def test_to_changelog_of_an_envelope_declares_the_image_columns_once(tmp_path: Path) -> None:
    """--input-format maxwell read decoded rows (with their kind column) as the table's columns:
    Flink rejected the script ('Field names must be unique. Found duplicates: [op]')."""
    events = [
        {"database": "db", "table": "t", "type": "insert", "ts": 1, "data": {"id": 1, "name": "a"}},
        {
            "database": "db",
            "table": "t",
            "type": "update",
            "ts": 2,
            "data": {"id": 1, "name": "b"},
            "old": {"name": "a"},
        },
    ]
    src = write_jsonl(tmp_path / "maxwell.jsonl", events)
    parts = statements(sql_of(["to-changelog", "-i", "maxwell", src]))
    assert parts[1] == (
        "CREATE TABLE `cdc_input` (\n  `id` BIGINT,\n  `name` STRING\n) WITH (\n  'connector' = 'filesystem',\n"
        f"  'path' = 'file://{src}',\n  'format' = 'maxwell-json'\n);"
    )
    assert parts[2].startswith("SELECT `op`, `id`, `name` FROM TO_CHANGELOG(")
    # and the records are scanned as decode scans them
    assert "bootstrap-insert" in refusal_of(["to-changelog", "-i", "maxwell", SAMPLES / "maxwell-products.jsonl"])
    assert "2 tables" in refusal_of(["materialize", "-i", "canal", SAMPLES / "canal-products.jsonl"])


def test_aggregate_emit_upsert_drops_update_befores() -> None:
    """The retract query was printed for --emit upsert: Flink's rows had -U, cdc's do not."""
    args = ["aggregate", SAMPLES / "clicks.jsonl", "--input-mode", "append", "-g", "user", "-a", "cnt=COUNT(*)"]
    parts = statements(sql_of([*args, "--emit", "upsert"]))
    assert parts[-2] == (
        "CREATE TEMPORARY VIEW `cdc_result` AS\nSELECT `user`, COUNT(*) AS `cnt` FROM `cdc_input` GROUP BY `user`;"
    )
    assert parts[-1] == (
        "SELECT `op`, `user`, `cnt` FROM TO_CHANGELOG(\n  input => TABLE `cdc_result`,\n  op => DESCRIPTOR(`op`),\n"
        "  op_mapping => MAP['INSERT', '+I', 'UPDATE_AFTER', '+U', 'DELETE', '-D']\n);"
    )


def test_aggregate_sink_columns_have_flinks_result_types(tmp_path: Path) -> None:
    """A sink used to be refused ('needs the aggregates' names and types'); its columns now have
    the types Flink gives the aggregates."""
    src = write_jsonl(tmp_path / "in.jsonl", [{"g": "a", "x": 1, "d": 1.5, "s": "t"}])
    args = ["aggregate", src, "--input-mode", "append", "-g", "g", "-a", "n=COUNT(*)", "-a", "sx=SUM(x)"]
    args += ["-a", "ax=AVG(x)", "-a", "md=MAX(d)", "-a", "fs=FIRST_VALUE(s)"]
    sink = ["--sql-sink", "upsert-kafka", "--sink-topic", "out", "--bootstrap-servers", "h:9092"]
    output = statements(sql_of([*args, *sink]))[-2]
    assert output.startswith(
        "CREATE TABLE `cdc_output` (\n  `g` STRING,\n  `n` BIGINT,\n  `sx` BIGINT,\n  `ax` BIGINT,\n  `md` DOUBLE,\n"
        "  `fs` STRING,\n  PRIMARY KEY (`g`) NOT ENFORCED\n)"
    )


def test_what_flink_does_not_check_or_have_is_refused() -> None:
    agg = ["aggregate", SAMPLES / "product-prices.jsonl", "-g", "product_name", "-a", "n=COUNT(*)"]
    assert "do not check a changelog" in refusal_of([*agg, "--on-inconsistency", "fail"])
    assert "do not check a changelog" in refusal_of(["materialize", SAMPLES / "product-prices.jsonl", "--strict"])
    upsert = ["aggregate", SAMPLES / "flat-cdc.jsonl", "--input-mode", "upsert", "--key", "id", "-g", "plan"]
    upsert += ["-a", "n=COUNT(*)", "--delete-when", "__deleted=true", "--sql-source", "upsert-kafka"]
    assert "tombstone" in refusal_of([*upsert, "--topic", "t", "--bootstrap-servers", "h:9092"])


def test_materialize_leaves_commit_columns_out(tmp_path: Path) -> None:
    """cdc's table has no commit columns (and a retraction matches without them); the query
    selected them, so Flink's rows carried them."""
    rows = [
        {"op": "+I", "id": 1, "v": "a", "_commit_version": 1, "_commit_timestamp": "t1"},
        {"op": "-U", "id": 1, "v": "a", "_commit_version": 2, "_commit_timestamp": "t2"},
        {"op": "+U", "id": 1, "v": "b", "_commit_version": 2, "_commit_timestamp": "t2"},
    ]
    src = write_jsonl(tmp_path / "feed.jsonl", rows)
    assert statements(sql_of(["materialize", src]))[-1] == "SELECT `id`, `v` FROM `cdc_changelog`;"
    named = statements(sql_of(["materialize", src, "--commit-columns", "_commit_version"]))[-1]
    assert named == "SELECT `id`, `v`, `_commit_timestamp` FROM `cdc_changelog`;"


def test_keyed_materialize_is_the_last_change_per_key(tmp_path: Path) -> None:
    """cdc's keyed table is each key's last change when that is +I/+U, consistent changelog or not
    (samples/product-prices.jsonl retracts rows unlike the stored ones): keep-last-row
    deduplication on arrival order, filtered by kind. An upsert sink keeps a row a lone -U leaves."""
    keyed = statements(sql_of(["materialize", SAMPLES / "product-prices.jsonl", "--key", "product_id"]))
    assert "ROW_NUMBER() OVER (PARTITION BY `product_id` ORDER BY `cdc_time` DESC)" in keyed[-2]
    assert keyed[-1].endswith("FROM `cdc_last`\nWHERE TRIM(`op`) IN ('+I', '+U');")
    sink = ["--sql-sink", "upsert-kafka", "--sink-topic", "t", "--bootstrap-servers", "h:9092"]
    ok = sql_of(["materialize", SAMPLES / "product-prices.jsonl", "--key", "product_id", *sink])
    assert "PRIMARY KEY (`product_id`) NOT ENFORCED" in ok  # an upsert sink keeps the last row per key
    dangling = write_jsonl(tmp_path / "d.jsonl", [{"op": "+I", "k": 1, "v": 1}, {"op": "-U", "k": 1, "v": 1}])
    assert "a -U that no +U follows 1" in refusal_of(["materialize", dangling, "--key", "k", *sink])
    consistent = write_jsonl(tmp_path / "c.jsonl", [{"op": "+I", "k": 1, "v": 1}, {"op": "-D", "k": 1, "v": 1}])
    unkeyed = statements(sql_of(["materialize", consistent]))[-1]
    assert unkeyed == "SELECT `k`, `v` FROM `cdc_changelog`;"


def test_replay_order_by_needs_flinks_timestamp_text(tmp_path: Path) -> None:
    """A CSV header line (and any other text) failed Flink's scan into TIMESTAMP(3)."""
    args = ["--input-mode", "append", "--key", "currency", "--order-by", "update_time"]
    assert "header line" in refusal_of(["replay", SAMPLES / "currency-rates.csv", *args])
    times = write_jsonl(tmp_path / "t.jsonl", [{"currency": "Yen", "update_time": "09:00:00", "rate": 102}])
    assert "'09:00:00'" in refusal_of(["replay", times, *args])
    clicks = ["replay", SAMPLES / "clicks.jsonl", "--input-mode", "append", "--key", "user", "--order-by", "cTime"]
    assert "WATERMARK FOR `cTime` AS `cTime`" in sql_of(clicks)


def test_replay_of_debezium_is_changelog_normalize() -> None:
    parts = statements(sql_of(["replay", "-i", "debezium", ORACLE / "dbz_0" / "input.jsonl", "--key", "id"]))
    assert "SET 'table.exec.source.cdc-events-duplicate' = 'true';" in parts[0:3]
    assert "PRIMARY KEY (`id`) NOT ENFORCED" in parts[-2] and "'format' = 'debezium-json'" in parts[-2]
    assert parts[-1] == "SELECT `id`, `name`, `score`, `ratio`, `flag` FROM `cdc_input`;"


def test_canal_updates_flink_reads_otherwise_are_refused(tmp_path: Path) -> None:
    def refused(*events: dict, flags: tuple[str, ...] = ()) -> str:
        return refusal_of(["decode", "--envelope", "canal", write_jsonl(tmp_path / "c.jsonl", list(events)), *flags])

    insert = _canal([{"id": "1", "name": "a", "w": "1.5"}, {"id": "2", "name": "b", "w": "2.5"}], None, "INSERT")
    # Flink: NullPointerException
    assert "UPDATE without 'old'" in refused(insert, _canal([{"id": "1", "name": "a", "w": "1.5"}], None))
    both = [{"id": "1", "name": "x", "w": "1.5"}, {"id": "2", "name": "b", "w": "9.5"}]
    # Flink: ArrayIndexOutOfBoundsException
    assert "fewer elements" in refused(insert, _canal(both, [{"name": "a"}]), flags=("--key", "id"))
    # Flink leaves w NULL in row 1's before image (row 2's old names it), name NULL in row 2's
    assert "multi-row UPDATE" in refused(insert, _canal(both, [{"name": "a"}, {"w": "2.5"}]))
    same = write_jsonl(
        tmp_path / "s.jsonl", [insert, _canal(both, [{"name": "a", "w": "1.0"}, {"name": "c", "w": "2.5"}])]
    )
    assert "'format' = 'canal-json'" in sql_of(["decode", "--envelope", "canal", same])
    # BOOLEAN sent as 1/0: Flink's Boolean.parseBoolean reads '1' as false
    flag = _canal([{"id": "1", "ok": "1"}], None, "INSERT", sqlType={"id": 4, "ok": 16})
    assert "Boolean.parseBoolean" in refused(flag)
    assert "`ok` STRING" in sql_of(["decode", "--envelope", "canal", tmp_path / "c.jsonl", "--raw-values"])


def test_canal_table_filter_applies_to_the_scan() -> None:
    """The ALTER of samples/canal-products.jsonl is on products; an ALTER of another table would be
    skipped by canal-json's filter before it is read."""
    args = ["decode", SAMPLES / "canal-products.jsonl", "--table-include", "orders"]
    create = statements(sql_of(args))[1]
    assert "'canal-json.table.include' = 'orders'" in create and "ignore-parse-errors" not in create
    assert "type 'ALTER'" in refusal_of(["decode", SAMPLES / "canal-products.jsonl", "--table-include", "products"])


def test_maxwell_update_without_old_and_ogg_compressed_update_are_refused(tmp_path: Path) -> None:
    maxwell = write_jsonl(tmp_path / "m.jsonl", [{"database": "d", "table": "t", "type": "update", "data": {"id": 1}}])
    assert "update without 'old'" in refusal_of(["decode", "--envelope", "maxwell", maxwell])
    update = {"table": "S.T", "op_type": "U", "op_ts": "2024-01-01 00:00:00.000000", "pos": "1",
              "before": {"ID": 1, "NAME": "a", "W": 1.5}, "after": {"ID": 1, "W": 2.5}}  # fmt: skip
    ogg = write_jsonl(tmp_path / "o.jsonl", [update])  # the first record: nothing seen before but its before image
    assert "after image lacks columns" in refusal_of(["decode", "--envelope", "ogg", ogg])


def test_truncate_as_deletes_has_no_flink_form(tmp_path: Path) -> None:
    events = [{"table": "S.T", "op_type": "I", "op_ts": "2024-01-01 00:00:00.000000", "pos": "1", "after": {"ID": 1}},
              {"table": "S.T", "op_type": "T", "op_ts": "2024-01-01 00:00:01.000000", "pos": "2"}]  # fmt: skip
    src = write_jsonl(tmp_path / "o.jsonl", events)
    err = refusal_of(["decode", "--envelope", "ogg", src, "--on-truncate", "delete", "--on-error", "skip"])
    assert "--on-truncate delete" in err
    skip = ["decode", "--envelope", "ogg", src, "--on-truncate", "skip", "--on-error", "skip"]
    assert "'ogg-json.ignore-parse-errors' = 'true'" in sql_of(skip)


def test_a_sample_cdc_cannot_decode_says_so(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "m.jsonl", [{"database": "d", "table": "t", "type": "upsert", "data": {"id": 1}}])
    assert "cdc cannot decode the input either" in refusal_of(["decode", "--envelope", "maxwell", src])


def test_upsert_kafka_source_only_for_upsert_input() -> None:
    """It printed 'PRIMARY KEY () NOT ENFORCED' (or an upsert table under FROM_CHANGELOG) for jobs
    that read every record as it comes."""
    kafka = ["--sql-source", "upsert-kafka", "--topic", "t", "--bootstrap-servers", "h:9092"]
    for args in (
        ["to-changelog", SAMPLES / "product-prices.jsonl"],
        ["materialize", SAMPLES / "product-prices.jsonl"],
        ["from-changelog", SAMPLES / "orders-bad-op.jsonl", "--key", "order_id"],
        ["aggregate", SAMPLES / "clicks.jsonl", "--input-mode", "append", "-g", "user", "-a", "n=COUNT(*)"],
    ):
        assert "an upsert-kafka source is an upsert table" in refusal_of([*args, *kafka])
    replay = ["replay", SAMPLES / "flat-cdc.jsonl", "--input-mode", "upsert", "--key", "id", *kafka]
    assert "PRIMARY KEY (`id`) NOT ENFORCED" in statements(sql_of(replay))[1]


def test_inspect_counts_changes_per_kind_as_cdc_writes_the_codes() -> None:
    parts = statements(sql_of(["inspect", SAMPLES / "product-prices.jsonl", "-t", "update_time"]))
    assert "FROM_CHANGELOG(" in parts[2] and "TO_CHANGELOG(" in parts[3], "kinds read, then written as codes"
    assert "'INSERT', '+I'" in parts[3] and "'DELETE', '-D'" in parts[3]
    assert parts[-1].startswith("SELECT `op` AS `kind`, COUNT(*) AS `changes`, MIN(`update_time`)")
    assert parts[-1].endswith("GROUP BY `op`;")


def test_inspect_of_debezium_events_counts_what_the_format_decodes() -> None:
    # Flink 2.3 ran this script: +I 11, -U 4, +U 4, -D 1, cdc inspect's counts of the same file
    events = CONFORMANCE / "flink-debezium" / "debezium-data-schema-exclude.txt"
    sql = sql_of(["inspect", events, "--input-format", "debezium"])
    parts = statements(sql)
    assert "'format' = 'debezium-json'" in sql and "FROM_CHANGELOG" not in sql
    assert parts[-1].endswith("GROUP BY `op`;")
    assert "consistency findings" in sql.splitlines()[1], "the header says what the script leaves out"


def test_inspect_time_column_must_exist() -> None:
    assert "--time-column 'nope'" in refusal_of(["inspect", SAMPLES / "product-prices.jsonl", "-t", "nope"])
