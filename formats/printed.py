"""Flink's PRINT connector style: ``+I[1, Alice, null]`` (``Row.toString``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, BinaryIO

from cdc.core.model import Row
from cdc.core.values import flink_number_text


def print_value(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={print_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(print_value(v) for v in value) + "]"
    if isinstance(value, int | float | Decimal):
        return flink_number_text(value)
    if isinstance(value, dt.datetime):
        text = f"{value.date().isoformat()}T{java_time(value.time())}"
        return text + ("Z" if value.tzinfo is not None and value.utcoffset() == dt.timedelta(0) else "")
    if isinstance(value, dt.time):
        return java_time(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def java_time(value: dt.time) -> str:
    """``LocalTime.toString``: seconds only when set, fractions in groups of three digits."""
    text = f"{value.hour:02d}:{value.minute:02d}"
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
    if value.microsecond:
        micros = f"{value.microsecond:06d}"
        text += "." + (micros[:3] if micros.endswith("000") else micros)
    return text


class PrintWriter:
    """Rows carrying a kind column print with their kind; plain rows print as ``+I``."""

    def __init__(self, stream: BinaryIO, kind_column: str | None):
        self._stream = stream
        self._kind_column = kind_column

    def write_rows(self, rows: Iterable[Row]) -> None:
        write = self._stream.write
        kc = self._kind_column
        for row in rows:
            if kc is not None and kc in row:
                kind = row[kc]
                values = [print_value(v) for k, v in row.items() if k != kc]
            else:
                kind = "+I"
                values = [print_value(v) for v in row.values()]
            write(f"{kind}[{', '.join(values)}]\n".encode())

    def close(self) -> None:
        self._stream.flush()
