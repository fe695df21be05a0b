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
from cdc.core.values import DbText, exact_number

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
            return _at_scale(Decimal(value), scale)
        if isinstance(value, float):  # decimal.format=NUMERIC: the literal as written (core.values)
            return _at_scale(Decimal(repr(value)), scale)
        if isinstance(value, Decimal):
            return _at_scale(value, scale)
        raise BadValue(f"{value!r} is not a decimal")

    return convert


def _at_scale(value: Decimal, scale: int) -> Decimal:
    """A NUMERIC decimal spelled with the column's scale, as BASE64 gives it (``12.5`` → ``12.50``
    for DECIMAL(p, 2)): every decimal.format decodes to the same value. More digits stay."""
    if not value.is_finite():
        return value
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and -exponent < scale:
        sign, digits, _ = value.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * 10 ** (scale + exponent)
        return scaled(-unscaled if sign else unscaled, scale)
    return value


def variable_scale_decimal(value: Any) -> Any:
    if isinstance(value, dict) and "scale" in value and "value" in value:
        return scaled(_unscaled(value["value"]), int(value["scale"]))
    raise BadValue(f"{value!r} is not a VariableScaleDecimal {{scale, value}}")


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadValue(f"{value!r} is not an integer")
    return value


# PostgreSQL's ±infinity as Debezium sends them (PostgresValueConverter: PGStatement's
# DATE_POSITIVE/NEGATIVE_INFINITY as epoch micros or millis; Long.MAX/MIN in nanoseconds mode).
# DATE as epoch days: streaming sends its POSITIVE/NEGATIVE_INFINITY_LOCAL_DATE (-5877611-06-22 for
# -infinity; +infinity was -5877611-06-21 before dbz#2524, +5877611-06-21 after), the snapshot's
# JDBC read the sentinel millis cut to 32-bit days (seen from Debezium 3.6.1 on PostgreSQL 15 in
# tests/conformance/debezium-scenarios), and Integer.MAX/MIN days from decoderbufs.
INFINITY_DAYS = {
    -2147472691: "-infinity",
    -2147472692: "infinity",
    2146033979: "infinity",
    -622191234: "infinity",
    -625821272: "-infinity",
    2**31 - 1: "infinity",
    -(2**31): "-infinity",
}
INFINITY_MILLIS = {9223372036825200: "infinity", -9223372036832400: "-infinity"}
INFINITY_MICROS = {9223372036825200000: "infinity", -9223372036832400000: "-infinity"}
INFINITY_NANOS = {2**63 - 1: "infinity", -(2**63): "-infinity"}
DAY_MICROS = 86_400_000_000


def _civil(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of an epoch day, any year (H. Hinnant's algorithm)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _date_text(days: int) -> str:
    """ISO 8601 with an expanded year where needed: ``+12345-06-07``, ``-0043-03-15`` (44 BC)."""
    year, month, day = _civil(days)
    shown = f"{year:04d}" if 0 <= year <= 9999 else (f"+{year}" if year > 0 else f"-{-year:04d}")
    return f"{shown}-{month:02d}-{day:02d}"


def _clock(micros: int, digits: int = 6, fraction: int | None = None) -> str:
    """``HH:MM:SS[.fraction]`` of a non-negative span (hours past 24 as they are)."""
    seconds, micro = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    text = f"{hours:02d}:{minute:02d}:{second:02d}"
    frac = micro if fraction is None else fraction
    return text + (f".{frac:0{digits}d}" if frac else "")


def date_from_days(value: Any) -> Any:
    days = _int(value)
    try:
        return EPOCH_DATE + dt.timedelta(days=days)
    except OverflowError:  # before year 1 or after 9999 (PostgreSQL BC dates, ±infinity)
        pass
    if days in INFINITY_DAYS:
        return DbText(INFINITY_DAYS[days], f"PostgreSQL's {INFINITY_DAYS[days]}")
    return DbText(_date_text(days), "a date outside years 1 to 9999")


def _time(micros: int, nanos: int | None = None) -> Any:
    """A time of day; beyond a day (MySQL/MariaDB TIME is a duration, -838:59:59 to 838:59:59;
    PostgreSQL has 24:00:00) the text the database shows. ``nanos``: the fraction in ns."""
    if 0 <= micros < DAY_MICROS and nanos is None:
        return (dt.datetime.min + dt.timedelta(microseconds=micros)).time()
    digits, fraction = (6, None) if nanos is None else (9, nanos)
    if 0 <= micros < DAY_MICROS:
        return DbText(_clock(micros, digits, fraction), "a time with nanoseconds")
    if micros == DAY_MICROS and not fraction:
        return DbText("24:00:00", "the time 24:00:00")
    sign = "-" if micros < 0 else ""
    if micros < 0 and fraction:
        fraction = 10**9 - fraction  # the span's fraction, not the floor's
        micros += 1  # floor division put it a microsecond lower
    return DbText(sign + _clock(abs(micros), digits, fraction), "a TIME outside 00:00 to 24:00 (a duration)")


def time_millis(value: Any) -> Any:
    return _time(_int(value) * 1000)


def time_micros(value: Any) -> Any:
    return _time(_int(value))


def time_nanos(value: Any) -> Any:
    ns = _int(value)
    if ns % 1000 == 0:
        return _time(ns // 1000)
    micros, rest = divmod(ns, 1000)
    return _time(micros, nanos=(micros % 1_000_000) * 1000 + rest)


def _timestamp(micros: int, sentinels: dict[int, str], raw: int, nanos: int | None = None) -> Any:
    if raw in sentinels:
        return DbText(sentinels[raw], f"PostgreSQL's {sentinels[raw]}")
    if nanos is None:
        try:
            return EPOCH + dt.timedelta(microseconds=micros)
        except OverflowError:
            pass
    days, rest = divmod(micros, DAY_MICROS)
    digits, fraction = (6, None) if nanos is None else (9, nanos)
    text = f"{_date_text(days)}T{_clock(rest, digits, fraction)}"
    what = "a timestamp with nanoseconds" if nanos is not None and -719162 <= days < 2932897 else None
    return DbText(text, what or "a timestamp outside years 1 to 9999")


def timestamp_millis(value: Any) -> Any:
    ms = _int(value)
    return _timestamp(ms * 1000, INFINITY_MILLIS, ms)


def timestamp_micros(value: Any) -> Any:
    us = _int(value)
    return _timestamp(us, INFINITY_MICROS, us)


def timestamp_nanos(value: Any) -> Any:
    ns = _int(value)
    micros, rest = divmod(ns, 1000)
    if rest == 0:
        return _timestamp(micros, INFINITY_NANOS, ns)
    return _timestamp(micros, INFINITY_NANOS, ns, nanos=(micros % 1_000_000) * 1000 + rest)


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
    """The converter a field's schema asks for; None when the JSON value is already natural.
    An array's items are converted by their own schema (PostgreSQL arrays of numeric, date…)."""
    if field.get("type") == "array" and isinstance(field.get("items"), dict):
        item = converter_for(field["items"])
        return None if item is None else _each(item)
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


def _each(item: Converter) -> Converter:
    def convert(value: Any) -> Any:
        if not isinstance(value, list):
            return value
        return [None if v is None else item(v) for v in value]

    return convert


def decimal_types(field_schemas: dict[str, dict[str, Any]]) -> dict[str, tuple[int, int, bool]]:
    """Column → (precision, scale, an array of them) for Decimal fields and arrays of Decimals;
    precision defaults to 38 when not declared."""
    out = {}
    for name, f in field_schemas.items():
        listed = f.get("type") == "array" and isinstance(f.get("items"), dict)
        of = f["items"] if listed else f
        if of.get("name") == DECIMAL:
            params = of.get("parameters") or {}
            try:
                scale = int(params.get("scale", 0))
                precision = int(params.get("connect.decimal.precision", 38))
            except (TypeError, ValueError):
                continue
            out[name] = (max(precision, scale, 1), scale, listed)
    return out
