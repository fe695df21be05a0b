"""``cdc to-changelog``: changelog rows → append-only rows with an op column (Flink TO_CHANGELOG)."""

from __future__ import annotations

from typing import Annotated

import typer

from cdc.cli import options as o
from cdc.cli.errors import reported_errors
from cdc.cli.from_changelog import MAPPING_PANEL, Drop, Preset
from cdc.cli.pipeline import CHANGELOG_INPUTS, IOConfig, changelog_readers, run
from cdc.cli.print_sql import PrintSql, columns_of, emit, sample, source_of
from cdc.core.convert import ToChangelogRow, ToChangelogSpec, to_changelog
from cdc.core.flinksql import to_changelog_sql
from cdc.core.mapping import parse_kinds, parse_to_mapping, reverse_mapping
from cdc.core.presets import get_preset
from cdc.core.stats import Counts
from cdc.formats.chunked import Converter
from cdc.formats.streams import STDIO
from cdc.formats.vectorized import to_changelog_batches

OpName = Annotated[
    str | None,
    typer.Option(
        "--op",
        help="Name of the output op column, written first. [default: op, or the preset's]",
        rich_help_panel=MAPPING_PANEL,
        show_default=False,
    ),
]
OpMapping = Annotated[
    list[str] | None,
    typer.Option(
        "--op-mapping",
        "-m",
        rich_help_panel=MAPPING_PANEL,
        show_default=False,
        help="'KINDS=CODE' (repeatable; kinds a comma list) or one JSON object. Only mapped kinds are "
        "written; the rest are dropped. [default: INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]",
    ),
]


def command(
    inputs: o.Inputs = None,
    output: o.Output = "-",
    op: OpName = None,
    op_mapping: OpMapping = None,
    preset: Preset = None,
    drop: Drop = None,
    on_error: o.OnErrorOpt = o.OnError.fail,
    rejects: o.RejectsOpt = None,
    kind_column: o.KindColumn = "op",
    input_format: o.InputFormat = None,
    output_format: o.OutputFormat = None,
    columns: o.Columns = None,
    stats: o.StatsOpt = False,
    progress: o.ProgressOpt = None,
    verbose: o.VerboseOpt = False,
    print_sql: PrintSql = False,
) -> None:
    """Turn changelog rows into append-only rows with an op column (Flink TO_CHANGELOG).

    Output is [op, all input columns]. With --op-mapping only the mapped kinds are written, so a
    mapping is also a filter: the deletion-flag pattern below drops -U rows.

    [bold]Examples[/]

      cdc to-changelog changes.jsonl --op deleted --op-mapping 'INSERT, UPDATE_AFTER=false' --op-mapping 'DELETE=true'

      cdc from-changelog samples/orders-ops.csv | cdc to-changelog --preset delta-cdf -o cdf.parquet

      cdc to-changelog --input-format debezium samples/mysql-inventory.jsonl -f csv
    """
    with reported_errors(verbose):
        chosen = get_preset(preset) if preset else None
        if op_mapping:
            mapping = parse_to_mapping(op_mapping)
        elif chosen is not None:
            mapping = reverse_mapping(chosen.mapping)
        else:
            mapping = parse_to_mapping([])
        spec = ToChangelogSpec(
            mapping=mapping,
            op_column=op or (chosen.op_column if chosen else "op"),
            kind_column=kind_column,
            drop=frozenset(parse_kinds(drop or [], "--drop")),
        )
        if print_sql:
            paths = list(inputs or [STDIO])
            source = source_of(paths, input_format, CHANGELOG_INPUTS)
            rows = sample(paths, input_format, changelog_readers(kind_column), CHANGELOG_INPUTS)
            if source.fmt == "debezium":
                rows = [{k: v for k, v in r.items() if k != kind_column} for r in rows]
            emit(
                to_changelog_sql(
                    "cdc to-changelog",
                    source,
                    columns_of(rows, source),
                    kind_column,
                    spec.op_column,
                    spec.mapping,
                    spec.drop,
                )
            )
            return
        counts = Counts()
        cfg = IOConfig(
            inputs,
            output,
            input_format,
            output_format,
            o.split_list(columns),
            on_error,
            rejects,
            stats,
            progress,
            kind_column=None,
            command="to-changelog",
        )
        run(
            cfg,
            lambda reader, reject: to_changelog(reader, spec, counts, reject),
            counts,
            readers=changelog_readers(kind_column),
            input_choices=CHANGELOG_INPUTS,
            fast=None if input_format == "debezium" else lambda c: _fast(spec, c),
            vector=lambda c: to_changelog_batches(spec, c),
        )


def _fast(spec: ToChangelogSpec, counts: Counts) -> Converter:
    """The JSON lines path: whole chunks spliced as bytes where they can be, else row by row."""
    from cdc.formats.engine.native import kernel

    args = (spec.kind_column, spec.op_column, spec.mapping, spec.drop, counts)
    if kernel.available():
        return Converter(ToChangelogRow(spec, counts), counts, kernel=kernel.to_changelog_kernel(*args))
    from cdc.formats.splice import to_changelog_splice  # msgspec: only without the kernel

    return Converter(ToChangelogRow(spec, counts), counts, splice=to_changelog_splice(*args))
