"""Avro schemas as Kafka Connect sees them, both ways (Confluent's ``AvroData``, which Apicurio's
converter copies): the Connect schema block of an Avro record, so that the Debezium decoder reads an
Avro event exactly as it reads the same event from Kafka Connect's ``JsonConverter``; and the Avro
schema cdc writes for its own events.

Reading: a record is a ``struct``, ``["null", T]`` an optional ``T``, ``connect.name`` /
``connect.parameters`` / ``connect.version`` / ``connect.type`` (int8, int16) give back the Connect
schema's name, parameters, version and width. A schema without them (Flink's
``debezium-avro-confluent``) names its types with Avro logical types, which map to the Connect or
Debezium name of the same encoding (``timestamp-micros`` → ``io.debezium.time.MicroTimestamp`` …).

Values are read with the logical types left off (``reading_schema``): fastavro then gives what the
JsonConverter would have written — epoch days, ticks, unscaled bytes — and ``literal_for`` spells
bytes as base64 as JSON does, so the decoder's logical-type rules run on the same input whatever
the form. Parquet's values (dates, decimals as Python objects) are brought to the same literals.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdc.core.errors import InputError

Literal = Callable[[Any], Any]
DECIMAL = "org.apache.kafka.connect.data.Decimal"
PRIMITIVES = {
    "boolean": "boolean",
    "int": "int32",
    "long": "int64",
    "float": "float",
    "double": "double",
    "bytes": "bytes",
    "fixed": "bytes",
    "string": "string",
    "enum": "string",
}
# Avro logical types → the Connect/Debezium semantic type of the same encoding (Flink writes these).
LOGICAL = {
    "date": "org.apache.kafka.connect.data.Date",
    "time-millis": "org.apache.kafka.connect.data.Time",
    "time-micros": "io.debezium.time.MicroTime",
    "timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
    "timestamp-micros": "io.debezium.time.MicroTimestamp",
    "timestamp-nanos": "io.debezium.time.NanoTimestamp",
    "local-timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
    "local-timestamp-micros": "io.debezium.time.MicroTimestamp",
    "local-timestamp-nanos": "io.debezium.time.NanoTimestamp",
}
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
# Connect/Debezium temporal names → ticks per second of their integer encoding (days: 0).
TICKS = {
    "org.apache.kafka.connect.data.Date": 0,
    "io.debezium.time.Date": 0,
    "org.apache.kafka.connect.data.Time": 1000,
    "io.debezium.time.Time": 1000,
    "io.debezium.time.MicroTime": 1_000_000,
    "io.debezium.time.NanoTime": 1_000_000_000,
    "org.apache.kafka.connect.data.Timestamp": 1000,
    "io.debezium.time.Timestamp": 1000,
    "io.debezium.time.MicroTimestamp": 1_000_000,
    "io.debezium.time.NanoTimestamp": 1_000_000_000,
}


class AvroSchemaError(InputError):
    """A writer schema that no Kafka Connect schema (no Debezium event) can have."""


# -- Avro → Connect -------------------------------------------------------------------------


def connect_schema(avro: Any) -> dict[str, Any]:
    """The Connect schema block (as the JsonConverter writes it) of an Avro schema."""
    return _Walk().connect(avro, None, False)


class _Walk:
    def __init__(self) -> None:
        self.named: dict[str, Any] = {}  # full name → the Connect schema of a named type

    def connect(self, avro: Any, namespace: str | None, optional: bool) -> dict[str, Any]:
        if isinstance(avro, list):  # a union: Connect's optional T is ["null", T] (or [T, "null"])
            branches = [b for b in avro if b != "null"]
            if len(branches) != 1:
                raise AvroSchemaError(
                    f"a union of {', '.join(_type_name(b) for b in branches) or 'null only'}: no Kafka Connect "
                    "schema has one, so this is not a Debezium event's schema"
                )
            return self.connect(branches[0], namespace, optional or "null" in avro)
        if isinstance(avro, str):
            if avro in PRIMITIVES or avro == "null":
                avro = {"type": avro}
            else:  # a reference to a named type defined earlier
                full = avro if "." in avro or not namespace else f"{namespace}.{avro}"
                found = self.named.get(full, self.named.get(avro))
                if found is None:
                    raise AvroSchemaError(f"the schema names a type {avro!r} it does not define")
                return {**found, "optional": optional}
        kind = avro.get("type")
        if isinstance(kind, dict | list):  # {"type": {"type": …}}
            return self.connect(kind, namespace, optional)
        out: dict[str, Any]
        name = avro.get("connect.name")
        if kind == "record":
            full, inner = _full_name(avro, namespace)
            out = {"type": "struct", "fields": []}
            self.named[full] = out  # (a recursive reference finds it, unfinished)
            for f in avro.get("fields") or []:
                out["fields"].append({**self.connect(f.get("type"), inner, False), "field": f["name"]})
            name = name or full
        elif kind in ("enum", "fixed"):
            full, _ = _full_name(avro, namespace)
            out = {"type": PRIMITIVES[kind]}
            self.named[full] = out
        elif kind == "array":
            out = {"type": "array", "items": self.connect(avro.get("items"), namespace, False)}
        elif kind == "map":
            out = {
                "type": "map",
                "keys": {"type": "string", "optional": False},
                "values": self.connect(avro.get("values"), namespace, False),
            }
        elif kind in PRIMITIVES:
            out = {"type": PRIMITIVES[kind]}
            if kind == "int" and avro.get("connect.type") in ("int8", "int16"):
                out["type"] = avro["connect.type"]
        elif kind == "null":
            raise AvroSchemaError("a field of type null: no Kafka Connect schema has one")
        else:
            raise AvroSchemaError(f"unknown Avro type {kind!r}")
        parameters = avro.get("connect.parameters")
        logical = avro.get("logicalType")
        if not name and logical == "decimal":
            name = DECIMAL
            parameters = {"scale": str(avro.get("scale", 0)), "connect.decimal.precision": str(avro.get("precision"))}
        elif not name and logical in LOGICAL:
            name = LOGICAL[logical]
        if name:
            out["name"] = name
        if isinstance(parameters, dict) and parameters:
            out["parameters"] = {str(k): str(v) for k, v in parameters.items()}
        if avro.get("connect.version") is not None:
            out["version"] = avro["connect.version"]
        out["optional"] = optional
        return out


def _full_name(avro: dict[str, Any], namespace: str | None) -> tuple[str, str | None]:
    """A named type's full name, and the namespace its own fields' names are read in."""
    name = str(avro.get("name", ""))
    if "." in name:
        return name, name.rsplit(".", 1)[0]
    space = avro.get("namespace", namespace)
    return (f"{space}.{name}" if space else name), space


def _type_name(avro: Any) -> str:
    if isinstance(avro, dict):
        return str(avro.get("name") or avro.get("type"))
    return str(avro)


def reading_schema(avro: Any) -> Any:
    """The schema with its logical types left off: the same bytes read as Connect's encodings
    (epoch days, ticks, unscaled bytes), which the decoder's rules turn into values — and a value
    no Python type holds (PostgreSQL's infinity, a year past 9999) is read like any other."""
    if isinstance(avro, list):
        return [reading_schema(b) for b in avro]
    if not isinstance(avro, dict):
        return avro
    out = {k: reading_schema(v) if k in ("type", "items", "values") else v for k, v in avro.items()}
    if "fields" in avro:
        out["fields"] = [{**f, "type": reading_schema(f.get("type"))} for f in avro["fields"]]
    out.pop("logicalType", None)
    return out


# -- values: as the JsonConverter spells them -------------------------------------------------


def literal_for(field: dict[str, Any]) -> Literal | None:
    """value → its JsonConverter spelling, by the field's Connect schema (None: as it is)."""
    kind, name = field.get("type"), field.get("name")
    if kind == "bytes":
        scale = int((field.get("parameters") or {}).get("scale", 0)) if name == DECIMAL else None
        return lambda value: _bytes_text(value, scale)
    if name in TICKS and kind in ("int32", "int64"):
        ticks = TICKS[name]
        return lambda value: _ticks(value, ticks)
    if kind == "struct":
        parts = {f["field"]: c for f in field.get("fields") or [] if (c := literal_for(f)) is not None}
        if not parts:
            return None
        return lambda value: _struct(value, parts)
    if kind == "array":
        item = literal_for(field.get("items") or {})
        if item is None:
            return None
        return lambda value: [None if v is None else item(v) for v in value] if isinstance(value, list) else value
    if kind == "map":
        of = literal_for(field.get("values") or {})
        if of is None:
            return None
        return lambda value: _map(value, of)
    if kind == "string" and name == "io.debezium.time.ZonedTimestamp":
        return lambda value: _iso(value) if isinstance(value, dt.datetime) else value
    return None


def _struct(value: Any, parts: dict[str, Literal]) -> Any:
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for column, literal in parts.items():
        v = out.get(column)
        if v is not None:
            out[column] = literal(v)
    return out


def _map(value: Any, of: Literal) -> Any:
    if isinstance(value, list):  # Parquet's map: (key, value) pairs
        value = dict(value)
    if not isinstance(value, dict):
        return value
    return {k: None if v is None else of(v) for k, v in value.items()}


def _bytes_text(value: Any, scale: int | None) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    if isinstance(value, Decimal) and scale is not None and value.is_finite():  # Parquet's decimal
        return base64.b64encode(unscaled_bytes(value, scale)).decode()
    return value


def unscaled_bytes(value: Decimal, scale: int) -> bytes:
    """A decimal's unscaled integer at ``scale`` as big-endian two's complement (Connect's Decimal),
    exactly (``Decimal.scaleb`` rounds to 28 digits); more decimal places than ``scale`` is an error."""
    sign, digits, exponent = value.as_tuple()
    unscaled: int = int("".join(map(str, digits)) or "0")
    shift = int(exponent) + scale
    if shift >= 0:
        unscaled *= 10**shift
    else:
        unscaled, rest = divmod(unscaled, int(10**-shift))
        if rest:
            raise ValueError(f"{value} has more than {scale} decimal places")
    unscaled = -unscaled if sign else unscaled
    return int(unscaled).to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)


def _ticks(value: Any, ticks: int) -> Any:
    """A Parquet date, time or timestamp as the integer the JsonConverter writes."""
    if isinstance(value, dt.datetime):
        naive = value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value
        delta = naive - EPOCH
        return (delta.days * 86_400 + delta.seconds) * ticks + delta.microseconds * ticks // 1_000_000
    if isinstance(value, dt.date):
        return (value - EPOCH_DATE).days
    if isinstance(value, dt.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        return micros * ticks // 1_000_000
    if isinstance(value, dt.timedelta):
        return (value.days * 86_400 + value.seconds) * ticks + value.microseconds * ticks // 1_000_000
    return value


def _iso(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


# -- Parquet (Arrow) → Connect ---------------------------------------------------------------


def connect_of_arrow(kind: Any, optional: bool = True) -> dict[str, Any]:
    """The Connect schema of an Arrow type (a Parquet file without ``parquet.avro.schema``)."""
    import pyarrow as pa

    t = pa.types
    out: dict[str, Any]
    if t.is_struct(kind):
        out = {"type": "struct", "fields": [{**connect_of_arrow(f.type, f.nullable), "field": f.name} for f in kind]}
    elif t.is_list(kind) or t.is_large_list(kind):
        out = {"type": "array", "items": connect_of_arrow(kind.value_type)}
    elif t.is_map(kind):
        out = {
            "type": "map",
            "keys": connect_of_arrow(kind.key_type, False),
            "values": connect_of_arrow(kind.item_type),
        }
    elif t.is_decimal(kind):
        out = {
            "type": "bytes",
            "name": DECIMAL,
            "parameters": {"scale": str(kind.scale), "connect.decimal.precision": str(kind.precision)},
        }
    elif t.is_date(kind):
        out = {"type": "int32", "name": "org.apache.kafka.connect.data.Date"}
    elif t.is_timestamp(kind):
        if kind.tz is not None:
            out = {"type": "string", "name": "io.debezium.time.ZonedTimestamp"}
        else:
            unit = {"s": "org.apache.kafka.connect.data.Timestamp", "ms": "org.apache.kafka.connect.data.Timestamp"}
            out = {"type": "int64", "name": unit.get(kind.unit, f"io.debezium.time.{_unit(kind.unit)}Timestamp")}
    elif t.is_time(kind):
        out = {"type": "int64", "name": "org.apache.kafka.connect.data.Time" if kind.unit in ("s", "ms") else None}
        if out["name"] is None:
            out["name"] = f"io.debezium.time.{_unit(kind.unit)}Time"
        if kind.unit in ("s", "ms"):
            out["type"] = "int32"
    elif t.is_boolean(kind):
        out = {"type": "boolean"}
    elif t.is_integer(kind):
        out = {"type": {8: "int8", 16: "int16", 32: "int32"}.get(kind.bit_width, "int64")}
    elif t.is_float32(kind):
        out = {"type": "float"}
    elif t.is_floating(kind):
        out = {"type": "double"}
    elif t.is_binary(kind) or t.is_large_binary(kind) or t.is_fixed_size_binary(kind):
        out = {"type": "bytes"}
    else:
        out = {"type": "string"}
    out["optional"] = optional
    return out


def _unit(unit: str) -> str:
    return {"us": "Micro", "ns": "Nano"}.get(unit, "Micro")


# -- Connect → Avro (cdc's own events; tests make Avro of real JSON events with it) ------------

CONNECT_DEFAULT = "io.confluent.connect.avro.ConnectDefault"
_AVRO_PRIMITIVE = {
    "boolean": "boolean",
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "long",
    "float": "float",
    "double": "double",
    "bytes": "bytes",
    "string": "string",
}
_CONNECT_LOGICAL = {
    "org.apache.kafka.connect.data.Date": "date",
    "org.apache.kafka.connect.data.Time": "time-millis",
    "org.apache.kafka.connect.data.Timestamp": "timestamp-millis",
}


def avro_schema(connect: dict[str, Any]) -> Any:
    """The Avro schema Confluent's ``AvroData`` (and Apicurio's copy of it) makes of a Connect
    schema: records named by the Connect name, ``["null", T]`` for an optional ``T``, the Connect
    name, version, parameters and width as ``connect.*`` properties, Kafka's logical types as
    Avro's."""
    return _avro(connect, set())


def _avro(connect: dict[str, Any], defined: set[str]) -> Any:
    kind, name = connect.get("type"), connect.get("name")
    out: Any
    if kind == "struct":
        full = str(name or CONNECT_DEFAULT)
        if full in defined:
            out = full
        else:
            defined.add(full)
            space, _, short = full.rpartition(".")
            fields = []
            for f in connect.get("fields") or []:
                entry: dict[str, Any] = {"name": f["field"], "type": _avro(f, defined)}
                if f.get("optional"):
                    entry["default"] = None
                fields.append(entry)
            out = {"type": "record", "name": short, "fields": fields}
            if space:
                out["namespace"] = space
            if name:
                out["connect.name"] = name
    elif kind == "array":
        out = {"type": "array", "items": _avro(connect.get("items") or {}, defined)}
    elif kind == "map":
        out = {"type": "map", "values": _avro(connect.get("values") or {}, defined)}
    elif kind in _AVRO_PRIMITIVE:
        out = {"type": _AVRO_PRIMITIVE[kind]}
        if kind in ("int8", "int16"):
            out["connect.type"] = kind
        params = connect.get("parameters") or {}
        if name == DECIMAL:
            out.update(
                scale=int(params.get("scale", 0)),
                precision=int(params.get("connect.decimal.precision", 64)),
                logicalType="decimal",
            )
        elif name in _CONNECT_LOGICAL:
            out["logicalType"] = _CONNECT_LOGICAL[name]
        if connect.get("version") is not None:
            out["connect.version"] = connect["version"]
        if params:
            out["connect.parameters"] = dict(params)
        if name:
            out["connect.name"] = name
        if len(out) == 1:
            out = out["type"]
    else:
        raise AvroSchemaError(f"no Avro type for the Connect type {kind!r}")
    if isinstance(out, dict) and kind in ("struct", "array", "map") and connect.get("version") is not None:
        out["connect.version"] = connect["version"]
    return ["null", out] if connect.get("optional") else out


def avro_datum(connect: dict[str, Any], value: Any) -> Any:
    """A JsonConverter value (bytes as base64, a NUMERIC decimal as a number) as the Avro datum
    of ``avro_schema(connect)``: the same bytes AvroConverter writes."""
    if value is None:
        return None
    kind = connect.get("type")
    if kind == "struct":
        return {f["field"]: avro_datum(f, value.get(f["field"])) for f in connect.get("fields") or []}
    if kind == "array":
        return [avro_datum(connect.get("items") or {}, v) for v in value]
    if kind == "map":
        if isinstance(value, list):  # non-string keys: [[k, v], …]
            value = dict(value)
        return {str(k): avro_datum(connect.get("values") or {}, v) for k, v in value.items()}
    if kind == "bytes":
        if isinstance(value, str):
            try:
                return base64.b64decode(value, validate=True)
            except ValueError:
                return value.encode()
        if isinstance(value, int | float | Decimal) and connect.get("name") == DECIMAL:
            scale = int((connect.get("parameters") or {}).get("scale", 0))
            return unscaled_bytes(Decimal(str(value)), scale)
    if kind in ("float", "double") and isinstance(value, int | Decimal) and not isinstance(value, bool):
        return float(value)
    return value
