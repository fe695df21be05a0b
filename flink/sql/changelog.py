"""A changelog as a Flink table: an envelope format's table, or changelog rows through FROM_CHANGELOG."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cdc.core.errors import UsageError
from cdc.core.kinds import ALL_KINDS
from cdc.flink.sql.coltypes import TOAST_PLACEHOLDER, ident, literal
from cdc.flink.sql.scan import ENVELOPE_METADATA, DebeziumInfo
from cdc.flink.sql.tables import (
    ENVELOPES,
    FORMATS,
    Script,
    Source,
    create_table,
    map_literal,
    select_list,
    source_statements,
)


def _check_decoded_types(columns: Mapping[str, str], raw: Mapping[str, str] | None) -> None:
    if raw is None:
        return
    for name, decoded in columns.items():
        sent = raw.get(name)
        if sent is None or sent == decoded:
            continue
        if decoded.startswith("DECIMAL") and sent == "STRING":
            raise UsageError(
                f"column {name!r} is a Kafka Connect Decimal (base64 bytes): cdc decodes it, Flink's debezium-json "
                "cannot ('Character A is neither a decimal digit number…')",
                hint="configure Debezium with decimal.handling.mode=string (or double), or keep the values as sent "
                "(debezium-decode --raw-values)",
            )
        raise UsageError(
            f"column {name!r} carries a Debezium logical type ({sent} as sent, {decoded} decoded): cdc decodes it, "
            "Flink's debezium-json reads only the value as sent",
            hint="keep the values as sent (debezium-decode --raw-values), or configure Debezium's "
            "time.precision.mode / decimal.handling.mode to send strings",
        )


def envelope_table(
    script: Script,
    source: Source,
    columns: Mapping[str, str],
    info: DebeziumInfo,
    metadata: Sequence[tuple[str, str]] = (),
    skip: bool = False,
    key: Sequence[str] = (),
    database_include: str | None = None,
    table_include: str | None = None,
    keep_noop: bool = False,
) -> str:
    """The envelope format's table. With ``key``: a PRIMARY KEY and ``cdc-events-duplicate``
    (ChangelogNormalize: the -U / -D is the stored row); ``keep_noop``: an update that changes
    nothing is emitted too (cdc's decode does; Flink drops it unless state TTL is enabled, so a TTL
    of ten years is set)."""
    fmt = FORMATS[source.fmt]
    options: dict[str, str] = {}
    if database_include or table_include:
        if source.fmt != "canal":
            raise UsageError(f"{fmt} has no database / table filter in Flink 2.3 (canal-json has)")
        if database_include:
            options["canal-json.database.include"] = database_include
        if table_include:
            options["canal-json.table.include"] = table_include
    elif len(info.tables) > 1:
        raise UsageError(
            f"the input holds changes of {len(info.tables)} tables ({', '.join(sorted(info.tables))}): cdc emits "
            "each with its own columns, a Flink table has one set of columns",
            hint="one table per script: --table-include T for Canal ('canal-json.table.include'), else one topic "
            "or file per table",
        )
    _check_decoded_types(columns, info.raw_columns)
    if info.toast:
        raise UsageError(
            f"the input holds Debezium's {TOAST_PLACEHOLDER!r} (an unchanged PostgreSQL TOAST column): cdc fills it "
            "from the last row of the key, Flink passes the placeholder on as data",
            hint="set REPLICA IDENTITY FULL on the table so Debezium sends the value",
        )
    if not columns:
        if info.first_error:
            raise UsageError(
                f"cdc cannot decode the input either ({info.first_error}): no columns to declare",
                hint="the SQL of a job that cannot read its input would fail the same way",
            )
        raise UsageError(
            f"no {fmt} change event in the input: no columns to declare",
            hint=f"is the input {fmt}?",
        )
    if info.partial_after:
        raise UsageError(
            "an update's after image lacks columns (GoldenGate compressed updates): cdc fills them from the last "
            f"row of the key, Flink's {fmt} emits them as null",
            hint="have the extract log full images (NOCOMPRESSUPDATES)",
        )
    if info.null_before and key:
        raise UsageError(
            "an update or delete has no before image (PostgreSQL REPLICA IDENTITY DEFAULT): cdc rebuilds it from "
            f"the last row of the --key, Flink's {fmt} fails on it even with a primary key",
            hint="set REPLICA IDENTITY FULL on the table",
        )
    if info.partial_before and not key:
        raise UsageError(
            "a before image lacks columns (PostgreSQL REPLICA IDENTITY DEFAULT, GoldenGate without full before "
            "images): cdc stops there, Flink would emit the row with nulls",
            hint="give --key COLS (Flink: a primary key with table.exec.source.cdc-events-duplicate rebuilds "
            "before images from state), or set REPLICA IDENTITY FULL",
        )
    if info.truncate and info.on_truncate == "delete":
        raise UsageError(
            "--on-truncate delete emits -D for every live row of the table at a truncate; Flink's "
            f"{fmt} has no such form (it fails on a truncate, or drops it with ignore-parse-errors)",
            hint="print the SQL with --on-truncate skip and --on-error skip, which Flink does as cdc does",
        )
    if info.unsupported:
        raise UsageError(
            f"the input has {info.unsupported}: Flink's {fmt} does not give the rows cdc emits for it",
            hint="filter those records out first, or read them with cdc",
        )
    if info.text_booleans and not info.raw_values:
        raise UsageError(
            f"column {info.text_booleans!r} is a BOOLEAN (sqlType 16) sent as '1'/'0': cdc reads '1' as true, Flink's "
            "canal-json (Boolean.parseBoolean) as false",
            hint="keep the values as sent (--raw-values), or have Canal send true/false",
        )
    if info.rejected and not skip:
        raise UsageError(
            f"the input has {info.rejected}: cdc skips it, Flink's {fmt} fails on it",
            hint=f"pass --on-error skip (Flink: '{fmt}.ignore-parse-errors' drops it, as cdc does)",
        )
    if info.text_tombstones and not skip and not source.kafka:
        raise UsageError(
            "the file has 'null' lines (tombstones): cdc skips them, Flink's filesystem source hands them to "
            f"{fmt}, which fails ('Corrupt Debezium JSON message')",
            hint="read the topic itself (--sql-source kafka: a tombstone there has no value and is skipped), "
            "drop the lines first (grep -vx null), or pass --on-error skip (Flink: ignore-parse-errors)",
        )
    if info.schema_include:
        if source.fmt != "debezium":
            raise UsageError(f"{fmt} has no schema envelope")
        options["debezium-json.schema-include"] = "true"
    if skip:
        options[f"{fmt}.ignore-parse-errors"] = "true"
        script.notes.append(f"--on-error skip: '{fmt}.ignore-parse-errors' drops records Flink cannot read")
    available = ENVELOPE_METADATA[source.fmt]
    extra = []
    if metadata and not source.kafka:
        raise UsageError(
            "format metadata columns are read through Kafka: Flink's filesystem connector offers only file.* metadata",
            hint="--sql-source kafka --topic T --bootstrap-servers H",
        )
    for k, column in metadata:
        if k not in available:
            raise UsageError(f"{fmt} has no metadata {k!r}; it has " + ", ".join(available))
        if info.raw_values and available[k].startswith("TIMESTAMP"):
            raise UsageError(
                f"--raw-values writes metadata {k!r} as the epoch milliseconds sent; Flink's {fmt} gives it as "
                f"{available[k]}",
                hint="leave out --raw-values for this metadata, or read the raw number from the event yourself",
            )
        extra.append(f"{ident(column)} {available[k]} METADATA FROM {literal('value.' + k)} VIRTUAL")
        if available[k].startswith("TIMESTAMP_LTZ"):
            script.settings["table.local-time-zone"] = "UTC"
    if key:
        extra.append(f"PRIMARY KEY ({select_list(key)}) NOT ENFORCED")
        script.settings["table.exec.source.cdc-events-duplicate"] = "true"
        script.notes.append(
            "--key: with a primary key and cdc-events-duplicate Flink rebuilds before images from the last row of "
            "the key (ChangelogNormalize)"
        )
        if keep_noop:
            script.settings["table.exec.state.ttl"] = "3650 d"
            script.notes.append(
                "table.exec.state.ttl (ten years) makes ChangelogNormalize emit an update that changes nothing as "
                "-U/+U, as cdc does (without a TTL Flink drops it)"
            )
        if info.stale_before:
            script.notes.append(
                f"{info.stale_before} update(s)/delete(s) in the input carry a before image unlike the key's stored "
                "row: the -U / -D emitted is the stored row (ChangelogNormalize), not the event's image"
            )
    script.statements.append(create_table("cdc_input", columns, source, extra, options))
    return "cdc_input"


def changelog_view(columns: Mapping[str, str], kind_column: str, table: str = "cdc_input") -> str:
    """Changelog rows in a file are append-only rows to Flink: FROM_CHANGELOG turns them back."""
    pairs = [(f"{k.value}, {k.name}", k.name) for k in ALL_KINDS]
    args = [f"  input => TABLE {ident(table)}"]
    if kind_column != "op":
        args.append(f"  op => DESCRIPTOR({ident(kind_column)})")
    args.append(f"  op_mapping => {map_literal(pairs)}")
    return "CREATE TEMPORARY VIEW `cdc_changelog` AS\nSELECT * FROM FROM_CHANGELOG(\n" + ",\n".join(args) + "\n);"


def changelog_source(
    script: Script,
    source: Source,
    columns: Mapping[str, str],
    kind_column: str,
    empty_strings: bool = False,
    debezium: DebeziumInfo | None = None,
) -> tuple[str, list[str]]:
    """A changelog as a Flink table: changelog rows through a FROM_CHANGELOG view, or an envelope
    format's table. Returns the table name and its data columns."""
    if source.fmt in ENVELOPES:
        return envelope_table(script, source, columns, debezium or DebeziumInfo()), list(columns)
    if kind_column not in columns:
        raise UsageError(f"the kind column {kind_column!r} is not among the input's columns")
    table = source_statements(script, source, columns, empty_strings)
    script.statements.append(changelog_view(columns, kind_column, table))
    return "cdc_changelog", [c for c in columns if c != kind_column]
