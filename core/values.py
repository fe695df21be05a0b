"""Numbers that keep their spelling (the one value model of every path and command).

A JSON number is read as ``int`` (any size), ``float`` or ``Decimal``. Where its literal would not
come back the same from the parsed value — ``12.00``, ``1E+2``, ``0.0000001``, or more digits
than a double holds — the value carries its literal: ``JsonFloat`` computes, compares and hashes
as the double and ``JsonDecimal`` as the exact decimal, and every writer spells them as read.
So ``12.00`` stays ``12.00`` through materialize, replay, encode, CSV and print alike.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any


class JsonFloat(float):
    """A double read from a JSON literal that spells it otherwise than its shortest form."""

    __slots__ = ("literal",)
    literal: str

    def __new__(cls, literal: str) -> JsonFloat:
        number = super().__new__(cls, literal)  # JSON's number grammar is a subset of Python's
        number.literal = literal
        return number

    def __repr__(self) -> str:
        return self.literal

    __str__ = __repr__

    def __reduce__(self) -> tuple[type[JsonFloat], tuple[str]]:
        return JsonFloat, (self.literal,)


class JsonDecimal(Decimal):
    """An exact number (more digits than a double holds) whose literal ``Decimal`` would respell."""

    __slots__ = ("literal",)
    literal: str

    def __new__(cls, literal: str) -> JsonDecimal:
        number = super().__new__(cls, literal)
        number.literal = literal
        return number

    def __repr__(self) -> str:
        return self.literal

    __str__ = __repr__

    def __reduce__(self) -> tuple[type[JsonDecimal], tuple[str]]:
        return JsonDecimal, (self.literal,)


def exact_number(literal: str) -> Decimal:
    """A literal too precise for a double (or an integer too long for ``int``), kept exactly."""
    number = Decimal(literal)
    return number if str(number) == literal else JsonDecimal(literal)


def literal_of(value: Any) -> str | None:
    """The spelling a number was read with, when it carries one."""
    return value.literal if type(value) is JsonFloat or type(value) is JsonDecimal else None


def plain_decimal_text(value: Decimal) -> str:
    """A decimal without exponent, as Java's ``BigDecimal.toPlainString`` (Flink prints DECIMAL so)."""
    literal = literal_of(value)
    if literal is not None and "e" not in literal.lower():
        return literal
    return format(value, "f")


def java_double_text(value: float) -> str:
    """``Double.toString``: how Flink prints a DOUBLE (``12.0``, ``1.0E300``, ``1.0E-5``).

    Decimal notation from 10⁻³ up to 10⁷, else computerized scientific notation; the digits
    are the shortest that read back as the same double.
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    shortest = Decimal(float.__repr__(abs(value)))
    if 1e-3 <= abs(value) < 1e7:
        text = format(shortest, "f")
        return sign + (text if "." in text else text + ".0")
    digits = "".join(map(str, shortest.as_tuple().digits)).rstrip("0") or "0"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{shortest.adjusted()}"


def flink_number_text(value: Any) -> str:
    """A number as Flink's PRINT connector shows it: integers and decimals as written (a JSON
    ``12.00`` is a DECIMAL to Flink), doubles as ``Double.toString``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, Decimal):
        return plain_decimal_text(value)
    literal = literal_of(value)
    if literal is not None and "e" not in literal.lower():
        return literal
    return java_double_text(float(value))


class DbText(str):
    """A date, time or timestamp that Python's types cannot hold, spelled as the database shows
    it (``infinity``, ``24:00:00``, ``838:59:59``, ``+12345-06-07``, ``-0043-03-15``). Text
    outputs write the text; a typed column (Parquet) refuses it, saying ``what`` it is."""

    __slots__ = ("what",)
    what: str

    def __new__(cls, text: str, what: str) -> DbText:
        value = super().__new__(cls, text)
        value.what = what
        return value

    def __reduce__(self) -> tuple[type[DbText], tuple[str, str]]:
        return DbText, (str(self), self.what)


def json_text(value: Any) -> str:
    """A value spelled as JSON spells it, for messages and findings: ``null``, ``true``,
    ``"text"`` (a date or a time as its ISO text, quoted), numbers as read."""
    import json

    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return literal_of(value) or str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if hasattr(value, "isoformat"):
        return json.dumps(value.isoformat())
    if isinstance(value, bytes):
        return json.dumps(value.decode("utf-8", "backslashreplace"))
    return json.dumps(value, ensure_ascii=False, default=str)
