"""The Python API: every command as a function, for scripts, notebooks and pytest checks.

Each function takes a source — a path, a list of paths, or rows (an iterable of dicts) — and
keyword-only options named as the command's flags (``--on-inconsistency`` → ``on_inconsistency``);
an unknown keyword is a ``TypeError``. It returns a ``Result``: without ``output`` the rows come
back in ``result.rows``; with a path they are written there (atomically) in its format, by the same
engine the ``cdc`` command runs::

    import cdc

    table = cdc.materialize("changes.jsonl", key="id")
    assert table.rows == [{"id": 1, "name": "alice"}]
    assert not table.findings.total    # no change contradicted the table

    cdc.materialize("changes.jsonl", key="id", expect="expected.csv").check()  # ExpectationFailed
    cdc.decode("dump.jsonl", output="changes.parquet")

These functions are the one place a command's spec (``core/specs.py``) is built: the ``cdc``
commands map their flags to one call here and render the result.

The keywords every function shares (as the commands' flags):

- ``output``: a path (``"-"`` is stdout), or an object with ``write_rows(rows)`` and ``close()``
  that receives the rows; None (the default) collects them in ``result.rows``;
- ``input_format``, ``output_format``: ``jsonl``, ``csv``, ``tsv``, ``parquet`` … (default: by suffix);
- ``columns``: write these columns, in this order (``"a,b"`` or a list);
- ``on_error``: ``"fail"`` (bad input raises ``cdc.InputError`` with ``where``: file and line) or
  ``"skip"`` (counted in ``result.skipped``, each written to ``rejects`` when given);
- ``progress``: an object told how much input there is and has been read (``start(total)``,
  ``advance(n)``; the command's progress bar);
- ``print_sql=True``: make the Flink SQL script that does the same job (``result.sql``) and run
  nothing; ``flink_version``, ``sql_source``, ``sql_sink``, ``topic``, ``sink_topic``,
  ``bootstrap_servers``, ``sink_path`` say for which Flink and where it reads and writes;
- ``on_flink="http://host:8083"``: run that script on a Flink cluster through its SQL Gateway and
  write (or collect) its rows as the local run does (``flink.on_flink``); the cluster reads the
  input itself (a local path only when the gateway is on this machine, else ``file:///…`` on a
  shared file system). The URL's query parameters are session settings.

Names (``key``, ``group_by``, ``columns`` …) are a comma list (``"a,b"``) or a list of names;
``op_mapping`` is a dict (``{"c, r": "INSERT", "d": "DELETE"}``), a ``"CODES=KIND"`` text or a list
of them, as ``--op-mapping`` takes them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cdc.core.convert import from_changelog_spec, to_changelog_spec
from cdc.core.errors import UsageError
from cdc.core.model import OnError, Row
from cdc.core.specs import (
    PLAIN,
    CopySpec,
    DecodeSpec,
    EncodeSpec,
    InspectSpec,
    MaterializeSpec,
    ReplaySpec,
)
from cdc.core.state import Policy
from cdc.engine.job import Job, Progress, Result, RowSink
from cdc.engine.run import run_job

if TYPE_CHECKING:
    from cdc.core.replay import KeyedReplay
    from cdc.engine.sinks import ListSink

Source = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Iterable[Row]
Names = str | Sequence[str]  # "a,b" or ["a", "b"]
OpMapping = str | Sequence[str] | Mapping[str, str]  # {"c, r": "INSERT"}, "c, r=INSERT" or a list of those
Output = str | os.PathLike[str] | RowSink | None


def _names(value: Names | None) -> tuple[str, ...]:
    """``"a, b"`` or ``["a", "b,c"]`` → ``("a", "b", "c")``; repeated names once."""
    if value is None:
        return ()
    parts = [value] if isinstance(value, str) else list(value)
    return tuple(dict.fromkeys(p.strip() for text in parts for p in str(text).split(",") if p.strip()))


def _texts(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """A flag that repeats: one text or a list of them."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _mapping(value: OpMapping | None) -> tuple[str, ...]:
    """``--op-mapping`` entries from a dict (code or kind list → its counterpart), a text, or a list."""
    if isinstance(value, Mapping):
        return tuple(f"{k}={v}" for k, v in value.items())
    return _texts(value)


def _pairs(value: Mapping[str, Any] | str | Sequence[str] | None, flag: str) -> tuple[tuple[str, Any], ...]:
    """``{"db": "shop"}`` or ``["db=shop"]`` → ``(("db", "shop"),)``."""
    if isinstance(value, Mapping):
        return tuple(value.items())
    pairs: dict[str, str] = {}
    for text in _texts(value):
        name, sep, val = text.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"{flag}: expected KEY=VALUE, got {text!r}")
        pairs[name.strip()] = val
    return tuple(pairs.items())


def _choice(flag: str, value: Any, choices: Sequence[str]) -> str:
    text = str(value.value if hasattr(value, "value") else value)
    if text not in choices:
        raise UsageError(f"{flag}: {text!r} is not one of {', '.join(choices)}")
    return text


def _delete_when(value: str | tuple[str, str] | None) -> tuple[str, str] | None:
    from cdc.core.inputmodes import parse_delete_when

    if value is None or isinstance(value, tuple):
        return value
    return parse_delete_when(value)


def _policy(on_inconsistency: Any, strict: bool) -> Policy:
    return Policy.fail if strict else Policy(_choice("--on-inconsistency", on_inconsistency, list(Policy)))


class _IO:
    """Where a job reads and writes: the keywords every function shares (a plain class: the
    commands import this module at start-up, and a dataclass costs its creation there)."""

    def __init__(
        self,
        source: Source,
        output: Output = None,
        input_format: str | None = None,
        output_format: str | None = None,
        columns: Names | None = None,
        on_error: str = "fail",
        rejects: str | os.PathLike[str] | None = None,
        progress: Progress | None = None,
        print_sql: bool = False,
        sql: dict[str, Any] | None = None,
        on_flink: str | None = None,
    ):
        self.source, self.output, self.progress = source, output, progress
        self.input_format, self.output_format, self.columns = input_format, output_format, columns
        self.on_error, self.rejects = on_error, rejects
        self.print_sql, self.sql, self.on_flink = print_sql, sql or {}, on_flink
        self.limits: dict[str, Any] = {}  # memory_limit and temp_dir of a job that may spill
        self.csv: Any = None  # how CSV input is written (formats.base.CsvDialect)
        self.tables: Any = None  # the tables of change events read on the way in (core.specs.Tables)
        self.avro: Any = None  # where Avro events' schemas come from (formats.schema_registry.SchemaSources)

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> _IO:
        """From a function's ``locals()``: the shared keywords it was called with."""
        shared = ("output", "input_format", "output_format", "columns", "on_error", "rejects", "progress")
        sql = ("flink_version", "sql_source", "sql_sink", "topic", "sink_topic", "bootstrap_servers", "sink_path")
        io = cls(
            values["source"],
            **{name: values[name] for name in shared if name in values},
            print_sql=values.get("print_sql", False),
            sql={name: values[name] for name in sql if name in values},
            on_flink=values.get("on_flink"),
        )
        csv = [values.get(n) for n in ("delimiter", "quote_char", "no_header", "header_names")]
        if any(csv):
            from cdc.formats.base import CsvDialect

            delimiter = {"tab": "\t", "\\t": "\t"}.get(csv[0] or "", csv[0])
            io.csv = CsvDialect(delimiter, csv[1] or '"', not csv[2], _names(csv[3]))
        avro = [values.get(n) for n in ("schema_registry", "schema_registry_auth", "schemas")]
        if any(v is not None for v in avro):
            from cdc.formats.schema_registry import SchemaSources

            if avro[1] is not None and avro[0] is None:
                raise UsageError("--schema-registry-auth goes with --schema-registry URL")
            io.avro = SchemaSources(avro[0], avro[1], os.fspath(avro[2]) if avro[2] is not None else None)
        if "envelope" not in values and (values.get("table_include") or values.get("database_include")):
            from cdc.core.specs import Tables

            io.tables = Tables(values.get("database_include"), values.get("table_include"))
        return io

    def job(self, spec: Any) -> tuple[Job, ListSink | None]:
        """The job, and the list the rows are collected in when there is no ``output``."""
        if self.tables is not None and hasattr(spec, "tables"):
            from dataclasses import replace

            spec = replace(spec, tables=self.tables)
        output = self.output
        sink: RowSink | None
        if output is None:
            from cdc.engine.sinks import ListSink

            sink = collected = ListSink()
        elif isinstance(output, str | os.PathLike):
            sink, collected = None, None
        else:
            sink, collected = output, None
        job = Job(
            spec,
            input_format=self.input_format.lower() if self.input_format else None,
            output=os.fspath(output) if isinstance(output, str | os.PathLike) else "-",
            output_format=self.output_format.lower() if self.output_format else None,
            columns=_names(self.columns),
            on_error=OnError(_choice("--on-error", self.on_error, list(OnError))),
            rejects=os.fspath(self.rejects) if self.rejects is not None else None,
            sink=sink,
            csv=self.csv,
            avro=self.avro,
            **self.limits,
        )
        return _with_source(job, self.source), collected

    def run(self, spec: Any) -> Result:
        job, collected = self.job(spec)
        result = run_job(job, self.progress)
        if collected is not None:
            result.rows = collected.rows
        return result

    def flink_sql(self, spec: Any) -> Result:
        """``print_sql=True``: the Flink script of the job (``result.sql``); ``on_flink``: that
        script run on the cluster, its rows written as ``output`` says (``engine.scripts``)."""
        from cdc.engine import scripts

        if not isinstance(self.source, str | os.PathLike) and not _all_paths(self.source):
            raise UsageError("print_sql needs an input file: the script reads it (or a Kafka topic) by name")
        inputs = [os.fspath(self.source)] if isinstance(self.source, str | os.PathLike) else _paths(self.source)
        if self.on_flink is not None:
            inputs = self.cluster_inputs(inputs)
        job, collected = self.job(spec)
        job = job.with_(inputs=tuple(inputs))
        script = scripts.script_of(job, self.sql, cluster=self.on_flink is not None)
        if self.on_flink is None:
            return Result(sql=str(script))
        result = scripts.run_on_cluster(self.on_flink, script, job)
        if collected is not None:
            result.rows = collected.rows
        return result

    def cluster_inputs(self, inputs: list[str]) -> list[str]:
        """``on_flink``: one input, a path the cluster reads too (see ``flink.on_flink``)."""
        from cdc.flink.on_flink import cluster_input

        if self.print_sql:
            raise UsageError("--print-sql prints the script, --on-flink runs it: give one of them")
        if len(inputs) > 1:
            raise UsageError("--on-flink runs one input file: the cluster's script reads one table", hint="join them")
        return [cluster_input(path, self.on_flink or "") for path in inputs]


def _all_paths(source: Any) -> bool:
    return (
        isinstance(source, Sequence)
        and not isinstance(source, str)
        and bool(source)
        and all(isinstance(s, str | os.PathLike) for s in source)
    )


def _paths(source: Any) -> list[str]:
    return [os.fspath(s) for s in source]


def _with_source(job: Job, source: Source) -> Job:
    if isinstance(source, str | os.PathLike):
        return job.with_(inputs=(os.fspath(source),))
    if _all_paths(source):
        return job.with_(inputs=tuple(_paths(source)))
    return job.with_(rows=source)


def _sql_or_run(io: _IO, spec: Any) -> Result:
    if io.print_sql or io.on_flink is not None:
        return io.flink_sql(spec)
    return io.run(spec)


def read(
    source: Source,
    *,
    input_format: str | None = None,
    columns: Names | None = None,
    on_error: str = "fail",
    rejects: str | os.PathLike[str] | None = None,
) -> list[Row]:
    """The rows of files in any format cdc reads (JSONL, CSV/TSV, Parquet, compressed)."""
    rows = _IO.of(locals()).run(CopySpec(PLAIN)).rows
    assert rows is not None
    return rows


def from_changelog(
    source: Source,
    *,
    op: str | None = None,
    op_mapping: OpMapping | None = None,
    preset: str | None = None,
    key: Names | None = None,
    drop: Names | None = None,
    commit_columns: Names | None = None,
    drop_commit_columns: bool = False,
    kind_column: str = "op",
    delimiter: str | None = None,
    quote_char: str | None = None,
    no_header: bool = False,
    header_names: Names | None = None,
    output: Output = None,
    input_format: str | None = None,
    output_format: str | None = None,
    columns: Names | None = None,
    on_error: str = "fail",
    rejects: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    print_sql: bool = False,
    on_flink: str | None = None,
    flink_version: str = "2.3",
    sql_source: str = "filesystem",
    sql_sink: str = "none",
    topic: str | None = None,
    sink_topic: str | None = None,
    bootstrap_servers: str | None = None,
    sink_path: str | None = None,
) -> Result:
    """Append-only rows with an op-code column → changelog rows (Flink FROM_CHANGELOG).

    ``op``: the op-code column (default ``op``, or the preset's); ``op_mapping``: codes → kinds,
    e.g. ``{"c, r": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE"}``; ``preset``: a named
    vocabulary (``debezium``, ``delta-cdf`` …); ``key``: the upsert key (Flink's PARTITION BY);
    ``drop``: kinds to leave out; ``commit_columns``: a change feed's commit columns (pre- and
    post-images paired per commit; ``""`` for none), ``drop_commit_columns`` leaves them out."""
    spec = from_changelog_spec(
        op,
        _mapping(op_mapping),
        preset,
        _names(key),
        _names(drop),
        kind_column,
        None if commit_columns is None else _names(commit_columns),
        drop_commit_columns,
    )
    return _sql_or_run(_IO.of(locals()), spec)


def to_changelog(
    source: Source,
    *,
    op: str | None = None,
    op_mapping: OpMapping | None = None,
    preset: str | None = None,
    drop: Names | None = None,
    kind_column: str = "op",
    delimiter: str | None = None,
    quote_char: str | None = None,
    no_header: bool = False,
    header_names: Names | None = None,
    table_include: str | None = None,
    schema_registry: str | None = None,
    schema_registry_auth: str | None = None,
    schemas: str | os.PathLike[str] | None = None,
    database_include: str | None = None,
    output: Output = None,
    input_format: str | None = None,
    output_format: str | None = None,
    columns: Names | None = None,
    on_error: str = "fail",
    rejects: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    print_sql: bool = False,
    on_flink: str | None = None,
    flink_version: str = "2.3",
    sql_source: str = "filesystem",
    sql_sink: str = "none",
    topic: str | None = None,
    sink_topic: str | None = None,
    bootstrap_servers: str | None = None,
    sink_path: str | None = None,
) -> Result:
    """Changelog rows → append-only rows with an op column (Flink TO_CHANGELOG).

    ``op_mapping``: kinds → codes, e.g. ``{"INSERT, UPDATE_AFTER": "false", "DELETE": "true"}``;
    only mapped kinds are written."""
    spec = to_changelog_spec(op, _mapping(op_mapping), preset, _names(drop), kind_column)
    return _sql_or_run(_IO.of(locals()), spec)


ENVELOPES = ("auto", "debezium", "canal", "maxwell", "ogg")


def decode(
    source: Source,
    *,
    envelope: str = "auto",
    key: Names | None = None,
    schema_include: str = "auto",
    on_truncate: str = "fail",
    metadata: str | Sequence[str] | None = None,
    raw_values: bool = False,
    database_include: str | None = None,
    table_include: str | None = None,
    schema_registry: str | None = None,
    schema_registry_auth: str | None = None,
    schemas: str | os.PathLike[str] | None = None,
    bootstrap: str = "insert",
    kind_column: str = "op",
    strict: bool = False,
    unavailable_placeholder: str | None = None,
    output: Output = None,
    input_format: str | None = None,
    output_format: str | None = None,
    columns: Names | None = None,
    on_error: str = "fail",
    rejects: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    print_sql: bool = False,
    on_flink: str | None = None,
    flink_version: str = "2.3",
    sql_source: str = "filesystem",
    sql_sink: str = "none",
    topic: str | None = None,
    sink_topic: str | None = None,
    bootstrap_servers: str | None = None,
    sink_path: str | None = None,
) -> Result:
    """Change events (JSON lines: Debezium, Canal, Maxwell or OGG; ``auto`` tells them apart from
    the first record) → changelog rows, as Flink's ``*-json`` formats read them.

    ``key``: rebuild partial before images from the last row seen; ``schema_include``: Debezium's
    ``{schema, payload}`` (auto, true, false); ``on_truncate``: fail, skip or delete;
    ``metadata``: ``"NAME[=COLUMN]"`` requests (one or a list, e.g. ``"source.table=tbl"``);
    ``raw_values``: no schema decoding; ``database_include``/``table_include``: regular
    expressions (Canal, Maxwell, OGG); ``bootstrap``: Maxwell's bootstrap rows, insert or skip;
    ``strict``: fail at the first finding (Debezium: a stale before image, a placeholder no key
    rebuilds), else they are counted in ``result.counts.notes``; ``unavailable_placeholder``:
    Debezium's ``unavailable.value.placeholder`` when it is not the default."""
    spec = DecodeSpec(
        envelope=_choice("--envelope", envelope, ENVELOPES),
        kind_column=kind_column,
        schema_include=_choice("--schema-include", schema_include, ("auto", "true", "false")),
        raw_values=raw_values,
        metadata=_texts(metadata),
        on_truncate=_choice("--on-truncate", on_truncate, ("fail", "skip", "delete")),
        key=_names(key),
        database_include=database_include,
        table_include=table_include,
        bootstrap=_choice("--bootstrap", bootstrap, ("insert", "skip")),
        policy=Policy.fail if strict else Policy.warn,
        unavailable_placeholder=unavailable_placeholder,
    )
    return _sql_or_run(_IO.of(locals()), spec)


def debezium_decode(
    source: Source,
    *,
    key: Names | None = None,
    schema_include: str = "auto",
    on_truncate: str = "fail",
    metadata: str | Sequence[str] | None = None,
    raw_values: bool = False,
    kind_column: str = "op",
    table_include: str | None = None,
    schema_registry: str | None = None,
    schema_registry_auth: str | None = None,
    schemas: str | os.PathLike[str] | None = None,
    database_include: str | None = None,
    strict: bool = False,
    unavailable_placeholder: str | None = None,
    output: Output = None,
    input_format: str | None = None,
    output_format: str | None = None,
    columns: Names | None = None,
    on_error: str = "fail",
    rejects: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    print_sql: bool = False,
    on_flink: str | None = None,
    flink_version: str = "2.3",
    sql_source: str = "filesystem",
    sql_sink: str = "none",
    topic: str | None = None,
    sink_topic: str | None = None,
    bootstrap_servers: str | None = None,
    sink_path: str | None = None,
) -> Result:
    """Debezium JSON change events → changelog rows: ``decode(..., envelope="debezium")``."""
    return decode(**locals(), envelope="debezium")


def debezium_encode(
    source: Source,
    *,
    split_updates: bool = False,
    time_column: str | None = None,
    source_fields: Mapping[str, Any] | str | Sequence[str] | None = None,
    key: Names | None = None,
    kind_column: str = "op",
    format: str = "json",
    schema_registry: str | None = None,
    schema_registry_auth: str | None = None,
    schemas: str | os.PathLike[str] | None = None,
    delimiter: str | None = None,
    quote_char: str | None = None,
    no_header: bool = False,
    header_names: Names | None = None,
    output: Output = None,
    input_format: str | None = None,
    output_format: str | None = None,
    columns: Names | None = None,
    on_error: str = "fail",
    rejects: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    print_sql: bool = False,
    on_flink: str | None = None,
    flink_version: str = "2.3",
    sql_source: str = "filesystem",
    sql_sink: str = "none",
    topic: str | None = None,
    sink_topic: str | None = None,
    bootstrap_servers: str | None = None,
    sink_path: str | None = None,
) -> Result:
    """Changelog rows → Debezium change events (one ``u`` event per update pair; Flink's d + c
    with ``split_updates``). ``time_column``: the column for ``ts_ms`` (default: now);
    ``source_fields``: the ``source`` block (``{"db": "shop"}`` or ``["db=shop"]``, the
    command's ``--source``); ``key``: a -U/+U pair is merged only when both name the same key;
    ``format``: ``json`` (JSON lines), ``avro`` (an Avro container file) or ``avro-confluent``
    (Confluent wire-format messages, length-prefixed, the schema registered at ``schema_registry``
    or written into the folder ``schemas``: ``formats.avro_write``)."""
    from cdc.formats.registry import format_of

    fmt = _choice("--format", format, ("json", "avro", "avro-confluent"))
    if fmt == "avro-confluent" and schema_registry is None and schemas is None:
        raise UsageError("--format avro-confluent registers its schema: give --schema-registry URL or --schemas DIR")
    if fmt != "avro-confluent" and (schema_registry is not None or schemas is not None):
        raise UsageError("--schema-registry / --schemas go with --format avro-confluent")
    if isinstance(output, str | os.PathLike):
        named = format_of(os.fspath(output))
        if fmt == "json" and (output_format not in (None, "jsonl") or named not in (None, "jsonl")):
            raise UsageError(
                "debezium-encode writes Debezium JSON lines; the output names another format",
                hint="write to a .jsonl (or .jsonl.gz) file, or stdout; --format avro writes Avro",
            )
        output_format = "jsonl" if fmt == "json" else fmt
    elif fmt != "json":
        raise UsageError("--format avro writes a file or stdout, not rows for a caller")
    if fmt != "json" and output is None:
        raise UsageError("--format avro writes a file or stdout: give output")
    spec = EncodeSpec(kind_column, split_updates, time_column, _pairs(source_fields, "--source"), _names(key))
    io = _IO.of(locals())
    if fmt != "json" and io.avro is None:
        from cdc.formats.schema_registry import SchemaSources

        io.avro = SchemaSources()  # written by the row path's Avro writer
    return _sql_or_run(io, spec)


def materialize(
    source: Source,
    *,
    key: Names | None = None,
    on_inconsistency: str = "warn",
    strict: bool = False,
    dedup: bool = False,
    as_of: Any = None,
    time_column: str | None = None,
    sort: bool = False,
    expect: str | os.PathLike[str] | Iterable[Row] | None = None,
    commit_columns: Names | None = None,
    kind_column: str = "op",
    delimiter: str | None = None,
    quote_char: str | None = None,
    no_header: bool = False,
    header_names: Names | None = None,
    table_include: str | None = None,
    schema_registry: str | None = None,
    schema_registry_auth: str | None = None,
    schemas: str | os.PathLike[str] | None = None,
    database_include: str | None = None,
    ignore_columns: Names | None = None,
    memory_limit: str | int | None = None,
    temp_dir: str | os.PathLike[str] | None = None,
    output: Output = None,
    input_format: str | None = None,
    output_format: str | None = None,
    columns: Names | None = None,
    on_error: str = "fail",
    rejects: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    print_sql: bool = False,
    on_flink: str | None = None,
    flink_version: str = "2.3",
    sql_source: str = "filesystem",
    sql_sink: str = "none",
    topic: str | None = None,
    sink_topic: str | None = None,
    bootstrap_servers: str | None = None,
    sink_path: str | None = None,
) -> Result:
    """Changelog rows → the table they describe; ``result.findings`` counts the changes that
    contradicted it (under ``on_inconsistency="fail"`` or ``strict=True`` the first one raises
    ``cdc.InconsistencyError``).

    ``key``: an upsert table (else a multiset); ``dedup``: drop an event equal to the previous one
    for its key; ``as_of`` with ``time_column``: the versioned table at that time; ``sort``: rows
    by key; ``commit_columns``: a change feed's commit columns (metadata, not row identity);
    ``memory_limit`` (bytes, or ``"8GB"``, ``"40%"``; default half the machine's memory): past it
    the state spills to ``temp_dir`` (default the system's temporary folder).
    ``expect``: the table expected (a path in any format, or rows): ``result.ok`` is False when
    they differ, ``result.differences`` says how, ``result.check()`` raises
    ``cdc.ExpectationFailed``."""
    spec = MaterializeSpec(
        kind_column=kind_column,
        key=_names(key),
        policy=_policy(on_inconsistency, strict),
        dedup=dedup,
        as_of=as_of,
        time_column=time_column,
        sort=sort,
        commit_columns=None if commit_columns is None else _names(commit_columns),
        ignore_columns=_names(ignore_columns),
    )
    io = _IO.of(locals())
    if on_flink is not None and expect is not None:
        raise UsageError("--expect compares cdc's own table; it does not go with --on-flink")
    if not print_sql and on_flink is None:
        from cdc.engine.run import memory_limit as limit_of

        if temp_dir is not None and not os.path.isdir(temp_dir):
            raise UsageError(f"--temp-dir: {os.fspath(temp_dir)!r} is not a folder")
        folder = os.fspath(temp_dir) if temp_dir else None
        io.limits = {
            "memory_limit": limit_of(memory_limit),
            "temp_dir": folder,
            "stdin_read_ahead": memory_limit is not None,
        }
    if print_sql or on_flink is not None or expect is None:
        return _sql_or_run(io, spec)
    return _expected(io, spec, expect)


def _expected(io: _IO, spec: MaterializeSpec, expect: str | os.PathLike[str] | Iterable[Row]) -> Result:
    """The table, compared with ``expect``; written to ``io.output`` as well when there is one."""
    from cdc.core.compare import compare_tables

    if isinstance(expect, str | os.PathLike) and not os.path.isfile(expect):
        raise UsageError(f"--expect: the expected table {os.fspath(expect)!r} does not exist")
    wanted = io.output
    io.output = None
    result = io.run(spec)
    table = result.rows or []
    if wanted is not None:
        result.rows = None
        _IO(table, output=wanted, output_format=io.output_format, columns=io.columns).run(CopySpec())
    expected = read(expect)
    result.differences = compare_tables(table, expected, spec.key)
    return result


def replay(
    source: Source,
    *,
    key: Names | None = None,
    input_mode: str = "changelog",
    emit: str = "retract",
    delete_when: str | tuple[str, str] | None = None,
    keep_noop: bool = False,
    order_by: str | None = None,
    time_column: str | None = None,
    since: Any = None,
    until: Any = None,
    net: bool = False,
    kind_column: str = "op",
    delimiter: str | None = None,
    quote_char: str | None = None,
    no_header: bool = False,
    header_names: Names | None = None,
    table_include: str | None = None,
    schema_registry: str | None = None,
    schema_registry_auth: str | None = None,
    schemas: str | os.PathLike[str] | None = None,
    database_include: str | None = None,
    ignore_columns: Names | None = None,
    output: Output = None,
    input_format: str | None = None,
    output_format: str | None = None,
    columns: Names | None = None,
    on_error: str = "fail",
    rejects: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    print_sql: bool = False,
    on_flink: str | None = None,
    flink_version: str = "2.3",
    sql_source: str = "filesystem",
    sql_sink: str = "none",
    topic: str | None = None,
    sink_topic: str | None = None,
    bootstrap_servers: str | None = None,
    sink_path: str | None = None,
) -> Result:
    """A changelog (or upsert/append rows) run through keyed state and re-emitted, as retract or
    upsert (Flink ChangelogNormalize); ``result.detail`` holds its counts.

    ``input_mode``: changelog, upsert (each row upserts its key; ``delete_when="col=value"``
    marks a delete) or append; ``keep_noop``: keep updates that change nothing; ``order_by``: a
    row older than the stored version does not overwrite it; ``since``/``until`` with
    ``time_column``: emit only the changes in that window (``net``: their net change)."""
    spec = _replay_spec(locals())
    return _sql_or_run(_IO.of(locals()), spec)


def _replay_spec(values: Mapping[str, Any]) -> ReplaySpec:
    return ReplaySpec(
        key=_names(values["key"]),
        emit=_choice("--emit", values["emit"], ("retract", "upsert")),
        keep_noop=values["keep_noop"],
        order_by=values["order_by"],
        time_column=values["time_column"],
        since=values["since"],
        until=values["until"],
        net=values["net"],
        input_mode=_choice("--input-mode", values["input_mode"], ("changelog", "upsert", "append")),
        delete_when=_delete_when(values["delete_when"]),
        kind_column=values["kind_column"],
        ignore_columns=_names(values.get("ignore_columns")),
    )


class ReplayStep:
    """One change applied to replay's keyed state (``cdc.replay_steps``): ``kind`` of the last
    row it emitted (+I, -U, +U, -D), the ``key`` it changed, the changelog rows it ``emitted``,
    and the table after it (``rows()``, ``live`` rows; valid until the next step)."""

    __slots__ = ("_state", "emitted", "key", "kind", "live")

    def __init__(self, kind: str, key: Any, emitted: list[tuple[str, Row]], live: int, state: KeyedReplay):
        self.kind, self.key, self.emitted, self.live, self._state = kind, key, emitted, live, state

    def __repr__(self) -> str:
        return f"ReplayStep(kind={self.kind!r}, key={self.key!r}, emitted={self.emitted!r}, live={self.live})"

    def rows(self) -> Iterator[Row]:
        """The table after this change, in first-insertion order of its keys."""
        return iter(self._state.rows())

    def key_of(self, row: Row) -> Any:
        """A row's key, as ``key`` is given (to mark the row this step changed)."""
        return self._state.table.key_of(row)


def replay_steps(
    source: Source,
    *,
    key: Names | None = None,
    input_mode: str = "changelog",
    emit: str = "retract",
    delete_when: str | tuple[str, str] | None = None,
    keep_noop: bool = False,
    order_by: str | None = None,
    time_column: str | None = None,
    since: Any = None,
    until: Any = None,
    net: bool = False,
    kind_column: str = "op",
    delimiter: str | None = None,
    quote_char: str | None = None,
    no_header: bool = False,
    header_names: Names | None = None,
    table_include: str | None = None,
    schema_registry: str | None = None,
    schema_registry_auth: str | None = None,
    schemas: str | os.PathLike[str] | None = None,
    database_include: str | None = None,
    ignore_columns: Names | None = None,
    input_format: str | None = None,
    on_error: str = "fail",
    rejects: str | os.PathLike[str] | None = None,
) -> Iterator[ReplayStep]:
    """``replay``'s state, one change at a time (what ``cdc replay --live`` draws): a
    ``ReplayStep`` for every change that emitted rows. Reading stops when the iteration does."""
    from cdc.core.inputmodes import change_reader
    from cdc.core.replay import KeyedReplay
    from cdc.core.stats import Counts
    from cdc.engine.inputs import open_rows, resolve
    from cdc.engine.session import session

    spec = _replay_spec(locals())
    job, _ = _IO.of(locals()).job(spec)  # read as replay reads: its key, its tables, its CSV dialect
    job = resolve(job)
    state = KeyedReplay(spec)
    change_of = change_reader(spec.input_mode, spec.kind_column, spec.delete_when)
    with session(job) as current:
        reader = open_rows(job, current.bad, None, Counts())
        current.where = reader.location
        for row in reader:
            kind, image = change_of(row)
            out = state.apply(kind, image)
            if out:
                yield ReplayStep(out[-1][0], state.table.key_of(image), out, len(state.table), state)


def aggregate(
    source: Source,
    *,
    group_by: Names | None = None,
    agg: str | Sequence[str] | None = None,
    where: str | Sequence[str] | None = None,
    emit: str = "retract",
    input_mode: str = "changelog",
    key: Names | None = None,
    delete_when: str | tuple[str, str] | None = None,
    on_inconsistency: str = "warn",
    strict: bool = False,
    kind_column: str = "op",
    delimiter: str | None = None,
    quote_char: str | None = None,
    no_header: bool = False,
    header_names: Names | None = None,
    table_include: str | None = None,
    schema_registry: str | None = None,
    schema_registry_auth: str | None = None,
    schemas: str | os.PathLike[str] | None = None,
    database_include: str | None = None,
    output: Output = None,
    input_format: str | None = None,
    output_format: str | None = None,
    columns: Names | None = None,
    on_error: str = "fail",
    rejects: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    print_sql: bool = False,
    on_flink: str | None = None,
    flink_version: str = "2.3",
    sql_source: str = "filesystem",
    sql_sink: str = "none",
    topic: str | None = None,
    sink_topic: str | None = None,
    bootstrap_servers: str | None = None,
    sink_path: str | None = None,
) -> Result:
    """A continuous GROUP BY (Flink's group aggregate): ``agg`` as ``"cnt=COUNT(url)"`` (one or a
    list); the result is the update log Flink emits (``+I``, ``-U``/``+U``, ``-D``).

    ``where``: ``"COL OP VALUE"`` conditions joined by AND (or a list of them); ``input_mode``: changelog, append or
    upsert (by ``key``; ``delete_when="col=value"`` marks a delete); ``on_inconsistency``: what a
    retraction of a row never counted does (fail, warn, ignore)."""
    from cdc.core.aggregate import AggregateQuery
    from cdc.core.specs import AggregateSpec

    if where is not None and not isinstance(where, str):
        where = " AND ".join(where) if where else None  # --where repeated: all of them hold
    mode = _choice("--input-mode", input_mode, ("changelog", "upsert", "append"))
    query = AggregateQuery.parse(
        _names(group_by),
        _texts(agg),
        _choice("--emit", emit, ("retract", "upsert")),
        where,
        retractions=mode != "append",
    )
    spec = AggregateSpec(
        query, mode, _names(key), _delete_when(delete_when), kind_column, _policy(on_inconsistency, strict)
    )
    return _sql_or_run(_IO.of(locals()), spec)


def inspect(
    source: Source,
    *,
    key: Names | None = None,
    time_column: str | None = None,
    commit_columns: Names | None = None,
    kind_column: str = "op",
    delimiter: str | None = None,
    quote_char: str | None = None,
    no_header: bool = False,
    header_names: Names | None = None,
    table_include: str | None = None,
    schema_registry: str | None = None,
    schema_registry_auth: str | None = None,
    schemas: str | os.PathLike[str] | None = None,
    database_include: str | None = None,
    ignore_columns: Names | None = None,
    strict: bool = False,
    input_format: str | None = None,
    on_error: str = "fail",
    rejects: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    print_sql: bool = False,
    on_flink: str | None = None,
    flink_version: str = "2.3",
    sql_source: str = "filesystem",
    sql_sink: str = "none",
    topic: str | None = None,
    sink_topic: str | None = None,
    bootstrap_servers: str | None = None,
    sink_path: str | None = None,
) -> Result:
    """What kind of changelog this is: ``result.report`` is the report ``cdc inspect --json``
    prints (kinds, mode, counts, keys, findings, time range); ``result.findings`` the findings;
    ``strict=True`` raises ``InconsistencyError`` when there are findings (``cdc inspect --strict``)."""
    spec = InspectSpec(
        kind_column=kind_column,
        key=_names(key),
        time_column=time_column,
        commit_columns=None if commit_columns is None else _names(commit_columns),
        ignore_columns=_names(ignore_columns),
    )
    io = _IO.of(locals())
    if print_sql or on_flink is not None:
        return _sql_or_run(io, spec)
    result = io.run(spec)
    result.rows = None
    if isinstance(source, str | os.PathLike):
        sources = [os.fspath(source)]
    else:
        sources = _paths(source) if _all_paths(source) else ["<rows>"]
    result.report = result.detail.as_dict(sources)
    if result.counts.tables:  # change events name their tables
        result.report["tables"] = [
            {"name": name, "events": seen.events, "first": seen.first} for name, seen in result.counts.tables.items()
        ]
    inconsistent = result.report["consistency"]["inconsistent_changes"]
    if strict and inconsistent:  # cdc inspect --strict
        from cdc.core.errors import InconsistencyError

        examples = result.report["consistency"]["examples"]
        raise InconsistencyError(f"{inconsistent} inconsistent change(s) (first: {examples[0] if examples else ''})")
    return result


__all__ = [
    "Names",
    "OpMapping",
    "ReplayStep",
    "Result",
    "Source",
    "aggregate",
    "debezium_decode",
    "debezium_encode",
    "decode",
    "from_changelog",
    "inspect",
    "materialize",
    "read",
    "replay",
    "replay_steps",
    "to_changelog",
]
