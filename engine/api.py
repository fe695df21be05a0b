"""The Python API: every command as a function, for scripts and for pytest checks.

Each function takes a source — a path, a list of paths, or rows (an iterable of dicts) — and
returns a ``Result``. Without ``output`` the rows come back in ``result.rows``; with it they are
written there (atomically) in its format, by the same engine the ``cdc`` command runs::

    import cdc

    table = cdc.materialize("changes.jsonl", key="id")
    assert table.rows == [{"id": 1, "name": "alice"}]
    assert not table.findings.total    # no change contradicted the table

    cdc.decode("dump.jsonl", output="changes.parquet")

Every function also takes the I/O keywords of ``IO``: ``output``, ``input_format``,
``output_format``, ``columns``, ``on_error`` and ``rejects``, as the command's flags. Bad input
raises ``cdc.InputError`` (with ``where``: file and line) unless ``on_error="skip"``, which counts
and sets the record aside (``result.skipped``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict, Unpack

from cdc.core.convert import from_changelog_spec, to_changelog_spec
from cdc.core.model import OnError, Row
from cdc.core.specs import (
    PLAIN,
    AggregateSpec,
    CopySpec,
    DecodeSpec,
    EncodeSpec,
    InspectSpec,
    MaterializeSpec,
    ReplaySpec,
)
from cdc.core.state import Policy
from cdc.engine.job import Job, Result
from cdc.engine.run import run_job
from cdc.engine.sinks import ListSink

Source = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Iterable[Row]
Columns = str | Sequence[str]


class IO(TypedDict, total=False):
    """Where rows come from and go to, and what a bad record does (the commands' I/O flags)."""

    output: str | os.PathLike[str] | None  # None: the rows come back in result.rows
    input_format: str | None
    output_format: str | None
    columns: Columns | None
    on_error: str  # fail | skip
    rejects: str | os.PathLike[str] | None


def _names(value: Columns | None) -> tuple[str, ...]:
    if value is None:
        return ()
    parts = value.split(",") if isinstance(value, str) else list(value)
    return tuple(dict.fromkeys(p.strip() for p in parts if p.strip()))


def _run(spec: Any, source: Source, io: IO, **limits: Any) -> Result:
    output = io.get("output")
    rejects = io.get("rejects")
    sink = ListSink() if output is None else None
    job = Job(
        spec,
        input_format=io.get("input_format"),
        output=os.fspath(output) if output is not None else "-",
        output_format=io.get("output_format"),
        columns=_names(io.get("columns")),
        on_error=OnError(io.get("on_error", "fail")),
        rejects=os.fspath(rejects) if rejects is not None else None,
        sink=sink,
        **limits,
    )
    if isinstance(source, str | os.PathLike):
        job = job.with_(inputs=(os.fspath(source),))
    elif isinstance(source, Sequence) and source and all(isinstance(s, str | os.PathLike) for s in source):
        job = job.with_(inputs=tuple(os.fspath(s) for s in source))  # type: ignore[arg-type]
    else:
        job = job.with_(rows=source)
    result = run_job(job)
    if sink is not None:
        result.rows = sink.rows
    return result


def read(source: Source, **io: Unpack[IO]) -> list[Row]:
    """The rows of files in any format cdc reads (JSONL, CSV/TSV, Parquet, compressed)."""
    rows = _run(CopySpec(PLAIN), source, io).rows
    assert rows is not None
    return rows


def from_changelog(
    source: Source,
    *,
    op: str | None = None,
    op_mapping: Sequence[str] = (),
    preset: str | None = None,
    key: Columns | None = None,
    drop: Sequence[str] = (),
    kind_column: str = "op",
    **io: Unpack[IO],
) -> Result:
    """Append-only rows with an op-code column → changelog rows (Flink FROM_CHANGELOG)."""
    return _run(from_changelog_spec(op, op_mapping, preset, _names(key), drop, kind_column), source, io)


def to_changelog(
    source: Source,
    *,
    op: str | None = None,
    op_mapping: Sequence[str] = (),
    preset: str | None = None,
    drop: Sequence[str] = (),
    kind_column: str = "op",
    **io: Unpack[IO],
) -> Result:
    """Changelog rows → append-only rows with an op column (Flink TO_CHANGELOG)."""
    return _run(to_changelog_spec(op, op_mapping, preset, drop, kind_column), source, io)


def decode(
    source: Source,
    *,
    envelope: str = "auto",
    key: Columns | None = None,
    metadata: Sequence[str] = (),
    schema_include: str = "auto",
    raw_values: bool = False,
    on_truncate: str = "fail",
    kind_column: str = "op",
    strict: bool = False,
    unavailable_placeholder: str | None = None,
    **io: Unpack[IO],
) -> Result:
    """Change events (JSON lines: Debezium, Canal, Maxwell or OGG; ``auto`` tells them apart from
    the first record) → changelog rows, as Flink's ``*-json`` formats read them. ``metadata``:
    ``"NAME[=COLUMN]"`` requests of the envelope's metadata (e.g. ``"source.table=tbl"``).
    ``strict``: fail at the first finding (Debezium: a stale before image, a placeholder no key
    rebuilds); else they are counted in ``result.counts.notes``. ``unavailable_placeholder``:
    Debezium's ``unavailable.value.placeholder`` when it is not the default."""
    from cdc.core.state import Policy

    spec = DecodeSpec(
        envelope,
        kind_column,
        schema_include,
        raw_values,
        tuple(metadata),
        on_truncate,
        _names(key),
        policy=Policy.fail if strict else Policy.warn,
        unavailable_placeholder=unavailable_placeholder,
    )
    return _run(spec, source, io)


def debezium_encode(
    source: Source,
    *,
    split_updates: bool = False,
    time_column: str | None = None,
    source_fields: dict[str, Any] | None = None,
    key: Columns | None = None,
    kind_column: str = "op",
    **io: Unpack[IO],
) -> Result:
    """Changelog rows → Debezium change events (one ``u`` event per update pair)."""
    fields = tuple((source_fields or {}).items())
    spec = EncodeSpec(kind_column, split_updates, time_column, fields, _names(key))
    return _run(spec, source, {"output_format": "jsonl" if io.get("output") else None, **io})


def materialize(
    source: Source,
    *,
    key: Columns | None = None,
    on_inconsistency: str = "warn",
    dedup: bool = False,
    as_of: Any = None,
    time_column: str | None = None,
    sort: bool = False,
    kind_column: str = "op",
    memory_limit: str | int | None = None,
    temp_dir: str | os.PathLike[str] | None = None,
    **io: Unpack[IO],
) -> Result:
    """Changelog rows → the table they describe; ``result.findings`` counts the changes that
    contradicted it (under ``on_inconsistency="fail"`` the first one raises). ``memory_limit``
    (bytes, or ``"8GB"``, ``"40%"``; default half the machine's memory): past it the state
    spills to ``temp_dir`` (default the system's temporary folder), as the CLI's flags say."""
    from cdc.engine.run import memory_limit as limit_of

    spec = MaterializeSpec(kind_column, _names(key), Policy(on_inconsistency), dedup, as_of, time_column, sort)
    return _run(
        spec,
        source,
        io,
        memory_limit=limit_of(memory_limit),
        temp_dir=os.fspath(temp_dir) if temp_dir is not None else None,
    )


def replay(
    source: Source,
    *,
    key: Columns,
    emit: str = "retract",
    input_mode: str = "changelog",
    delete_when: tuple[str, str] | None = None,
    keep_noop: bool = False,
    order_by: str | None = None,
    time_column: str | None = None,
    since: Any = None,
    until: Any = None,
    net: bool = False,
    kind_column: str = "op",
    **io: Unpack[IO],
) -> Result:
    """A changelog (or upsert/append rows) re-emitted through keyed state, as retract or upsert."""
    spec = ReplaySpec(
        _names(key), emit, keep_noop, order_by, time_column, since, until, net, input_mode, delete_when, kind_column
    )
    return _run(spec, source, io)


def aggregate(
    source: Source,
    *,
    group_by: Columns | None = None,
    agg: Columns,
    emit: str = "retract",
    where: str | None = None,
    input_mode: str = "changelog",
    key: Columns | None = None,
    delete_when: tuple[str, str] | None = None,
    on_inconsistency: str = "warn",
    kind_column: str = "op",
    **io: Unpack[IO],
) -> Result:
    """A continuous GROUP BY (Flink's group aggregate): ``agg`` as ``"cnt=COUNT(url)"`` (one or a
    list); the result is the update log Flink emits (``+I``, ``-U``/``+U``, ``-D``)."""
    from cdc.core.aggregate import AggregateQuery

    aggs = [agg] if isinstance(agg, str) else list(agg)
    query = AggregateQuery.parse(_names(group_by), aggs, emit, where, retractions=input_mode != "append")
    spec = AggregateSpec(query, input_mode, _names(key), delete_when, kind_column, Policy(on_inconsistency))
    return _run(spec, source, io)


def inspect(
    source: Source,
    *,
    key: Columns | None = None,
    time_column: str | None = None,
    kind_column: str = "op",
    **io: Unpack[IO],
) -> dict[str, Any]:
    """What kind of changelog this is: kinds, mode, counts, keys, findings (``cdc inspect --json``)."""
    result = _run(InspectSpec(kind_column, _names(key), time_column), source, io)
    sources = [os.fspath(source)] if isinstance(source, str | os.PathLike) else ["<rows>"]
    report: dict[str, Any] = result.detail.as_dict(sources)
    return report


__all__ = [
    "IO",
    "Result",
    "aggregate",
    "debezium_encode",
    "decode",
    "from_changelog",
    "inspect",
    "materialize",
    "read",
    "replay",
    "to_changelog",
]
