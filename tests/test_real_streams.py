"""Real Debezium streams of the classes real databases produce, held against the database's tables.

``tests/conformance/debezium-scenarios`` holds what Debezium 3.6 sent for PostgreSQL and MariaDB
while ``e2e/scenarios.py`` changed them (schema changes mid-stream, several tables and non-row
records in one file, Kafka dumps, edge values, placeholders of every type, an incremental snapshot,
flattened rows), and the database's own ``SELECT *`` at each checkpoint. Each test runs the
pipeline a user types, with one table picked by ``--table-include``, and compares its table with
the database's, value for value (``e2e/scenarios.table_diffs``: the same rules as the e2e run).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFORMANCE, REPO, cdc_executable, run_cdc

sys.path.insert(0, str(REPO / "e2e"))
import scenarios as S  # noqa: E402  (the e2e harness's comparison rules, standard library only)

DATA = CONFORMANCE / "debezium-scenarios"
DATABASES = ("postgres", "mariadb")


def _meta(db: str) -> dict[str, Any]:
    return json.loads((DATA / db / "scenario.json").read_text())


def _rows(data: bytes | str) -> list[dict[str, Any]]:
    text = data.decode() if isinstance(data, bytes) else data
    rows = [json.loads(line, parse_float=Decimal) for line in text.split("\n") if line.strip()]
    return [r for r in rows if "__cdc_schema" not in r]  # a carried schema line, if the stream has one


def _prefix(db: str, name: str, n: int, tmp: Path) -> Path:
    variant = name.split(".")[0]
    lines = _meta(db)["checkpoint_lines"][variant][str(n)][name.split(".", 1)[1]]
    src = DATA / db / name
    out = tmp / f"{db}-{name}-{n}"
    with open(src, "rb") as f, open(out, "wb") as g:
        for i, line in enumerate(f):
            if i >= lines:
                break
            g.write(line)
    return out


def _table(db: str, name: str, n: int) -> S.Table:
    meta = _meta(db)
    t = next(t for t in meta["tables"] if t["name"] == name)
    return S.Table(name, tuple(t["key"]), meta["types"][str(n)][name], t["decode_key"], t["edge"])


def _materialized(events: Path, t: S.Table, *decode_extra: str) -> list[dict[str, Any]]:
    """``cdc debezium-decode EVENTS --table-include T [--key K] | cdc materialize [--key K] --strict``."""
    key = ",".join(t.key)
    kind = S.kind_column_for(t)
    decode = ["debezium-decode", events, "--table-include", t.name, "--on-truncate", "delete", *kind, *decode_extra]
    if t.key and t.decode_key:
        decode += ["--key", key]
    first = run_cdc(decode)
    assert first.returncode == 0, first.stderr.decode()
    strict = [] if t.name in S.GONE else ["--strict"]  # a renamed column's old and new name differ
    second = run_cdc(["materialize", *(["--key", key] if t.key else []), *kind, *strict], stdin=first.stdout)
    assert second.returncode == 0, second.stderr.decode()
    return _rows(second.stdout)


def _expected(db: str, t: S.Table, n: int) -> list[dict[str, Any]]:
    return _rows((DATA / db / f"expected-{n}-{t.name}.jsonl").read_text())


def _final(db: str) -> int:
    return max(int(n) for n in _meta(db)["types"])


def _checkpoint_cases() -> list[Any]:
    return [
        pytest.param(db, t["name"], int(n), id=f"{db}-{t['name']}-checkpoint{n}")
        for db in DATABASES
        for t in _meta(db)["tables"]
        for n in _meta(db)["types"]
    ]


@pytest.mark.parametrize(("db", "table", "n"), _checkpoint_cases())
def test_every_table_at_every_checkpoint_is_the_databases(db: str, table: str, n: int, tmp_path: Path) -> None:
    t = _table(db, table, n)
    got = _materialized(_prefix(db, "precise.all.schema.jsonl", n, tmp_path), t)
    assert S.table_diffs(_expected(db, t, n), got, t, db, {"decimal": "precise"}) == []


def _final_cases(names: tuple[str, ...]) -> list[Any]:
    return [
        pytest.param(db, t["name"], name, id=f"{db}-{t['name']}-{name}")
        for db in DATABASES
        for t in _meta(db)["tables"]
        for name in names
        if (DATA / db / name).exists() and not (t["edge"] and not name.startswith("precise."))
    ]


@pytest.mark.parametrize(
    ("db", "table", "name"),
    _final_cases(
        (
            "precise.all.numeric.jsonl",
            "string.all.schema.jsonl",
            "double.all.numeric.jsonl",
            "precise.all.kcat.jsonl",
            "precise.all.console.txt",
        )
    ),
)
def test_every_decimal_setting_and_kafka_dump_gives_the_same_table(db: str, table: str, name: str) -> None:
    n = _final(db)
    t = _table(db, table, n)
    modes = {"decimal": name.split(".")[0] if name.split(".")[0] in ("string", "double") else "precise"}
    got = _materialized(DATA / db / name, t)
    assert S.table_diffs(_expected(db, t, n), got, t, db, modes) == []


@pytest.mark.parametrize("db", DATABASES)
def test_several_tables_read_by_a_stateful_command_without_a_filter_are_refused(db: str) -> None:
    events = DATA / db / "precise.all.schema.jsonl"
    done = run_cdc(["materialize", "-i", "debezium", events, "--key", "id", "--kind-column", "k"])
    assert done.returncode == 2
    message = done.stderr.decode()
    assert "--table-include" in message
    assert "more than one table" in message and any(t["name"] in message for t in _meta(db)["tables"])


@pytest.mark.parametrize(
    ("db", "table"),
    [
        pytest.param(db, t["name"], id=f"{db}-{t['name']}")
        for db in DATABASES
        for t in _meta(db)["tables"]
        if not t["edge"]
    ],
)
def test_the_parquet_at_the_end_of_the_pipe_holds_the_table_typed(db: str, table: str, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = _final(db)
    t = _table(db, table, n)
    key = ",".join(t.key)
    kind = S.kind_column_for(t)
    out = tmp_path / "t.parquet"
    decode = ["debezium-decode", DATA / db / "precise.all.schema.jsonl", "--table-include", t.name, *kind]
    decode += ["--key", key] if t.key and t.decode_key else []
    materialize = ["materialize", *(["--key", key] if t.key else []), *kind, "-o", out]
    # a real shell pipe, as the README's recipe: the stream carries its schema from one cdc to the next
    cdc = " ".join(map(shlex.quote, cdc_executable()))
    line = f"{cdc} {shlex.join(map(str, decode))} | {cdc} {shlex.join(map(str, materialize))}"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    table_ = pq.read_table(out)
    for column, kind in t.types.items():
        field = table_.schema.field(column)
        if kind == "decimal":
            assert pa.types.is_decimal(field.type), (column, field.type)
        if kind == "int":
            assert pa.types.is_integer(field.type), (column, field.type)
    rows = [{c: v for c, v in r.items() if t.types.get(c) not in ("bytes",)} for r in table_.to_pylist()]
    for r in rows:
        for c, v in list(r.items()):
            if isinstance(v, Decimal | int | str | type(None)):
                continue
            r[c] = json.loads(json.dumps(v, default=str), parse_float=Decimal)
    typed = S.Table(
        t.name, t.key, {c: k for c, k in t.types.items() if k not in ("bytes", "date", "time", "timestamp")}
    )
    trimmed = [{c: v for c, v in r.items() if c in typed.types or c in S.GONE.get(t.name, ())} for r in rows]
    want = [{c: v for c, v in r.items() if c in typed.types} for r in _expected(db, t, n)]
    assert S.table_diffs(want, trimmed, typed, db, {"decimal": "precise"}) == []


@pytest.mark.parametrize(
    ("db", "table"),
    [
        pytest.param(db, t["name"], id=f"{db}-{t['name']}")
        for db in DATABASES
        for t in _meta(db)["tables"]
        if t["key"] and not t["edge"] and (DATA / db / "unwrap.all.schema.jsonl").exists()
    ],
)
def test_flattened_rows_read_as_upserts_give_the_table(db: str, table: str) -> None:
    n = _final(db)
    t = _table(db, table, n)
    key = ",".join(t.key)
    kind = S.kind_column_for(t)
    first = run_cdc(["decode", DATA / db / "unwrap.all.schema.jsonl", "--key", key, "--table-include", t.name, *kind])
    assert first.returncode == 0, first.stderr.decode()
    second = run_cdc(["materialize", "--key", key, *kind], stdin=first.stdout)
    assert second.returncode == 0, second.stderr.decode()
    rows = [{c: v for c, v in r.items() if not c.startswith("__")} for r in _rows(second.stdout)]
    assert S.table_diffs(_expected(db, t, n), rows, t, db, {"decimal": "precise"}) == []
