"""``--print-sql``: read the first rows to infer columns and make the Flink SQL script (the
API's ``print_sql=True``: ``result.sql``; nothing else runs)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

from cdc.core.errors import UsageError
from cdc.core.flinksql import (
    DebeziumInfo,
    Sink,
    Source,
    aggregate_sql,
    debezium_encode_sql,
    debezium_sql,
    decode_sql,
    from_changelog_sql,
    infer_columns,
    inspect_sql,
    materialize_sql,
    replay_sql,
    scan_records,
    to_changelog_sql,
)
from cdc.core.model import OnError
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
from cdc.core.stats import Counts
from cdc.engine.inputs import open_rows, resolve
from cdc.engine.job import Job

SAMPLE_ROWS = 100


@dataclass
class Common:
    """What a script is made from: the job's inputs and error handling, and where the script
    reads and writes (the commands' ``--print-sql`` group, the API's keywords of the same names)."""

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


def job_of(common: Common, spec: Any) -> Job:
    return Job(spec, inputs=tuple(common.inputs), input_format=common.input_format, on_error=common.on_error)


def _ignore(err: Any, raw: str) -> None:
    """A bad record among the first rows says nothing about the columns."""


def sample(job: Job, errors: list[str] | None = None) -> tuple[Job, list[dict[str, Any]]]:
    """The job with its formats decided, and the first rows of its first input (``errors``
    collects what cdc rejected among them)."""
    job = resolve(job.with_(inputs=job.inputs[:1]))

    def reject(err: Any, raw: str) -> None:
        if errors is not None:
            errors.append(str(err))

    reader = open_rows(job, reject, None, Counts())
    return job, list(islice(iter(reader), SAMPLE_ROWS))


def _source(job: Job, common: Common | None = None, key: tuple[str, ...] = (), upserts: bool = False) -> Source:
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


def columns_of(rows: list[dict[str, Any]], source: Source) -> dict[str, str]:
    return infer_columns(rows, text_only=source.fmt in ("csv", "tsv"))


def empty_strings(rows: list[dict[str, Any]], source: Source) -> bool:
    """CSV: a quoted empty field ("" → empty string) among the sampled rows."""
    return source.fmt in ("csv", "tsv") and any(v == "" for r in rows for v in r.values())


def emit(sql: str) -> str:
    return sql


def print_from_changelog_sql(common: Common, spec: FromChangelogSpec) -> str:
    job, rows = sample(job_of(common, spec))
    source = _source(job, common, spec.keys)
    return emit(
        from_changelog_sql(
            "cdc from-changelog",
            source,
            columns_of(rows, source),
            spec.op_column,
            spec.mapping,
            spec.keys,
            common.on_error == OnError.skip,
            spec.drop,
            empty_strings=empty_strings(rows, source),
            commit_columns=spec.commit_columns,
            drop_columns=spec.commit_columns if spec.drop_commit_columns else (),
            flink_version=common.flink_version,
            sink=_sink(common, spec.keys, spec.kind_column),
        )
    )


@dataclass
class Sampled:
    """The input of a command that reads changes, as Flink reads it: the source table, column
    types, whether the CSV sample had quoted empty fields, the first rows as cdc read them, and —
    for an envelope input (``--input-format debezium|canal|maxwell|ogg``) — what its format would
    meet (the image columns only, as ``decode --print-sql`` sees them; no rows)."""

    source: Source
    types: dict[str, str]
    empty_strings: bool
    info: DebeziumInfo | None
    rows: list[dict[str, Any]]


def changelog_sample(
    common: Common,
    spec: Any,
    kind_column: str,
    reads: str = "changelog",
    key: tuple[str, ...] = (),
    upserts: bool = False,
) -> Sampled:
    """See :class:`Sampled` (``upserts``: the job reads upserts, from an upsert-kafka source)."""
    from cdc.core.flinksql import ENVELOPES
    from cdc.core.specs import CopySpec

    job = resolve(job_of(common, spec).with_(inputs=tuple(common.inputs[:1])))
    source = _source(job, common, key, upserts)
    if source.fmt == "debezium":
        types, info = debezium_sample(common, DecodeSpec(kind_column=kind_column))
        return Sampled(source, types, False, info, [])
    if source.fmt in ENVELOPES:
        types, info = envelope_sample(common, DecodeSpec(envelope=source.fmt, kind_column=kind_column))
        return Sampled(source, types, False, info, [])
    job, rows = sample(job_of(common, CopySpec(reads, kind_column)))
    return Sampled(source, columns_of(rows, source), empty_strings(rows, source), None, rows)


def print_to_changelog_sql(common: Common, spec: ToChangelogSpec) -> str:
    got = changelog_sample(common, spec, spec.kind_column)
    return emit(
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
        )
    )


def debezium_sample(common: Common, spec: DecodeSpec) -> tuple[dict[str, str], DebeziumInfo]:
    """The first events of a Debezium input: image column types as cdc decodes them, and what
    Flink's debezium-json would meet (schema envelope, logical types, ``null`` lines, TOAST)."""
    from cdc.formats.debezium import DebeziumDecoder
    from cdc.formats.registry import open_inputs

    job = resolve(job_of(common, spec).with_(inputs=tuple(common.inputs[:1]), input_format="debezium"))
    source = Source(job.inputs[0], "debezium")

    def read(raw: bool) -> tuple[list[dict[str, Any]], bool]:
        quiet = DecodeSpec(
            kind_column=spec.kind_column, schema_include=spec.schema_include, raw_values=raw, on_truncate="skip"
        )
        decoder = DebeziumDecoder(quiet)  # kept: it tells whether the events came in an envelope
        reader = open_inputs(job.inputs, job.formats, _ignore, None, {"debezium": decoder.reader})
        rows = list(islice(iter(reader), SAMPLE_ROWS))
        images = [{k: v for k, v in r.items() if k != quiet.kind_column} for r in rows]
        return images, spec.schema_include == "true" or decoder.saw_envelope

    images, enveloped = read(spec.raw_values)
    raw_images, _ = read(True)
    scan = scan_events(job.inputs[0], spec.schema_include) if job.inputs[0] != "-" else DebeziumInfo()
    info = replace(
        scan, schema_include=enveloped, raw_columns=columns_of(raw_images, source), raw_values=spec.raw_values
    )
    return columns_of(images, source), info


def envelope_sample(common: Common, spec: DecodeSpec) -> tuple[dict[str, str], DebeziumInfo]:
    """The first records of a Canal / Maxwell / OGG input: column types as cdc decodes them, and
    what Flink's format would meet (see ``flinksql.scan_records``)."""
    quiet = replace(spec, on_truncate="skip", key=(), metadata=())
    errors: list[str] = []
    job, rows = sample(job_of(common, quiet), errors)
    images = [{k: v for k, v in r.items() if k != spec.kind_column} for r in rows]
    info = (
        scan_events(job.inputs[0], envelope=spec.envelope, include=(spec.database_include, spec.table_include))
        if job.inputs[0] != "-"
        else DebeziumInfo()
    )
    if spec.bootstrap == "skip" and "bootstrap-insert" in info.unsupported:  # cdc skips those rows too
        info = replace(info, rejected=info.unsupported, unsupported="")
    return infer_columns(images), replace(info, raw_values=spec.raw_values, first_error=errors[0] if errors else "")


def scan_events(
    path: str,
    schema_include: str = "auto",
    envelope: str = "debezium",
    include: tuple[str | None, str | None] = (None, None),
) -> DebeziumInfo:
    """The first records of an envelope file as sent (see ``flinksql.scan_records``)."""
    import json

    def records() -> Iterator[Any]:
        with open(path, "rb") as f:
            for line in islice(f, SAMPLE_ROWS * 2):
                text = line.strip()
                if not text:
                    continue
                try:
                    yield json.loads(text)
                except ValueError:
                    continue

    return scan_records(records(), envelope, schema_include, *include)


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


def print_decode_sql(common: Common, spec: DecodeSpec) -> str:
    spec = replace(spec, envelope=_envelope_of(common, spec))
    skip = common.on_error == OnError.skip
    if spec.envelope == "debezium":
        from cdc.formats.debezium import parse_metadata

        columns, info = debezium_sample(common, spec)
        info = replace(info, on_truncate=spec.on_truncate)
        return emit(
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
            )
        )
    from cdc.core.envelopes import parse_metadata as envelope_metadata

    columns, info = envelope_sample(common, spec)
    info = replace(info, on_truncate=spec.on_truncate)
    return emit(
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
        )
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


def print_aggregate_sql(common: Common, spec: AggregateSpec) -> str:
    """The continuous GROUP BY over the input table (append-only rows, or changelog rows read
    back through FROM_CHANGELOG; upsert rows only from an upsert-kafka source)."""
    _consistency_unchecked(spec.policy, "aggregate")
    reads = "changelog" if spec.input_mode == "changelog" else "rows"
    got = changelog_sample(common, spec, spec.kind_column, reads, spec.key, spec.input_mode == "upsert")
    return emit(
        aggregate_sql(
            got.source,
            got.types,
            list(spec.query.group_by),
            [(a.name, a.func, a.arg, a.distinct) for a in spec.query.aggs],
            input_mode=spec.input_mode,
            kind_column=spec.kind_column,
            keys=spec.key,
            empty_strings=got.empty_strings,
            select=spec.query.select_sql,
            emit=spec.query.emit,
            delete_when=spec.delete_when,
            flink_version=common.flink_version,
            sink=_sink(common, spec.query.group_by, spec.kind_column),
            debezium=got.info,
        )
    )


def print_materialize_sql(common: Common, spec: MaterializeSpec) -> str:
    """The table a changelog describes, as the SQL client's result table (or an upsert sink)."""
    from cdc.core.presets import COMMIT_COLUMNS

    if spec.as_of is not None or spec.dedup:
        raise UsageError(
            "--as-of and --dedup have no Flink SQL form here",
            hint="print the SQL without them; a temporal join (FOR SYSTEM_TIME AS OF) is the cluster's --as-of",
        )
    _consistency_unchecked(spec.policy, "materialize")
    got = changelog_sample(common, spec, spec.kind_column)
    # A change feed's commit columns are not part of the table (cdc leaves them out, and out of a
    # retraction's match): the query selects the other columns.
    commit = COMMIT_COLUMNS if spec.commit_columns is None else spec.commit_columns
    return emit(
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
            sample=got.rows,
        )
    )


def print_replay_sql(common: Common, spec: ReplaySpec) -> str:
    """ChangelogNormalize: an upsert-kafka source keyed by --key, or keep-last by --order-by."""
    if spec.since is not None or spec.until is not None or spec.keep_noop:
        raise UsageError("--since, --until, --net and --keep-noop have no Flink SQL form here")
    reads = "changelog" if spec.input_mode == "changelog" else "rows"
    got = changelog_sample(common, spec, spec.kind_column, reads, spec.key, spec.input_mode == "upsert")
    return emit(
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
            sample=got.rows,
        )
    )


def print_encode_sql(common: Common, spec: EncodeSpec) -> str:
    """A debezium-json sink written from the changelog (Flink's form: -U → d, +U → c)."""
    got = changelog_sample(common, spec, spec.kind_column)
    sink = _sink(common, spec.key, spec.kind_column)
    if sink is None:
        raise UsageError(
            "debezium-encode writes events: name where, --sql-sink kafka --sink-topic T --bootstrap-servers H "
            "(or --sql-sink filesystem --sink-path DIR)"
        )
    return emit(
        debezium_encode_sql(
            got.source,
            got.types,
            sink,
            kind_column=spec.kind_column,
            split_updates=spec.split_updates,
            flink_version=common.flink_version,
            empty_strings=got.empty_strings,
            debezium=got.info,
        )
    )


def print_inspect_sql(common: Common, spec: InspectSpec) -> str:
    """The changes per kind (and the time range per kind) — the part of cdc's report one
    streaming GROUP BY computes; the script's header says what it leaves out."""
    got = changelog_sample(common, spec, spec.kind_column)
    return emit(
        inspect_sql(
            got.source,
            got.types,
            spec.kind_column,
            time_column=spec.time_column,
            flink_version=common.flink_version,
            sink=_sink(common),
            empty_strings=got.empty_strings,
            debezium=got.info,
        )
    )
