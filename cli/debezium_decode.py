"""``cdc debezium-decode``: Debezium JSON change events → changelog rows (Flink debezium-json)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from cdc.cli import options as o
from cdc.cli.errors import reported_errors
from cdc.cli.pipeline import IOConfig, run
from cdc.cli.print_sql import PrintSql, columns_of, emit, sample
from cdc.core.flinksql import Source, debezium_sql
from cdc.core.stats import Counts
from cdc.formats.chunked import Converter
from cdc.formats.debezium import METADATA_KEYS, DebeziumDecoder, DebeziumOptions, parse_metadata
from cdc.formats.streams import STDIO

DBZ_PANEL = "Debezium"


class SchemaInclude(StrEnum):
    auto = "auto"
    true = "true"
    false = "false"


class OnTruncate(StrEnum):
    fail = "fail"
    skip = "skip"
    delete = "delete"


def command(
    inputs: o.Inputs = None,
    output: o.Output = "-",
    key: Annotated[
        list[str] | None,
        typer.Option(
            "--key",
            "-k",
            rich_help_panel=DBZ_PANEL,
            show_default=False,
            help="Key column(s): rebuild missing/partial before images (REPLICA IDENTITY DEFAULT) and "
            "TOAST placeholders from the last row seen for the key.",
        ),
    ] = None,
    schema_include: Annotated[
        SchemaInclude,
        typer.Option(
            "--schema-include",
            rich_help_panel=DBZ_PANEL,
            help="{schema, payload} envelope: detect per line, or require/forbid it.",
        ),
    ] = SchemaInclude.auto,
    on_truncate: Annotated[
        OnTruncate,
        typer.Option(
            "--on-truncate",
            rich_help_panel=DBZ_PANEL,
            help="op 't': fail, skip it, or emit -D for every row still live in this stream.",
        ),
    ] = OnTruncate.fail,
    metadata: Annotated[
        list[str] | None,
        typer.Option(
            "--metadata",
            rich_help_panel=DBZ_PANEL,
            show_default=False,
            help="Add a metadata column NAME[=COLUMN] (repeatable): " + ", ".join(METADATA_KEYS) + ".",
        ),
    ] = None,
    raw_values: Annotated[
        bool,
        typer.Option(
            "--raw-values",
            rich_help_panel=DBZ_PANEL,
            help="Keep values as sent (no decimal/date/timestamp decoding from the schema block).",
        ),
    ] = False,
    on_error: o.OnErrorOpt = o.OnError.fail,
    rejects: o.RejectsOpt = None,
    kind_column: o.KindColumn = "op",
    output_format: o.OutputFormat = None,
    columns: o.Columns = None,
    stats: o.StatsOpt = False,
    progress: o.ProgressOpt = None,
    verbose: o.VerboseOpt = False,
    print_sql: PrintSql = False,
) -> None:
    """Decode Debezium JSON change events into changelog rows, exactly as Flink's debezium-json does.

    c and r give +I(after); u gives -U(before), +U(after); d gives -D(before). Tombstones and
    op m are skipped and counted. With a schema block, Decimal, Date, Time and Timestamp values
    become natural values (typed columns in Parquet).

    [bold]Examples[/]

      cdc debezium-decode samples/mysql-inventory.jsonl

      cdc debezium-decode samples/mysql-inventory.jsonl -o changes.parquet --metadata source.table=tbl

      cdc debezium-decode samples/postgres-default-identity.jsonl --key id -f print

      cdc debezium-decode samples/mysql-inventory.jsonl --print-sql
    """
    with reported_errors(verbose):
        counts = Counts()
        options = DebeziumOptions(
            kind_column=kind_column,
            schema_include=schema_include.value,
            raw_values=raw_values,
            metadata=parse_metadata(metadata or []),
            on_truncate=on_truncate.value,
            key=o.split_list(key),
        )
        decoder = DebeziumDecoder(options, counts)
        if print_sql:
            _print_sql(inputs, options, on_error == o.OnError.skip)
            return
        cfg = IOConfig(
            inputs,
            output,
            "debezium",
            output_format,
            o.split_list(columns),
            on_error,
            rejects,
            stats,
            progress,
            kind_column=kind_column,
            command="debezium-decode",
        )
        run(
            cfg,
            lambda reader, reject: reader,
            counts,
            readers={"debezium": decoder.reader},
            input_choices=("debezium",),
            summary=lambda read: _summary(counts, read),
            fast=_fast(options) if decoder.stateless else None,
        )


def _fast(options: DebeziumOptions) -> Any:
    """Stateless decoding runs on the parallel chunk path, one decoder per worker."""

    def make(counts: Counts) -> Converter:
        from cdc.formats.engine.native import kernel as c_kernel

        decoder = DebeziumDecoder(options, counts)
        plain = not options.metadata and options.schema_include != "true" and decoder.stateless
        kernel = None
        if plain and c_kernel.available():
            envelopes = options.schema_include == "auto"
            kernel = c_kernel.debezium_kernel(options.kind_column, counts, envelopes, decoder.plain_schema)
        splice = None
        if plain and kernel is None:
            from cdc.formats.splice import DebeziumSplice  # msgspec: only without the kernel

            splice = DebeziumSplice(options.kind_column, counts)
        return Converter(decoder.fast_decode(), counts, tombstones=True, splice=splice, kernel=kernel)

    return make


def _print_sql(inputs: list[str] | None, options: DebeziumOptions, skip: bool) -> None:
    paths = list(inputs or [STDIO])
    quiet = DebeziumOptions(schema_include=options.schema_include, raw_values=options.raw_values, on_truncate="skip")
    decoder = DebeziumDecoder(quiet)
    rows = sample(paths, "debezium", {"debezium": decoder.reader}, ("debezium",))
    enveloped = options.schema_include == "true" or decoder.saw_envelope
    images = [{k: v for k, v in r.items() if k != quiet.kind_column} for r in rows]
    source = Source(paths[0], "debezium")
    emit(
        debezium_sql(
            "cdc debezium-decode", source, columns_of(images, source), enveloped, options.metadata, skip, options.key
        )
    )


def _summary(counts: Counts, read: int) -> str:
    counts.written = sum(counts.by_kind.values())
    return counts.summary(read)
