"""Maxwell JSON (Zendesk's Maxwell) → changes, as Flink's ``maxwell-json`` reads them.

Flink (``MaxwellJsonDeserializationSchema``):

- an empty message is skipped;
- ``insert``: ``+I(data)``; ``delete``: ``-D(data)``;
- ``update``: ``-U`` whose columns are ``old``'s where ``old`` names them (an explicit ``null``
  included: the value was NULL — Maxwell's ``data.merge(old)``), ``data``'s elsewhere; then
  ``+U(data)``;
- any other type fails ("Unknown "type" value").

cdc differs where Flink fails:

- bootstrapping (Maxwell's docs, "Bootstrapping Data Format"): ``bootstrap-start`` and
  ``bootstrap-complete`` are markers, skipped and counted; ``bootstrap-insert`` rows are the
  table's rows read by the bootstrap: ``+I`` (like Debezium's snapshot ``r``), or skipped and
  counted with ``bootstrap="skip"``. With ``key``, a bootstrap row whose key is already live
  (the bootstrap re-reads rows the stream has inserted) becomes ``-U(stored)``, ``+U(row)``,
  so that the changelog stays consistent;
- DDL messages (``--output_ddl``: ``database-create``/``-alter``/``-drop``,
  ``table-create``/``-alter``/``-drop``) are skipped and counted;
- an ``update`` without ``old`` (Flink: a NullPointerException) means no column changed.

Maxwell writes typed JSON values; they are kept as they are. ``database.include`` and
``table.include`` work as for Canal (Flink's ``maxwell-json`` has no such options).
"""

from __future__ import annotations

from typing import Any, ClassVar

from cdc.core.envelopes.base import EnvelopeDecoder, Getter, json_name, utc_millis
from cdc.core.errors import UsageError
from cdc.core.model import Change, Row

MARKERS = frozenset(("bootstrap-start", "bootstrap-complete"))
DDL_TYPES = frozenset(
    ("database-create", "database-alter", "database-drop", "table-create", "table-alter", "table-drop")
)


class MaxwellDecoder(EnvelopeDecoder):
    name = "maxwell"
    label = "Maxwell"
    message = "a Maxwell message"
    METADATA: ClassVar[dict[str, tuple[str, str]]] = {
        "database": ("STRING NULL", "the 'database' field"),
        "table": ("STRING NULL", "the 'table' field"),
        "primary-key-columns": ("ARRAY<STRING> NULL", "the 'primary_key_columns' field"),
        "ingestion-timestamp": ("TIMESTAMP_LTZ(3) NULL", "the 'ts' field (epoch seconds)"),
    }

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if self.options.bootstrap not in ("insert", "skip"):
            raise UsageError(f"--bootstrap: {self.options.bootstrap!r}; choose insert or skip")
        self._plain = self.state is None and not self.meta

    def _getter(self, key: str) -> Getter:
        if key == "database":
            return lambda e: e.get("database")
        if key == "table":
            return lambda e: e.get("table")
        if key == "primary-key-columns":
            return lambda e: e.get("primary_key_columns")
        if self.options.raw_values:
            return lambda e: e.get("ts")
        return lambda e: utc_millis(_millis(e.get("ts")))

    def _decode(self, event: Row) -> list[Change]:  # noqa: C901 - one branch per type
        kind = event.get("type")
        data = event.get("data")
        if kind == "insert":
            changes = [("+I", self._data(data, "an insert", event))]
        elif kind == "update":
            after = self._data(data, "an update", event)
            old = event.get("old")
            if old is None or old == {}:
                before = after
            elif type(old) is dict:
                before = dict(after)
                before.update(old)
            else:
                raise self._bad(f"the 'old' field of an update message is {json_name(old)}; expected an object", event)
            changes = [("-U", before), ("+U", after)]
        elif kind == "delete":
            changes = [("-D", self._data(data, "a delete", event))]
        elif kind == "bootstrap-insert":
            if self.options.bootstrap == "skip":
                self.notes["bootstrap rows skipped"] += 1
                return []
            changes = self._bootstrap(self._data(data, "a bootstrap-insert", event), event)
        elif kind in MARKERS:
            self.notes["bootstrap markers"] += 1
            return []
        elif kind in DDL_TYPES:
            self.notes["DDL messages"] += 1
            return []
        elif "type" not in event:
            raise self._bad("not a Maxwell message: no 'type' field", event)
        else:
            raise self._bad(
                f"unknown Maxwell message type {kind!r}; expected insert, update, delete, "
                "bootstrap-start/-insert/-complete or a DDL type",
                event,
            )
        if self._plain:
            kc = self.kind_column
            for _, image in changes:
                if kc in image:
                    return self._finish(changes, event, None)  # raises the collision error
            return changes
        return self._finish(changes, event, (event.get("database"), event.get("table")))

    def _data(self, data: Any, what: str, event: Row) -> Row:
        if type(data) is dict:
            return data
        raise self._bad(f"the 'data' field of {what} message is {_what(data)}; expected the row object", event)

    def _bootstrap(self, row: Row, event: Row) -> list[Change]:
        if self.state is None or not self.options.key:
            return [("+I", row)]
        stored = self.state.of((event.get("database"), event.get("table"))).stored(row)
        if stored is None:
            return [("+I", row)]
        self.notes["bootstrap rows already live"] += 1
        return [("-U", stored), ("+U", row)]


def _millis(seconds: Any) -> Any:
    """Maxwell's ``ts`` is in seconds (Flink multiplies by 1000)."""
    if type(seconds) is int:
        return seconds * 1000
    if isinstance(seconds, str) and seconds.isdigit():
        return int(seconds) * 1000
    return seconds


def _what(value: Any) -> str:
    return json_name(value)
