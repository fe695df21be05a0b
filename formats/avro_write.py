"""``debezium-encode --format avro | avro-confluent``: Debezium events written in Avro as Debezium's
AvroConverter would (``formats.avro_schema.avro_schema``: the envelope ``TOPIC.Envelope``, its rows
``TOPIC.Value``, optional columns ``["null", T]``, Connect names on the logical types), so that cdc,
Flink's ``debezium-avro-confluent`` and any Avro reader read them.

- ``avro``: an Avro object container file (the schema in its header);
- ``avro-confluent``: Confluent wire-format messages (magic 0, the schema id, the Avro binary),
  each after its length as a 4-byte big-endian integer (``kcat -f '%R%s'``'s framing; cdc reads it
  back), the schema registered as subject ``TOPIC-value`` at ``--schema-registry`` (or written as
  ``ID.avsc`` into ``--schemas DIR``).

The columns' types come from the stream's declared types (a schema line: decimals' precision and
scale, timestamps) and the first ``BUFFER_ROWS`` rows' values; a later value its column's type
cannot hold is an error naming the column.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from cdc.core.errors import InputError, UsageError
from cdc.core.model import Row
from cdc.formats.avro_schema import DECIMAL, TICKS, _ticks, avro_schema, unscaled_bytes

AVRO_OUTPUTS = ("avro", "avro-confluent")
BUFFER_ROWS = 1000
JSON = "io.debezium.data.Json"
ZONED = "io.debezium.time.ZonedTimestamp"


def topic_of(source: Any) -> str:
    """The topic Debezium would name for the events' source: ``NAME.DB.TABLE`` (``--source``)."""
    source = source if isinstance(source, dict) else {}
    parts = [source.get("name") or "cdc", source.get("schema") or source.get("db"), source.get("table") or "changelog"]
    return ".".join(str(p) for p in parts if p)


class AvroEventWriter:
    """Events (``formats.debezium.DebeziumEncoder``'s dicts) → Avro."""

    def __init__(self, stream: BinaryIO, fmt: str, hints: dict[str, Any] | None, sources: Any):
        self.stream = stream
        self.fmt = fmt
        self.hints = hints or {}
        self.sources = sources
        self.buffer: list[Row] = []
        self.columns: list[dict[str, Any]] | None = None
        self.written = 0
        self._container: Any = None
        self._parsed: Any = None
        self._prefix = b""

    def write_rows(self, rows: Iterable[Row]) -> None:
        for event in rows:
            if self.columns is None:
                self.buffer.append(event)
                if len(self.buffer) >= BUFFER_ROWS:
                    self._start()
            else:
                self._write(event)

    def close(self) -> None:
        if self.columns is None:
            self._start()
        if self._container is not None:
            self._container.flush()
        self.stream.flush()

    # -- the schema, from the first events ---------------------------------------------------

    def _start(self) -> None:
        import fastavro

        events, self.buffer = self.buffer, []
        names: dict[str, list[Any]] = {}
        for event in events:
            for image in (event.get("before"), event.get("after")):
                if isinstance(image, dict):
                    for column, value in image.items():
                        names.setdefault(column, []).append(value)
        self.columns = [{**_column(c, values, self.hints.get(c)), "field": c} for c, values in names.items()]
        topic = topic_of(events[0].get("source") if events else None)
        value = {"type": "struct", "name": f"{topic}.Value", "fields": self.columns, "optional": True}
        source_fields = sorted({k for e in events if isinstance(e.get("source"), dict) for k in e["source"]})
        fields: list[dict[str, Any]] = [{**value, "field": "before"}, {**value, "field": "after"}]
        if source_fields:
            source = [{"type": "string", "optional": True, "field": k} for k in source_fields]
            fields.append(
                {
                    "type": "struct",
                    "name": "io.debezium.connector.cdc.Source",
                    "fields": source,
                    "optional": True,
                    "field": "source",
                }
            )
        fields += [
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
            {
                "type": "struct",
                "name": "event.block",
                "version": 1,
                "optional": True,
                "field": "transaction",
                "fields": [
                    {"type": "string", "optional": False, "field": "id"},
                    {"type": "int64", "optional": False, "field": "total_order"},
                    {"type": "int64", "optional": False, "field": "data_collection_order"},
                ],
            },
        ]
        self.source_fields = source_fields
        envelope = {"type": "struct", "name": f"{topic}.Envelope", "version": 2, "optional": False, "fields": fields}
        schema = avro_schema(envelope)
        self._parsed = fastavro.parse_schema(schema)
        if self.fmt == "avro":
            from fastavro.write import Writer

            self._container = Writer(self.stream, self._parsed)
        else:
            schema_id = self._register(f"{topic}-value", json.dumps(schema, separators=(",", ":")))
            self._prefix = b"\0" + schema_id.to_bytes(4, "big")
        for event in events:
            self._write(event)

    def _register(self, subject: str, text: str) -> int:
        if self.sources is not None and self.sources.registry:
            return int(self.sources.open().register(subject, text))
        folder = Path(self.sources.folder) if self.sources is not None and self.sources.folder else None
        if folder is None:
            raise UsageError(
                "--format avro-confluent registers its schema: give --schema-registry URL or --schemas DIR"
            )
        ids = {int(p.stem): p for p in folder.glob("*.avsc") if p.stem.isdigit()}
        for schema_id, path in sorted(ids.items()):
            if path.read_text(encoding="utf-8") == text:
                return schema_id
        schema_id = max(ids, default=0) + 1
        (folder / f"{schema_id}.avsc").write_text(text, encoding="utf-8")
        return schema_id

    # -- one event -----------------------------------------------------------------------------

    def _write(self, event: Row) -> None:
        import fastavro

        assert self.columns is not None
        self.written += 1
        datum = {
            "before": self._image(event.get("before")),
            "after": self._image(event.get("after")),
            "op": event.get("op"),
            "ts_ms": event.get("ts_ms"),
            "transaction": None,
        }
        if self.source_fields:
            source = event.get("source") if isinstance(event.get("source"), dict) else None
            datum["source"] = None if source is None else {k: _text(source.get(k)) for k in self.source_fields}
        try:
            if self._container is not None:
                self._container.write(datum)
                return
            body = io.BytesIO()
            fastavro.schemaless_writer(body, self._parsed, datum)
        except (ValueError, TypeError, OverflowError) as exc:
            raise InputError(f"event {self.written} does not fit the Avro schema of the first events: {exc}") from None
        message = self._prefix + body.getvalue()
        self.stream.write(len(message).to_bytes(4, "big") + message)

    def _image(self, image: Any) -> Any:
        if not isinstance(image, dict):
            return None
        assert self.columns is not None
        return {f["field"]: _value(f, image.get(f["field"]), f["field"]) for f in self.columns}


def _column(name: str, values: list[Any], hint: Any) -> dict[str, Any]:
    """A column's Connect schema from its declared Arrow type and its first values."""
    seen = [v for v in values if v is not None]
    kinds = {_kind(v) for v in seen}
    if hint is not None and "string" not in kinds:
        declared = _declared(hint)
        if declared is not None:
            return declared
    if not kinds:
        return {"type": "string", "optional": True}
    if kinds <= {"int", "double"} and "double" in kinds:
        kinds = {"double"}
    if "decimal" in kinds and kinds <= {"int", "double", "decimal"}:
        # JSON lines spell a decimal as a number: the long ones come back exact, the short as doubles
        kinds = {"decimal"}
        seen = [v if isinstance(v, Decimal) else Decimal(repr(v) if isinstance(v, float) else v) for v in seen]
    if len(kinds) > 1 and "string" in kinds and not kinds & {"array", "json"}:
        # a database's text for what no Python type holds (24:00:00, infinity, a BC date) among
        # its times or dates: the column is written as text, as it reads
        return {"type": "string", "optional": True}
    if len(kinds) > 1:
        raise InputError(f"column {name!r} holds values of several types in the first rows: {', '.join(sorted(kinds))}")
    kind = kinds.pop()
    if kind == "decimal":
        scale = max(max(0, -int(v.as_tuple().exponent)) for v in seen if v.is_finite())
        digits = max(len(v.as_tuple().digits) for v in seen)
        params = {"scale": str(scale), "connect.decimal.precision": str(max(38, digits))}
        return {"type": "bytes", "name": DECIMAL, "version": 1, "parameters": params, "optional": True}
    if kind == "array":
        items = [i for v in seen for i in v]
        return {"type": "array", "items": _column(name, items, None), "optional": True}
    return {**_KINDS[kind], "optional": True}


_KINDS: dict[str, dict[str, Any]] = {
    "boolean": {"type": "boolean"},
    "int": {"type": "int64"},
    "double": {"type": "double"},
    "string": {"type": "string"},
    "date": {"type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1},
    "timestamp": {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "version": 1},
    "timestamp_tz": {"type": "string", "name": ZONED, "version": 1},
    "time": {"type": "int64", "name": "io.debezium.time.MicroTime", "version": 1},
    "json": {"type": "string", "name": JSON, "version": 1},
}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, Decimal):
        return "decimal"
    if isinstance(value, dt.datetime):
        return "timestamp_tz" if value.tzinfo is not None else "timestamp"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, dt.time):
        return "time"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "json"
    return "string"


def _declared(kind: Any) -> dict[str, Any] | None:
    """A column's Connect schema from a declared Arrow type (decimals, times), if it says one."""
    import pyarrow as pa

    if pa.types.is_decimal(kind):
        params = {"scale": str(kind.scale), "connect.decimal.precision": str(kind.precision)}
        return {"type": "bytes", "name": DECIMAL, "version": 1, "parameters": params, "optional": True}
    if pa.types.is_timestamp(kind):
        return {**_KINDS["timestamp_tz" if kind.tz is not None else "timestamp"], "optional": True}
    if pa.types.is_date(kind):
        return {**_KINDS["date"], "optional": True}
    if pa.types.is_time(kind):
        return {**_KINDS["time"], "optional": True}
    return None


def _value(field: dict[str, Any], value: Any, column: str) -> Any:
    """A row's value as the Connect encoding its column's Avro type holds."""
    if value is None:
        return None
    name, kind = field.get("name"), field.get("type")
    try:
        if name == DECIMAL:
            scale = int(field["parameters"]["scale"])
            return unscaled_bytes(value if isinstance(value, Decimal) else Decimal(str(value)), scale)
        if name in TICKS:
            if isinstance(value, str):
                value = _parse_time(value, name)
            return _ticks(value, TICKS[name])
        if name == ZONED:
            return (
                value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
                if isinstance(value, dt.datetime)
                else str(value)
            )
        if name == JSON:
            return value if isinstance(value, str) else orjson.dumps(value).decode()
        if kind == "array":
            return [_value(field["items"], v, column) for v in value]
        if kind == "double" and isinstance(value, int | Decimal):
            return float(value)
        if kind == "string":
            return _text(value)
    except (ValueError, TypeError, ArithmeticError, KeyError) as exc:
        raise InputError(f"column {column!r}: {value!r} does not fit its Avro type ({name or kind}): {exc}") from None
    return value


def _parse_time(text: str, name: str) -> Any:
    if "Date" in name:
        return dt.date.fromisoformat(text)
    if "Timestamp" in name:
        return dt.datetime.fromisoformat(text)
    return dt.time.fromisoformat(text)


def _text(value: Any) -> Any:
    if value is None or type(value) is str:
        return value
    if isinstance(value, str):
        return str(value)
    return orjson.dumps(value).decode() if isinstance(value, dict | list) else str(value)
