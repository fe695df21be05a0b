"""Column types and quoting: what a value is in Flink SQL."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from cdc.core.errors import UsageError
from cdc.core.predicate import number_from_text

Row = dict[str, Any]


FLINK_VERSIONS = ("2.3", "2.4")


DEFAULT_FLINK_VERSION = "2.3"


STREAMING = "SET 'execution.runtime-mode' = 'streaming';"


# The text Flink's json format reads into TIMESTAMP(3) (json.timestamp-format.standard = SQL).
SQL_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,3})?")


# Debezium's placeholder for an unchanged TOAST column (PostgreSQL); cdc fills it from state.
TOAST_PLACEHOLDER = "__debezium_unavailable_value"


def ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _decimal_type(value: Decimal) -> str:
    sign, digits, exponent = value.as_tuple()
    scale = max(-int(exponent), 0) if isinstance(exponent, int) else 0
    precision = max(len(digits), scale, 1)
    return f"DECIMAL({min(max(precision, 10), 38)}, {min(scale, 38)})"


def sql_type(value: Any) -> str | None:
    """The Flink type of one value; None for null (decided by other rows)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT" if -(2**63) <= value < 2**63 else "DECIMAL(38, 0)"
    if isinstance(value, float):
        return "DOUBLE"
    if isinstance(value, Decimal):
        return _decimal_type(value)
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, dt.datetime):
        return "TIMESTAMP_LTZ(6)" if value.tzinfo is not None else "TIMESTAMP(6)"
    if isinstance(value, dt.date):
        return "DATE"
    if isinstance(value, dt.time):
        return "TIME(6)"
    if isinstance(value, bytes | bytearray):
        return "BYTES"
    if isinstance(value, dict):
        fields = ", ".join(f"{ident(k)} {sql_type(v) or 'STRING'}" for k, v in value.items())
        return f"ROW<{fields}>" if fields else "STRING"
    if isinstance(value, list):
        inner = next((t for v in value if (t := sql_type(v)) is not None), "STRING")
        return f"ARRAY<{inner}>"
    return "STRING"


def _decimal_parts(t: str) -> tuple[int, int] | None:
    """``DECIMAL(p, s)`` → (integer digits, scale); BIGINT → (19, 0); else None."""
    if t == "BIGINT":
        return 19, 0
    if t.startswith("DECIMAL("):
        p, s = (int(x) for x in t[len("DECIMAL(") : -1].split(","))
        return p - s, s
    return None


def widen(current: str, new: str, name: str = "") -> str:
    """The type that holds every value of both types without truncation: BIGINT and DOUBLE →
    DOUBLE (cdc reads a JSON fraction as a double); BIGINT and DECIMAL, or two DECIMALs → a DECIMAL
    with the larger integer part and the larger scale (beyond 38 digits: DOUBLE). A number and a
    non-number (text, a boolean) have no common type: refused (a Flink column has one type, cdc
    writes each value as read)."""
    if current == new:
        return current
    if (
        {current, new} <= {"BIGINT", "DOUBLE"}
        or "DOUBLE" in (current, new)
        and (_decimal_parts(current) or _decimal_parts(new))
    ):
        return "DOUBLE"
    a, b = _decimal_parts(current), _decimal_parts(new)
    if a is not None and b is not None:
        digits, scale = max(a[0], b[0]), max(a[1], b[1])
        return f"DECIMAL({digits + scale}, {scale})" if digits + scale <= 38 else "DOUBLE"
    scalar = ("BIGINT", "DOUBLE", "STRING", "BOOLEAN", "DATE")
    if current.startswith(scalar) and new.startswith(scalar):
        raise UsageError(
            f"column {name!r} holds {current} and {new} values: a Flink column has one type, cdc writes each value "
            "as it was read",
            hint="give the column one type in the input (cdc ... -f jsonl after fixing it), then print the SQL",
        )
    return current  # nested values (ROW, ARRAY) keep their first shape


class ColumnTypes:
    """Column → type over every row of an input (fed one row at a time: streaming), first-seen
    order. A column null in the first rows is typed from its later values; a later value that
    the type so far cannot hold widens it (see :func:`widen`); a column that is null throughout is
    STRING."""

    def __init__(self, text_only: bool = False) -> None:
        self.text_only = text_only
        self.types: dict[str, str | None] = {}
        self.numbers: dict[str, str] = {}  # text columns: the number type all their text spells ('' none)

    def add(self, row: Row) -> None:
        types = self.types
        for name, value in row.items():
            t = "STRING" if self.text_only else sql_type(value)
            current = types.get(name)
            if current is None:
                types[name] = t
            elif t is not None and t != current:
                types[name] = widen(current, t, name)
            if self.text_only and isinstance(value, str) and value.strip():
                self._number(name, value)

    def _number(self, name: str, text: str) -> None:
        current = self.numbers.get(name)
        if current == "":
            return
        n = number_from_text(text)
        t = sql_type(n)
        if t is None:
            self.numbers[name] = ""
        else:
            self.numbers[name] = t if current is None else widen(current, t, name)

    def text_numbers(self) -> dict[str, str]:
        """Text columns (CSV) whose every non-empty value spells a number, and the type that holds
        them as cdc reads them (integers BIGINT, fractions an exact DECIMAL, exponents DOUBLE)."""
        return {name: t for name, t in self.numbers.items() if t}

    def result(self) -> dict[str, str]:
        return {name: (t or "STRING") for name, t in self.types.items()}


def infer_columns(rows: Iterable[Row], text_only: bool = False) -> dict[str, str]:
    """Column → type over ``rows`` (all of them: see :class:`ColumnTypes`)."""
    acc = ColumnTypes(text_only)
    for row in rows:
        acc.add(row)
    return acc.result()


def check_version(flink_version: str) -> str:
    if flink_version not in FLINK_VERSIONS:
        raise UsageError(
            f"no Flink SQL dialect for Flink {flink_version!r}",
            hint="FROM_CHANGELOG / TO_CHANGELOG exist from Flink 2.3; choose one of " + ", ".join(FLINK_VERSIONS),
        )
    return flink_version
