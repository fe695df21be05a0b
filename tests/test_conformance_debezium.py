"""Debezium decoding against data no one on this team wrote: Flink's oracle and test files, and
real Debezium events from its documentation and test resources."""

from __future__ import annotations

import json
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFORMANCE, parse_jsonl, read_jsonl, read_parquet, run_cdc

ORACLE = CONFORMANCE / "flink-oracle"
FLINK_DBZ = CONFORMANCE / "flink-debezium"
EXAMPLES = CONFORMANCE / "debezium-examples" / "debezium-examples.jsonl"
DBZ_CASES = sorted(p.name for p in ORACLE.iterdir() if p.name.startswith("dbz_"))


def expected_rows(case: Path) -> list[dict[str, Any]]:
    return [{"op": e["kind"], **e["row"]} for e in read_jsonl(case / "expected.jsonl")]


@pytest.mark.parametrize("name", DBZ_CASES)
def test_flink_oracle_debezium_case(name: str) -> None:
    case = ORACLE / name
    args = json.loads((case / "args.json").read_text())
    result = run_cdc([args["command"], case / "input.jsonl", *args["flags"]])
    assert result.returncode == 0, result.stderr.decode()
    got = parse_jsonl(result.stdout)
    assert [list(r.items()) for r in got] == [list(r.items()) for r in expected_rows(case)]


def _flink_rows() -> list[tuple[str, int, str, str, float]]:
    """The 20 rows DebeziumJsonSerDeSchemaTest asserts, parsed from EXPECTED.md."""
    text = (FLINK_DBZ / "EXPECTED.md").read_text()
    block = text.split("### Expected changelog for the four schema-include/exclude files")[1].split("```")[1]
    rows = []
    for line in block.strip().splitlines():
        kind, rest = line[:2], line[3:-1]
        parts = rest.split(",")
        rows.append((kind, int(parts[0]), parts[1], ",".join(parts[2:-1]), float(parts[-1])))
    return rows


def _as_float32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


@pytest.mark.parametrize(
    "filename",
    [
        "debezium-data-schema-exclude.txt",
        "debezium-data-schema-include.txt",
        "debezium-postgres-data-schema-exclude.txt",
        "debezium-postgres-data-schema-include.txt",
    ],
)
def test_flink_debezium_files_give_the_20_asserted_rows(filename: str) -> None:
    result = run_cdc(["debezium-decode", FLINK_DBZ / filename])
    assert result.returncode == 0, result.stderr.decode()
    got = [(r["op"], r["id"], r["name"], r["description"], r["weight"]) for r in parse_jsonl(result.stdout)]
    want = _flink_rows()
    assert len(want) == 20
    # weight is FLOAT in Flink's table: compare as 32-bit floats
    assert [g[:4] for g in got] == [w[:4] for w in want]
    assert [_as_float32(g[4]) for g in got] == [_as_float32(w[4]) for w in want]


def test_replica_identity_default_fails_on_line_10_naming_replica_identity() -> None:
    result = run_cdc(["debezium-decode", FLINK_DBZ / "debezium-postgres-data-replica-identity.txt"])
    err = result.stderr.decode()
    assert result.returncode == 3
    assert "debezium-postgres-data-replica-identity.txt:10:" in err
    assert 'the "before" field of UPDATE message is null' in err and "REPLICA IDENTITY FULL" in err
    assert len(parse_jsonl(result.stdout)) == 9  # the nine snapshot rows before the first update
    assert "Traceback" not in err


def test_replica_identity_with_key_rebuilds_before_images(tmp_path: Path) -> None:
    rejects = tmp_path / "rejects.jsonl"
    result = run_cdc(
        [
            "debezium-decode",
            FLINK_DBZ / "debezium-postgres-data-replica-identity.txt",
            "--key",
            "id",
            "--on-error",
            "skip",
            "--rejects",
            rejects,
        ]
    )
    assert result.returncode == 0, result.stderr.decode()
    got = [
        (r["op"], r["id"], r["name"], r["description"], _as_float32(r["weight"])) for r in parse_jsonl(result.stdout)
    ]
    want = [(k, i, n, d, _as_float32(w)) for k, i, n, d, w in _flink_rows()[:19]]
    assert got == want
    rejected = read_jsonl(rejects)
    assert [r["line"] for r in rejected] == [16]
    assert "names no key" in rejected[0]["error"]


def example(n: int) -> bytes:
    return EXAMPLES.read_bytes().splitlines()[n - 1] + b"\n"


def decode_example(n: int, *flags: str) -> tuple[int, list[dict[str, Any]], str]:
    result = run_cdc(["debezium-decode", *flags], stdin=example(n))
    rows = [json.loads(line, parse_float=Decimal) for line in result.stdout.decode().splitlines()]
    return result.returncode, rows, result.stderr.decode()


ANNE = {"id": 1004, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}


@pytest.mark.parametrize("n", [1, 2, 17])
def test_examples_create_events(n: int) -> None:
    assert decode_example(n)[:2] == (0, [{"op": "+I", **ANNE}])


def test_example_6_postgres_create_with_modern_fields() -> None:
    assert decode_example(6)[:2] == (0, [{"op": "+I", **ANNE, "id": 1}])


def test_example_3_update_gives_before_then_after() -> None:
    code, rows, _ = decode_example(3)
    assert (code, rows) == (0, [{"op": "-U", **ANNE, "first_name": "Anne-Marie"}, {"op": "+U", **ANNE}])


def test_example_4_logical_types_are_decoded_exactly() -> None:
    code, rows, err = decode_example(4)
    assert code == 0, err
    (row,) = rows
    assert row["op"] == "+I"
    assert row["pt"] == Decimal("1.1")
    assert str(row["_numeric"]) == "12345.110"
    assert str(row["_fixed"]) == "123456789876543212345678987654321.110"  # a float would lose digits
    assert str(row["_big_decimal"]) == "2222222222222222300000001111.1234567890"
    assert row["_bigint_unsigned"] == 20000000000
    assert row["_date"] == "2023-03-23"
    assert row["_datetime"] == "2023-03-23T14:30:05"
    assert row["_datetime3"].startswith("2023-03-23T14:30:05.123")
    assert row["_datetime6"] == "2023-03-23T14:30:05.123456"
    assert row["_datetime_p"] == "2023-03-24T14:30:00"
    assert row["_timestamp"] == "2023-03-23T22:00:10.123456Z"  # ZonedTimestamp is kept
    assert row["_time"] == "10:13:23"
    assert row["_year"] == 2023
    assert row["_json"] == '{"a": "b"}'
    assert row["_enum"] == "value1" and row["_set"] == "a,b"


def test_example_4_parquet_columns_get_arrow_types(tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    assert run_cdc(["debezium-decode", "-o", out], stdin=example(4)).returncode == 0
    import pyarrow.parquet as pq

    types = {f.name: str(f.type) for f in pq.read_schema(out)}
    assert types["pt"] == "decimal128(2, 1)"
    assert types["_fixed"] == "decimal256(40, 3)"
    assert types["_date"] == "date32[day]"
    assert types["_datetime6"] == "timestamp[us]"
    assert types["_time"] == "time64[us]"
    assert read_parquet(out)[0]["_fixed"] == Decimal("123456789876543212345678987654321.110")


def test_example_4_raw_values_keep_what_was_sent() -> None:
    code, rows, _ = decode_example(4, "--raw-values")
    assert code == 0 and rows[0]["_date"] == 19439 and rows[0]["_datetime6"] == 1679581805123456


def test_example_5_partial_before_is_rejected_with_the_missing_columns() -> None:
    code, rows, err = decode_example(5)
    assert code == 3 and rows == []
    assert "<stdin>:1:" in err and "incomplete (missing id, name, description, weight)" in err


@pytest.mark.parametrize(
    ("n", "row"),
    [
        (
            7,
            {
                "op": "+I",
                "id": 101,
                "name": "scooter",
                "description": "Small 2-wheel scooter",
                "weight": Decimal("3.14"),
            },
        ),
        (
            9,
            {
                "op": "-D",
                "id": 111,
                "name": "scooter",
                "description": "Big 2-wheel scooter ",
                "weight": Decimal("5.17"),
            },
        ),
    ],
)
def test_examples_postgres_read_and_delete(n: int, row: dict[str, Any]) -> None:
    assert decode_example(n)[:2] == (0, [row])


def test_example_8_full_before_update() -> None:
    _, rows, _ = decode_example(8)
    assert [(r["op"], r["description"]) for r in rows] == [
        ("-U", "16oz carpenter's hammer"),
        ("+U", "18oz carpenter hammer"),
    ]


def test_example_10_null_before_names_replica_identity() -> None:
    code, _, err = decode_example(10)
    assert code == 3 and "REPLICA IDENTITY FULL" in err


def test_example_11_truncate_per_on_truncate() -> None:
    code, _, err = decode_example(11)
    assert code == 3 and "truncate" in err and "--on-truncate" in err
    assert decode_example(11, "--on-truncate", "skip")[:2] == (0, [])


@pytest.mark.parametrize("n", [12, 14, 15])
def test_examples_message_and_tombstones_are_skipped(n: int) -> None:
    assert decode_example(n)[:2] == (0, [])


def test_example_13_sql_server_base64_decimals_and_timestamp() -> None:
    code, rows, _ = decode_example(13)
    assert code == 0
    assert rows == [
        {
            "op": "-D",
            "empno": 11,
            "fname": "Yossi",
            "lname": "Mague",
            "job": "PFE",
            "mgr": 1,
            "hiredate": "2019-07-09T00:00:00",
            "sal": Decimal("200000.0000"),
            "comm": Decimal("10.0000"),
            "dept": 3,
        }
    ]


def test_example_16_mongodb_is_rejected_clearly() -> None:
    code, _, err = decode_example(16)
    assert code == 3 and "MongoDB" in err


def test_all_examples_in_one_stream_with_skip_account_for_every_line(tmp_path: Path) -> None:
    rejects = tmp_path / "rejects.jsonl"
    result = run_cdc(
        ["debezium-decode", EXAMPLES, "--on-error", "skip", "--rejects", rejects, "--stats", "--on-truncate", "skip"]
    )
    assert result.returncode == 0, result.stderr.decode()
    assert [r["line"] for r in read_jsonl(rejects)] == [5, 10, 16]
    assert b"read 17," in result.stderr and b"tombstones 2" in result.stderr and b"messages 1" in result.stderr
