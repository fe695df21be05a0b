"""Which table a change event is of, the include patterns that pick tables, and the rule that a
command keeping state reads one table (a stream holding several is refused, never merged).

Canal and Maxwell name ``database`` and ``table``; OGG ``table`` as ``SCHEMA.TABLE``; Debezium
``source.db``, ``source.schema`` (PostgreSQL, SQL Server, Oracle) and ``source.table``. A table's
name is those parts joined by dots (``inventory.public.customers``, ``inventory.customers``).
``--table-include`` matches the whole of any of the table's names: the table alone, or with its
schema and/or database before it (the topic-style ``db.schema.table``); ``--database-include``
the database or the schema (Flink's ``Pattern.matches``: the whole text).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc.core.errors import InputError, Location, UsageError
from cdc.core.model import Row


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def table_parts(envelope: str, event: Any) -> tuple[str | None, str | None, str | None]:
    """``(database, schema, table)`` an event names (None where it does not)."""
    if type(event) is not dict:
        return None, None, None
    if envelope == "debezium":
        payload = event.get("payload") if "payload" in event and "op" not in event else event
        source = payload.get("source") if type(payload) is dict else None
        if type(source) is not dict:
            if type(payload) is dict and ("__table" in payload or "__source_table" in payload):
                return _flattened_parts(payload)
            return None, None, None
        return _text(source.get("db")), _text(source.get("schema")), _text(source.get("table"))
    if envelope == "ogg":
        name = _text(event.get("table"))
        if name is None:
            return None, None, None
        schema, _, table = name.rpartition(".")
        return None, schema or None, table
    return _text(event.get("database")), None, _text(event.get("table"))


def _flattened_parts(row: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """A flattened row's table, where ExtractNewRecordState added it (``add.fields=table,db`` or
    ``source.table``…: ``__table``, ``__db``, ``__schema``, ``__source_*``)."""

    def field(name: str) -> str | None:
        return _text(row.get(f"__{name}")) or _text(row.get(f"__source_{name}"))

    return field("db"), field("schema"), field("table")


def table_name(parts: tuple[str | None, str | None, str | None]) -> str | None:
    if parts[2] is None:
        return None
    return ".".join(p for p in parts if p is not None)


def _compile(option: str, pattern: str | None) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"{option}: {pattern!r} is not a regular expression: {exc}") from None


@dataclass
class TableSeen:
    events: int = 0
    first: str = ""  # FILE:LINE of its first event


@dataclass
class TableGate:
    """Picks the events of the included tables (Debezium here; the other envelopes filter in their
    decoders, with Flink's rules) and, for a command that keeps state (``one_table``), refuses a
    second table when no pattern picked one. ``tables`` tells which tables were read, for inspect."""

    envelope: str
    database_include: str | None = None
    table_include: str | None = None
    one_table: bool = False
    filter_here: bool = True  # False: the envelope's decoder filters itself (Canal, Maxwell, OGG)
    where: Callable[[], Location | None] = lambda: None
    tables: dict[str, TableSeen] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.database_re = _compile("--database-include", self.database_include)
        self.table_re = _compile("--table-include", self.table_include)
        self.filtered = self.database_re is not None or self.table_re is not None

    def admits(self, event: Any, notes: Any) -> bool:
        """True when the event is to be decoded; False when a pattern leaves it out (counted)."""
        if type(event) is not dict:
            return True  # a tombstone, or a bad record the decoder names
        parts = table_parts(self.envelope, event)
        if self.filtered and self.filter_here and not self._included(parts, event):
            notes["filtered messages"] += 1
            return False
        if self.filtered and not self.filter_here and not self._included(parts, event, quiet=True):
            return True  # the decoder leaves it out and counts it
        name = table_name(parts)
        if name is None:
            return True
        seen = self.tables.get(name)
        if seen is None:
            where = self.where()
            seen = self.tables[name] = TableSeen(first=str(where) if where is not None else "")
            if self.one_table and not self.filtered and len(self.tables) > 1:
                raise self.several(where)
        seen.events += 1
        return True

    def _included(self, parts: tuple[str | None, str | None, str | None], event: Row, quiet: bool = False) -> bool:
        db, schema, table = parts
        if self.database_re is not None:
            names = [n for n in (db, schema, f"{db}.{schema}" if db and schema else None) if n]
            if not any(self.database_re.fullmatch(n) for n in names):
                return False
        if self.table_re is not None:
            if table is None:
                if not _carries_rows(event):
                    return True  # a heartbeat, a transaction or schema-change record: the decoder counts it
                if quiet:
                    return False
                raise InputError("the event names no table (Debezium's source.table): --table-include cannot place it")
            names = [table]
            if schema:
                names.append(f"{schema}.{table}")
            if db:
                names.append(f"{db}.{table}")
                if schema:
                    names.append(f"{db}.{schema}.{table}")
            if not any(self.table_re.fullmatch(n) for n in names):
                return False
        return True

    def several(self, where: Location | None = None) -> UsageError:
        listed = ", ".join(f"{name} (first {seen.first})" if seen.first else name for name, seen in self.tables.items())
        return UsageError(
            f"the stream holds more than one table ({listed}); state is kept per table, and tables "
            "are never merged into one",
            hint="pick one with --table-include NAME (a regular expression matched against the whole "
            f"table name, e.g. --table-include '{next(reversed(self.tables))}'), or --database-include",
            where=where,
        )


def _carries_rows(event: Row) -> bool:
    """Whether a record holds row images (a change), not a heartbeat or a transaction marker."""
    body = event.get("payload") if isinstance(event.get("payload"), dict) else event
    return isinstance(body, dict) and any(k in body for k in ("before", "after", "data"))
