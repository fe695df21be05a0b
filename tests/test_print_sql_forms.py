"""--print-sql that is never wrong (issue #28): column types from the whole input, the stale before
image, CSV sums, and the forms printed where Flink 2.3 has a plain one (upsert rows and changelog
rows normalized by key through LAG, --delete-when). The scripts' rows were checked against cdc's on
a Flink 2.3 cluster (flink/harness/gateway_check.py); here the text is checked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import SAMPLES, write_csv, write_jsonl
from test_print_sql import refusal_of, sql_of, statements


def create_input(sql: str) -> str:
    return next(p for p in statements(sql) if p.startswith("CREATE TABLE `cdc_input`"))


def test_a_fraction_past_any_sampling_window_widens_the_column(tmp_path: Path) -> None:
    """An integer column with 19.99 in row 5,000: BIGINT would make Flink read 19."""
    rows = [{"op": "+I", "id": i, "price": i, "note": None} for i in range(5000)]
    rows.append({"op": "+I", "id": 5000, "price": 19.99, "note": "late text"})
    create = create_input(sql_of(["materialize", write_jsonl(tmp_path / "late.jsonl", rows)]))
    assert "`price` DOUBLE" in create and "BIGINT," not in create.split("`price`")[1].split("\n")[0]
    assert "`note` STRING" in create  # null for 5,000 rows, then text: typed by the later value
    assert "`id` BIGINT" in create


def test_a_null_first_column_is_typed_from_its_later_values(tmp_path: Path) -> None:
    rows = [{"op": "+I", "id": i, "amount": None} for i in range(300)]
    rows.append({"op": "+I", "id": 300, "amount": 7})
    create = create_input(sql_of(["materialize", write_jsonl(tmp_path / "nulls.jsonl", rows)]))
    assert "`amount` BIGINT" in create


def test_a_column_of_numbers_and_text_is_refused(tmp_path: Path) -> None:
    rows = [{"op": "+I", "id": i, "code": i} for i in range(200)] + [{"op": "+I", "id": 200, "code": "A7"}]
    err = refusal_of(["materialize", write_jsonl(tmp_path / "mixed.jsonl", rows)])
    assert "column 'code' holds BIGINT and STRING values" in err


def test_csv_sums_cast_the_text_to_the_number_cdc_reads(tmp_path: Path) -> None:
    rows = [{"cat": "a", "price": "5", "qty": "2"}] * 150 + [{"cat": "b", "price": "19.99", "qty": "3"}]
    src = write_csv(tmp_path / "sales.csv", rows)
    args = ["aggregate", src, "--input-mode", "append", "-g", "cat"]
    last = statements(sql_of([*args, "-a", "total=SUM(price)", "-a", "n=SUM(qty)", "-a", "top=MAX(price)"]))[-1]
    assert "SUM(CAST(`price` AS DECIMAL(21, 2))) AS `total`" in last  # 19.99 is in the last row
    assert "SUM(CAST(`qty` AS BIGINT)) AS `n`" in last
    assert "MAX(`price`) AS `top`" in last  # cdc's MAX of CSV text compares text, as Flink does on STRING
    err = refusal_of([*args, "-a", "total=SUM(cat)"])
    assert "SUM(cat)" in err and "no SUM of STRING" in err


def test_decode_with_a_key_emits_the_stored_row_for_a_stale_before_image(tmp_path: Path) -> None:
    events = [
        {"before": None, "after": {"id": 1, "v": "a"}, "op": "c", "ts_ms": 1},
        {"before": {"id": 1, "v": "STALE"}, "after": {"id": 1, "v": "b"}, "op": "u", "ts_ms": 2},
    ]
    sql = sql_of(["decode", write_jsonl(tmp_path / "stale.jsonl", events), "--key", "id"])
    assert "-- 1 update(s)/delete(s) in the input carry a before image unlike the key's stored row" in sql
    parts = statements(sql)
    assert "SET 'table.exec.source.cdc-events-duplicate' = 'true';" in parts
    # cdc's decode emits an update that changes nothing; ChangelogNormalize does only with a state TTL
    assert "SET 'table.exec.state.ttl' = '3650 d';" in parts
    assert "PRIMARY KEY (`id`) NOT ENFORCED" in create_input(sql)


def test_replay_of_upsert_rows_in_a_file_is_lag_over_the_key(tmp_path: Path) -> None:
    args = ["replay", SAMPLES / "flat-cdc.jsonl", "--input-mode", "upsert", "--key", "id"]
    parts = statements(sql_of([*args, "--delete-when", "__deleted=true"]))
    assert "`cdc_time` AS PROCTIME()" in parts[1]
    previous = next(p for p in parts if p.startswith("CREATE TEMPORARY VIEW `cdc_previous`"))
    assert "COALESCE(`__deleted` = 'true', FALSE) AS `cdc_delete`" in previous
    assert "LAG(`email`) OVER (PARTITION BY `id` ORDER BY `cdc_time`)" in previous
    replayed = next(p for p in parts if p.startswith("CREATE TEMPORARY VIEW `cdc_replayed`"))
    assert "CROSS JOIN UNNEST(ARRAY[" in replayed and "ROW(CASE WHEN `cdc_gone`" in replayed
    assert "op_mapping => MAP['+I', 'INSERT', '-U', 'UPDATE_BEFORE'" in parts[-1]
    upsert = statements(sql_of([*args, "--emit", "upsert", "--keep-noop"]))
    assert upsert[-1].endswith("WHERE `cdc_op` <> '-U';")
    assert "(FALSE) AS `cdc_same`" in next(p for p in upsert if "cdc_replayed` AS" in p)


def test_replay_of_changelog_rows_ignores_update_befores(tmp_path: Path) -> None:
    parts = statements(sql_of(["replay", SAMPLES / "product-prices.jsonl", "--key", "product_id"]))
    previous = next(p for p in parts if p.startswith("CREATE TEMPORARY VIEW `cdc_previous`"))
    assert "WHERE `op` IS NULL OR TRIM(`op`) <> '-U'" in previous
    assert "COALESCE(TRIM(`op`) = '-D', FALSE) AS `cdc_delete`" in previous


def test_what_flink_cannot_express_stays_refused_with_its_reason() -> None:
    window = ["replay", SAMPLES / "product-prices.jsonl", "--key", "product_id", "--time-column", "update_time"]
    assert "batch question" in refusal_of([*window, "--since", "10:00:00"])
    kafka = ["replay", SAMPLES / "flat-cdc.jsonl", "--input-mode", "upsert", "--key", "id", "--delete-when", "x=1"]
    kafka += ["--sql-source", "upsert-kafka", "--topic", "t", "--bootstrap-servers", "h:9092"]
    assert "tombstone" in refusal_of(kafka)


def test_replay_ordered_by_a_number_orders_by_its_event_time(tmp_path: Path) -> None:
    rows = [{"user": "a", "ts": 3, "v": 1}, {"user": "a", "ts": 2, "v": 2}]
    parts = statements(
        sql_of(
            [
                "replay",
                write_jsonl(tmp_path / "n.jsonl", rows),
                "--input-mode",
                "append",
                "--key",
                "user",
                "--order-by",
                "ts",
            ]
        )
    )
    assert "`cdc_order` AS TO_TIMESTAMP_LTZ(`ts`, 3)" in parts[1] and "`ts` BIGINT" in parts[1]
    assert "ORDER BY `cdc_order` DESC" in parts[2] and parts[2].startswith(
        "CREATE TEMPORARY VIEW `cdc_versioned` AS\nSELECT `user`, `ts`, `v` FROM"
    )


def test_materialize_dedup_with_a_key_leaves_update_befores_out(tmp_path: Path) -> None:
    rows = [{"op": "+I", "k": 1, "v": "a"}, {"op": "-U", "k": 1, "v": "a"}]
    src = write_jsonl(tmp_path / "lone.jsonl", rows)
    last = next(p for p in statements(sql_of(["materialize", src, "--key", "k", "--dedup"])) if "`cdc_last` AS" in p)
    assert "WHERE `op` IS NULL OR TRIM(`op`) <> '-U'" in last
    assert "--dedup has a Flink SQL form only with --key" in refusal_of(["materialize", src, "--dedup"])
    assert "--as-of has no Flink SQL form" in refusal_of(["materialize", src, "--key", "k", "--as-of", "1", "-t", "v"])


def test_options_the_script_does_not_do_are_refused_naming_them(tmp_path: Path) -> None:
    """Issue 36: each of these once printed a script that computed something else, without a word
    (flink/commands.py is the table that refuses them now, before the input is read)."""
    import cdc
    from cdc.core.errors import UsageError

    changes = write_jsonl(tmp_path / "changes.jsonl", [{"op": "+I", "id": 2, "ts": 5}, {"op": "+I", "id": 1, "ts": 6}])
    schema = {"__cdc_schema": {"version": 1, "columns": {"ts": "timestamp"}, "metadata": []}}
    carried = write_jsonl(tmp_path / "carried.jsonl", [schema, {"op": "+I", "id": 1, "ts": "2024-01-01T00:00:00"}])
    dbz = SAMPLES / "mysql-inventory.jsonl"
    refused = [
        (
            lambda: cdc.debezium_encode(changes, time_column="ts", print_sql=True),
            "--time-column sets each event's ts_ms",
        ),
        (lambda: cdc.debezium_encode(changes, source_fields={"db": "shop"}, print_sql=True), "--source writes"),
        (lambda: cdc.materialize(changes, key="id", sort=True, print_sql=True), "--sort orders the table by key"),
        (lambda: cdc.to_changelog(changes, columns="id", print_sql=True), "--columns chooses the output's columns"),
        (lambda: cdc.to_changelog(changes, on_error="skip", print_sql=True), "--on-error skip skips what cdc"),
        (lambda: cdc.to_changelog(carried, print_sql=True), "the input's schema line is cdc's carried schema"),
        (lambda: cdc.replay(changes, key="id", order_by="ts", print_sql=True), "--order-by ts with --input-mode"),
        (lambda: cdc.debezium_decode(dbz, raw_values=True, table_include="x", print_sql=True), "no database / table"),
    ]
    for call, reason in refused:
        with pytest.raises(UsageError, match=re.escape(reason)):
            call()
    # --on-flink sorts and picks the columns of the cluster's rows itself: those are not refused there
    from cdc.engine.scripts import check

    job = cdc.engine.api._IO.of({"source": changes, "columns": "id"}).job(cdc.core.specs.MaterializeSpec(sort=True))[0]
    check(job, cluster=True)
    with pytest.raises(UsageError, match="--print-sql: --sort .*; --columns"):
        check(job, cluster=False)


def test_inspect_says_what_its_key_shapes_in_the_part_it_leaves_out() -> None:
    header = sql_of(["inspect", SAMPLES / "product-prices.jsonl", "--key", "product_id"]).split("SET ")[0]
    assert "-- --key product_id: the keys cdc's consistency checks follow" in header
