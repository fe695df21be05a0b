"""``cdc debezium-encode``: changelog rows → Debezium JSON change events."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from cdc.cli import options as o
from cdc.cli.running import call
from cdc.engine import api
from cdc.engine.job import Result

DBZ_PANEL = "Debezium"


class Format(StrEnum):
    json = "json"
    avro = "avro"
    avro_confluent = "avro-confluent"


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL, o.CSV_IN, o.AVRO_IN)
def command(
    common: o.Common,
    format: Annotated[
        Format,
        typer.Option(
            "--format",
            rich_help_panel=DBZ_PANEL,
            help="json (JSON lines), avro (an Avro container file) or avro-confluent (Confluent wire-format "
            "messages, each after its 4-byte length; the schema registered with --schema-registry or --schemas).",
        ),
    ] = Format.json,
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
    source_fields: Annotated[
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
    call(
        common,
        api.debezium_encode,
        "debezium-encode",
        summary=_summary,
        draws_tables=False,
        split_updates=split_updates,
        time_column=time_column,
        source_fields=source_fields,
        key=key,
        kind_column=kind_column,
        format=format.value,
    )


def _summary(result: Result) -> str:
    counts = result.counts
    events = ", ".join(f"{k.split()[1]} {n}" for k, n in sorted(counts.notes.items()) if k.startswith("events "))
    return f"read {result.read} rows ({counts.kinds_text()}), wrote {counts.written} events ({events})"
