"""``--print-sql``: read the first rows to infer columns, print the Flink SQL, and stop."""

from __future__ import annotations

import sys
from itertools import islice
from typing import Any

from cdc.cli.options import Common
from cdc.core.errors import UsageError
from cdc.core.flinksql import Source, debezium_sql, from_changelog_sql, infer_columns, to_changelog_sql
from cdc.core.model import OnError
from cdc.core.specs import AggregateSpec, DecodeSpec, FromChangelogSpec, ToChangelogSpec
from cdc.core.stats import Counts
from cdc.formats.engine.inputs import open_rows, resolve
from cdc.formats.engine.job import Job

SAMPLE_ROWS = 100


def _ignore(err: Any, raw: str) -> None:
    """A bad record among the first rows says nothing about the columns."""


def sample(job: Job) -> tuple[Job, list[dict[str, Any]]]:
    """The job with its formats decided, and the first rows of its first input."""
    job = resolve(job.with_(inputs=job.inputs[:1]))
    reader = open_rows(job, _ignore, None, Counts())
    return job, list(islice(iter(reader), SAMPLE_ROWS))


def _source(job: Job) -> Source:
    return Source(job.inputs[0], job.formats[0])


def columns_of(rows: list[dict[str, Any]], source: Source) -> dict[str, str]:
    return infer_columns(rows, text_only=source.fmt in ("csv", "tsv"))


def emit(sql: str) -> None:
    sys.stdout.write(sql)
    sys.stdout.flush()


def _job(common: Common, spec: Any) -> Job:
    return Job(spec, inputs=tuple(common.inputs), input_format=common.input_format)


def print_from_changelog_sql(common: Common, spec: FromChangelogSpec) -> None:
    job, rows = sample(_job(common, spec))
    source = _source(job)
    emit(
        from_changelog_sql(
            "cdc from-changelog",
            source,
            columns_of(rows, source),
            spec.op_column,
            spec.mapping,
            spec.keys,
            common.on_error == OnError.skip,
            spec.drop,
        )
    )


def print_to_changelog_sql(common: Common, spec: ToChangelogSpec) -> None:
    job, rows = sample(_job(common, spec))
    source = _source(job)
    if source.fmt == "debezium":
        rows = [{k: v for k, v in r.items() if k != spec.kind_column} for r in rows]
    emit(
        to_changelog_sql(
            "cdc to-changelog",
            source,
            columns_of(rows, source),
            spec.kind_column,
            spec.op_column,
            spec.mapping,
            spec.drop,
        )
    )


def print_decode_sql(common: Common, spec: DecodeSpec) -> None:
    from cdc.formats.debezium import DebeziumDecoder, parse_metadata
    from cdc.formats.registry import open_inputs

    quiet = DecodeSpec(schema_include=spec.schema_include, raw_values=spec.raw_values, on_truncate="skip")
    job = resolve(_job(common, quiet).with_(inputs=tuple(common.inputs[:1])))
    decoder = DebeziumDecoder(quiet)  # kept: it tells whether the events came in an envelope
    reader = open_inputs(job.inputs, job.formats, _ignore, None, {"debezium": decoder.reader})
    rows = list(islice(iter(reader), SAMPLE_ROWS))
    images = [{k: v for k, v in r.items() if k != quiet.kind_column} for r in rows]
    source = Source(job.inputs[0], "debezium")
    emit(
        debezium_sql(
            "cdc debezium-decode",
            source,
            columns_of(images, source),
            spec.schema_include == "true" or decoder.saw_envelope,
            list(parse_metadata(spec.metadata)),
            common.on_error == OnError.skip,
            spec.key,
        )
    )


def print_aggregate_sql(common: Common, spec: AggregateSpec) -> None:
    """The continuous GROUP BY over the input table (append-only rows, or changelog rows read
    back through FROM_CHANGELOG)."""
    from cdc.core.flinksql import changelog_view, create_table, header
    from cdc.core.specs import CopySpec

    reads = "changelog" if spec.input_mode == "changelog" else "rows"
    job, rows = sample(_job(common, CopySpec(reads, spec.kind_column)))
    source = _source(job)
    if spec.input_mode == "upsert":
        raise UsageError(
            "--print-sql: upsert input needs FROM_CHANGELOG with PARTITION BY, which Flink 2.3 does not take",
            hint="declare the source with a PRIMARY KEY on an upsert-kafka table instead",
        )
    table = create_table("cdc_input", columns_of(rows, source), source)
    parts = [header("cdc aggregate", source), table]
    name = "`cdc_input`"
    if spec.input_mode == "changelog":
        parts.append(changelog_view(columns_of(rows, source), spec.kind_column))
        name = "`cdc_changelog`"
    emit("\n\n".join(parts) + "\n\n" + spec.query.select_sql(name) + ";\n")
