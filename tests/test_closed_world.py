"""A closed world: every spec field × every path, held to the row path or proven to fall back.

Each path declares, per command, the spec fields it implements (``COMMANDS`` in its module, read
by ``engine/plan.py``). For every field of every command's spec, and every path:

- the path declares the field: a job that sets it (to a value that is not its default, with the
  fields it needs) on inputs the path reads runs on that path and on the row path, and the two
  outcomes (rows, counts, rejects, the command's account, or the error) are the same — the
  differential machinery of ``tests/test_paths.py``;
- the path does not declare it: the planner never chooses the path for a job that sets it (and
  forcing the path is refused), so the job runs where the field is implemented.

The test of the test: a field added to a spec at run time (a dataclass made from the spec with
one more field, which no path has heard of) sends every job that sets it to the row path; and a
path that claims a field it ignores is caught — the differential helper reports the mismatch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import write_parquet
from test_paths import _outcome

from cdc.core.aggregate import AggregateQuery
from cdc.core.errors import UsageError
from cdc.core.kinds import RowKind
from cdc.core.mapping import DEFAULT_FROM_MAPPING, DEFAULT_TO_MAPPING
from cdc.core.model import OnError
from cdc.core.specs import (
    EVENTS,
    PLAIN,
    AggregateSpec,
    CopySpec,
    DecodeSpec,
    EncodeSpec,
    FromChangelogSpec,
    InspectSpec,
    MaterializeSpec,
    ReplaySpec,
    Tables,
    ToChangelogSpec,
)
from cdc.core.state import Policy
from cdc.engine.commands import EVERY, JOB_OPTIONS, Command, implements
from cdc.engine.inputs import resolve
from cdc.engine.job import Job
from cdc.engine.paths.native.kernel import available as kernel_built
from cdc.engine.plan import PATHS, choose
from cdc.engine.plan import Path as EnginePath
from cdc.engine.sinks import ListSink
from cdc.formats.base import CsvDialect
from cdc.formats.schema_registry import SchemaSources
from cdc.formats.stream_schema import StreamSchema

# Each command's spec with its required fields, and the fields each field needs to be set with.
BASE: dict[type, Callable[..., Any]] = {
    CopySpec: lambda **f: CopySpec(**f),
    FromChangelogSpec: lambda **f: FromChangelogSpec(**{"op_column": "code", "mapping": DEFAULT_FROM_MAPPING, **f}),
    ToChangelogSpec: lambda **f: ToChangelogSpec(**{"mapping": DEFAULT_TO_MAPPING, **f}),
    DecodeSpec: lambda **f: DecodeSpec(**f),
    EncodeSpec: lambda **f: EncodeSpec(**f),
    MaterializeSpec: lambda **f: MaterializeSpec(**f),
    InspectSpec: lambda **f: InspectSpec(**f),
    ReplaySpec: lambda **f: ReplaySpec(**{"key": ("id",), **f}),
    AggregateSpec: lambda **f: AggregateSpec(**{"query": _query(f), **f}),
}


def _query(fields: dict[str, Any]) -> AggregateQuery:
    mode = fields.get("input_mode", "changelog")
    return AggregateQuery.parse(("g",), ("n=COUNT(*)", "s=SUM(n1)"), retractions=mode != "append")


UPSERT_MAPPING = {"INSERT": RowKind.INSERT, "UPDATE_AFTER": RowKind.UPDATE_AFTER, "DELETE": RowKind.DELETE}

# A value for each field that is not its default, with the fields it needs to be set with.
VALUES: dict[tuple[type, str], dict[str, Any]] = {
    (CopySpec, "reads"): {"reads": "changelog"},
    (CopySpec, "kind_column"): {"kind_column": "kind", "reads": "changelog"},
    (CopySpec, "tables"): {"tables": Tables(table_include="orders"), "reads": "changelog"},
    (FromChangelogSpec, "op_column"): {},
    (FromChangelogSpec, "mapping"): {"mapping": {**DEFAULT_FROM_MAPPING, "upsert": RowKind.UPDATE_AFTER}},
    (FromChangelogSpec, "kind_column"): {"kind_column": "kind"},
    (FromChangelogSpec, "keys"): {"keys": ("g",), "mapping": UPSERT_MAPPING},
    (FromChangelogSpec, "drop"): {"drop": frozenset({RowKind.UPDATE_BEFORE})},
    (FromChangelogSpec, "commit_columns"): {"commit_columns": ("ts",)},
    (FromChangelogSpec, "pair_key"): {"commit_columns": ("ts",), "pair_key": ("id",)},
    (FromChangelogSpec, "drop_commit_columns"): {"commit_columns": ("ts",), "drop_commit_columns": True},
    (ToChangelogSpec, "mapping"): {"mapping": {**DEFAULT_TO_MAPPING, RowKind.INSERT: "new"}},
    (ToChangelogSpec, "op_column"): {"op_column": "code"},
    (ToChangelogSpec, "kind_column"): {"kind_column": "kind"},
    (ToChangelogSpec, "drop"): {"drop": frozenset({RowKind.UPDATE_BEFORE})},
    (DecodeSpec, "envelope"): {"envelope": "maxwell"},
    (DecodeSpec, "kind_column"): {"kind_column": "kind"},
    (DecodeSpec, "schema_include"): {"schema_include": "false"},
    (DecodeSpec, "raw_values"): {"raw_values": True},
    (DecodeSpec, "metadata"): {"metadata": ("ingestion-timestamp=event_ms",)},
    (DecodeSpec, "on_truncate"): {"on_truncate": "skip"},
    (DecodeSpec, "key"): {"key": ("id",)},
    (DecodeSpec, "database_include"): {"envelope": "maxwell", "database_include": "shop"},
    (DecodeSpec, "table_include"): {"envelope": "maxwell", "table_include": "orders"},
    (DecodeSpec, "bootstrap"): {"envelope": "maxwell", "bootstrap": "skip"},
    (DecodeSpec, "one_table"): {"one_table": True},
    (DecodeSpec, "container"): {"container": "kcat"},
    (ToChangelogSpec, "tables"): {"tables": Tables(table_include="orders")},
    (MaterializeSpec, "tables"): {"tables": Tables(table_include="orders")},
    (MaterializeSpec, "ignore_columns"): {"ignore_columns": ("ts",)},
    (InspectSpec, "tables"): {"tables": Tables(table_include="orders")},
    (InspectSpec, "ignore_columns"): {"ignore_columns": ("ts",)},
    (ReplaySpec, "tables"): {"tables": Tables(table_include="orders")},
    (ReplaySpec, "ignore_columns"): {"ignore_columns": ("ts",)},
    (AggregateSpec, "tables"): {"tables": Tables(table_include="orders")},
    (DecodeSpec, "policy"): {"policy": Policy.fail},
    (DecodeSpec, "unavailable_placeholder"): {"unavailable_placeholder": "__n/a__"},
    (DecodeSpec, "live_rows"): {"live_rows": True},
    (EncodeSpec, "kind_column"): {"kind_column": "kind"},
    (EncodeSpec, "split_updates"): {"split_updates": True},
    (EncodeSpec, "time_column"): {"time_column": "ts"},
    (EncodeSpec, "source"): {"source": (("name", "shop"),)},
    (EncodeSpec, "key"): {"key": ("id",)},
    (MaterializeSpec, "kind_column"): {"kind_column": "kind"},
    (MaterializeSpec, "key"): {"key": ("id",)},
    (MaterializeSpec, "policy"): {"policy": Policy.ignore},
    (MaterializeSpec, "dedup"): {"dedup": True},
    (MaterializeSpec, "as_of"): {"as_of": 3, "time_column": "ts"},
    (MaterializeSpec, "time_column"): {"as_of": 3, "time_column": "ts"},
    (MaterializeSpec, "sort"): {"sort": True, "key": ("id",)},
    (MaterializeSpec, "commit_columns"): {"commit_columns": ("ts",)},
    (InspectSpec, "kind_column"): {"kind_column": "kind"},
    (InspectSpec, "key"): {"key": ("id",)},
    (InspectSpec, "time_column"): {"time_column": "ts"},
    (InspectSpec, "commit_columns"): {"commit_columns": ("ts",)},
    (ReplaySpec, "key"): {},
    (ReplaySpec, "emit"): {"emit": "upsert"},
    (ReplaySpec, "keep_noop"): {"keep_noop": True},
    (ReplaySpec, "order_by"): {"order_by": "ts"},
    (ReplaySpec, "time_column"): {"time_column": "ts", "since": 2},
    (ReplaySpec, "since"): {"time_column": "ts", "since": 2},
    (ReplaySpec, "until"): {"time_column": "ts", "until": 4},
    (ReplaySpec, "net"): {"time_column": "ts", "since": 2, "until": 4, "net": True},
    (ReplaySpec, "input_mode"): {"input_mode": "upsert"},
    (ReplaySpec, "delete_when"): {"input_mode": "upsert", "delete_when": ("v", "gone")},
    (ReplaySpec, "kind_column"): {"kind_column": "kind"},
    (AggregateSpec, "query"): {},
    (AggregateSpec, "input_mode"): {"input_mode": "append"},
    (AggregateSpec, "key"): {"input_mode": "upsert", "key": ("id",)},
    (AggregateSpec, "delete_when"): {"input_mode": "upsert", "key": ("id",), "delete_when": ("v", "gone")},
    (AggregateSpec, "kind_column"): {"kind_column": "kind"},
    (AggregateSpec, "policy"): {"policy": Policy.ignore},
}

# Where a path needs more than the field to take a job at all (the state kernel's materialize
# keeps a key's table only with --dedup; the keyed kernel's is --key): the same field, with these.
WITH: dict[tuple[str, type], dict[str, Any]] = {
    ("state-kernel", MaterializeSpec): {"dedup": True},
    ("keyed-kernel", MaterializeSpec): {"key": ("id",)},
}

CHANGES = [  # changelog rows: a table's life (an insert, an update, a delete, a no-op update)
    {"op": "+I", "id": 1, "v": "a", "g": "x", "n1": 1, "ts": 1},
    {"op": "+I", "id": 2, "v": "b", "g": "y", "n1": 2, "ts": 2},
    {"op": "-U", "id": 1, "v": "a", "g": "x", "n1": 1, "ts": 3},
    {"op": "+U", "id": 1, "v": "c", "g": "x", "n1": 5, "ts": 3},
    {"op": "-D", "id": 2, "v": "b", "g": "y", "n1": 2, "ts": 4},
    {"op": "+I", "id": 3, "v": "d", "g": "x", "n1": 7, "ts": 5},
    {"op": "-U", "id": 3, "v": "d", "g": "x", "n1": 7, "ts": 6},
    {"op": "+U", "id": 3, "v": "d", "g": "x", "n1": 7, "ts": 6},
]
FROM_CODES = {"+I": "INSERT", "-U": "UPDATE_BEFORE", "+U": "UPDATE_AFTER", "-D": "DELETE"}
DEBEZIUM_OPS = {"+I": "c", "+U": "u", "-D": "d"}
MAXWELL_TYPES = {"+I": "insert", "+U": "update", "-D": "delete"}


def _change(op: str, id: int, v: str, ts: int, g: str = "x", n1: int = 1) -> dict[str, Any]:
    return {"op": op, "id": id, "v": v, "g": g, "n1": n1, "ts": ts}


# Where a field changes the answer only on more input: the changes its case appends.
MORE: dict[tuple[type, str], list[dict[str, Any]]] = {
    # one commit, two updates interleaved: paired by position, each pre-image meets the wrong post-image
    (FromChangelogSpec, "pair_key"): [
        _change("-U", 1, "c", 7, n1=5),
        _change("-U", 3, "d", 7, n1=7),
        _change("+U", 3, "e", 7),
        _change("+U", 1, "f", 7),
    ],
    (MaterializeSpec, "dedup"): [_change("+U", 3, "d", 6, n1=7)],  # the last change, delivered again
    (ReplaySpec, "keep_noop"): [_change("-U", 3, "d", 6, n1=7), _change("+U", 3, "d", 6, n1=7)],  # no change
    (MaterializeSpec, "sort"): [_change("+I", 0, "z", 7)],  # a key before the others, inserted last
    (ReplaySpec, "order_by"): [_change("-U", 1, "c", 3, n1=5), _change("+U", 1, "z", 2)],  # an older change
    (AggregateSpec, "policy"): [_change("-D", 9, "q", 7)],  # a row never inserted
    (EncodeSpec, "key"): [_change("-U", 1, "c", 7, n1=5), _change("+U", 4, "e", 7)],  # the key changes
}


def _schema_envelope(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each event in Debezium's ``{schema, payload}`` envelope (ts a Debezium Timestamp)."""
    row = [
        {"type": "int64", "optional": False, "field": "id"},
        {"type": "string", "optional": True, "field": "v"},
        {"type": "string", "optional": True, "field": "g"},
        {"type": "int64", "optional": True, "field": "n1"},
        {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "field": "ts"},
    ]
    image = {"type": "struct", "optional": True, "fields": row}
    fields = [{**image, "field": "before"}, {**image, "field": "after"}, {"type": "string", "field": "op"}]
    schema = {"type": "struct", "fields": [*fields, {"type": "int64", "optional": True, "field": "ts_ms"}]}
    return [{"schema": schema, "payload": e} for e in events]


def _key_only_befores(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """REPLICA IDENTITY DEFAULT: an update's and a delete's before image holds the key only."""
    return [{**e, "before": {"id": e["before"]["id"]}} if e.get("before") else e for e in events]


def _placeholder_in_before(text: str) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def tweak(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        update = next(e for e in events if e.get("op") == "u")
        return [*events, {**update, "before": {**update["after"], "v": text}, "after": {**update["after"], "v": "y"}}]

    return tweak


def _sourced(tables: tuple[str, ...]) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """Debezium events with their source table: the base's of ``tables[0]``, one more of each other."""

    def tweak(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = [{**e, "source": {"db": "shop", "table": tables[0]}} for e in events]
        insert = {"op": "c", "before": None, "after": _change("+I", 8, "w", 8), "ts_ms": 1008}
        del insert["after"]["op"]
        return out + [{**insert, "source": {"db": "shop", "table": t}} for t in tables[1:]]

    return tweak


def _other_maxwell(database: str, table: str) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def tweak(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [*events, {"database": database, "table": table, "type": "insert", "data": {"id": 8, "v": "w"}}]

    return tweak


def _reread(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A snapshot read, mid-stream, of a row already live (an incremental snapshot's)."""
    live = next(e for e in reversed(events) if e.get("op") == "c")
    return [*events, {**live, "op": "r", "source": {"snapshot": "incremental"}}]


def _truncated(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*events, {"op": "t", "before": None, "after": None, "ts_ms": 1009}]


# Where a field of decode changes the answer only on some events: how its case's are written.
EVENTS_OF: dict[tuple[type, str], Callable[[list[dict[str, Any]]], list[dict[str, Any]]]] = {
    (DecodeSpec, "schema_include"): _schema_envelope,
    (DecodeSpec, "raw_values"): _schema_envelope,
    (DecodeSpec, "on_truncate"): _truncated,
    (DecodeSpec, "key"): _key_only_befores,
    (DecodeSpec, "database_include"): _other_maxwell("other", "orders"),
    (DecodeSpec, "table_include"): _other_maxwell("shop", "items"),
    (DecodeSpec, "one_table"): _sourced(("orders", "items")),
    (DecodeSpec, "policy"): _placeholder_in_before("__debezium_unavailable_value"),
    (DecodeSpec, "unavailable_placeholder"): _placeholder_in_before("__n/a__"),
    (DecodeSpec, "live_rows"): _reread,
}
# Cases whose input is change events read as changelog rows (``-i debezium``).
AS_EVENTS = {(CopySpec, "reads"), (CopySpec, "kind_column")}


def _rows(spec: Any, case: tuple[type, str] | None = None) -> list[dict[str, Any]]:
    """Input rows for a job of ``spec``: changelog rows under its kind column, plain rows with
    op codes (from-changelog), plain rows (an input mode), or change events (decode); ``case``:
    the field whose case it is, whose input may hold more (``MORE``, ``EVENTS_OF``)."""
    if isinstance(spec, DecodeSpec) or case in AS_EVENTS:
        events = _events(spec if isinstance(spec, DecodeSpec) else DecodeSpec(kind_column=spec.kind_column))
        tweak = EVENTS_OF.get(case) if case is not None else None
        return tweak(events) if tweak is not None else events
    out = []
    changes = CHANGES
    if isinstance(spec, FromChangelogSpec):  # a change feed's commit: its post-image first
        changes = [*CHANGES[:-2], CHANGES[-1], CHANGES[-2]]
    changes = [*changes, *MORE.get(case, [])] if case is not None else changes
    for change in changes:
        row = {k: v for k, v in change.items() if k != "op"}
        if isinstance(spec, FromChangelogSpec):
            code = FROM_CODES[change["op"]]
            upsert = code == "UPDATE_AFTER" and "upsert" in spec.mapping
            if code in spec.mapping or upsert:  # an upsert mapping has no UPDATE_BEFORE
                out.append({spec.op_column: "upsert" if upsert else code, **row})
        elif spec.reads == PLAIN and not isinstance(spec, CopySpec):
            if change["op"] != "-U":
                out.append({**row, "v": "gone"} if change["op"] == "-D" else row)
        else:
            out.append({getattr(spec, "kind_column", "op"): change["op"], **row})
    return out


def _events(spec: DecodeSpec) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    before: dict[int, dict[str, Any]] = {}
    for change in CHANGES:
        if change["op"] == "-U":
            continue
        row = {k: v for k, v in change.items() if k != "op"}
        if spec.envelope == "maxwell":
            event: dict[str, Any] = {"database": "shop", "table": "orders", "type": MAXWELL_TYPES[change["op"]]}
            event["data"] = before[row["id"]] if change["op"] == "-D" else row
            if change["op"] == "+U":
                event["old"] = {"v": before[row["id"]]["v"]}
            out.append(event)
        else:
            old = before.get(row["id"]) if change["op"] != "+I" else None
            payload = {"op": DEBEZIUM_OPS[change["op"]], "before": old, "after": None if change["op"] == "-D" else row}
            payload["ts_ms"] = 1000 + row["ts"]
            out.append(payload)
        before[row["id"]] = row
    if spec.envelope == "maxwell":
        out.insert(0, {"database": "shop", "table": "orders", "type": "bootstrap-insert", "data": {"id": 9}})
    return out


# Each path: its input format and output file suffix (a command that writes events: JSON lines).
FORMATS = {
    "keyed-kernel": ("jsonl", ".jsonl"),
    "state-kernel": ("jsonl", ".jsonl"),
    "arrow": ("parquet", ".parquet"),
    "arrow-state": ("parquet", ".parquet"),
    "lines-arrow": ("jsonl", ".parquet"),
    "kernel-lines": ("jsonl", ".jsonl"),
    "lines": ("jsonl", ".jsonl"),
}
WRITES_EVENTS = (EncodeSpec,)


def _job(tmp: Path, path: str, spec: Any, bad: bool = False, case: tuple[type, str] | None = None) -> tuple[Job, Path]:
    """A job of ``spec`` on inputs ``path`` reads; ``bad``: with a bad record in them; ``case``:
    the field whose case it is (its input, ``_rows``)."""
    fmt, suffix = FORMATS[path]
    if spec.reads == EVENTS or case in AS_EVENTS:
        fmt = "jsonl"  # change events are JSON lines
    if isinstance(spec, WRITES_EVENTS):
        suffix = ".jsonl"
    rows = _rows(spec, case)
    if bad:  # a record whose kind, op code or event type is none: set aside or failed on
        marker = next(iter(rows[1]))
        rows.insert(2, {**rows[1], marker: "bogus"})
    source = tmp / f"in.{fmt}"
    if fmt == "parquet":
        write_parquet(source, rows)
    else:
        source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    out = tmp / f"out{suffix}"
    job = Job(spec, inputs=(str(source),), output=str(out))
    return (job.with_(input_format="debezium") if case in AS_EVENTS else job), out


@pytest.fixture(autouse=True)
def _one_time() -> Any:
    """ts_ms without a time column is the time of the run: one time for every run."""
    import datetime as dt
    from unittest import mock

    # pyarrow's extension modules, loaded before datetime is patched: each keeps the real type
    import pyarrow._compute
    import pyarrow._csv
    import pyarrow._json
    import pyarrow.dataset
    import pyarrow.parquet  # noqa: F401

    class Frozen(dt.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=tz)

    with mock.patch("cdc.formats.debezium.dt.datetime", Frozen):
        yield


def _cases() -> list[tuple[str, type, str]]:
    return [(path, spec_type, f.name) for path in FORMATS for spec_type in BASE for f in dataclasses.fields(spec_type)]


def _declared(path: EnginePath, spec_type: type, name: str) -> bool:
    command = path.commands.get(spec_type)
    return command is not None and (command.fields is EVERY or name in command.fields)


def test_every_field_of_every_spec_has_a_case() -> None:
    """A field added to a spec needs a value here: the walk below then covers it on every path."""
    missing = [
        (spec_type.__name__, f.name)
        for spec_type in BASE
        for f in dataclasses.fields(spec_type)
        if (spec_type, f.name) not in VALUES
    ]
    assert not missing


@pytest.mark.parametrize(("path_name", "spec_type", "name"), _cases())
def test_a_field_runs_where_it_is_implemented(tmp_path: Path, path_name: str, spec_type: type, name: str) -> None:
    path = PATHS[path_name]()
    fields = VALUES[(spec_type, name)]
    spec = BASE[spec_type](**fields)
    if not _declared(path, spec_type, name):
        job, _ = _job(tmp_path, path_name, spec, case=(spec_type, name))
        resolved = resolve(job)
        assert name in _set_fields(resolved.spec)
        assert not path.accepts(resolved), f"{path_name} takes {spec_type.__name__}.{name}, which it does not declare"
        assert choose(resolved).name != path_name
        with pytest.raises(UsageError, match="does not take this job"):
            choose(resolved, path_name)
        return
    extra = WITH.get((path_name, spec_type), {})
    spec = BASE[spec_type](**{**extra, **fields})
    job, out = _job(tmp_path, path_name, spec, case=(spec_type, name))
    resolved = resolve(job)
    reason = path.declines(resolved)
    if reason is not None:  # declared, but not this value (the kernels: no commit columns): elsewhere
        assert choose(resolved).name != path_name
        return
    _same_as_rows(job, path_name, out, fails=(spec_type, name) in FAILS)


# Cases whose answer is an error, by design: the field's value is what fails the run (the
# schema envelope not read as one; --strict at the first finding), at the same line on every path.
FAILS = {(DecodeSpec, "schema_include"), (DecodeSpec, "policy")}


def _set_fields(spec: Any) -> list[str]:
    from cdc.engine.commands import set_fields

    return set_fields(spec)


def _same_as_rows(job: Job, path_name: str, out: Path, fails: bool = False) -> None:
    reference = _outcome(job, "rows", out, None)
    assert (reference[0] == "error") == fails, reference  # a case that runs: not two paths failing alike
    assert _outcome(job, path_name, out, None) == reference, path_name


# The job's options a path must declare to be given them (``commands.JOB_OPTIONS``).
OPTIONS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "columns": lambda tmp: {"columns": ("v", "id")},
    "on_error": lambda tmp: {"on_error": OnError.skip},
    "rejects": lambda tmp: {"on_error": OnError.skip, "rejects": str(tmp / "rejects.jsonl")},
    "sink": lambda tmp: {"sink": ListSink()},
    "rows": lambda tmp: {"rows": [{"op": "+I", "id": 1, "v": "a"}]},
    # read and written by the row path only: every fast path declines them
    "stream_schema": lambda tmp: {"stream_schema": StreamSchema({"ts": "timestamp"}, ["ts"])},
    "schema_line": lambda tmp: {"schema_line": True},
    "container": lambda tmp: {"container": "kcat"},
    "csv": lambda tmp: {"csv": CsvDialect(delimiter=";")},
    "arrays": lambda tmp: {"arrays": True},
    "avro": lambda tmp: {"avro": SchemaSources()},  # Debezium Avro: the row path's reader and writer
}


def _option_cases() -> list[tuple[str, type, str]]:
    return [
        (path, spec_type, option)
        for path in FORMATS
        for spec_type in BASE
        if spec_type in PATHS[path]().commands
        for option in OPTIONS
    ]


def test_every_job_option_has_a_case() -> None:
    assert set(OPTIONS) == set(JOB_OPTIONS)


@pytest.mark.parametrize(("path_name", "spec_type", "option"), _option_cases())
def test_a_job_option_runs_where_it_is_honoured(tmp_path: Path, path_name: str, spec_type: type, option: str) -> None:
    path = PATHS[path_name]()
    command = path.commands[spec_type]
    spec = BASE[spec_type](**WITH.get((path_name, spec_type), {}))
    values = OPTIONS[option](tmp_path)
    job, out = _job(tmp_path, path_name, spec, bad="on_error" in values)
    job = job.with_(**values)
    resolved = resolve(job)
    if command.job is not EVERY and option not in command.job:
        assert not path.accepts(resolved), f"{path_name} takes the job option {option}, which it does not declare"
        assert choose(resolved).name != path_name
        return
    if path.declines(resolved) is not None:  # declared, but not for this job's formats or values
        assert choose(resolved).name != path_name
        return
    if option == "sink":
        assert _collected(job, path_name) == _collected(job, "rows")
        return
    rejects = Path(values["rejects"]) if "rejects" in values else None
    reference = _outcome(job, "rows", out, rejects, raw=True)
    assert reference[0] != "error", reference
    assert _outcome(job, path_name, out, rejects, raw=True) == reference, path_name


def _collected(job: Job, path_name: str) -> tuple[Any, ...]:
    from cdc.engine.run import run_job

    sink = ListSink()
    result = run_job(job.with_(sink=sink), path=path_name)
    return sink.rows, dict(result.counts.by_kind), result.read


# -- the test of the test ----------------------------------------------------------------------


def test_a_field_no_path_has_heard_of_sends_the_job_to_the_row_path(tmp_path: Path) -> None:
    # A spec with one more field, as a new flag would add it: declared by no path.
    Grown = dataclasses.make_dataclass(
        "GrownMaterializeSpec",
        [("brand_new", bool, dataclasses.field(default=False))],
        bases=(MaterializeSpec,),
        frozen=True,
    )
    kernels = ("keyed-kernel", "state-kernel") if kernel_built() else ()  # no kernel without a compiler
    for path_name in (*kernels, "arrow-state"):
        fields = {"key": ("id",)} if path_name != "state-kernel" else {}
        job, _ = _job(tmp_path, path_name, Grown(**fields))
        assert choose(resolve(job)).name == path_name  # at its default, the fast path runs it
        job, _ = _job(tmp_path, path_name, Grown(**fields, brand_new=True))
        resolved = resolve(job)
        assert not PATHS[path_name]().accepts(resolved)
        assert choose(resolved).name == "rows"


def test_a_path_that_claims_a_field_it_ignores_is_caught(tmp_path: Path) -> None:
    # A fake fast path: the lines path's from-changelog, claiming ``drop`` but never dropping.
    from cdc.engine.paths import lines

    convert = lines.COMMANDS[FromChangelogSpec].do

    def ignoring_drop(job: Job, counts: Any, with_kernel: bool) -> Any:
        return convert(job.with_(spec=dataclasses.replace(job.spec, drop=frozenset())), counts, False)

    fake = {FromChangelogSpec: implements(ignoring_drop, *lines.FROM_CHANGELOG)}
    spec = BASE[FromChangelogSpec](**VALUES[(FromChangelogSpec, "drop")])
    job, out = _job(tmp_path, "lines", spec)
    real = lines.COMMANDS
    try:
        lines.COMMANDS = fake  # type: ignore[misc]
        assert PATHS["lines"]().accepts(resolve(job))  # it claims the field: the planner believes it
        with pytest.raises(AssertionError, match="lines"):
            _same_as_rows(job, "lines", out)
    finally:
        lines.COMMANDS = real  # type: ignore[misc]
    _same_as_rows(job, "lines", out)  # the real one holds


def test_the_row_path_declares_every_field_of_every_command() -> None:
    from cdc.engine.paths import rows

    for spec_type in BASE:
        command: Command | None = rows.COMMANDS.get(spec_type)
        assert command is not None and command.fields is EVERY and command.job is EVERY


# -- the hand-over to the row path's rules: one mechanism, always shown --------------------------


@pytest.mark.parametrize(
    ("fmt", "fast"), [*([("jsonl", "keyed-kernel")] if kernel_built() else []), ("parquet", "arrow-state")]
)
def test_a_hand_over_shows_in_the_result_and_with_verbose(tmp_path: Path, fmt: str, fast: str) -> None:
    from helpers import invoke

    from cdc.engine.api import materialize

    rows = [{"op": "+I", "id": 1, "v": "a"}, {"op": "+I", "id": 1, "v": "b"}, {"op": "+I", "id": 2, "v": "c"}]
    source = tmp_path / f"in.{fmt}"
    if fmt == "parquet":
        write_parquet(source, rows)
    else:
        source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    clean = tmp_path / f"clean.{fmt}"
    if fmt == "parquet":
        write_parquet(clean, rows[:1])
    else:
        clean.write_bytes(orjson.dumps(rows[0]) + b"\n")
    assert materialize(str(clean), key="id").path == fast  # no finding: the fast path to the end
    result = materialize(str(source), key="id")  # an insert of an existing key: a finding
    assert result.path == f"{fast}→rows" and result.handover and "finding" in result.handover
    assert [r["v"] for r in result.rows or []] == ["b", "c"]
    shown = invoke(["materialize", "--key", "id", str(source), "--verbose", "-o", str(tmp_path / f"out.{fmt}")])
    assert shown.exit_code == 0
    assert f"path {fast}→rows (handed over: " in shown.stderr
    quiet = invoke(["materialize", "--key", "id", str(source), "-o", str(tmp_path / f"quiet.{fmt}")])
    assert "path " not in quiet.stderr


# -- the row path is held to every field: each field's case changes its answer ------------------

# A required field (no default) is compared with another value of it, as is a field whose case
# is the base spec itself.
BASELINE: dict[tuple[type, str], dict[str, Any]] = {
    (FromChangelogSpec, "op_column"): {"op_column": "v"},
    (ReplaySpec, "key"): {"key": ("g",)},
    (AggregateSpec, "query"): {"query": AggregateQuery.parse(("id",), ("n=COUNT(*)",), retractions=True)},
}


def _without(spec_type: type, name: str) -> Any:
    """The spec of ``name``'s case with ``name`` at its default (or at its ``BASELINE`` value)."""
    fields = {k: v for k, v in VALUES[(spec_type, name)].items() if k != name}
    return BASE[spec_type](**{**fields, **BASELINE.get((spec_type, name), {})})


def _field_cases() -> list[tuple[type, str]]:
    return [(spec_type, f.name) for spec_type in BASE for f in dataclasses.fields(spec_type)]


# A field no input file can show: the answer is the same without it (and this says why).
SAME_ON_A_FILE = {
    (DecodeSpec, "container"): "a named file's container is told from its first record, as --input-format names it; "
    "only stdin that cannot be read ahead needs it named",
}


@pytest.mark.parametrize(("spec_type", "name"), _field_cases())
def test_every_fields_case_changes_the_row_paths_answer(tmp_path: Path, spec_type: type, name: str) -> None:
    """A case in which the field makes no difference holds no path to it: the walk above would
    pass for a path that ignores the field."""
    job, out = _job(tmp_path, "lines", BASE[spec_type](**VALUES[(spec_type, name)]), case=(spec_type, name))
    with_field = _outcome(job, "rows", out, None)
    try:
        without = _outcome(job.with_(spec=_without(spec_type, name)), "rows", out, None)
    except UsageError as err:  # the other fields of the case need this one (--time-column: --as-of)
        without = ("error", str(err), err.hint)
    if (spec_type, name) in SAME_ON_A_FILE:
        assert with_field == without
        return
    assert with_field != without, f"{spec_type.__name__}.{name}: its case gives the row path's answer without it"


# -- the Flink script: the same closed world (flink/commands.py) ----------------------------------

GATEWAY = "http://127.0.0.1:9"  # never reached: a refusal comes before anything is sent


def _refused_by_the_table(outcome: tuple[Any, ...]) -> bool:
    return outcome[0] == "refused" and outcome[1].startswith(("--print-sql: ", "--on-flink: "))


def _script_cases() -> list[tuple[type, str]]:
    from cdc.flink.commands import SCRIPTS

    return [case for case in _field_cases() if case[0] in SCRIPTS]


# Where the script treats another value of a field otherwise than its default (the row path's
# case is one whose rows differ; a script may refuse the value, or write the same rows for it).
SCRIPT_VALUES: dict[tuple[type, str], dict[str, Any]] = {
    (DecodeSpec, "on_truncate"): {"on_truncate": "delete"},
    (MaterializeSpec, "policy"): {"policy": Policy.fail},
    (AggregateSpec, "policy"): {"policy": Policy.fail},
    (EncodeSpec, "kind_column"): {"kind_column": "kind", "split_updates": True},  # Flink's form of an update
    (EncodeSpec, "key"): {"key": ("id",), "split_updates": True},
}
# A command whose script needs a sink (debezium-encode writes events).
SQL: dict[type, dict[str, Any]] = {EncodeSpec: {"sql_sink": "filesystem", "sink_path": "/tmp/cdc-events"}}


def _script(job: Job, cluster: bool = False) -> tuple[Any, ...]:
    """What ``--print-sql`` (``cluster``: ``--on-flink``) makes of ``job``: the script with what
    the engine writes the cluster's rows by, or the refusal."""
    from cdc.engine.scripts import script_of

    try:
        made = script_of(job, SQL.get(type(job.spec), {}), cluster)
    except UsageError as err:
        return ("refused", str(err), err.hint)
    return ("script", str(made), made.shape, made.keys, made.kind_column, made.sort)


@pytest.mark.parametrize(("spec_type", "name"), _script_cases())
def test_a_field_is_scripted_where_it_is_declared(tmp_path: Path, spec_type: type, name: str) -> None:
    from cdc.flink.commands import SCRIPTS, option_of

    entry = SCRIPTS[spec_type]
    case = (spec_type, name)
    job, _ = _job(tmp_path, "lines", BASE[spec_type](**{**VALUES[case], **SCRIPT_VALUES.get(case, {})}), case=case)
    for cluster in (False, True):
        made = _script(job, cluster)
        if name in entry.fields or (cluster and spec_type not in SQL and name in entry.cluster):
            _scripted(job, spec_type, name, cluster)
        else:  # refused by the table, naming the option, before the input is read
            assert _refused_by_the_table(made), (spec_type.__name__, name, cluster, made[:2])
            assert option_of(spec_type, name) in made[1]


def _scripted(job: Job, spec_type: type, name: str, cluster: bool) -> None:
    """A declared field is written: the script (or the builder's refusal) is not the one without it."""
    made = _script(job, cluster)
    assert not _refused_by_the_table(made), made[1]
    try:
        without = _without(spec_type, name)
    except UsageError:  # the case's other fields need this one: it is read
        return
    assert made != _script(job.with_(spec=without), cluster), f"the script is the same without {name}"


def test_read_has_no_script() -> None:
    from cdc.flink.commands import SCRIPTS

    assert set(BASE) - set(SCRIPTS) == {CopySpec}  # cdc.read: no --print-sql


# The job options as a script job sets them (an input file: ``rows`` is the API's refusal).
SCRIPT_OPTIONS = {name: make for name, make in OPTIONS.items() if name != "rows"}


def _script_option_cases() -> list[tuple[type, str]]:
    from cdc.flink.commands import SCRIPTS

    return [(spec_type, option) for spec_type in SCRIPTS for option in SCRIPT_OPTIONS]


@pytest.mark.parametrize(("spec_type", "option"), _script_option_cases())
def test_a_job_option_is_scripted_where_it_is_declared(tmp_path: Path, spec_type: type, option: str) -> None:
    from cdc.flink.commands import SCRIPTS, option_of

    entry = SCRIPTS[spec_type]
    values = SCRIPT_OPTIONS[option](tmp_path)
    job, _ = _job(tmp_path, "lines", BASE[spec_type](), bad="on_error" in values)
    job = job.with_(**values)
    for cluster in (False, True):
        made = _script(job, cluster)
        writes_here = cluster and spec_type not in SQL  # a --sql-sink keeps the rows on the cluster's side
        if option in entry.job or (writes_here and option in entry.cluster):
            assert not _refused_by_the_table(made), made[1]
        else:
            assert _refused_by_the_table(made), (spec_type.__name__, option, cluster, made[:2])
            assert option_of(spec_type, option) in made[1]


# -- the test of the test, for the script and for the job's options ------------------------------


def test_a_field_no_builder_has_heard_of_is_refused_naming_its_option(tmp_path: Path) -> None:
    from unittest import mock

    from cdc.engine.api import _IO

    Grown = dataclasses.make_dataclass(
        "GrownFromChangelogSpec",
        [("new_flag", bool, dataclasses.field(default=False))],
        bases=(FromChangelogSpec,),
        frozen=True,
    )
    job, _ = _job(tmp_path, "lines", Grown(op_column="code", mapping=DEFAULT_FROM_MAPPING))
    assert _script(job)[0] == "script"  # at its default, the script is made
    job = job.with_(spec=Grown(op_column="code", mapping=DEFAULT_FROM_MAPPING, new_flag=True))
    for cluster in (False, True):
        made = _script(job, cluster)
        assert _refused_by_the_table(made) and "--new-flag is not written into the Flink script" in made[1]
    with mock.patch("cdc.flink.on_flink.Gateway", side_effect=AssertionError("sent")):  # refused before sending
        for flags in ({"print_sql": True}, {"on_flink": GATEWAY}):
            io = _IO.of({"source": job.inputs[0], **flags})
            with pytest.raises(UsageError, match="--new-flag"):
                io.flink_sql(job.spec)


def test_a_builder_that_claims_a_field_it_ignores_is_caught(tmp_path: Path) -> None:
    # debezium-encode's builder never writes --time-column (Flink's debezium-json writes no ts_ms)
    from unittest import mock

    from cdc.flink import commands

    claiming = dataclasses.replace(commands.SCRIPTS[EncodeSpec], fields=frozenset(EncodeSpec.__dataclass_fields__))
    case = (EncodeSpec, "time_column")
    job, _ = _job(tmp_path, "lines", BASE[EncodeSpec](**VALUES[case]), case=case)
    job = job.with_(output=str(tmp_path / "events.jsonl"))
    with mock.patch.dict(commands.SCRIPTS, {EncodeSpec: claiming}):
        assert not _refused_by_the_table(_script(job))  # it claims the field: the check believes it
        with pytest.raises(AssertionError, match="the script is the same without"):
            _scripted(job, EncodeSpec, "time_column", False)
    assert _refused_by_the_table(_script(job))  # the real table does not claim it


def test_a_row_path_that_ignores_a_field_is_caught(tmp_path: Path) -> None:
    from unittest import mock

    from cdc.engine.paths import rows

    command = rows.COMMANDS[FromChangelogSpec]

    def ignoring_drop(spec: Any, *args: Any) -> Any:
        return command.do(dataclasses.replace(spec, drop=frozenset()), *args)

    ignoring = {FromChangelogSpec: dataclasses.replace(command, do=ignoring_drop)}
    with mock.patch.dict(rows.COMMANDS, ignoring), pytest.raises(AssertionError, match="without it"):
        test_every_fields_case_changes_the_row_paths_answer(tmp_path, FromChangelogSpec, "drop")
    test_every_fields_case_changes_the_row_paths_answer(tmp_path, FromChangelogSpec, "drop")


def test_the_job_options_are_closed_by_default(tmp_path: Path) -> None:
    from cdc.engine.commands import EVERY_PATH_READS, RUNNER_READS, set_options

    lists = [EVERY_PATH_READS, RUNNER_READS, JOB_OPTIONS]
    assert sorted(f.name for f in dataclasses.fields(Job)) == sorted(name for names in lists for name in names)
    # a Job field no list names yet is an option no fast path and no script declares
    Grown = dataclasses.make_dataclass(
        "GrownJob", [("brand_new", bool, dataclasses.field(default=False))], bases=(Job,), frozen=True
    )
    job, _ = _job(tmp_path, "lines", BASE[FromChangelogSpec]())
    grown = Grown(**{f.name: getattr(job, f.name) for f in dataclasses.fields(Job)}, brand_new=True)
    assert set_options(grown) == ["brand_new"]
    resolved = resolve(grown)
    assert choose(resolved).name == "rows"
    for name in FORMATS:
        assert not PATHS[name]().accepts(resolved)
    made = _script(grown)
    assert _refused_by_the_table(made) and "--brand-new" in made[1]
