"""``cdc replay``: run a changelog through keyed state and re-emit it as retract or upsert."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Annotated, Any

import typer

from cdc.cli import options as o
from cdc.cli.errors import say
from cdc.cli.running import call
from cdc.core.errors import UsageError
from cdc.core.replay import ReplayCounts
from cdc.engine import api
from cdc.engine.job import Result

REPLAY_PANEL = "Replay"


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL, o.CSV_IN, o.TABLES, o.AVRO_IN)
def command(
    common: o.Common,
    key: o.KeyOpt = None,
    input_mode: Annotated[
        o.InputMode,
        typer.Option(
            "--input-mode",
            rich_help_panel=REPLAY_PANEL,
            help="changelog: rows with a kind column; upsert: each plain row upserts its key; "
            "append: each plain row is an insert.",
        ),
    ] = o.InputMode.changelog,
    emit: Annotated[
        o.Emit,
        typer.Option(
            "--emit",
            rich_help_panel=REPLAY_PANEL,
            help="retract: -U rebuilt before each update, full -D images; upsert: no -U.",
        ),
    ] = o.Emit.retract,
    delete_when: Annotated[
        str | None,
        typer.Option(
            "--delete-when",
            rich_help_panel=REPLAY_PANEL,
            show_default=False,
            help="Upsert mode: a row with COLUMN=VALUE deletes its key, e.g. __deleted=true.",
        ),
    ] = None,
    keep_noop: Annotated[
        bool, typer.Option("--keep-noop", rich_help_panel=REPLAY_PANEL, help="Keep updates that change nothing.")
    ] = False,
    order_by: Annotated[
        str | None,
        typer.Option(
            "--order-by",
            rich_help_panel=REPLAY_PANEL,
            show_default=False,
            help="Per key, a row older than the stored version (by COL) does not overwrite it.",
        ),
    ] = None,
    time_column: Annotated[
        str | None,
        typer.Option(
            "--time-column",
            "-t",
            rich_help_panel=REPLAY_PANEL,
            show_default=False,
            help="Column holding each change's time, for --since/--until.",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            rich_help_panel=REPLAY_PANEL,
            show_default=False,
            help="Changes at or before this time only build the state; later ones are emitted.",
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until", rich_help_panel=REPLAY_PANEL, show_default=False, help="Changes after this time are left out."
        ),
    ] = None,
    net: Annotated[
        bool,
        typer.Option(
            "--net",
            rich_help_panel=REPLAY_PANEL,
            help="With --since and --until: only the net change between the two states.",
        ),
    ] = False,
    live: Annotated[
        bool, typer.Option("--live", rich_help_panel=REPLAY_PANEL, help="Watch the table change (a terminal only).")
    ] = False,
    delay: Annotated[
        float | None,
        typer.Option(
            "--delay",
            rich_help_panel=REPLAY_PANEL,
            show_default=False,
            help="With --live: seconds per change. \\[default: 0.1]",
        ),
    ] = None,
    ignore_columns: o.IgnoreColumnsOpt = None,
    kind_column: o.KindColumn = "op",
) -> None:
    """Run a changelog through keyed state and re-emit it as retract or upsert (Flink ChangelogNormalize).

    Update-befores are dropped on the way in and rebuilt from state on the way out (retract), or
    left out (upsert); deletes carry the full stored row; updates that change nothing are dropped.

    **Examples**

    ```
    cdc replay samples/currency-rates.csv --input-mode upsert \\
      --key currency --emit upsert
    cdc replay samples/flat-cdc.jsonl --input-mode upsert --key id \\
      --delete-when __deleted=true
    cdc replay samples/currency-rates.csv --input-mode upsert --key currency \\
      --time-column update_time --since 10:00:00 --until 12:00:00 --net
    ```
    """
    options: dict[str, Any] = {
        "key": key,
        "input_mode": input_mode,
        "emit": emit,
        "delete_when": delete_when,
        "keep_noop": keep_noop,
        "order_by": order_by,
        "time_column": time_column,
        "since": since,
        "until": until,
        "net": net,
        "kind_column": kind_column,
        "ignore_columns": ignore_columns,
    }
    if not live:
        if delay is not None:
            raise UsageError("--delay paces --live; without --live there is nothing to pace")
        call(common, api.replay, "replay", summary=_summary, table_kinds=kind_column, **options)
        return
    if common.print_sql or common.output != "-" or common.output_format is not None or common.columns:
        raise UsageError("--live draws the table on the terminal; it writes no output and prints no SQL")
    if not sys.stdout.isatty():
        raise UsageError(
            "--live shows a table changing on a terminal, and stdout is not one",
            hint="drop --live to write the replayed changelog, or run it in a terminal",
        )
    reading = ("input_format", "on_error", "rejects", "delimiter", "quote_char", "no_header", "header_names")
    tables = ("table_include", "database_include")
    steps = api.replay_steps(common.inputs, **{n: getattr(common, n) for n in (*reading, *tables)}, **options)
    _live(steps, 0.1 if delay is None else delay)


def _summary(result: Result) -> str:
    c: ReplayCounts = result.detail
    parts = [f"read {result.read}", f"wrote {c.written}", f"dropped {c.noops} no-op update(s)"]
    if c.late:
        parts.append(f"{c.late} late row(s) ignored")
    if c.ignored_retractions:
        parts.append(f"{c.ignored_retractions} -U/absent -D consumed")
    if c.before_window or c.after_window:
        parts.append(f"{c.before_window} before --since, {c.after_window} after --until")
    parts.append(f"output as retract {c.retract_messages} messages, as upsert {c.upsert_messages}")
    return ", ".join(parts)


def _live(steps: Iterator[api.ReplayStep], delay: float) -> None:
    """A rich Live table: each change applies, its row lights up in its kind's colour."""
    from rich.live import Live
    from rich.table import Table

    from cdc.cli.table import KIND_STYLES, StdoutConsole, cell

    console = StdoutConsole()

    def render(step: api.ReplayStep | None) -> Table:
        table = Table(title=f"replay — {step.live if step else 0} live rows", show_edge=False)
        rows = list(step.rows()) if step else []
        for column in dict.fromkeys(c for r in rows for c in r):
            table.add_column(column)
        for row in rows[-(console.size.height - 6) :]:
            highlight = step is not None and step.key_of(row) == step.key
            style = KIND_STYLES.get(step.kind, "") if step is not None and highlight else ""
            table.add_row(*[cell(v) for v in row.values()], style=style)
        return table

    last = None
    with Live(render(None), console=console, refresh_per_second=20) as view:
        for last in steps:
            view.update(render(last))
            time.sleep(delay)
    say(f"cdc: replay: {last.live if last else 0} live rows")
