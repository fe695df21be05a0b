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
    assert all(re.match(r"(CREATE (TEMPORARY VIEW|TABLE)|SELECT)\b", s) for s in out), out
    return out


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
    assert call.startswith(f"SELECT * FROM {function}(")
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
    assert "`id` BIGINT" in parts[0] and "`ratio` DOUBLE" in parts[0]  # types from the first rows


@pytest.mark.parametrize("name", sorted(p.name for p in ORACLE.iterdir() if p.name.startswith("dbz_")))
def test_debezium_cases_declare_a_debezium_json_table(name: str) -> None:
    sql = sql_of(["debezium-decode", ORACLE / name / "input.jsonl"])
    create, select = statements(sql)
    assert "'format' = 'debezium-json'" in create
    assert ("'debezium-json.schema-include' = 'true'" in create) == name.startswith("dbz_schema")
    assert "`id` BIGINT" in create and "`name` STRING" in create
    assert select == "SELECT * FROM `cdc_input`;"


def test_key_preset_and_skip(tmp_path: Path) -> None:
    sql = sql_of(
        ["from-changelog", SAMPLES / "flat-cdc.jsonl", "--preset", "debezium", "--key", "id", "--on-error", "skip"]
    )
    call = statements(sql)[-1]
    assert "input => TABLE `cdc_input` PARTITION BY `id`" in call
    assert "op => DESCRIPTOR(`__op`)" in call
    assert "op_mapping => MAP['c, r', 'INSERT', 'u', 'UPDATE_AFTER', 'd', 'DELETE']" in call
    assert "error_handling => 'SKIP'" in call


def test_csv_and_parquet_sources(tmp_path: Path) -> None:
    csv_sql = sql_of(["from-changelog", SAMPLES / "orders-ops.csv"])
    assert "'format' = 'csv'" in csv_sql and "`amount` STRING" in csv_sql  # CSV values are text
    assert "'csv.ignore-first-line' = 'true'" in csv_sql and "FLINK-20746" in csv_sql
    src = write_parquet(tmp_path / "in.parquet", [{"op": "INSERT", "n": 1, "x": 1.5}])
    parquet_sql = sql_of(["from-changelog", src])
    assert "'format' = 'parquet'" in parquet_sql and "`n` BIGINT" in parquet_sql
    tsv = write_csv(tmp_path / "in.tsv", [{"op": "INSERT", "a": "1"}], delimiter="\t")
    assert "'csv.field-delimiter'" in sql_of(["from-changelog", tsv])


def test_to_changelog_reads_changelog_rows_through_a_view() -> None:
    parts = statements(sql_of(["to-changelog", SAMPLES / "product-prices.jsonl", "--drop", "UPDATE_BEFORE"]))
    assert parts[1].startswith("CREATE TEMPORARY VIEW `cdc_changelog` AS")
    assert "'+I, INSERT', 'INSERT'" in parts[1]
    assert "op_mapping => MAP['INSERT', 'INSERT', 'UPDATE_AFTER', 'UPDATE_AFTER', 'DELETE', 'DELETE']" in parts[2]


def test_to_changelog_from_debezium_needs_no_view() -> None:
    parts = statements(sql_of(["to-changelog", "--input-format", "debezium", SAMPLES / "mysql-inventory.jsonl"]))
    assert len(parts) == 2 and "'format' = 'debezium-json'" in parts[0]
    assert "`price` DECIMAL(10, 2)" in parts[0] and "`updated_at` TIMESTAMP(6)" in parts[0]


def test_debezium_metadata_and_key() -> None:
    sql = sql_of(
        [
            "debezium-decode",
            SAMPLES / "mysql-inventory.jsonl",
            "--metadata",
            "source.table=tbl",
            "--metadata",
            "ingestion-timestamp",
            "--key",
            "id",
        ]
    )
    create = statements(sql)[0]
    assert "`tbl` STRING METADATA FROM 'value.source.table' VIRTUAL" in create
    assert "`ingestion_timestamp` TIMESTAMP_LTZ(3) METADATA FROM 'value.ingestion-timestamp' VIRTUAL" in create
    assert "PRIMARY KEY (`id`) NOT ENFORCED" in create
    assert "'connector' = 'kafka'" in create


def test_print_sql_writes_no_output_file(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [{"op": "INSERT", "id": 1}])
    out = tmp_path / "out.jsonl"
    assert run_cdc(["from-changelog", src, "-o", out, "--print-sql"]).returncode == 0
    assert not out.exists()
