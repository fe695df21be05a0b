"""``--print-sql``: read the input once to declare its columns and make the Flink SQL script (the
API's ``print_sql=True``: ``result.sql``; ``on_flink=URL``: the script run on a cluster)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from cdc.core.errors import UsageError
from cdc.core.model import OnError, Row
from cdc.core.specs import (
    AggregateSpec,
    DecodeSpec,
    EncodeSpec,
    FromChangelogSpec,
    InspectSpec,
    MaterializeSpec,
    ReplaySpec,
    ToChangelogSpec,
)
from cdc.flink.sql import (
    ColumnTypes,
    DebeziumInfo,
    Sink,
    Source,
    aggregate_sql,
    debezium_encode_sql,
    debezium_sql,
    decode_sql,
    encodes_upsert,
    from_changelog_sql,
    inspect_sql,
    materialize_sql,
    replay_sql,
    scan_records,
    stale_befores,
    to_changelog_sql,
)

SAMPLE_ROWS = 100
Reject = Callable[[Any, str], None]  # a record cdc could not read: the error, the raw text


@dataclass(frozen=True)
class Input:
    """An input as the engine resolved it for a spec: the spec (``--envelope auto`` decided), the
    paths and their formats, and the engine's own record of it (handed back to ``Reader.rows``)."""

    spec: Any
    inputs: tuple[str, ...]
    formats: tuple[str, ...]
    resolved: Any = None


class Reader(Protocol):
    """How the engine reads an input for the builders: cdc's own reading (formats by suffix, stdin
    sniffed, envelopes decoded), so that a script's column types are those of the rows cdc reads."""

    def resolve(self, spec: Any, inputs: tuple[str, ...], input_format: str | None) -> Input: ...

    def rows(self, given: Input, reject: Reject) -> Iterator[Row]: ...


@dataclass
class Common:
    """What a script is made from: the job's inputs and error handling, where the script reads and
    writes (the commands' ``--print-sql`` group, the API's keywords of the same names), and the
    engine's ``reader`` of the inputs."""

    reader: Reader
    inputs: list[str] = field(default_factory=lambda: ["-"])
    input_format: str | None = None
    on_error: OnError = OnError.fail
    flink_version: str = "2.3"
    sql_source: str = "filesystem"
    sql_sink: str = "none"
    topic: str | None = None
    sink_topic: str | None = None
    bootstrap_servers: str | None = None
    sink_path: str | None = None
    avro: Any = None  # Debezium events in Avro: the schema sources (formats.schema_registry.SchemaSources)


def input_of(common: Common, spec: Any, input_format: str | None = None) -> Input:
    """The first input, resolved for ``spec`` (a script reads one table)."""
    return common.reader.resolve(spec, tuple(common.inputs[:1]), input_format or common.input_format)


class FlinkScript(str):
    """A script, and how its last statement's rows make the command's output when it runs on a
    cluster (``flink.on_flink``: ``shape``, the ``keys`` of a table, the ``kind_column``, ``sort``)."""

    shape: str
    keys: tuple[str, ...]
    kind_column: str
    sort: bool


def _ignore(err: Any, raw: str) -> None:
    """A bad record says nothing about the columns."""


def sample(common: Common, spec: Any, errors: list[str] | None = None, drop: str | None = None) -> Read:
    """Read the job's first input to its end, once: the column types from every row (never from a
    prefix: a fraction in row 10,000 of an integer column makes it DOUBLE), whether a CSV had quoted
    empty fields, and the first rows as cdc read them (``errors`` collects what cdc rejected,
    ``drop``: a column left out of the types, e.g. the kind column of decoded images)."""
    job = input_of(common, spec)

    def reject(err: Any, raw: str) -> None:
        if errors is not None and len(errors) < SAMPLE_ROWS:
            errors.append(str(err))

    text_only = bool(job.formats) and job.formats[0] in ("csv", "tsv")
    types = ColumnTypes(text_only)
    first: list[dict[str, Any]] = []
    empty = False
    for row in common.reader.rows(job, reject):
        image = {k: v for k, v in row.items() if k != drop} if drop is not None else row
        types.add(image)
        if len(first) < SAMPLE_ROWS:
            first.append(row)
        if text_only and not empty:
            empty = any(v == "" for v in row.values())
    return Read(job, first, types.result(), empty, types.text_numbers())


@dataclass
class Read:
    """What one pass over an input gave (see :func:`sample`)."""

    job: Input
    rows: list[dict[str, Any]]
    types: dict[str, str]
    empty_strings: bool
    numbers: dict[str, str] = field(default_factory=dict)  # CSV columns that spell numbers throughout


def _source(job: Input, common: Common | None = None, key: tuple[str, ...] = (), upserts: bool = False) -> Source:
    """The input as a Flink table: the file, or the Kafka topic ``--sql-source`` names
    (upsert-kafka only for a command that reads upserts: ``--input-mode upsert``)."""
    fmt = job.formats[0] if job.formats else "jsonl"
    if common is None or common.sql_source == "filesystem":
        return Source(job.inputs[0], fmt)
    if common.sql_source == "upsert-kafka" and not upserts:
        raise UsageError(
            "an upsert-kafka source is an upsert table (each record replaces its key's row); this job reads every "
            "record as it comes",
            hint="--sql-source kafka; upsert-kafka goes with --input-mode upsert (replay, aggregate)",
        )
    return Source(job.inputs[0], fmt, common.sql_source, common.topic, common.bootstrap_servers, key)


def _sink(common: Common, key: tuple[str, ...] = (), kind_column: str = "op") -> Sink | None:
    """Where the script writes: nowhere (the SQL client shows the result), or ``--sql-sink``."""
    if common.sql_sink == "none":
        return None
    return Sink(common.sql_sink, common.sink_path, common.sink_topic, common.bootstrap_servers, key, kind_column)


def emit(common: Common, sql: str, shape: str, spec: Any = None, keys: tuple[str, ...] = ()) -> FlinkScript:
    """The script, with what ``--on-flink`` needs to write its rows as the local run writes them
    (``shape``: see ``flink.on_flink``; a ``--sql-sink`` makes it ``sink``)."""
    script = FlinkScript(sql)
    script.shape = "sink" if common.sql_sink != "none" else shape
    script.keys = tuple(keys)
    script.kind_column = str(getattr(spec, "kind_column", "op"))
    script.sort = bool(getattr(spec, "sort", False))
    return script


def print_from_changelog_sql(common: Common, spec: FromChangelogSpec) -> FlinkScript:
    got = sample(common, spec)
    source = _source(got.job, common, spec.keys)
    return emit(
        common,
        from_changelog_sql(
            "cdc from-changelog",
            source,
            got.types,
            spec.op_column,
            spec.mapping,
            spec.keys,
            common.on_error == OnError.skip,
            spec.drop,
            empty_strings=got.empty_strings,
            commit_columns=spec.commit_columns,
            drop_columns=spec.commit_columns if spec.drop_commit_columns else (),
            flink_version=common.flink_version,
            sink=_sink(common, spec.keys, spec.kind_column),
            kind_column=spec.kind_column,
        ),
        "rows" if encodes_upsert(spec.mapping, spec.keys, common.flink_version) else "changelog",
        spec,
        spec.keys,
    )


@dataclass
class Sampled:
    """The input of a command that reads changes, as Flink reads it: the source table, column
    types, whether the CSV had quoted empty fields, the first rows as cdc read them, and —
    for an envelope input (``--input-format debezium|canal|maxwell|ogg``) — what its format would
    meet (the image columns only, as ``decode --print-sql`` sees them; no rows)."""

    source: Source
    types: dict[str, str]
    empty_strings: bool
    info: DebeziumInfo | None
    rows: list[dict[str, Any]]
    numbers: dict[str, str] = field(default_factory=dict)  # CSV columns that spell numbers throughout


def changelog_sample(
    common: Common,
    spec: Any,
    kind_column: str,
    reads: str = "changelog",
    key: tuple[str, ...] = (),
    upserts: bool = False,
) -> Sampled:
    """See :class:`Sampled` (``upserts``: the job reads upserts, from an upsert-kafka source)."""
    from cdc.core.specs import CopySpec
    from cdc.flink.sql import ENVELOPES

    source = _source(input_of(common, spec), common, key, upserts)
    if source.fmt == "debezium":
        types, info = debezium_sample(common, DecodeSpec(kind_column=kind_column))
        return Sampled(source, types, False, info, [])
    if source.fmt in ENVELOPES:
        types, info = envelope_sample(common, DecodeSpec(envelope=source.fmt, kind_column=kind_column))
        return Sampled(source, types, False, info, [])
    got = sample(common, CopySpec(reads, kind_column))
    return Sampled(source, got.types, got.empty_strings, None, got.rows, got.numbers)


def print_to_changelog_sql(common: Common, spec: ToChangelogSpec) -> FlinkScript:
    got = changelog_sample(common, spec, spec.kind_column)
    return emit(
        common,
        to_changelog_sql(
            "cdc to-changelog",
            got.source,
            got.types,
            spec.kind_column,
            spec.op_column,
            spec.mapping,
            spec.drop,
            empty_strings=got.empty_strings,
            debezium=got.info,
            flink_version=common.flink_version,
            sink=_sink(common),
        ),
        "rows",
        spec,
        (),
    )


def debezium_sample(common: Common, spec: DecodeSpec) -> tuple[dict[str, str], DebeziumInfo]:
    """The first events of a Debezium input: image column types as cdc decodes them, and what
    Flink's debezium-json would meet (schema envelope, logical types, ``null`` lines, TOAST)."""
    from cdc.formats.debezium import DebeziumDecoder
    from cdc.formats.registry import open_inputs

    job = input_of(common, spec, "debezium")

    def read(raw: bool) -> tuple[dict[str, str], bool]:
        quiet = DecodeSpec(
            kind_column=spec.kind_column, schema_include=spec.schema_include, raw_values=raw, on_truncate="skip"
        )
        decoder = DebeziumDecoder(quiet)  # kept: it tells whether the events came in an envelope
        reader = open_inputs(job.inputs, job.formats, _ignore, None, {"debezium": decoder.reader})
        types = ColumnTypes()
        for row in reader:  # every event: a column's type is what all its values hold
            types.add({k: v for k, v in row.items() if k != quiet.kind_column})
        return types.result(), spec.schema_include == "true" or decoder.saw_envelope

    columns, enveloped = read(spec.raw_values)
    raw_columns, _ = read(True)
    scan = scan_events(job.inputs[0], spec.schema_include) if job.inputs[0] != "-" else DebeziumInfo()
    info = replace(scan, schema_include=enveloped, raw_columns=raw_columns, raw_values=spec.raw_values)
    return columns, info


def envelope_sample(common: Common, spec: DecodeSpec) -> tuple[dict[str, str], DebeziumInfo]:
    """The records of a Canal / Maxwell / OGG input: column types as cdc decodes them, and
    what Flink's format would meet (see ``flinksql.scan_records``)."""
    quiet = replace(spec, on_truncate="skip", key=(), metadata=())
    errors: list[str] = []
    got = sample(common, quiet, errors, drop=spec.kind_column)
    info = (
        scan_events(got.job.inputs[0], envelope=spec.envelope, include=(spec.database_include, spec.table_include))
        if got.job.inputs[0] != "-"
        else DebeziumInfo()
    )
    if spec.bootstrap == "skip" and "bootstrap-insert" in info.unsupported:  # cdc skips those rows too
        info = replace(info, rejected=info.unsupported, unsupported="")
    return got.types, replace(info, raw_values=spec.raw_values, first_error=errors[0] if errors else "")


def scan_events(
    path: str,
    schema_include: str = "auto",
    envelope: str = "debezium",
    include: tuple[str | None, str | None] = (None, None),
) -> DebeziumInfo:
    """The records of an envelope file as sent, all of them (see ``flinksql.scan_records``)."""
    return scan_records(_records(path), envelope, schema_include, *include)


def _records(path: str) -> Iterator[Any]:
    """The parsed JSON lines of a file (``None`` for a ``null`` line), unparsable ones left out."""
    import json

    with open(path, "rb") as f:
        for line in f:
            text = line.strip()
            if not text:
                continue
            try:
                yield json.loads(text)
            except ValueError:
                continue


def _envelope_of(common: Common, spec: DecodeSpec) -> str:
    if spec.envelope != "auto":
        return spec.envelope
    import json

    from cdc.core.envelopes import choose_envelope

    path = common.inputs[0] if common.inputs else "-"
    if path == "-":
        raise UsageError("--print-sql needs an input file", hint="name the input file")
    with open(path, "rb") as f:
        for line in f:
            if line.strip() and line.strip() != b"null":
                envelope: str = choose_envelope("auto", json.loads(line))
                return envelope
    raise UsageError("--print-sql: the input has no record to recognise the envelope by")


def _envelope_source(common: Common, envelope: str, key: tuple[str, ...]) -> Source:
    path = common.inputs[0] if common.inputs else "-"
    if common.sql_source == "filesystem":
        return Source(path, envelope)
    return Source(path, envelope, common.sql_source, common.topic, common.bootstrap_servers, key)


def _avro_input(common: Common, spec: DecodeSpec) -> Input | None:
    """The first input, when it holds Debezium events in Avro (``formats.avro``)."""
    if spec.envelope not in ("auto", "debezium") or not common.inputs or common.inputs[0] == "-":
        return None
    given = input_of(common, replace(spec, envelope="debezium"), "debezium")
    if "avro" not in given.formats:
        return None
    resolved = given.resolved.with_(avro=common.avro) if common.avro is not None else given.resolved
    return replace(given, resolved=resolved)


def _avro_types(common: Common, given: Input | None, kind_column: str) -> dict[str, str]:
    types = ColumnTypes()
    if given is not None:
        for row in common.reader.rows(given, _ignore):
            types.add({k: v for k, v in row.items() if k != kind_column})
    return types.result()


def _avro_decode_sql(common: Common, spec: DecodeSpec, given: Input) -> FlinkScript:
    """Flink's ``debezium-avro-confluent``: a Kafka topic of wire-format messages, the schemas from
    the registry; the columns' types those cdc decodes from the input."""
    avro = common.avro
    registry = getattr(avro, "registry", None)
    if common.sql_source != "kafka" or not registry:
        raise UsageError(
            "Flink reads Debezium Avro as 'debezium-avro-confluent': Confluent wire-format messages of a Kafka topic, "
            "their schemas from a schema registry (its filesystem connector cannot split binary messages)",
            hint="--sql-source kafka --topic T --bootstrap-servers H --schema-registry URL",
        )
    if common.on_error == OnError.skip:
        raise UsageError("--on-error skip: Flink's debezium-avro-confluent has no ignore-parse-errors; it fails")
    if spec.metadata:
        raise UsageError("Flink's debezium-avro-confluent has no metadata columns (debezium-json has)")
    if spec.table_include or spec.database_include:
        raise UsageError(
            "Flink's debezium-avro-confluent has no table filter: a Debezium topic holds one table",
            hint="name that table's topic with --topic, and the input's events of that table alone",
        )
    columns = _avro_types(common, given, spec.kind_column)
    from cdc.flink.sql.scan import scan_records
    from cdc.formats.avro import row_types

    sent, events = row_types(common.inputs[0], avro.open() if avro is not None else None)
    # what Flink's format meets, as for debezium-json (a missing before image, a placeholder, a truncate …)
    scanned = replace(scan_records(events, "debezium", "auto"), schema_include=False, text_tombstones=False)
    for name, decoded in columns.items():
        # Flink's Avro reader maps TIME to an int (milliseconds) and STRING to a string: a Debezium
        # MicroTime/NanoTime long, or a value cdc spells as text, is not what its reader schema reads
        kinds = sent.get(name, set())
        times = "TIME(" in decoded and any("int64" in k for k in kinds)  # a TIME, or an ARRAY<TIME>
        if times or (decoded == "STRING" and kinds - {"string"}):
            raise UsageError(
                f"column {name!r} is sent as {'/'.join(sorted(kinds))} (Debezium's encoding of a {decoded}): "
                "cdc decodes it, Flink's debezium-avro-confluent reads a TIME as an int of milliseconds "
                "and a STRING as a string, and fails on it ('Found long, expecting union')",
                hint="keep the values as sent (debezium-decode --raw-values), or configure Debezium's "
                "time.precision.mode=connect (TIME as milliseconds)",
            )
    source = Source(
        common.inputs[0], "debezium-avro", "kafka", common.topic, common.bootstrap_servers, spec.key, registry=registry
    )
    return emit(
        common,
        debezium_sql(
            "cdc debezium-decode",
            source,
            columns,
            False,
            [],
            False,
            spec.key,
            info=replace(scanned, on_truncate=spec.on_truncate),
            flink_version=common.flink_version,
            sink=_sink(common, spec.key, spec.kind_column),
        ),
        "changelog",
        spec,
        spec.key,
    )


def print_decode_sql(common: Common, spec: DecodeSpec) -> FlinkScript:
    avro = _avro_input(common, spec)
    if avro is not None:
        return _avro_decode_sql(common, spec, avro)
    spec = replace(spec, envelope=_envelope_of(common, spec))
    _consistency_unchecked(spec.policy, "decode")
    skip = common.on_error == OnError.skip
    if spec.envelope == "debezium":
        from cdc.formats.debezium import parse_metadata

        columns, info = debezium_sample(common, spec)
        info = replace(info, on_truncate=spec.on_truncate)
        if spec.key and common.inputs and common.inputs[0] != "-":
            info = replace(info, stale_before=stale_befores(_records(common.inputs[0]), spec.key, spec.schema_include))
        return emit(
            common,
            debezium_sql(
                "cdc debezium-decode",
                _envelope_source(common, "debezium", spec.key),
                columns,
                info.schema_include,
                list(parse_metadata(spec.metadata)),
                skip,
                spec.key,
                info=info,
                flink_version=common.flink_version,
                sink=_sink(common, spec.key, spec.kind_column),
                database_include=spec.database_include,
                table_include=spec.table_include,
            ),
            "changelog",
            spec,
            spec.key,
        )
    from cdc.core.envelopes import parse_metadata as envelope_metadata

    columns, info = envelope_sample(common, spec)
    info = replace(info, on_truncate=spec.on_truncate)
    if spec.key and spec.envelope == "ogg" and common.inputs and common.inputs[0] != "-":
        info = replace(info, stale_before=stale_befores(_records(common.inputs[0]), spec.key))
    return emit(
        common,
        decode_sql(
            _envelope_source(common, spec.envelope, spec.key),
            columns,
            metadata=envelope_metadata(spec.envelope, list(spec.metadata)),
            skip=skip,
            key=spec.key,
            info=info,
            database_include=spec.database_include,
            table_include=spec.table_include,
            flink_version=common.flink_version,
            sink=_sink(common, spec.key, spec.kind_column),
        ),
        "changelog",
        spec,
        spec.key,
    )


def _consistency_unchecked(policy: Any, command: str) -> None:
    """``--on-inconsistency fail`` stops on a changelog that contradicts the state; Flink does not check."""
    from cdc.core.state import Policy

    if policy == Policy.fail:
        raise UsageError(
            f"--on-inconsistency fail stops {command} on a changelog that contradicts its state; Flink's operators "
            "do not check a changelog (a retraction of an absent row is ignored there)",
            hint="print the SQL without --strict / --on-inconsistency fail (cdc's default, warn, computes the "
            "same rows as Flink)",
        )


def print_aggregate_sql(common: Common, spec: AggregateSpec) -> FlinkScript:
    """The continuous GROUP BY over the input table (append-only rows, or changelog rows read
    back through FROM_CHANGELOG; upsert rows only from an upsert-kafka source)."""
    _consistency_unchecked(spec.policy, "aggregate")
    reads = "changelog" if spec.input_mode == "changelog" else "rows"
    got = changelog_sample(common, spec, spec.kind_column, reads, spec.key, spec.input_mode == "upsert")
    # CSV values are text to Flink: SUM/AVG over a column of number text read it as cdc does (CAST).
    numeric_text = any(
        a.func in ("SUM", "AVG") and a.arg is not None and got.types.get(a.arg) == "STRING" for a in spec.query.aggs
    )
    return emit(
        common,
        aggregate_sql(
            got.source,
            got.types,
            list(spec.query.group_by),
            [(a.name, a.func, a.arg, a.distinct) for a in spec.query.aggs],
            input_mode=spec.input_mode,
            kind_column=spec.kind_column,
            keys=spec.key,
            empty_strings=got.empty_strings,
            select=None if numeric_text else spec.query.select_sql,
            where=spec.query.where.sql() if numeric_text and spec.query.where is not None else None,
            numbers=got.numbers,
            emit=spec.query.emit,
            delete_when=spec.delete_when,
            flink_version=common.flink_version,
            sink=_sink(common, spec.query.group_by, spec.kind_column),
            debezium=got.info,
        ),
        "rows" if spec.query.emit == "upsert" else "changelog",
        spec,
        spec.query.group_by,
    )


def print_materialize_sql(common: Common, spec: MaterializeSpec) -> FlinkScript:
    """The table a changelog describes, as the SQL client's result table (or an upsert sink)."""
    from cdc.core.presets import COMMIT_COLUMNS

    _consistency_unchecked(spec.policy, "materialize")
    got = changelog_sample(common, spec, spec.kind_column)
    # A change feed's commit columns are not part of the table (cdc leaves them out, and out of a
    # retraction's match): the query selects the other columns.
    commit = COMMIT_COLUMNS if spec.commit_columns is None else spec.commit_columns
    return emit(
        common,
        materialize_sql(
            got.source,
            got.types,
            kind_column=spec.kind_column,
            keys=spec.key,
            flink_version=common.flink_version,
            sink=_sink(common, spec.key),
            empty_strings=got.empty_strings,
            debezium=got.info,
            drop_columns=tuple(c for c in commit if c in got.types),
            sample=every_row(common, spec.kind_column) if spec.key and got.info is None else got.rows,
            dedup=spec.dedup,
        ),
        "table",
        spec,
        spec.key,
    )


def every_row(common: Common, kind_column: str) -> Iterator[dict[str, Any]]:
    """The first input's changelog rows, all of them, read again (streaming): a keyed check must see
    every change, not the first rows."""
    from cdc.core.specs import CopySpec

    yield from common.reader.rows(input_of(common, CopySpec("changelog", kind_column)), _ignore)


def print_replay_sql(common: Common, spec: ReplaySpec) -> FlinkScript:
    """ChangelogNormalize: an upsert-kafka source keyed by --key, or keep-last by --order-by."""
    reads = "changelog" if spec.input_mode == "changelog" else "rows"
    got = changelog_sample(common, spec, spec.kind_column, reads, spec.key, spec.input_mode == "upsert")
    return emit(
        common,
        replay_sql(
            got.source,
            got.types,
            spec.key,
            input_mode=spec.input_mode,
            emit=spec.emit,
            kind_column=spec.kind_column,
            order_by=spec.order_by,
            delete_when=spec.delete_when,
            flink_version=common.flink_version,
            sink=_sink(common, spec.key, spec.kind_column),
            empty_strings=got.empty_strings,
            debezium=got.info,
            sample=every_row(common, spec.kind_column) if spec.order_by and got.info is None else got.rows,
            keep_noop=spec.keep_noop,
            numbers=got.numbers,
        ),
        "rows" if spec.emit == "upsert" else "changelog",
        spec,
        spec.key,
    )


def print_encode_sql(common: Common, spec: EncodeSpec) -> FlinkScript:
    """A debezium-json sink written from the changelog (Flink's form: -U → d, +U → c)."""
    got = changelog_sample(common, spec, spec.kind_column)
    sink = _sink(common, spec.key, spec.kind_column)
    if sink is None:
        raise UsageError(
            "debezium-encode writes events: name where, --sql-sink kafka --sink-topic T --bootstrap-servers H "
            "(or --sql-sink filesystem --sink-path DIR)"
        )
    return emit(
        common,
        debezium_encode_sql(
            got.source,
            got.types,
            sink,
            kind_column=spec.kind_column,
            split_updates=spec.split_updates,
            flink_version=common.flink_version,
            empty_strings=got.empty_strings,
            debezium=got.info,
        ),
        "sink",
        spec,
        spec.key,
    )


def print_inspect_sql(common: Common, spec: InspectSpec) -> FlinkScript:
    """The changes per kind (and the time range per kind) — the part of cdc's report one
    streaming GROUP BY computes; the script's header says what it leaves out."""
    got = changelog_sample(common, spec, spec.kind_column)
    checks = [
        f"{option} {', '.join(names)}: {what}"
        for option, names, what in (
            ("--key", spec.key, "the keys cdc's consistency checks follow"),
            ("--commit-columns", spec.commit_columns or (), "left out of a row's identity in those checks"),
            ("--ignore-columns", spec.ignore_columns, "left out of a row's identity in those checks"),
        )
        if names
    ]
    return emit(
        common,
        inspect_sql(
            got.source,
            got.types,
            spec.kind_column,
            time_column=spec.time_column,
            flink_version=common.flink_version,
            sink=_sink(common),
            empty_strings=got.empty_strings,
            debezium=got.info,
            checks=checks,
        ),
        "counts",
        None,
        (),
    )
