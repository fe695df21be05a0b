"""``cdc aggregate`` through the command line: every Flink 2.3 oracle case row for row, the
nested count of counts in one pipe, and the user-facing errors."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from helpers import SAMPLES, parse_jsonl, run_cdc
from test_aggregate_core import CASES, ORACLE, assert_same_log, expected


def _log(stdout: bytes) -> list[tuple[str, dict[str, object]]]:
    rows = [json.loads(line, parse_float=Decimal) for line in stdout.decode().split("\n") if line]
    return [(row.pop("op"), row) for row in rows]


def _typed_input(case: Path, tmp_path: Path) -> Path:
    """The case's input as Flink read it: JSON lines, or — where its schema declares DECIMAL
    columns, which a JSON number does not say — Parquet with those decimal types."""
    schema = json.loads((case / "schema.json").read_text()) if (case / "schema.json").exists() else {}
    decimals = {c: t for c, t in schema.items() if t.startswith("DECIMAL")}
    if not decimals:
        return case / "input.jsonl"
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(line, parse_float=Decimal) for line in (case / "input.jsonl").read_text().splitlines()]
    fields = []
    for column in rows[0]:
        if column in decimals:
            precision, scale = (int(x) for x in decimals[column][len("DECIMAL(") : -1].split(","))
            fields.append(pa.field(column, pa.decimal128(precision, scale)))
        elif isinstance(rows[0][column], Decimal):
            rows = [{**r, column: None if r[column] is None else float(r[column])} for r in rows]
            fields.append(pa.field(column, pa.float64()))
        else:
            fields.append(pa.field(column, pa.array([r[column] for r in rows]).type))
    path = tmp_path / "input.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(fields)), path)
    return path


@pytest.mark.parametrize("name", CASES)
def test_the_command_gives_flinks_update_log(name: str, tmp_path: Path) -> None:
    case = ORACLE / name
    flags = json.loads((case / "args.json").read_text())["flags"]
    result = run_cdc(["aggregate", _typed_input(case, tmp_path), *flags])
    assert result.returncode == 0, result.stderr.decode()
    assert_same_log(_log(result.stdout), expected(case))


def test_a_count_of_counts_in_one_pipe_deletes_emptied_groups() -> None:
    counts = run_cdc(["aggregate", SAMPLES / "clicks-continued.jsonl", "--input-mode", "append", "-g", "user",
                      "-a", "cnt=COUNT(url)"])  # fmt: skip
    nested = run_cdc(["aggregate", "-g", "cnt", "-a", "freq=COUNT(*)"], stdin=counts.stdout)
    assert nested.returncode == 0, nested.stderr
    assert_same_log(_log(nested.stdout), expected(ORACLE / "continued_count_of_counts"))
    assert [kind for kind, _ in _log(nested.stdout)].count("-D") == 2


def test_the_result_table_is_the_group_by_of_the_table(tmp_path: Path) -> None:
    source = ORACLE / "random_changelog" / "input.jsonl"
    log = run_cdc(["aggregate", source, "-g", "user", "-a", "n=COUNT(*)"])
    assert log.returncode == 0, log.stderr
    table = parse_jsonl(run_cdc(["materialize", "--key", "user"], stdin=log.stdout).stdout)
    counted: dict[object, int] = {}
    for row in parse_jsonl(run_cdc(["materialize", source]).stdout):
        counted[row["user"]] = counted.get(row["user"], 0) + 1
    assert table and {r["user"]: r["n"] for r in table} == counted


@pytest.mark.parametrize(
    ("flags", "code", "message"),
    [
        (["-g", "nope", "-a", "n=COUNT(*)"], 3, "column 'nope' does not exist; the input has 'user', 'url', 'cTime'"),
        (["-g", "user", "-a", "s=SUM(url)"], 3, "SUM"),
        (["-g", "user", "-a", "n=COUNT("], 2, "--agg"),
        (["-g", "user", "--where", "url LIKE x"], 2, "--where"),
    ],
)
def test_bad_queries_say_what_is_wrong(flags: list[str], code: int, message: str) -> None:
    result = run_cdc(["aggregate", SAMPLES / "clicks.jsonl", "--input-mode", "append", *flags])
    assert result.returncode == code and message in result.stderr.decode(), result.stderr
    assert b"Traceback" not in result.stderr


def test_the_python_api_runs_the_same_aggregate_as_the_command() -> None:
    import cdc

    args = ["--input-mode", "append", "--group-by", "user", "--agg", "cnt=COUNT(url)", "--emit", "upsert"]
    command = parse_jsonl(run_cdc(["aggregate", SAMPLES / "clicks.jsonl", *args]).stdout)
    result = cdc.aggregate(
        SAMPLES / "clicks.jsonl", input_mode="append", group_by="user", agg=["cnt=COUNT(url)"], emit="upsert"
    )
    assert result.rows == command
    assert [r["op"] for r in command].count("-U") == 0 and len(command) > 2
