"""Canal JSON (Alibaba Canal's flat messages) → changes, as Flink's ``canal-json`` reads them.

Flink (``CanalJsonDeserializationSchema``):

- an empty message is skipped; with ``database.include`` / ``table.include`` set, a message whose
  ``database`` / ``table`` does not match the whole pattern is skipped (checked first);
- ``INSERT``: one ``+I`` per element of the ``data`` array; ``DELETE``: one ``-D`` each;
- ``UPDATE``: for each ``data[i]`` a ``-U`` whose columns are ``old[i]``'s where ``old`` names
  them (an explicit ``null`` included: the value was NULL) and ``data[i]``'s elsewhere, then
  ``+U(data[i])``;
- ``CREATE`` is skipped; any other type fails ("Unknown "type" value").

cdc differs where Flink fails or errs:

- every DDL message (``isDdl: true`` or a DDL type: ``CREATE ALTER ERASE RENAME CINDEX DINDEX
  QUERY``) is skipped and counted, as are Canal's ``GTID``/``XACOMMIT``/``XAROLLBACK``/
  ``MHEARTBEAT`` markers; ``TRUNCATE`` follows ``on_truncate`` like Debezium's ``t``;
- Flink decides "named in ``old``" by searching the whole ``old`` array (Jackson ``findValue``),
  so in a multi-row UPDATE a column changed in one row is taken as changed (and NULL) in every
  row; cdc reads each row's own ``old[i]``;
- an UPDATE without ``old`` (no column changed) gives ``-U``/``+U`` of ``data``; an ``old`` array
  whose length differs from ``data``'s (Canal leaves out rows with no changed column) needs
  ``key`` to rebuild the before images from the rows seen.

Values: Canal sends every column value as text. Flink parses it by the table's DDL. Without a
DDL cdc takes Canal's own ``sqlType`` (``java.sql.Types`` codes) as the schema: integer types
become integers, ``DECIMAL``/``NUMERIC`` exact decimals, ``FLOAT``/``REAL``/``DOUBLE`` floats,
``BOOLEAN`` booleans (``1``/``true`` → true; Flink's ``Boolean.parseBoolean`` reads MySQL's
``1`` as false); everything else (text, dates, times, ``BIT``, binary) stays text, as Canal
wrote it. ``raw_values`` keeps every value as sent.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar

from cdc.core.envelopes.base import EnvelopeDecoder, Getter, rows_of, utc_millis
from cdc.core.envelopes.images import ImageTexts
from cdc.core.errors import InputError
from cdc.core.model import Change, Row

DDL_TYPES = frozenset(["CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX"])
MARKER_TYPES = frozenset(["GTID", "XACOMMIT", "XAROLLBACK", "MHEARTBEAT"])


def _bool(text: str) -> bool:
    value = {"1": True, "0": False, "true": True, "false": False}.get(text.strip().lower())
    if value is None:
        raise ValueError(text)
    return value


# java.sql.Types code → text → value.
SQL_TYPES: dict[int, tuple[str, Callable[[str], Any]]] = {
    -6: ("TINYINT", int),
    5: ("SMALLINT", int),
    4: ("INTEGER", int),
    -5: ("BIGINT", int),
    6: ("FLOAT", float),
    7: ("REAL", float),
    8: ("DOUBLE", float),
    2: ("NUMERIC", Decimal),
    3: ("DECIMAL", Decimal),
    16: ("BOOLEAN", _bool),
}

Converters = tuple[tuple[str, Callable[[str], Any]], ...]


class CanalDecoder(EnvelopeDecoder):
    name = "canal"
    label = "Canal"
    message = "a Canal message"
    METADATA: ClassVar[dict[str, tuple[str, str]]] = {
        "database": ("STRING NULL", "the 'database' field"),
        "table": ("STRING NULL", "the 'table' field"),
        "sql-type": ("MAP<STRING, INT> NULL", "the 'sqlType' field (java.sql.Types per column)"),
        "pk-names": ("ARRAY<STRING> NULL", "the 'pkNames' field"),
        "ingestion-timestamp": ("TIMESTAMP_LTZ(3) NULL", "the 'ts' field: when Canal processed the event"),
        "event-timestamp": ("TIMESTAMP_LTZ(3) NULL", "the 'es' field: when the change was made in MySQL"),
    }
    TEXTS = ImageTexts(
        "Canal lists in 'old' only the rows whose columns changed, so 'old' and 'data' do not line up",
        "give --key COLS to rebuild the before images from the last row seen for each key",
    )

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._converters: dict[Any, Converters] = {}
        self._last_sql_type: Any = None
        self._last_converters: Converters = ()
        self._plain = self.state is None and not self.meta

    def _getter(self, key: str) -> Getter:
        raw = self.options.raw_values
        if key == "database":
            return lambda e: e.get("database")
        if key == "table":
            return lambda e: e.get("table")
        if key == "sql-type":
            return lambda e: e.get("sqlType")
        if key == "pk-names":
            return lambda e: e.get("pkNames")
        field_name = "ts" if key == "ingestion-timestamp" else "es"
        if raw:
            return lambda e: e.get(field_name)
        return lambda e: utc_millis(e.get(field_name))

    def _decode(self, event: Row) -> list[Change]:  # noqa: C901 - one branch per type
        kind = event.get("type")
        if kind == "INSERT" or kind == "DELETE":
            what = "an INSERT" if kind == "INSERT" else "a DELETE"
            data = rows_of(event.get("data"), "data", what, self, event)
            convert = self._convert_of(event)
            if convert:
                self._convert_rows(convert, data, event)
            rk = "+I" if kind == "INSERT" else "-D"
            changes = [(rk, row) for row in data]
        elif kind == "UPDATE":
            changes = self._update(event)
        elif event.get("isDdl") is True or kind in DDL_TYPES:
            if kind == "TRUNCATE":
                return self._truncate(event, _table_of(event))
            self.notes["DDL messages"] += 1
            return []
        elif kind == "TRUNCATE":
            return self._truncate(event, _table_of(event))
        elif kind in MARKER_TYPES:
            self.notes["transaction and heartbeat markers"] += 1
            return []
        elif "type" not in event:
            raise self._bad("not a Canal message: no 'type' field", event)
        else:
            raise self._bad(
                f"unknown Canal message type {kind!r}; expected INSERT, UPDATE, DELETE, TRUNCATE or a DDL type",
                event,
            )
        if self._plain:
            kc = self.kind_column
            for _, image in changes:
                if kc in image:
                    return self._finish(changes, event, None)  # raises the collision error
            return changes
        return self._finish(changes, event, _table_of(event))

    def _update(self, event: Row) -> list[Change]:
        data = rows_of(event.get("data"), "data", "an UPDATE", self, event)
        convert = self._convert_of(event)
        old_field = event.get("old")
        olds = [] if old_field is None else rows_of(old_field, "old", "an UPDATE", self, event)
        if convert:
            self._convert_rows(convert, data, event)
            if olds:
                self._convert_rows(convert, olds, event)
        changes: list[Change] = []
        if old_field is None or len(olds) == len(data):
            for i, after in enumerate(data):
                if olds and olds[i]:
                    before = dict(after)
                    before.update(olds[i])
                else:
                    before = after
                changes.append(("-U", before))
                changes.append(("+U", after))
            return changes
        # 'old' does not line up with 'data': only the rows seen before can say what they were.
        if self.state is None or not self.options.key:
            raise self._bad(
                f"an UPDATE message with {len(data)} row(s) in 'data' but {len(olds)} in 'old'; {self.TEXTS.cause}",
                event,
                hint=self.TEXTS.hint,
            )
        live = self.state.of(_table_of(event))
        for after in data:
            changes.append(("-U", live.complete_before(None, after, "an UPDATE")))
            changes.append(("+U", after))
        return changes

    # -- values typed by sqlType ----------------------------------------------------------------

    def _convert_of(self, event: Row) -> Converters:
        if self.options.raw_values:
            return ()
        sql_type = event.get("sqlType")
        if type(sql_type) is not dict:
            return ()
        if sql_type == self._last_sql_type:  # a run of messages of one table: one dict comparison
            return self._last_converters
        cache_key = tuple(sql_type.items())
        found = self._converters.get(cache_key)
        if found is None:
            found = tuple(
                (column, SQL_TYPES[code][1])
                for column, code in sql_type.items()
                if type(code) is int and code in SQL_TYPES
            )
            self._converters[cache_key] = found
        self._last_sql_type, self._last_converters = sql_type, found
        return found

    @staticmethod
    def _convert_rows(convert: Converters, rows: list[Row], event: Row) -> None:
        try:
            for row in rows:
                for column, to_value in convert:
                    value = row.get(column)
                    if value.__class__ is str:
                        row[column] = to_value(value)
        except (ValueError, InvalidOperation):
            pass
        else:
            return
        sql_type = event.get("sqlType") or {}
        for row in rows:  # the values left as text are the ones that failed
            for column, to_value in convert:
                value = row.get(column)
                if value.__class__ is str:
                    try:
                        to_value(value)
                    except (ValueError, InvalidOperation):
                        code = sql_type.get(column)
                        name = SQL_TYPES[code][0] if code in SQL_TYPES else "value"
                        raise InputError(
                            f"column {column!r}: {value!r} is not a valid {name} (its sqlType is {code})",
                            hint="--raw-values keeps Canal's values as the text it sent",
                        ) from None


def _table_of(event: Row) -> Any:
    return (event.get("database"), event.get("table"))
