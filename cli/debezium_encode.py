"""``cdc debezium-encode``: changelog rows → Debezium JSON change events."""

from __future__ import annotations

from typing import Annotated

import typer

from cdc.cli import options as o
from cdc.cli.errors import reported_errors
from cdc.cli.pipeline import CHANGELOG_INPUTS, IOConfig, changelog_readers, run
from cdc.core.errors import UsageError
from cdc.core.stats import Counts
from cdc.formats.debezium import EncodeOptions, encode_debezium
from cdc.formats.registry import format_of

DBZ_PANEL = "Debezium"


def parse_source(pairs: list[str]) -> dict[str, object]:
    source: dict[str, object] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--source: expected KEY=VALUE, got {pair!r}")
        source[name.strip()] = value
    return source


def command(
    inputs: o.Inputs = None,
    output: o.Output = "-",
    split_updates: Annotated[
        bool,
        typer.Option(
            "--split-updates",
            rich_help_panel=DBZ_PANEL,
            help="Flink's form: -U → d and +U → c, instead of one u event per update.",
        ),
    ] = False,
    time_column: Annotated[
        str | None,
        typer.Option(
            "--time-column",
            rich_help_panel=DBZ_PANEL,
            show_default=False,
            help="Column for ts_ms (epoch ms or ISO date-time); default: now.",
        ),
    ] = None,
    source: Annotated[
        list[str] | None,
        typer.Option(
            "--source",
            rich_help_panel=DBZ_PANEL,
            show_default=False,
            help="Fill the source block: KEY=VALUE (repeatable), e.g. --source table=orders.",
        ),
    ] = None,
    key: o.KeyOpt = None,
    kind_column: o.KindColumn = "op",
    input_format: o.InputFormat = None,
    stats: o.StatsOpt = False,
    progress: o.ProgressOpt = None,
    verbose: o.VerboseOpt = False,
) -> None:
    """Encode changelog rows as Debezium JSON change events (one JSON object per line).

    +I becomes c, -D becomes d, and a -U immediately followed by its +U becomes one u event with
    before and after — which Flink cannot do (it writes d + c; --split-updates does the same).
    With --key, a -U/+U pair is only merged when both name the same key.

    [bold]Examples[/]

      cdc debezium-decode samples/mysql-inventory.jsonl | cdc debezium-encode --source db=inventory

      cdc debezium-encode changes.jsonl --time-column updated_at -o events.jsonl
    """
    with reported_errors(verbose):
        if output != "-" and format_of(output) not in (None, "jsonl"):
            raise UsageError(
                f"debezium-encode writes Debezium JSON lines; {output!r} names another format",
                hint="write to a .jsonl (or .jsonl.gz) file",
            )
        counts = Counts()
        opts = EncodeOptions(
            kind_column=kind_column,
            split_updates=split_updates,
            time_column=time_column,
            source=parse_source(source or []),
            key=o.split_list(key),
        )
        cfg = IOConfig(
            inputs, output, input_format, "jsonl", (), stats=stats, progress=progress, command="debezium-encode"
        )
        run(
            cfg,
            lambda reader, reject: encode_debezium(reader, opts, counts),
            counts,
            readers=changelog_readers(kind_column),
            input_choices=CHANGELOG_INPUTS,
            summary=lambda read: (
                f"read {read} rows ({counts.kinds_text()}), wrote {counts.written} events ("
                + ", ".join(f"{k.split()[1]} {n}" for k, n in sorted(counts.notes.items()))
                + ")"
            ),
        )
