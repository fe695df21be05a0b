"""What an envelope format of Flink would meet in the records as sent (DebeziumInfo, scan_records)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc.flink.sql.coltypes import TOAST_PLACEHOLDER

METADATA_TYPES = {
    "schema": "STRING",
    "ingestion-timestamp": "TIMESTAMP_LTZ(3)",
    "source.timestamp": "TIMESTAMP_LTZ(3)",
    "source.database": "STRING",
    "source.schema": "STRING",
    "source.table": "STRING",
    "source.properties": "MAP<STRING, STRING>",
}


# The metadata each envelope format of Flink offers (key → type), from the formats' sources.
ENVELOPE_METADATA: dict[str, dict[str, str]] = {
    "debezium": METADATA_TYPES,
    "debezium-avro": {},  # debezium-avro-confluent has no metadata columns
    "canal": {
        "database": "STRING",
        "table": "STRING",
        "sql-type": "MAP<STRING, INT>",
        "pk-names": "ARRAY<STRING>",
        "ingestion-timestamp": "TIMESTAMP_LTZ(3)",
        "event-timestamp": "TIMESTAMP_LTZ(3)",
    },
    "maxwell": {
        "database": "STRING",
        "table": "STRING",
        "primary-key-columns": "ARRAY<STRING>",
        "ingestion-timestamp": "TIMESTAMP_LTZ(3)",
    },
    "ogg": {
        "table": "STRING",
        "primary-keys": "ARRAY<STRING>",
        "ingestion-timestamp": "TIMESTAMP_LTZ(6)",
        "event-timestamp": "TIMESTAMP_LTZ(6)",
    },
}


@dataclass
class DebeziumInfo:
    """What the sampled Debezium events showed, beyond the column types.

    - ``schema_include``: events carry the ``{"schema", "payload"}`` envelope;
    - ``raw_columns``: column → type of the values as sent (before cdc's logical-type decoding);
      a column whose decoded type differs (a Connect ``Decimal`` as base64, a ``Date`` /
      ``MicroTimestamp`` as a number) is one Flink's debezium-json cannot decode as cdc does;
    - ``text_tombstones``: the file has ``null`` lines (Flink: "Corrupt Debezium JSON message");
    - ``toast``: an image holds ``__debezium_unavailable_value`` (cdc fills it from state);
    - ``null_before``: an update or delete without a before image (Flink fails, also with a key);
    - ``partial_before``: a before image without some columns (cdc fails unless ``--key``; Flink
      emits it with nulls);
    - ``raw_values``: cdc writes values as sent (``--raw-values``), metadata times as epoch millis;
    - ``rejected``: a record cdc skips (a Debezium ``m``/``t`` event, a Canal DDL other than CREATE,
      a Maxwell ``bootstrap-start``/``table-*`` message) on which Flink's format fails — the same
      job only with ``--on-error skip`` (``ignore-parse-errors`` drops it);
    - ``unsupported``: a record cdc emits rows for that Flink's format cannot read (a Maxwell
      ``bootstrap-insert``);
    - ``tables``: the source tables seen; cdc emits each table's rows with their own columns, a
      Flink table has one column set, so several tables need a table filter (Canal's
      ``table.include``) or are refused;
    - ``partial_after``: an update's after image lacks columns (GoldenGate compressed updates):
      cdc fills them from the key's last row, Flink emits nulls — refused;
    - ``text_booleans``: a Canal BOOLEAN column (``sqlType`` 16) sent as ``1``/``0``: cdc reads
      ``1`` as true, Flink's ``Boolean.parseBoolean`` as false — refused unless ``raw_values``
      (both keep the text then).

    ``unsupported`` also names the updates Flink's format cannot read as cdc does: a Canal
    ``UPDATE`` or Maxwell ``update`` without ``old`` (Flink: NullPointerException), a Canal
    ``old`` shorter than ``data`` (Flink: ArrayIndexOutOfBoundsException), and a multi-row Canal
    ``UPDATE`` where Flink's rule — a column's old value is the first element of ``old`` naming
    it (Jackson ``findValue`` over the whole array) — gives another before image than cdc's
    ``old[i]`` over ``data[i]``.

    :func:`scan_records` fills everything but the column types from the records as sent.
    """

    schema_include: bool = False
    raw_columns: Mapping[str, str] | None = None
    text_tombstones: bool = False
    toast: bool = False
    null_before: bool = False
    partial_before: bool = False
    raw_values: bool = False  # cdc keeps values as sent (--raw-values), timestamps as epoch millis
    rejected: str = ""  # a record cdc skips that Flink's format fails on (ignore-parse-errors drops it)
    unsupported: str = ""  # a record cdc turns into rows that Flink's format cannot read at all
    tables: frozenset[str] = frozenset()  # the source tables the records came from (db.table)
    partial_after: bool = False  # an update's after image without some columns (GoldenGate compressed)
    text_booleans: str = ""  # Canal: a BOOLEAN (sqlType 16) sent as text other than true/false (e.g. '1')
    first_error: str = ""  # the first record cdc itself could not decode (set by the CLI's sampling)
    truncate: bool = False  # a truncate record (Debezium op t, Canal TRUNCATE, GoldenGate op_type T)
    on_truncate: str = "fail"  # cdc's --on-truncate: delete emits -D for every live row, which Flink cannot
    stale_before: int = 0  # with --key: updates/deletes whose before image differs from the key's stored row


# The record types each Flink format reads (others fail unless ignore-parse-errors), and the
# ones cdc emits rows for although Flink cannot read them.
FLINK_TYPES = {
    "debezium": ("op", {"c", "r", "u", "d"}),
    "canal": ("type", {"INSERT", "UPDATE", "DELETE", "CREATE"}),  # CREATE: a DDL Flink skips
    "maxwell": ("type", {"insert", "update", "delete"}),
    "ogg": ("op_type", {"I", "U", "D"}),
}


CDC_ROWS = {"maxwell": {"bootstrap-insert"}}


def scan_records(
    records: Iterable[Any],
    envelope: str = "debezium",
    schema_include: str = "auto",
    database_include: str | None = None,
    table_include: str | None = None,
) -> DebeziumInfo:
    """What Flink's envelope format would meet in these records (parsed JSON lines as sent;
    ``None`` for a ``null`` line): see :class:`DebeziumInfo`. Column types are not set here.
    ``database_include`` / ``table_include`` (Canal): records of other tables are skipped, as
    canal-json skips them before reading them."""
    info = DebeziumInfo()
    field_name, readable = FLINK_TYPES[envelope]
    columns: set[str] = set()
    tables: set[str] = set()
    for record in records:
        if record is None:
            info.text_tombstones = True
            continue
        if not isinstance(record, dict):
            continue
        payload = record.get("payload") if schema_include == "true" or "payload" in record else record
        if not isinstance(payload, dict):
            continue
        kind = payload.get(field_name)
        if envelope == "canal" and not _included(payload, database_include, table_include):
            continue
        source = payload.get("source") if envelope == "debezium" else payload
        if isinstance(source, dict) and (source.get("table") is not None or source.get("db") is not None):
            tables.add(f"{source.get('database', source.get('db'))}.{source.get('table')}")
        if kind is not None and kind not in readable:
            what = f"a record with {field_name} {kind!r}"
            if kind in CDC_ROWS.get(envelope, ()):
                info.unsupported = info.unsupported or what
            else:
                info.rejected = info.rejected or what
        if kind in ("t", "TRUNCATE", "T"):
            info.truncate = True
        if envelope == "canal":
            info.unsupported = info.unsupported or _canal_update(payload)
            info.text_booleans = info.text_booleans or _canal_text_boolean(payload)
        if envelope == "maxwell" and kind == "update" and not isinstance(payload.get("old"), dict):
            info.unsupported = (
                info.unsupported or "an update without 'old' (Flink's maxwell-json: NullPointerException)"
            )
        if envelope not in ("debezium", "ogg"):
            continue
        before, after = payload.get("before"), payload.get("after")
        for image in (before, after):
            if isinstance(image, dict) and TOAST_PLACEHOLDER in image.values():
                info.toast = True
        if isinstance(after, dict):
            seen = columns | (before.keys() if isinstance(before, dict) else set())
            if str(kind).lower() == "u" and not after.keys() >= seen:
                info.partial_after = True
            columns |= after.keys()
        if str(kind).lower() in ("u", "d"):
            if not isinstance(before, dict):
                info.null_before = True
            elif not before.keys() >= columns:
                info.partial_before = True
    info.tables = frozenset(tables)
    return info


def _included(message: Mapping[str, Any], database_include: str | None, table_include: str | None) -> bool:
    """canal-json's filters: the whole database / table name matches the regular expression."""
    for pattern, name in ((database_include, message.get("database")), (table_include, message.get("table"))):
        if pattern is not None and not re.fullmatch(pattern, str(name)):
            return False
    return True


def _canal_update(message: Mapping[str, Any]) -> str:
    """What of a Canal UPDATE Flink's canal-json cannot read as cdc does ('' when nothing).

    Flink takes row ``i``'s before image from ``old[i]``, and a column ``old[i]`` lacks from
    ``data[i]`` only when no element of ``old`` names it (Jackson ``findValue`` over the whole
    array); else it stays NULL. cdc takes it from ``data[i]`` (the row's own ``old`` says what
    changed)."""
    if message.get("type") != "UPDATE" or not isinstance(message.get("data"), list):
        return ""
    data, old = message["data"], message.get("old")
    if not isinstance(old, list):
        return "an UPDATE without 'old' (Flink's canal-json: NullPointerException)"
    if len(old) < len(data):
        return "an UPDATE whose 'old' has fewer elements than 'data' (Flink's canal-json: ArrayIndexOutOfBounds)"
    named = {c for o in old if isinstance(o, dict) for c in o}
    for i, row in enumerate(data):
        own = old[i] if isinstance(old[i], dict) else {}
        if isinstance(row, dict) and any(c in named and c not in own and v is not None for c, v in row.items()):
            return (
                "a multi-row UPDATE whose rows changed different columns: Flink's canal-json leaves a column NULL in "
                "a row's before image when another row's 'old' names it, cdc takes the row's own value"
            )
    return ""


def _canal_text_boolean(message: Mapping[str, Any]) -> str:
    """A BOOLEAN column (sqlType 16) whose text Flink's Boolean.parseBoolean reads otherwise than cdc."""
    types = message.get("sqlType")
    if not isinstance(types, dict):
        return ""
    for image in [*(message.get("data") or []), *(message.get("old") or [])]:
        if not isinstance(image, dict):
            continue
        for column, value in image.items():
            if types.get(column) == 16 and value is not None and str(value).lower() not in ("true", "false"):
                return str(column)
    return ""


def stale_befores(records: Iterable[Any], key: Sequence[str], schema_include: str = "auto") -> int:
    """Debezium / GoldenGate updates and deletes of a stored key whose before image differs from
    the stored row (the key's last after image): Flink's ChangelogNormalize (a PRIMARY KEY with
    ``table.exec.source.cdc-events-duplicate``) emits the stored row as ``-U`` / ``-D``, not the
    event's image. Counted over all ``records`` (parsed JSON lines as sent)."""
    stored: dict[tuple[str, ...], Mapping[str, Any]] = {}
    stale = 0
    for record in records:
        if not isinstance(record, dict):
            continue
        payload = record.get("payload") if schema_include == "true" or "payload" in record else record
        if not isinstance(payload, dict):
            continue
        before, after = payload.get("before"), payload.get("after")
        image = after if isinstance(after, dict) else before
        if not isinstance(image, dict):
            continue
        k = tuple(repr(image.get(c)) for c in key)
        previous = stored.get(k)
        if isinstance(before, dict) and previous is not None and dict(before) != dict(previous):
            stale += 1
        if isinstance(after, dict):
            stored[k] = after
        else:
            stored.pop(k, None)
    return stale
