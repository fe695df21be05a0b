"""JSON Lines: one object per line, read and written with orjson."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Any, BinaryIO

import orjson

from cdc.core.errors import InputError, Location
from cdc.core.model import Reject, Row
from cdc.core.values import JsonFloat, exact_number
from cdc.formats.base import RowReader

BOM = b"\xef\xbb\xbf"
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
CHUNK_BYTES = 1 << 20
# Number literals orjson might not give back as they were written: an exponent (1E+2), a fraction
# ending in zeros other than orjson's own "x.0" (12.50, 1.00), 17 digits or points in a row (more
# than a double holds, or an integer past 64 bits), five zeros after a point (orjson writes
# 1e-7, not 0.0000001), and "-0" — each where a number starts (after "[", ":" or ","), so that
# "mysql-bin.000003" or a UUID's "4e2a" inside a string does not count. A line with none of
# them parses with orjson and writes back the same; a line with one (perhaps inside a string)
# takes the exact parser, which keeps every literal (core.values). tests/test_properties.py
# holds orjson to this list.
_RESPELLED = re.compile(
    rb"(?:^|[\[:,])\s*(?:-?(?:[\d.]+[eE]|\d+\.(?:\d*[1-9]0+|00+)(?!\d)|\d+\.0{5}|[\d.]{17})|-0(?![\d.eE]))"
)
MAX_INT_DIGITS = 4000  # past this, int() is quadratic (CPython refuses 4300): kept as a decimal


def loads(line: bytes) -> Any:
    """One JSON text, every number as it was written.

    orjson parses it; when orjson writes the value back as the line was written — compact, or
    with Python's ", " and ": " — no number was respelled and the value stands (about 1 µs;
    the regular expression costs ~30 µs a line, the exact parser ~100). Otherwise the
    expression decides, and a line it flags is parsed again by the exact parser.
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        if _RESPELLED.search(line):  # an integer past 64 bits, or a number past a double
            return _loads_exact(line)
        raise
    try:
        written = orjson.dumps(value)
    except TypeError:  # nested deeper than orjson writes: the expression decides alone
        written = b""
    text = line.rstrip()
    if written == text or written == text.replace(b", ", b",").replace(b": ", b":") or not _RESPELLED.search(text):
        return value
    return _loads_exact(line)


def loads_for(data: bytes) -> Callable[[bytes], Any]:
    """The parser for the lines of ``data`` (one for all: it decides line by line)."""
    return loads


def _count_newlines(chunk: bytes) -> int:
    return chunk.count(b"\n")


def read_chunks(
    stream: BinaryIO, size: int = CHUNK_BYTES, count_lines: Callable[[bytes], int] = _count_newlines
) -> Iterator[tuple[bytes, int]]:
    """Line-aligned chunks with the number of their first line.

    On a pipe, ``read1`` returns what is there (the latest lines) instead of waiting for a full
    chunk, so rows keep flowing when cdc sits at the end of a live pipeline; files are read in
    full chunks (``read1`` would hand back buffer leftovers of any size). The engine passes the
    C kernel's ``count_lines`` (4x ``bytes.count``).
    """
    line = 1
    first = True
    try:
        seekable = stream.seekable()
    except (AttributeError, ValueError, OSError):
        seekable = False
    read = stream.read if seekable or not hasattr(stream, "read1") else stream.read1
    while True:
        chunk = read(size)
        if not chunk:
            return
        if not chunk.endswith(b"\n"):
            chunk += stream.readline()
        if first and chunk.startswith(BOM):
            chunk = chunk[3:]
        first = False
        yield chunk, line
        line += count_lines(chunk)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not valid JSON")


def _float(text: str) -> float | Decimal:
    """A float literal: a double when it reads back the same, else the double with its literal,
    or an exact decimal when it has more digits than a double holds."""
    as_float = float(text)
    if math.isinf(as_float):
        raise ValueError("number is infinity when parsed as double")
    if orjson.dumps(as_float) == text.encode():
        return as_float
    mantissa = text.lstrip("-").split("e")[0].split("E")[0].replace(".", "").lstrip("0")
    return JsonFloat(text) if len(mantissa) <= 17 else exact_number(text)


def _int(text: str) -> int | float | Decimal:
    if len(text) <= MAX_INT_DIGITS:
        return JsonFloat(text) if text == "-0" else int(text)
    return exact_number(text)


def _loads_exact(line: bytes | str) -> Any:
    """Every number exact and spelled as written; otherwise it accepts exactly what orjson
    accepts, so a line is good or bad whichever parser its chunk gets: NaN, Infinity, numbers
    beyond a double's range and unpaired ``\\u`` surrogates are refused, and bytes are UTF-8
    (``json.loads`` would guess UTF-16 and drop a byte order mark).
    """
    text = line.decode("utf-8") if isinstance(line, bytes) else line
    try:
        value = json.loads(text, parse_constant=_not_json, parse_float=_float, parse_int=_int)
    except RecursionError:  # deeper than Python's stack allows, but perhaps not orjson's limit
        return orjson.loads(text)
    if "\\u" in text and _has_unpaired_surrogate(text):
        raise ValueError("unpaired surrogate in a \\u escape")
    return value


def _has_unpaired_surrogate(text: str) -> bool:
    """Whether a ``\\uD800``-``\\uDFFF`` escape in valid JSON text lacks its other half.

    Read from the text, not the parsed value: a repeated key can drop the string that had it.
    In valid JSON every backslash starts an escape, so the escapes tokenize from the start.
    """
    awaiting_low_at = -1  # where the low half of the last high surrogate has to start
    for escape in _ESCAPE.finditer(text):
        unit = int(escape[1], 16) if escape[1] else -1
        if awaiting_low_at >= 0:
            if escape.start() != awaiting_low_at or not 0xDC00 <= unit <= 0xDFFF:
                return True
            awaiting_low_at = -1
        elif 0xD800 <= unit <= 0xDBFF:
            awaiting_low_at = escape.end()
        elif 0xDC00 <= unit <= 0xDFFF:
            return True
    return awaiting_low_at >= 0


# Dates and times are written by ``encode_default`` (ISO 8601, as Python spells them): orjson
# 3.13 drops the leading zero of a time's fraction (04:43:20.054 → "04:43:20.54000").
WRITE = orjson.OPT_APPEND_NEWLINE | orjson.OPT_PASSTHROUGH_DATETIME


def encode_default(value: Any) -> Any:
    """Values orjson does not write itself: numbers keep their literal, decimals stay exact
    JSON numbers, dates and times are ISO text, bytes become text."""
    if type(value) is JsonFloat:
        return orjson.Fragment(value.literal)
    if isinstance(value, dt.date | dt.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, Decimal):
        return orjson.Fragment(str(value)) if value.is_finite() else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"cannot write a {type(value).__name__} value as JSON")


def number_text(value: int | float | Decimal) -> str:
    """A number as every text output spells it: as read (its literal), else as JSON writes it."""
    if isinstance(value, float) and type(value) is not JsonFloat:
        return orjson.dumps(value).decode()
    return str(value)  # ints, decimals, and numbers that carry their literal


def _big_ints_as_text(value: Any) -> Any:
    """orjson refuses integers beyond 64 bits; as raw JSON fragments they are written exactly."""
    if type(value) is int and not -(2**63) <= value < 2**64:
        return orjson.Fragment(str(value))
    if isinstance(value, dict):
        return {k: _big_ints_as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_big_ints_as_text(v) for v in value]
    return value


def dumps(row: Any) -> bytes:
    """One JSON line; the slow path (a walk over the row) runs only for integers past 64 bits."""
    try:
        return orjson.dumps(row, default=encode_default, option=WRITE)
    except TypeError as exc:
        if "Recursion" in str(exc):
            return deep_dumps(row) + b"\n"
    try:
        return orjson.dumps(_big_ints_as_text(row), default=encode_default, option=WRITE)
    except TypeError as exc:
        if "Recursion" not in str(exc):
            raise InputError(f"cannot write this row as JSON: {exc}") from exc
    return deep_dumps(row) + b"\n"


def deep_dumps(value: Any) -> bytes:
    """A value nested deeper than orjson writes (254 levels; the parser reads 1,024): its
    containers written level by level, the same bytes orjson would write."""
    import sys

    if sys.getrecursionlimit() < 10_000:
        sys.setrecursionlimit(10_000)  # three frames a level, 1,024 levels
    return _deep(value)


def _deep(value: Any) -> bytes:
    if isinstance(value, dict):
        return b"{" + b",".join(orjson.dumps(str(k)) + b":" + _deep(v) for k, v in value.items()) + b"}"
    if isinstance(value, list | tuple):
        return b"[" + b",".join([_deep(v) for v in value]) + b"]"
    try:
        return orjson.dumps(value, default=encode_default)
    except TypeError:
        return orjson.dumps(_big_ints_as_text(value), default=encode_default)


def _array_source(name: str) -> bool:
    from cdc.formats.json_array import may_be_array

    return may_be_array(name)


SCHEMA_KEY = "__cdc_schema"  # formats.stream_schema.KEY, without importing it for every reader


class JsonlReader(RowReader):
    """JSON objects, one per line.

    Per line only ``line`` is written; the raw text (for rejects) is found from the current
    chunk, and the record count is the lines read minus the blank ones — this loop runs once
    per row, so bookkeeping is kept to what an error message needs.
    """

    def __init__(self, stream: BinaryIO, source: str, reject: Reject | None = None):
        super().__init__(source, reject)
        self._stream = stream
        self.line = 0
        self._lines: list[bytes] = []
        self._first = 1  # line number of self._lines[0]
        self._blank = 0  # blank lines skipped (not records)
        self._elements = -1  # a JSON array's elements read (-1: JSON lines)
        self.stream_schema: Any = None  # the schema line's (formats.stream_schema), when it has one

    @property  # type: ignore[override]
    def arrow_schema(self) -> Any:
        """The types a schema line gave the columns (decimal, timestamp…), for Parquet output."""
        return self.stream_schema.arrow_schema() if self.stream_schema is not None else None

    @arrow_schema.setter
    def arrow_schema(self, value: Any) -> None:
        pass

    @property  # type: ignore[override]
    def records(self) -> int:
        return self._elements if self._elements >= 0 else self.line - self._blank

    @records.setter
    def records(self, value: int) -> None:
        pass

    def location(self) -> Location:
        return Location(self.source, line=self.line)

    @property
    def raw_bytes(self) -> bytes:
        index = self.line - self._first
        return self._lines[index] if 0 <= index < len(self._lines) else b""

    def raw(self) -> str:
        return self.raw_bytes.decode("utf-8", "backslashreplace").rstrip("\r\n")

    def __iter__(self) -> Iterator[Row]:
        return self.parsed(tombstones=False)  # type: ignore[return-value]

    def parsed(self, tombstones: bool) -> Iterator[Row | None]:
        """JSON objects, one per line. With ``tombstones``, blank lines and ``null`` yield None
        (Kafka tombstones in a topic dump) instead of being skipped or rejected."""
        line_no = 0
        convert = None
        looking = True  # for a schema line (formats.stream_schema): the first record may be one
        for chunk, first in read_chunks(self._stream):
            if first == 1 and chunk.lstrip(b" \t\r\n")[:1] == b"[" and _array_source(self.source):
                yield from self._array(chunk, tombstones)
                return
            loads = loads_for(chunk)
            lines = chunk.split(b"\n")
            if lines[-1] == b"":
                lines.pop()
            self._lines, self._first = lines, first
            for line in lines:
                line_no += 1
                self.line = line_no
                try:
                    row = loads(line)
                except (orjson.JSONDecodeError, ValueError):
                    if not line.strip():
                        if tombstones:
                            yield None
                        else:
                            self._blank += 1  # blank lines are allowed between records
                        continue
                    self.bad_record(bad_line_error(line, line_no))
                    continue
                if type(row) is not dict:
                    if row is None and tombstones:
                        yield None
                        continue
                    self.bad_record(InputError(not_an_object_message(row, line)))
                    continue
                if looking:
                    looking = False
                    if len(row) == 1 and SCHEMA_KEY in row:
                        convert = self._schema_line(row)
                        continue
                if convert is not None:
                    try:
                        row = convert(row)
                    except InputError as err:
                        self.bad_record(err)
                        continue
                yield row

    def _array(self, head: bytes, tombstones: bool) -> Iterator[Row | None]:
        """The elements of a JSON array file, each a record at the line where it starts."""
        from cdc.formats.json_array import Elements, Prefixed

        elements = Elements(Prefixed(head, self._stream))  # type: ignore[arg-type]
        it = iter(elements)
        self._elements = 0
        while True:
            try:
                text, line = next(it)
            except StopIteration:
                return
            except InputError as err:
                self.line = elements.line
                self._lines, self._first = [b""], self.line
                self.bad_record(err)
                return
            self.line = line
            self._lines, self._first = [text], line
            self._elements += 1
            try:
                row = loads(text)
            except ValueError:
                self.bad_record(InputError(bad_line_message(text)))
                continue
            if type(row) is not dict:
                if row is None and tombstones:
                    yield None
                    continue
                self.bad_record(InputError(not_an_object_message(row, text)))
                continue
            yield row

    def _schema_line(self, row: Row) -> Any:
        """The stream's schema line: not a record; its types convert the rows' values."""
        from cdc.formats.stream_schema import StreamSchema

        self._blank += 1
        try:
            self.stream_schema = StreamSchema.of(row)
        except InputError as err:
            self.bad_record(err)
            return None
        return self.stream_schema.converter()


def bad_line_error(line: bytes, line_no: int) -> InputError:
    """A line that is not a JSON object's text; the first line of a CSV or TSV file fed as JSON
    lines (stdin's default) says how to name its format."""
    hint = None
    if line_no == 1:
        try:
            text = line.decode("utf-8").strip()
        except UnicodeDecodeError:  # bytes, not text: no delimited format either
            return InputError(bad_line_message(line), hint="this is not text: name the input's format with -i")
        if not all(c.isprintable() or c == "\t" for c in text):  # control bytes: not a text format
            return InputError(bad_line_message(line), hint="this is not text: name the input's format with -i")
        if text and text[0] not in '{["' and ("," in text or "\t" in text):
            fmt = "tsv" if "\t" in text else "csv"
            hint = f"this looks like {fmt.upper()}: name the format with -i {fmt}"
    return InputError(bad_line_message(line), hint=hint)


def bad_line_message(line: bytes) -> str:
    """Why a line is not a JSON object's text: the one wording for every JSONL path."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start}"
    try:
        _loads_exact(line)
    except ValueError as exc:
        text = line.decode("utf-8").rstrip("\r")
        # cut off: the parser ran out of text (not: it met a bad character on the way)
        at = getattr(exc, "pos", None)
        ran_out = (at is not None and at >= len(text.rstrip())) or str(exc).startswith("Unterminated string")
        truncated = text.lstrip().startswith("{") and ran_out
        return f"invalid JSON{' (truncated line?)' if truncated else ''}: {exc}: {_clip(line)}"
    return f"invalid JSON: {_clip(line)}"


def not_an_object_message(value: Any, line: bytes) -> str:
    """Why a line that is JSON is not a record: the one wording for every JSONL path."""
    what = "null" if value is None else type(value).__name__
    return f"expected a JSON object, found {what}: {_clip(line)}"


def _clip(line: bytes, limit: int = 80) -> str:
    text = line.decode("utf-8", "backslashreplace").rstrip("\r\n")
    return text if len(text) <= limit else text[:limit] + "…"


class JsonlWriter:
    def __init__(self, stream: BinaryIO):
        self._stream = stream

    def write_rows(self, rows: Iterable[Row]) -> None:
        write = self._stream.write
        opts = WRITE
        fast = orjson.dumps
        for row in rows:
            try:
                write(fast(row, default=encode_default, option=opts))
            except TypeError:
                write(dumps(row))

    def close(self) -> None:
        self._stream.flush()
