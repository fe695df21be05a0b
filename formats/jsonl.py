"""JSON Lines: one object per line, read and written with orjson."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any, BinaryIO

import orjson

from cdc.core.errors import InputError, Location
from cdc.formats.base import Reject, Row, RowReader

BOM = b"\xef\xbb\xbf"
# orjson turns integers beyond 64 bits into floats; a line with such a digit run takes the
# exact (slower) standard-library path instead.
_LONG_DIGITS = re.compile(rb"\d{20}")


def _loads_exact(line: bytes | str) -> Any:
    """orjson stops at 64-bit integers; the standard library keeps larger ones exact."""
    return json.loads(line)


def encode_default(value: Any) -> Any:
    """Values orjson does not know: decimals stay exact JSON numbers, bytes become text."""
    if isinstance(value, Decimal):
        return orjson.Fragment(str(value)) if value.is_finite() else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"cannot write a {type(value).__name__} value as JSON")


def dumps(row: Any) -> bytes:
    try:
        return orjson.dumps(row, default=encode_default, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        pass
    # Integers beyond 64 bits: the standard library writes them exactly.
    try:
        return json.dumps(row, ensure_ascii=False, separators=(",", ":"), default=_std_default).encode() + b"\n"
    except (TypeError, ValueError) as exc:
        raise InputError(f"cannot write this row as JSON: {exc}") from exc


def _std_default(value: Any) -> Any:
    if isinstance(value, Decimal | dt.date | dt.time | dt.datetime):
        return str(value) if not isinstance(value, dt.date) else value.isoformat()
    return encode_default(value)


class JsonlReader(RowReader):
    def __init__(self, stream: BinaryIO, source: str, reject: Reject | None = None):
        super().__init__(source, reject)
        self._stream = stream
        self.line = 0
        self._raw = b""

    def location(self) -> Location:
        return Location(self.source, line=self.line)

    def raw(self) -> str:
        return self._raw.decode("utf-8", "backslashreplace").rstrip("\r\n")

    def __iter__(self) -> Iterator[Row]:
        return self.parsed(tombstones=False)  # type: ignore[return-value]

    def parsed(self, tombstones: bool) -> Iterator[Row | None]:
        """JSON objects, one per line. With ``tombstones``, blank lines and ``null`` yield None
        (Kafka tombstones in a topic dump) instead of being skipped or rejected."""
        loads = orjson.loads
        long_digits = _LONG_DIGITS.search
        line_no = 0
        for line in self._stream:
            line_no += 1
            if line_no == 1 and line.startswith(BOM):
                line = line[3:]
            try:
                row = loads(line) if long_digits(line) is None else _loads_exact(line)
            except (orjson.JSONDecodeError, ValueError):
                if not line.strip():
                    if tombstones:
                        self.line, self._raw = line_no, line
                        self.records += 1
                        yield None
                    continue  # blank lines are allowed between records
                self.line, self._raw = line_no, line
                self.records += 1
                row = self._decode_slow(line)
                if row is None:
                    continue
            self.line, self._raw = line_no, line
            self.records += 1
            if type(row) is not dict:
                if row is None and tombstones:
                    yield None
                    continue
                what = "null" if row is None else type(row).__name__
                self.bad_record(InputError(f"expected a JSON object, found {what}: {_clip(line)}"))
                continue
            yield row
        self.line = line_no

    @property
    def raw_bytes(self) -> bytes:
        return self._raw

    def _decode_slow(self, line: bytes) -> Any:
        """The error path: big integers, or a real error with a useful message."""
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.bad_record(InputError(f"invalid UTF-8 at byte {exc.start}"))
            return None
        try:
            return _loads_exact(text)
        except ValueError as exc:
            stripped = text.rstrip("\r\n")
            truncated = not stripped.endswith("}") or not line.endswith(b"\n")
            hint = " (truncated line?)" if truncated and stripped.lstrip().startswith("{") else ""
            self.bad_record(InputError(f"invalid JSON{hint}: {exc}: {_clip(line)}"))
            return None


def _clip(line: bytes, limit: int = 80) -> str:
    text = line.decode("utf-8", "backslashreplace").rstrip("\r\n")
    return text if len(text) <= limit else text[:limit] + "…"


class JsonlWriter:
    def __init__(self, stream: BinaryIO):
        self._stream = stream

    def write_rows(self, rows: Iterable[Row]) -> None:
        write = self._stream.write
        opts = orjson.OPT_APPEND_NEWLINE
        fast = orjson.dumps
        for row in rows:
            try:
                write(fast(row, default=encode_default, option=opts))
            except TypeError:
                write(dumps(row))

    def close(self) -> None:
        self._stream.flush()
