"""``cdc from-changelog``: op-coded append-only rows → changelog rows (Flink FROM_CHANGELOG)."""

from __future__ import annotations

from typing import Annotated

import typer

from cdc.cli import options as o
from cdc.cli.errors import reported_errors
from cdc.cli.pipeline import IOConfig, run
from cdc.cli.print_sql import PrintSql, columns_of, emit, sample, source_of
from cdc.core.convert import FromChangelogRow, FromChangelogSpec, from_changelog
from cdc.core.errors import UsageError
from cdc.core.flinksql import from_changelog_sql
from cdc.core.mapping import is_upsert_mapping, parse_from_mapping, parse_kinds
from cdc.core.presets import PRESETS, get_preset
from cdc.core.stats import Counts
from cdc.formats.chunked import Converter
from cdc.formats.streams import STDIO
from cdc.formats.vectorized import from_changelog_batches

MAPPING_PANEL = "Op codes"

OpColumn = Annotated[
    str | None,
    typer.Option(
        "--op",
        help="The op-code column; it must exist and is removed. [default: op, or the preset's]",
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
        help="'CODES=KIND' (repeatable; codes a comma list) or one JSON object. "
        "[default: INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]",
    ),
]
Preset = Annotated[
    str | None,
    typer.Option(
        "--preset",
        rich_help_panel=MAPPING_PANEL,
        show_default=False,
        help="Named vocabulary: " + ", ".join(PRESETS) + ". Sets --op and --op-mapping; flags override.",
    ),
]
Drop = Annotated[
    list[str] | None,
    typer.Option(
        "--drop",
        rich_help_panel=MAPPING_PANEL,
        show_default=False,
        help="Drop rows of this kind (repeatable), e.g. --drop UPDATE_BEFORE.",
    ),
]

UPSERT_NEEDS_KEY = (
    "an op mapping that produces UPDATE_AFTER without UPDATE_BEFORE describes an upsert changelog and requires a key"
)


def command(
    inputs: o.Inputs = None,
    output: o.Output = "-",
    op: OpColumn = None,
    op_mapping: OpMapping = None,
    preset: Preset = None,
    key: o.KeyOpt = None,
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
    """Turn append-only rows with an op-code column into changelog rows (Flink FROM_CHANGELOG).

    Each row's code is mapped to a row kind; the op column is removed and the kind column
    (+I -U +U -D) is written first. NULL and unknown codes fail with FILE:LINE, or are skipped.

    [bold]Examples[/]

      cdc from-changelog samples/orders-ops.csv -o changes.parquet

      cdc from-changelog samples/flat-cdc.jsonl --op __op -m 'c, r=INSERT' -m u=UPDATE_AFTER -m d=DELETE --key id

      cdc from-changelog samples/flat-cdc.jsonl --preset debezium --key id --output-format print

      cdc from-changelog samples/flat-cdc.jsonl --preset debezium --key id --print-sql
    """
    with reported_errors(verbose):
        chosen = get_preset(preset) if preset else None
        if op_mapping:
            mapping = parse_from_mapping(op_mapping)
        elif chosen is not None:
            mapping = dict(chosen.mapping)
        else:
            mapping = parse_from_mapping([])
        keys = o.split_list(key)
        if is_upsert_mapping(mapping.values()) and not keys:
            raise UsageError(
                UPSERT_NEEDS_KEY,
                hint="give the upsert key with --key COLUMN (Flink's PARTITION BY), "
                "or map a code to UPDATE_BEFORE for retract semantics",
            )
        spec = FromChangelogSpec(
            op_column=op or (chosen.op_column if chosen else "op"),
            mapping=mapping,
            kind_column=kind_column,
            keys=keys,
            drop=frozenset(parse_kinds(drop or [], "--drop")),
        )
        if print_sql:
            paths = list(inputs or [STDIO])
            source = source_of(paths, input_format)
            types = columns_of(sample(paths, input_format), source)
            emit(
                from_changelog_sql(
                    "cdc from-changelog",
                    source,
                    types,
                    spec.op_column,
                    spec.mapping,
                    spec.keys,
                    on_error == o.OnError.skip,
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
            kind_column=kind_column,
            command="from-changelog",
        )
        run(
            cfg,
            lambda reader, reject: from_changelog(reader, spec, counts, reject),
            counts,
            fast=lambda c: _fast(spec, c),
            vector=lambda c: from_changelog_batches(spec, c),
        )


def _fast(spec: FromChangelogSpec, counts: Counts) -> Converter:
    """The JSON lines path: whole chunks spliced as bytes where they can be, else row by row."""
    from cdc.formats.engine.native import kernel

    if spec.keys:
        return Converter(FromChangelogRow(spec, counts), counts)
    args = (spec.op_column, spec.kind_column, spec.mapping, spec.drop, counts)
    if kernel.available():
        return Converter(FromChangelogRow(spec, counts), counts, kernel=kernel.from_changelog_kernel(*args))
    from cdc.formats.splice import from_changelog_splice  # msgspec: only without the kernel

    return Converter(FromChangelogRow(spec, counts), counts, splice=from_changelog_splice(*args))
