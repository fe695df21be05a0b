"""The experiments behind FINDINGS.md: small scripts run in Flink 2.3 (PyFlink mini-cluster).

    flink/harness/.flink-venv/bin/python flink/harness/experiments.py [NAME ...]   # all when none named

Each prints Flink's rows (kind + values) or its error. Inputs are written to a temporary folder.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from flinkrun import run_script  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
TMP = Path(tempfile.mkdtemp(prefix="cdc-flink-exp-"))

OPS = "\n".join(
    [
        '{"id": 1, "op": "c", "name": "a"}',
        '{"id": 2, "op": "r", "name": "b"}',
        '{"id": 1, "op": "u", "name": "a2"}',
        '{"id": 2, "op": "d", "name": "b"}',
        '{"id": 3, "op": "x", "name": "bad"}',
        '{"id": 4, "op": null, "name": "null op"}',
    ]
)
(TMP / "ops.jsonl").write_text(OPS + "\n")
(TMP / "ops-good.jsonl").write_text("\n".join(OPS.splitlines()[:4]) + "\n")
(TMP / "plans.jsonl").write_text(
    '{"id": 1, "op": "c", "plan": "free"}\n{"id": 2, "op": "c", "plan": "free"}\n{"id": 1, "op": "u", "plan": "pro"}\n'
)
(TMP / "h.csv").write_text('id,name,op\n1,a,INSERT\n2,,INSERT\n3,"",INSERT\n')

STREAM = "SET 'execution.runtime-mode' = 'streaming';\n"


def table(name: str, cols: str, path: Path | str, fmt: str = "json", extra: str = "") -> str:
    return (
        f"CREATE TABLE {name} ({cols}) WITH ('connector' = 'filesystem', 'path' = 'file://{path}', "
        f"'format' = '{fmt}'{extra});\n"
    )


OPS_T = table("src", "id BIGINT, op STRING, name STRING", TMP / "ops-good.jsonl")
OPS_ALL = table("src", "id BIGINT, op STRING, name STRING", TMP / "ops.jsonl")
MAPPING = "MAP['c, r', 'INSERT', 'u', 'UPDATE_AFTER', 'd', 'DELETE']"
INV = ROOT / "samples" / "mysql-inventory.jsonl"
INV_COLS = "id BIGINT, name STRING, price {price}, stock BIGINT, updated_at {ts}, launched {date}"

EXPERIMENTS: dict[str, str] = {
    # 1. upsert FROM_CHANGELOG
    "partition_by": STREAM + OPS_T + f"SELECT * FROM FROM_CHANGELOG(input => TABLE src PARTITION BY id, "
    f"op_mapping => {MAPPING});",
    "upsert_mapping_no_key": STREAM + OPS_T + f"SELECT * FROM FROM_CHANGELOG(input => TABLE src, "
    f"op_mapping => {MAPPING});",
    "partition_by_retract": STREAM + OPS_T + "SELECT * FROM FROM_CHANGELOG(input => TABLE src PARTITION BY id, "
    "op_mapping => MAP['c, r', 'INSERT', 'ub', 'UPDATE_BEFORE', 'u', 'UPDATE_AFTER', 'd', 'DELETE']);",
    "upsert_as_retract": STREAM
    + table("src", "id BIGINT, op STRING, plan STRING", TMP / "plans.jsonl")
    + "CREATE TEMPORARY VIEW v AS SELECT * FROM FROM_CHANGELOG(input => TABLE src, op_mapping => "
    "MAP['c', 'INSERT', 'never', 'UPDATE_BEFORE', 'u', 'UPDATE_AFTER', 'd', 'DELETE']);\n"
    "SELECT plan, COUNT(*) AS users FROM v GROUP BY plan;",
    # 2. error_handling
    "bogus_arg": STREAM + OPS_T + "SELECT * FROM FROM_CHANGELOG(input => TABLE src, bogus_arg => 42, "
    "op_mapping => MAP['c, r', 'INSERT', 'ub', 'UPDATE_BEFORE', 'u', 'UPDATE_AFTER', 'd', 'DELETE']);",
    "error_handling_skip": STREAM + OPS_ALL + "SELECT * FROM FROM_CHANGELOG(input => TABLE src, "
    "op_mapping => MAP['c, r', 'INSERT', 'ub', 'UPDATE_BEFORE', 'u', 'UPDATE_AFTER', 'd', 'DELETE'], "
    "error_handling => 'SKIP');",
    "skip_view": STREAM + OPS_ALL + "CREATE TEMPORARY VIEW kept AS SELECT * FROM src "
    "WHERE op IN ('c', 'r', 'ub', 'u', 'd');\n"
    "SELECT * FROM FROM_CHANGELOG(input => TABLE kept, "
    "op_mapping => MAP['c, r', 'INSERT', 'ub', 'UPDATE_BEFORE', 'u', 'UPDATE_AFTER', 'd', 'DELETE']);",
    # 3. to-changelog from debezium without schema-include
    "dbz_no_schema_include": STREAM
    + table("src", INV_COLS.format(price="STRING", ts="BIGINT", date="BIGINT"), INV, "debezium-json")
    + "SELECT * FROM src;",
    # 4. Connect Decimal
    "dbz_decimal": STREAM
    + table(
        "src",
        INV_COLS.format(price="DECIMAL(10, 2)", ts="BIGINT", date="BIGINT"),
        INV,
        "debezium-json",
        ", 'debezium-json.schema-include' = 'true'",
    )
    + "SELECT * FROM src;",
    "dbz_decimal_as_bytes": STREAM
    + table(
        "src",
        INV_COLS.format(price="BYTES", ts="BIGINT", date="BIGINT"),
        INV,
        "debezium-json",
        ", 'debezium-json.schema-include' = 'true'",
    )
    + "SELECT * FROM src;",
    "dbz_raw": STREAM
    + table(
        "src",
        INV_COLS.format(price="STRING", ts="BIGINT", date="BIGINT"),
        INV,
        "debezium-json",
        ", 'debezium-json.schema-include' = 'true'",
    )
    + "SELECT * FROM src;",
    "dbz_timestamp_from_micros": STREAM
    + table(
        "src",
        INV_COLS.format(price="STRING", ts="TIMESTAMP(6)", date="DATE"),
        INV,
        "debezium-json",
        ", 'debezium-json.schema-include' = 'true'",
    )
    + "SELECT * FROM src;",
    "dbz_time_conversions": STREAM
    + table(
        "src",
        INV_COLS.format(price="STRING", ts="BIGINT", date="INT"),
        INV,
        "debezium-json",
        ", 'debezium-json.schema-include' = 'true'",
    )
    + "SELECT id, TIMESTAMPADD(MICROSECOND, CAST(MOD(updated_at, 1000000) AS INT), "
    "TIMESTAMPADD(SECOND, CAST(updated_at / 1000000 AS INT), TIMESTAMP '1970-01-01 00:00:00.000000')) AS ts, "
    "TIMESTAMPADD(DAY, launched, DATE '1970-01-01') AS d, "
    "CAST(TO_TIMESTAMP_LTZ(updated_at / 1000, 3) AS TIMESTAMP(3)) AS ts3 FROM src;",
    # 5. CSV header
    "csv_ignore_first_line": STREAM
    + table(
        "src",
        "id STRING, name STRING, op STRING",
        TMP / "h.csv",
        "csv",
        ", 'csv.ignore-first-line' = 'true', 'csv.null-literal' = ''",
    )
    + "SELECT * FROM src;",
    "csv_header_filter": STREAM
    + table("src", "id STRING, name STRING, op STRING", TMP / "h.csv", "csv")
    + "SELECT * FROM src WHERE NOT (id = 'id' AND name = 'name' AND op = 'op');",
    "csv_nulls": STREAM
    + table("src", "id STRING, name STRING, op STRING", TMP / "h.csv", "csv", ", 'csv.null-literal' = ''")
    + "SELECT id, name, name IS NULL AS is_null FROM src;",
    "csv_no_null_literal": STREAM
    + table("src", "id STRING, name STRING, op STRING", TMP / "h.csv", "csv")
    + "SELECT id, name, name IS NULL AS is_null, CHAR_LENGTH(name) AS len FROM src;",
    # 6. runtime mode
    "batch_mode": OPS_T + "SELECT * FROM FROM_CHANGELOG(input => TABLE src, op_mapping => MAP['c, r', 'INSERT', "
    "'ub', 'UPDATE_BEFORE', 'u', 'UPDATE_AFTER', 'd', 'DELETE']);",
    # TIMESTAMP_LTZ metadata through the filesystem connector
    "fs_format_metadata": STREAM
    + table(
        "src",
        INV_COLS.format(price="STRING", ts="BIGINT", date="BIGINT")
        + ", ingestion_timestamp TIMESTAMP_LTZ(3) METADATA FROM "
        "'value.ingestion-timestamp' VIRTUAL",
        INV,
        "debezium-json",
        ", 'debezium-json.schema-include' = 'true'",
    )
    + "SELECT * FROM src;",
    "fs_format_metadata_bare_key": STREAM
    + table(
        "src",
        INV_COLS.format(price="STRING", ts="BIGINT", date="BIGINT")
        + ", ingestion_timestamp TIMESTAMP_LTZ(3) METADATA FROM "
        "'ingestion-timestamp' VIRTUAL, tbl STRING METADATA FROM "
        "'source.table' VIRTUAL",
        INV,
        "debezium-json",
        ", 'debezium-json.schema-include' = 'true'",
    )
    + "SELECT id, ingestion_timestamp, tbl FROM src;",
    # values: DECIMAL vs DOUBLE
    "decimal_vs_double": STREAM
    + table("src", "id BIGINT, op STRING, name STRING", TMP / "ops-good.jsonl")
    + "SELECT CAST(25.5 AS DOUBLE) AS d, CAST(27.0 AS DOUBLE) AS d2, CAST(25.5 AS DECIMAL(10, 2)) AS dc, "
    "CAST(1.5 AS FLOAT) AS f, CAST(CAST(27.0 AS DOUBLE) AS STRING) AS dtext, CAST(CAST(25.5 AS DECIMAL(10, 2)) "
    "AS STRING) AS dctext FROM src LIMIT 1;",
}


def main(names: list[str]) -> None:
    for name in names or list(EXPERIMENTS):
        out = run_script(EXPERIMENTS[name], 1)
        print(f"## {name} ({out.seconds:.1f} s)")
        for kind, row in out.rows:
            print(f"  {kind} {row}")
        if out.error:
            print(f"  ERROR ({out.phase}): {out.error[:400]}")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
