"""``cdc materialize``: a changelog applied to in-memory state → the table it describes."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from cdc.cli import options as o
from cdc.cli.errors import reported_errors, say
from cdc.cli.pipeline import (
    CHANGELOG_INPUTS,
    IOConfig,
    changelog_readers,
    read_all,
    read_line_chunks,
    write_rows,
    write_texts,
)
from cdc.cli.report import render_diff, report_findings, state_stats
from cdc.core.compare import compare_tables
from cdc.core.convert import split_changes
from cdc.core.errors import UsageError
from cdc.core.rowstore import Row
from cdc.core.state import Findings, KeyedState, Policy, TableState, new_state
from cdc.core.timeorder import sort_key
from cdc.core.versioned import VersionedState
from cdc.formats.registry import open_inputs
from cdc.formats.registry import output_format as format_of_output
from cdc.formats.streams import STDIO

STATE_PANEL = "State"

OnInconsistency = Annotated[
    Policy,
    typer.Option(
        "--on-inconsistency",
        rich_help_panel=STATE_PANEL,
        help="Insert of an existing key, retraction of an absent row, a -U unlike the stored "
        "row, a negative count: fail, warn (count + first examples), or ignore.",
    ),
]
Strict = Annotated[bool, typer.Option("--strict", rich_help_panel=STATE_PANEL, help="Same as --on-inconsistency fail.")]
Dedup = Annotated[
    bool,
    typer.Option(
        "--dedup",
        rich_help_panel=STATE_PANEL,
        help="Drop an event equal to the previous event for its key (at-least-once duplicates).",
    ),
]
TimeColumn = Annotated[
    str | None,
    typer.Option(
        "--time-column",
        "-t",
        rich_help_panel=STATE_PANEL,
        show_default=False,
        help="Column holding each change's time (for --as-of).",
    ),
]


def policy_of(on_inconsistency: Policy, strict: bool) -> Policy:
    return Policy.fail if strict else on_inconsistency


def build_state(
    cfg: IOConfig,
    kind_column: str,
    key: tuple[str, ...],
    policy: Policy,
    dedup: bool,
    as_of: str | None = None,
    time_column: str | None = None,
    as_texts: bool = False,
) -> tuple[TableState, int, list[bytes] | None]:
    """The state after every change, the number of records read, and — with ``as_texts``, when
    the C kernel kept the whole table — its live rows as the JSON texts their changes wrote
    (then the state holds the counts only)."""
    findings = Findings(policy)
    state: TableState
    if as_of is not None:
        if not time_column:
            raise UsageError("--as-of needs --time-column COL")
        state = VersionedState(key, time_column, as_of, findings)
    else:
        state = new_state(key, findings, dedup)

    if isinstance(state, KeyedState) and not dedup:
        from cdc.formats.keyed_lines import KeyedLines, available

        if available():  # JSON lines through the C kernel; the table comes out the same
            lines = KeyedLines(state, kind_column, keep_texts=as_texts)
            if read_line_chunks(cfg, lines, CHANGELOG_INPUTS):
                return state, lines.records, lines.texts()

    def consume(reader: Any, reject: Any) -> None:
        apply = state.apply
        where = reader.location
        for kind, image in split_changes(reader, kind_column, reject):
            apply(kind, image, where)

    reader, _ = read_all(cfg, consume, readers=changelog_readers(kind_column), input_choices=CHANGELOG_INPUTS)
    return state, reader.records, None


def table_rows(state: TableState, key: tuple[str, ...], sort: bool) -> list[Row] | Any:
    rows = state.rows()
    if not sort:
        return rows
    columns = key or None
    return sorted(rows, key=lambda r: tuple(sort_key(r.get(c)) for c in (columns or list(r))))


def command(
    inputs: o.Inputs = None,
    output: o.Output = "-",
    key: o.KeyOpt = None,
    on_inconsistency: OnInconsistency = Policy.warn,
    strict: Strict = False,
    dedup: Dedup = False,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            rich_help_panel=STATE_PANEL,
            show_default=False,
            help="The versioned table at this time: per key, the latest version with "
            "time ≤ VALUE (numbers, ISO date-times, else text).",
        ),
    ] = None,
    time_column: TimeColumn = None,
    sort: Annotated[bool, typer.Option("--sort", help="Sort rows by key (default: first-insertion order).")] = False,
    expect: Annotated[
        str | None,
        typer.Option(
            "--expect",
            show_default=False,
            help="Compare with an expected table (any format): exit 0 equal, 1 different.",
        ),
    ] = None,
    on_error: o.OnErrorOpt = o.OnError.fail,
    rejects: o.RejectsOpt = None,
    kind_column: o.KindColumn = "op",
    input_format: o.InputFormat = None,
    output_format: o.OutputFormat = None,
    columns: o.Columns = None,
    stats: o.StatsOpt = False,
    progress: o.ProgressOpt = None,
    verbose: o.VerboseOpt = False,
) -> None:
    """Apply a changelog to in-memory state and write the table it describes (no kind column).

    With --key the state is an upsert table (+I/+U put, -U/-D remove); without, a multiset where a
    retraction removes one equal row. Rows come out in first-insertion order of their key.

    [bold]Examples[/]

      cdc debezium-decode samples/mysql-inventory.jsonl | cdc materialize --key id

      cdc materialize samples/product-prices.jsonl --key product_id --as-of 13:00:00 --time-column update_time

      cdc materialize changes.jsonl --key id --expect expected.csv
    """
    with reported_errors(verbose):
        keys = o.split_list(key)
        if dedup and as_of is not None:
            raise UsageError("--dedup and --as-of do not combine: a versioned table keeps one version per time")
        if output_format is None and output == STDIO and expect is None and sys.stdout.isatty():
            output_format = "table"
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
            command="materialize",
        )
        # JSON lines out, in insertion order, all columns: the kernel's rows can go out as read.
        as_texts = not (expect or sort or cfg.columns) and format_of_output(cfg.output, cfg.output_format) == "jsonl"
        state, read, texts = build_state(
            cfg, kind_column, keys, policy_of(on_inconsistency, strict), dedup, as_of, time_column, as_texts
        )
        diff = None
        if texts is not None:
            write_texts(cfg, texts)
        elif expect is not None:
            rows = list(table_rows(state, keys, sort))
            if output != STDIO:
                write_rows(cfg, rows)
            expected_cfg = IOConfig([expect], input_format=None)
            expected = list(open_inputs(expected_cfg.paths, None))
            diff = compare_tables(rows, expected, keys)
        else:
            write_rows(cfg, table_rows(state, keys, sort))
        report_findings("materialize", state.findings)
        if stats:
            say("cdc: materialize: " + state_stats(state, read, live=None if texts is None else len(texts)))
        if diff is not None:
            render_diff(diff, expect or "")
            if not diff.equal:
                raise typer.Exit(1)
