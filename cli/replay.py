"""``cdc replay``: run a changelog through keyed state and re-emit it as retract or upsert."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import Annotated, Any

import typer

from cdc.cli import options as o
from cdc.cli.errors import say
from cdc.cli.running import job_of, run
from cdc.core.errors import UsageError
from cdc.core.inputmodes import change_reader, parse_delete_when
from cdc.core.replay import KeyedReplay, ReplayCounts
from cdc.core.specs import ReplaySpec
from cdc.engine.job import Result

REPLAY_PANEL = "Replay"


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL)
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
        float, typer.Option("--delay", rich_help_panel=REPLAY_PANEL, help="With --live: seconds per change.")
    ] = 0.1,
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
    spec = ReplaySpec(
        key=o.split_list(key),
        emit=emit.value,
        keep_noop=keep_noop,
        order_by=order_by,
        time_column=time_column,
        since=since,
        until=until,
        net=net,
        input_mode=input_mode.value,
        delete_when=parse_delete_when(delete_when),
        kind_column=kind_column,
    )
    if common.print_sql:
        if live:
            raise UsageError("--live paces cdc's own output; it does not go with --print-sql or --on-flink")
        from cdc.cli.print_sql import print_replay_sql

        print_replay_sql(common, spec)
        return
    if live:
        _live(common, spec, delay)
        return
    run(common, spec, "replay", _summary)


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


def _live(common: o.Common, spec: ReplaySpec, delay: float) -> None:
    """A rich Live table: each change applies, its row lights up in its kind's colour."""
    if not sys.stdout.isatty():
        raise UsageError(
            "--live shows a table changing on a terminal, and stdout is not one",
            hint="drop --live to write the replayed changelog, or run it in a terminal",
        )
    from rich.console import Console
    from rich.live import Live
    from rich.table import Table

    from cdc.cli.table import KIND_STYLES, cell
    from cdc.core.specs import CopySpec
    from cdc.engine.run import run_job

    state = KeyedReplay(spec)
    console = Console()
    change_of = change_reader(spec.input_mode, spec.kind_column, spec.delete_when)

    def render(last_kind: str | None, last_key: Any) -> Table:
        table = Table(title=f"replay — {len(state.table)} live rows", show_edge=False)
        rows = list(state.rows())
        for column in dict.fromkeys(c for r in rows for c in r):
            table.add_column(column)
        for row in rows[-(console.size.height - 6) :]:
            highlight = last_kind is not None and state.table.key_of(row) == last_key
            table.add_row(
                *[cell(v) for v in row.values()], style=KIND_STYLES.get(last_kind or "", "") if highlight else ""
            )
        return table

    class Watch:
        """A sink that applies each row as it arrives and redraws the table."""

        def __init__(self, view: Live):
            self.view = view

        def write_rows(self, rows: Iterable[dict[str, Any]]) -> None:
            for row in rows:
                kind, image = change_of(row)
                out = state.apply(kind, image)
                if out:
                    self.view.update(render(out[-1][0], state.table.key_of(image)))
                    time.sleep(delay)

        def close(self) -> None:
            pass

    with Live(render(None, None), console=console, refresh_per_second=20) as view:
        reads = "changelog" if spec.input_mode == "changelog" else "rows"
        run_job(job_of(common, CopySpec(reads, spec.kind_column), Watch(view)))
    say(f"cdc: replay: {len(state.table)} live rows")
