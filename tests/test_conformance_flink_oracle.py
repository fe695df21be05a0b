"""Every FROM_CHANGELOG / TO_CHANGELOG case that Apache Flink 2.3 ran, through the real ``cdc``.

Inputs are given as JSONL, Parquet and CSV (converted here); output is read back from the same
format and must equal what Flink emitted row for row: same order, same kinds, same values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    CONFORMANCE,
    csv_text,
    read_csv,
    read_jsonl,
    read_parquet,
    run_cdc,
    write_csv,
    write_parquet,
)

ORACLE = CONFORMANCE / "flink-oracle"
CASES = sorted(p.name for p in ORACLE.iterdir() if p.name.startswith(("from_", "to_")))
FORMATS = ["jsonl", "parquet", "csv"]


def expected_rows(case: Path, command: str, kind_column: str = "op") -> list[dict[str, Any]]:
    rows = []
    for event in read_jsonl(case / "expected.jsonl"):
        if command == "from-changelog":
            rows.append({kind_column: event["kind"], **event["row"]})
        else:
            assert event["kind"] == "+I"  # TO_CHANGELOG output is append-only
            rows.append(event["row"])
    return rows


def materialize_input(case: Path, fmt: str, tmp: Path) -> Path:
    rows = read_jsonl(case / "input.jsonl")
    if fmt == "jsonl":
        return case / "input.jsonl"
    if fmt == "parquet":
        return write_parquet(tmp / "input.parquet", rows)
    return write_csv(tmp / "input.csv", rows)


def read_back(path: Path, fmt: str) -> list[dict[str, Any]]:
    if fmt == "jsonl":
        return read_jsonl(path)
    if fmt == "parquet":
        return read_parquet(path)
    return read_csv(path)


def as_text(rows: list[dict[str, Any]]) -> list[list[tuple[str, str | None]]]:
    return [[(k, csv_text(v)) for k, v in row.items()] for row in rows]


def test_the_oracle_is_present() -> None:
    assert len(CASES) >= 12, f"conformance data missing under {ORACLE}"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", CASES)
def test_flink_oracle_case(name: str, fmt: str, tmp_path: Path) -> None:
    case = ORACLE / name
    args = json.loads((case / "args.json").read_text())
    source = materialize_input(case, fmt, tmp_path)
    out = tmp_path / f"out.{fmt}"
    result = run_cdc([args["command"], source, *args["flags"], "-o", out])

    if (case / "expected_error.txt").exists():
        assert result.returncode == 3, result.stderr
        err = result.stderr.decode()
        assert "Traceback" not in err
        bad_row = next(
            i
            for i, r in enumerate(read_jsonl(case / "input.jsonl"))
            if r["op"] not in ("INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE")
        )
        where = {
            "jsonl": f"input.jsonl:{bad_row + 1}:",
            "csv": f"input.csv:{bad_row + 2}:",
            "parquet": f"input.parquet: row {bad_row + 1}:",
        }[fmt]
        assert where in err, err
        flink_says = (case / "expected_error.txt").read_text()
        assert ("NULL op code" in flink_says) == ("NULL op code" in err)
        assert not out.exists(), "a failed run must not leave an output file"
        return

    assert result.returncode == 0, result.stderr.decode()
    got = read_back(out, fmt)
    want = expected_rows(case, args["command"])
    if fmt == "csv":
        assert as_text(got) == as_text(want)
    else:
        assert [list(r.items()) for r in got] == [list(r.items()) for r in want]
