"""``cdc debezium-encode``: changelog rows → Debezium JSON change events."""

from __future__ import annotations

from typing import Annotated

import typer

from cdc.cli import options as o
from cdc.cli.running import run
from cdc.core.errors import UsageError
from cdc.core.specs import EncodeSpec
from cdc.engine.job import Result
from cdc.formats.registry import format_of

DBZ_PANEL = "Debezium"


def parse_source(pairs: list[str]) -> tuple[tuple[str, str], ...]:
    source: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--source: expected KEY=VALUE, got {pair!r}")
        source[name.strip()] = value
    return tuple(source.items())


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL, o.CSV_IN)
def command(
    common: o.Common,
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
) -> None:
    """Encode changelog rows as Debezium JSON change events (one JSON object per line).

    +I becomes c, -D becomes d, and a -U immediately followed by its +U becomes one u event with
    before and after — which Flink cannot do (it writes d + c; --split-updates does the same).
    With --key, a -U/+U pair is only merged when both name the same key.

    **Examples**

    ```
    cdc debezium-decode samples/mysql-inventory.jsonl \\
      | cdc debezium-encode --source db=inventory
    cdc debezium-decode samples/mysql-inventory.jsonl \\
      | cdc debezium-encode --time-column updated_at -o /tmp/events.jsonl
    ```
    """
    if common.output_format not in (None, "jsonl") or format_of(common.output) not in (None, "jsonl"):
        raise UsageError(
            "debezium-encode writes Debezium JSON lines; the output names another format",
            hint="write to a .jsonl (or .jsonl.gz) file, or stdout",
        )
    spec = EncodeSpec(
        kind_column=kind_column,
        split_updates=split_updates,
        time_column=time_column,
        source=parse_source(source or []),
        key=o.split_list(key),
    )
    if common.print_sql:
        from cdc.cli.print_sql import print_encode_sql

        print_encode_sql(common, spec)
        return
    common.output_format = "jsonl"
    run(common, spec, "debezium-encode", _summary)


def _summary(result: Result) -> str:
    counts = result.counts
    events = ", ".join(f"{k.split()[1]} {n}" for k, n in sorted(counts.notes.items()) if k.startswith("events "))
    return f"read {result.read} rows ({counts.kinds_text()}), wrote {counts.written} events ({events})"
