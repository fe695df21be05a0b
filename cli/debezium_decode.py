"""``cdc debezium-decode``: Debezium JSON change events → changelog rows (Flink debezium-json)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from cdc.cli import options as o
from cdc.cli.print_sql import print_decode_sql
from cdc.cli.running import run
from cdc.core.specs import DecodeSpec
from cdc.formats.debezium import METADATA_KEYS, parse_metadata

DBZ_PANEL = "Debezium"


class SchemaInclude(StrEnum):
    auto = "auto"
    true = "true"
    false = "false"


class OnTruncate(StrEnum):
    fail = "fail"
    skip = "skip"
    delete = "delete"


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL)
def command(
    common: o.Common,
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
    kind_column: o.KindColumn = "op",
) -> None:
    """Decode Debezium JSON change events into changelog rows, exactly as Flink's debezium-json does.

    c and r give +I(after); u gives -U(before), +U(after); d gives -D(before). Tombstones and
    op m are skipped and counted. With a schema block, Decimal, Date, Time and Timestamp values
    become natural values (typed columns in Parquet).

    [bold]Examples[/]

      cdc debezium-decode samples/mysql-inventory.jsonl

      cdc debezium-decode samples/postgres-default-identity.jsonl --key id -f print

      cdc debezium-decode samples/mysql-inventory.jsonl --metadata source.table=tbl -o /tmp/changes.parquet

      cdc debezium-decode samples/mysql-inventory.jsonl --print-sql
    """
    spec = DecodeSpec(
        envelope="debezium",
        kind_column=kind_column,
        schema_include=schema_include.value,
        raw_values=raw_values,
        metadata=parse_metadata(metadata or []),
        on_truncate=on_truncate.value,
        key=o.split_list(key),
    )
    if common.print_sql:
        print_decode_sql(common, spec)
        return
    run(common, spec, "debezium-decode")
