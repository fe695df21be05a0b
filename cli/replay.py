"""``cdc replay``: run a changelog through keyed state and re-emit it as retract or upsert."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from enum import StrEnum
from typing import Annotated, Any

import typer

from cdc.cli import options as o
from cdc.cli.errors import reported_errors, say
from cdc.cli.pipeline import CHANGELOG_INPUTS, IOConfig, changelog_readers, read_all, run
from cdc.core.compare import canonical
from cdc.core.convert import split_changes
from cdc.core.errors import UsageError
from cdc.core.replay import Change, KeyedReplay, ReplayCounts, ReplayOptions, replay
from cdc.core.rowstore import Row
from cdc.core.stats import Counts
from cdc.formats.base import Reject

REPLAY_PANEL = "Replay"


class InputMode(StrEnum):
    changelog = "changelog"
    upsert = "upsert"
    append = "append"


class Emit(StrEnum):
    retract = "retract"
    upsert = "upsert"


def parse_delete_when(text: str | None) -> tuple[str, str] | None:
    if text is None:
        return None
    column, sep, value = text.partition("=")
    if not sep or not column.strip():
        raise UsageError(f"--delete-when: expected COLUMN=VALUE, got {text!r}; e.g. --delete-when __deleted=true")
    return column.strip(), value


def input_changes(
    rows: Iterable[Row], mode: InputMode, kind_column: str, delete_when: tuple[str, str] | None, reject: Reject | None
) -> Iterator[Change]:
    if mode == InputMode.changelog:
        yield from split_changes(rows, kind_column, reject)
    elif mode == InputMode.append:
        for row in rows:
            yield "+I", row
    else:
        column, value = delete_when if delete_when is not None else (None, None)
        for row in rows:
            deleted = column is not None and canonical(row.get(column)) == canonical(value)
            yield ("-D" if deleted else "+U"), row


def command(
    inputs: o.Inputs = None,
    output: o.Output = "-",
    key: o.KeyOpt = None,
    input_mode: Annotated[
        InputMode,
        typer.Option(
            "--input-mode",
            rich_help_panel=REPLAY_PANEL,
            help="changelog: rows with a kind column; upsert: each plain row upserts its key; "
            "append: each plain row is an insert.",
        ),
    ] = InputMode.changelog,
    emit: Annotated[
        Emit,
        typer.Option(
            "--emit",
            rich_help_panel=REPLAY_PANEL,
            help="retract: -U rebuilt before each update, full -D images; upsert: no -U.",
        ),
    ] = Emit.retract,
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
    """Run a changelog through keyed state and re-emit it as retract or upsert (Flink ChangelogNormalize).

    Update-befores are dropped on the way in and rebuilt from state on the way out (retract), or
    left out (upsert); deletes carry the full stored row; updates that change nothing are dropped.

    [bold]Examples[/]

      cdc replay samples/currency-rates.csv --input-mode upsert --key currency --emit upsert

      cdc replay samples/flat-cdc.jsonl --input-mode upsert --key id --delete-when __deleted=true

      cdc replay changes.jsonl --key id --time-column ts --since T1 --until T2 --net
    """
    with reported_errors(verbose):
        options = ReplayOptions(o.split_list(key), emit.value, keep_noop, order_by, time_column, since, until, net)
        options.check()
        deletes = parse_delete_when(delete_when)
        if deletes is not None and input_mode != InputMode.upsert:
            raise UsageError("--delete-when goes with --input-mode upsert")
        counts = ReplayCounts()
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
            command="replay",
        )
        readers = changelog_readers(kind_column) if input_mode == InputMode.changelog else None
        choices = CHANGELOG_INPUTS if input_mode == InputMode.changelog else cfg_inputs()
        if live:
            _live(cfg, options, input_mode, kind_column, deletes, delay, readers, choices)
            return

        def transform(reader: Any, reject: Reject | None) -> Iterator[Row]:
            changes = input_changes(reader, input_mode, kind_column, deletes, reject)
            for kind, image in replay(changes, options, counts):
                yield {kind_column: kind, **image}

        run(
            cfg,
            transform,
            Counts(),
            readers=readers,
            input_choices=choices,
            summary=lambda read: _summary(counts, read),
        )


def cfg_inputs() -> tuple[str, ...]:
    from cdc.formats.registry import INPUT_FORMATS

    return INPUT_FORMATS


def _summary(c: ReplayCounts, read: int) -> str:
    parts = [f"read {read}", f"wrote {c.written}", f"dropped {c.noops} no-op update(s)"]
    if c.late:
        parts.append(f"{c.late} late row(s) ignored")
    if c.ignored_retractions:
        parts.append(f"{c.ignored_retractions} -U/absent -D consumed")
    if c.before_window or c.after_window:
        parts.append(f"{c.before_window} before --since, {c.after_window} after --until")
    parts.append(f"output as retract {c.retract_messages} messages, as upsert {c.upsert_messages}")
    return ", ".join(parts)


def _live(
    cfg: IOConfig,
    options: ReplayOptions,
    mode: InputMode,
    kind_column: str,
    deletes: tuple[str, str] | None,
    delay: float,
    readers: Any,
    choices: Any,
) -> None:
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

    state = KeyedReplay(options)
    console = Console()

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

    with Live(render(None, None), console=console, refresh_per_second=20) as view:

        def consume(reader: Any, reject: Reject | None) -> None:
            for kind, image in input_changes(reader, mode, kind_column, deletes, reject):
                out = state.apply(kind, image)
                if out:
                    view.update(render(out[-1][0], state.table.key_of(image)))
                    time.sleep(delay)

        read_all(cfg, consume, readers=readers, input_choices=choices)
    say(f"cdc: replay: {len(state.table)} live rows")
