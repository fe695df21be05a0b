"""``cdc decode``: CDC envelopes → changelog rows (Debezium, Canal, Maxwell, OGG), as Flink's
``debezium-json``, ``canal-json``, ``maxwell-json`` and ``ogg-json`` read them."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from cdc.cli import options as o
from cdc.cli.running import call
from cdc.engine import api

PANEL = "Envelope"


class Envelope(StrEnum):
    auto = "auto"
    debezium = "debezium"
    canal = "canal"
    maxwell = "maxwell"
    ogg = "ogg"


class SchemaInclude(StrEnum):
    auto = "auto"
    true = "true"
    false = "false"


class OnTruncate(StrEnum):
    fail = "fail"
    skip = "skip"
    delete = "delete"


class Bootstrap(StrEnum):
    insert = "insert"
    skip = "skip"


Key = Annotated[
    list[str] | None,
    typer.Option(
        "--key",
        "-k",
        rich_help_panel=PANEL,
        show_default=False,
        help="Key column(s): rebuild missing or partial before images (PostgreSQL REPLICA IDENTITY "
        "DEFAULT, GoldenGate without full supplemental logging) and TOAST placeholders from the last row seen.",
    ),
]
SchemaIncludeOpt = Annotated[
    SchemaInclude,
    typer.Option(
        "--schema-include", rich_help_panel=PANEL, help="Debezium {schema, payload}: detect per line, require, forbid."
    ),
]
OnTruncateOpt = Annotated[
    OnTruncate,
    typer.Option(
        "--on-truncate",
        rich_help_panel=PANEL,
        help="A truncate (Debezium t, Canal TRUNCATE, OGG T): fail, skip it, or emit -D for every live row.",
    ),
]
Metadata = Annotated[
    list[str] | None,
    typer.Option(
        "--metadata",
        rich_help_panel=PANEL,
        show_default=False,
        help="Add Flink's metadata column NAME[=COLUMN] (repeatable), e.g. source.table=tbl (Debezium), "
        "table, database, ingestion-timestamp.",
    ),
]
RawValues = Annotated[
    bool,
    typer.Option(
        "--raw-values",
        rich_help_panel=PANEL,
        help="Keep values as sent: no Debezium schema decoding, Canal values as text.",
    ),
]
DatabaseInclude = Annotated[
    str | None,
    typer.Option(
        "--database-include",
        rich_help_panel=PANEL,
        show_default=False,
        help="Only databases (schemas) matching this regular expression, whole (Debezium: source.db or source.schema).",
    ),
]
TableInclude = Annotated[
    str | None,
    typer.Option(
        "--table-include",
        rich_help_panel=PANEL,
        show_default=False,
        help="Only tables matching this regular expression, whole (Debezium: source.table, or "
        "db.table / schema.table / db.schema.table). With --key, a stream of several tables needs it.",
    ),
]
Strict = Annotated[
    bool,
    typer.Option(
        "--strict",
        rich_help_panel=PANEL,
        help="Debezium: fail at the first finding (a stale before image, an unchanged-value placeholder "
        "no --key can rebuild, a tombstone among flattened rows) instead of warning.",
    ),
]
Placeholder = Annotated[
    str | None,
    typer.Option(
        "--unavailable-placeholder",
        rich_help_panel=PANEL,
        show_default=False,
        help="Debezium's unavailable.value.placeholder when it is not __debezium_unavailable_value.",
    ),
]
BootstrapOpt = Annotated[
    Bootstrap,
    typer.Option("--bootstrap", rich_help_panel=PANEL, help="Maxwell bootstrap-insert rows: as inserts, or skip."),
]


def report_decode_findings(command: str, notes: Any) -> None:
    """What the events said against themselves, always on stderr (the counts are in --stats too)."""
    from cdc.cli.errors import say
    from cdc.formats.debezium import FINDINGS

    found = [(what, notes[what]) for what in FINDINGS if notes.get(what)]
    if found:
        total = sum(n for _, n in found)
        kinds = ", ".join(f"{what} {n}" for what, n in found)
        say(f"cdc: {command}: warning: {total} finding(s): {kinds}; --strict stops at the first")


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL, o.AVRO_IN)
def command(
    common: o.Common,
    envelope: Annotated[
        Envelope,
        typer.Option(
            "--envelope",
            "-e",
            rich_help_panel=PANEL,
            help="The envelope; auto tells them apart by the first record (a mix is an error).",
        ),
    ] = Envelope.auto,
    key: Key = None,
    schema_include: SchemaIncludeOpt = SchemaInclude.auto,
    on_truncate: OnTruncateOpt = OnTruncate.fail,
    metadata: Metadata = None,
    raw_values: RawValues = False,
    database_include: DatabaseInclude = None,
    table_include: TableInclude = None,
    bootstrap: BootstrapOpt = Bootstrap.insert,
    kind_column: o.KindColumn = "op",
    strict: Strict = False,
    unavailable_placeholder: Placeholder = None,
) -> None:
    """Decode CDC change events — Debezium, Canal, Maxwell or Oracle GoldenGate JSON — into
    changelog rows, exactly as Flink's *-json formats read them.

    An insert gives +I(new row); an update -U(old row), +U(new row) (Canal and Maxwell send only
    the changed old values: the rest is taken from the new row); a delete -D(old row). Tombstones,
    DDL and bootstrap markers are skipped and counted.

    **Examples**

    ```
    cdc decode samples/canal-products.jsonl -f print
    cdc decode samples/maxwell-products.jsonl --metadata table --stats
    cdc decode samples/ogg-products.jsonl --key ID | cdc materialize --key ID
    cdc decode samples/canal-products.jsonl --table-include products \\
      --on-error skip --print-sql
    ```
    """
    result = call(
        common,
        api.decode,
        "decode",
        table_kinds=kind_column,
        envelope=envelope,
        key=key,
        schema_include=schema_include,
        on_truncate=on_truncate,
        metadata=metadata,
        raw_values=raw_values,
        database_include=database_include,
        table_include=table_include,
        bootstrap=bootstrap,
        kind_column=kind_column,
        strict=strict,
        unavailable_placeholder=unavailable_placeholder,
    )
    if result.sql is None:
        report_decode_findings("decode", result.counts.notes)
