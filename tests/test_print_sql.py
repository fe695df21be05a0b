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


def test_upsert_mapping_with_key_is_refused_on_flink_2_3() -> None:
    """Defect 1: Flink 2.3 has no PARTITION BY on FROM_CHANGELOG ('Only tables with set semantics
    may be partitioned'), so the upsert form needs 2.4."""
    err = refusal_of(["from-changelog", SAMPLES / "flat-cdc.jsonl", "--preset", "debezium", "--key", "id"])
    assert "PARTITION BY" in err and "2.4" in err


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
    assert "upsert-kafka" in refusal_of(upsert)


def test_change_feed_commit_pairing_is_refused() -> None:
    err = refusal_of(["from-changelog", SAMPLES / "delta-cdf-orders.csv", "--preset", "delta-cdf"])
    assert "pairs each commit's pre- and post-images" in err
    args = ["from-changelog", SAMPLES / "delta-cdf-orders.csv", "--op", "_change_type", "-m", "insert=INSERT"]
    args += ["-m", "update_preimage=UPDATE_BEFORE", "-m", "update_postimage=UPDATE_AFTER", "-m", "delete=DELETE"]
    assert "FROM FROM_CHANGELOG(" in statements(sql_of(args))[-1]
