"""Debezium / Kafka Connect logical types → natural Python values (notes/debezium.md §3)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
import struct
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc.core.errors import InputError
from cdc.core.values import exact_number

Converter = Callable[[Any], Any]
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"


class BadValue(InputError):
    """A value that does not fit its declared logical type (bad input, like any other)."""


def scaled(unscaled: int, scale: int) -> Decimal:
    """``unscaled × 10^-scale`` exactly (``Decimal.scaleb`` would round to the context's 28
    digits), spelled without an exponent as the database shows it (``0.0000000000``, not ``0E-10``)."""
    sign, digits, _ = Decimal(unscaled).as_tuple()
    return exact_number(format(Decimal((sign, digits, -scale)), "f"))


def _unscaled(text: str) -> int:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadValue(f"{text!r} is not base64") from exc
    return int.from_bytes(raw, "big", signed=True)


def decimal_converter(scale: int) -> Converter:
    def convert(value: Any) -> Any:
        if isinstance(value, str):
            try:
                return scaled(_unscaled(value), scale)
            except BadValue:
                try:  # decimal.format=string-ish producers
                    return Decimal(value)
                except InvalidOperation:
                    raise BadValue(f"{value!r} is neither base64 nor a decimal number") from None
        if isinstance(value, bool):
            raise BadValue(f"{value!r} is not a decimal")
        if isinstance(value, int):
            return Decimal(value)
        if isinstance(value, float):  # exact text is recovered by the caller; this is the fallback
            return Decimal(repr(value))
        if isinstance(value, Decimal):
            return value
        raise BadValue(f"{value!r} is not a decimal")

    return convert


def variable_scale_decimal(value: Any) -> Any:
    if isinstance(value, dict) and "scale" in value and "value" in value:
        return scaled(_unscaled(value["value"]), int(value["scale"]))
    raise BadValue(f"{value!r} is not a VariableScaleDecimal {{scale, value}}")


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadValue(f"{value!r} is not an integer")
    return value


def date_from_days(value: Any) -> Any:
    days = _int(value)
    try:
        return EPOCH_DATE + dt.timedelta(days=days)
    except OverflowError:  # before year 1 or after 9999 (PostgreSQL BC dates, ±infinity): as sent
        return days


def _time(micros: int) -> Any:
    if 0 <= micros < 86_400_000_000:
        return (dt.datetime.min + dt.timedelta(microseconds=micros)).time()
    try:
        return str(dt.timedelta(microseconds=micros))  # MySQL TIME beyond a day: keep it readable
    except OverflowError:  # past what a timedelta holds: as sent
        return micros


def time_millis(value: Any) -> Any:
    return _time(_int(value) * 1000)


def time_micros(value: Any) -> Any:
    return _time(_int(value))


def time_nanos(value: Any) -> Any:
    ns = _int(value)
    return _time(ns // 1000) if ns % 1000 == 0 else _nano_text(ns, time_only=True)


def _timestamp(micros: int) -> Any:
    try:
        return EPOCH + dt.timedelta(microseconds=micros)
    except OverflowError:
        return micros  # PostgreSQL ±infinity sentinels: keep the raw number


def timestamp_millis(value: Any) -> Any:
    return _timestamp(_int(value) * 1000)


def timestamp_micros(value: Any) -> Any:
    return _timestamp(_int(value))


def timestamp_nanos(value: Any) -> Any:
    ns = _int(value)
    return _timestamp(ns // 1000) if ns % 1000 == 0 else _nano_text(ns, time_only=False)


def _nano_text(ns: int, time_only: bool) -> str:
    """Nanosecond precision that Python's datetime cannot hold: ISO text with 9 digits."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    base = EPOCH + dt.timedelta(seconds=seconds)
    text = base.time().isoformat() if time_only else base.isoformat()
    return f"{text}.{nanos:09d}"


def float32(value: Any) -> Any:
    """A FLOAT32 column: the shortest decimal that round-trips the 32-bit value (Java's Float.toString)."""
    if not isinstance(value, float):
        return value
    single = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):
        candidate = float(f"{single:.{digits}g}")
        if struct.unpack("f", struct.pack("f", candidate))[0] == single:
            return candidate
    return single


_TRAILING_ZEROS = re.compile(r"(\.\d*?)0+(?=Z|[+-]\d\d:?\d\d$|$)")


def zoned_text(value: Any) -> Any:
    """``ZonedTimestamp``/``ZonedTime`` stay ISO text, with the fraction's trailing zeros trimmed:
    Debezium spells one instant ``…01.13518Z`` in a snapshot and ``…01.135180Z`` when streaming."""
    if not isinstance(value, str):
        return value
    return _TRAILING_ZEROS.sub(lambda m: m[1] if len(m[1]) > 1 else "", value)


NAMED: dict[str, Converter] = {
    "io.debezium.time.ZonedTimestamp": zoned_text,
    "io.debezium.time.ZonedTime": zoned_text,
    VARIABLE_SCALE_DECIMAL: variable_scale_decimal,
    "io.debezium.time.Date": date_from_days,
    "org.apache.kafka.connect.data.Date": date_from_days,
    "io.debezium.time.Time": time_millis,
    "org.apache.kafka.connect.data.Time": time_millis,
    "io.debezium.time.MicroTime": time_micros,
    "io.debezium.time.NanoTime": time_nanos,
    "io.debezium.time.Timestamp": timestamp_millis,
    "org.apache.kafka.connect.data.Timestamp": timestamp_millis,
    "io.debezium.time.MicroTimestamp": timestamp_micros,
    "io.debezium.time.NanoTimestamp": timestamp_nanos,
}


def converter_for(field: dict[str, Any]) -> Converter | None:
    """The converter a field's schema asks for; None when the JSON value is already natural."""
    name = field.get("name")
    if name == DECIMAL:
        params = field.get("parameters") or {}
        try:
            return decimal_converter(int(params.get("scale", 0)))
        except (TypeError, ValueError):
            raise BadValue(f"Decimal field {field.get('field')!r} has a bad scale {params.get('scale')!r}") from None
    if isinstance(name, str) and name in NAMED:
        return NAMED[name]
    if field.get("type") == "float":
        return float32
    return None


def decimal_types(field_schemas: dict[str, dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Column → (precision, scale) for Decimal fields; precision defaults to 38 when not declared."""
    out = {}
    for name, f in field_schemas.items():
        if f.get("name") == DECIMAL:
            params = f.get("parameters") or {}
            try:
                scale = int(params.get("scale", 0))
                precision = int(params.get("connect.decimal.precision", 38))
            except (TypeError, ValueError):
                continue
            out[name] = (max(precision, scale, 1), scale)
    return out
