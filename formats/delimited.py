"""CSV and TSV. Values are text; an empty unquoted field is null, a quoted ``""`` the empty string.

Reading goes through pyarrow's streaming CSV reader (vectorized, and it can tell the two kinds of
empty field apart); writing is done here, because the standard library's writer cannot.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any, BinaryIO

import orjson

from cdc.core.errors import InputError, Location
from cdc.formats.base import Reject, Row, RowReader
from cdc.formats.schema import ColumnSet

BATCH_BYTES = 1 << 20


class _QuoteCounter(io.RawIOBase):
    """Counts '"' bytes as pyarrow reads: a well-formed CSV has an even number of them (quotes
    inside quoted fields are doubled), so an odd count means a quote left open at the end,
    which pyarrow would otherwise read as a value running to the end of the file."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream
        self.quotes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.quotes += data.count(b'"')
        return n


class DelimitedReader(RowReader):
    def __init__(
        self,
        stream: BinaryIO,
        source: str,
        delimiter: str = ",",
        reject: Reject | None = None,
        path: str | None = None,
    ):
        super().__init__(source, reject)
        self._stream = stream
        self._delimiter = delimiter
        self._path = path  # a real file can be re-scanned to find the line of a ragged row
        self._index = -1
        self.columns: list[str] = []

    def location(self) -> Location:
        # One line per record after the header; a value with a newline in it shifts this.
        return Location(self.source, line=self._index + 2)

    def raw(self) -> str:
        return getattr(self, "_last_raw", "")

    def _read_header(self) -> list[str]:
        line = self._stream.readline()
        if line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        if not line.strip():
            return []
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError("invalid UTF-8 in the CSV header", where=Location(self.source, 1)) from exc
        names = next(csv.reader([text], delimiter=self._delimiter))
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise InputError(f"duplicate column names in the header: {dupes}", where=Location(self.source, 1))
        return names

    def __iter__(self) -> Iterator[Row]:
        for batch, _ in self.batches():
            for row in batch.to_pylist():
                self._index += 1
                yield row

    def batches(self) -> Iterator[tuple[Any, Callable[[int], Location]]]:
        """Record batches of text columns, each with a function from a row in it to its location."""
        import pyarrow as pa
        import pyarrow.csv as pacsv

        names = self._read_header()
        self.columns = names
        if not names:
            return
        if self._path is not None and _odd_quotes(self._path):
            # Say so before any row: pyarrow would read the open field to the end of the file
            # and the first complaint would be about that value, not the quote.
            raise InputError(
                "unterminated quoted CSV field (a quote opened here is never closed)",
                where=Location(self.source, self._find_open_quote()),
            )
        ragged: list[str] = []

        def on_invalid_row(row: Any) -> str:
            ragged.append(row.text)
            return "error" if self.reject is None else "skip"

        offset = 0
        counted = _QuoteCounter(self._stream)
        try:
            reader = pacsv.open_csv(
                io.BufferedReader(counted, BATCH_BYTES),
                read_options=pacsv.ReadOptions(column_names=names, block_size=BATCH_BYTES),
                parse_options=pacsv.ParseOptions(
                    delimiter=self._delimiter, newlines_in_values=True, invalid_row_handler=on_invalid_row
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: pa.string() for n in names},
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=False,
                    null_values=[""],
                ),
            )
            for batch in reader:
                self._report_skipped(ragged, len(names))
                self.records += len(batch)
                yield batch, self._locator(offset)
                offset += len(batch)
            self._report_skipped(ragged, len(names))
            if counted.quotes % 2:
                raise InputError(
                    "unterminated quoted CSV field (a quote opened here is never closed)",
                    where=Location(self.source, self._find_open_quote()),
                )
        except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
            raise self._parse_error(exc, ragged, len(names)) from exc

    def close(self) -> None:
        self._stream.close()

    def _locator(self, offset: int) -> Callable[[int], Location]:
        # One line per record after the header; a value with a newline in it shifts this.
        return lambda i: Location(self.source, line=offset + i + 2)

    def _report_skipped(self, ragged: list[str], width: int) -> None:
        for text in ragged:
            self.records += 1
            self._last_raw = text
            self.bad_record(InputError(_ragged_message(text, width), where=Location(self.source)))
        ragged.clear()

    def _parse_error(self, exc: Exception, ragged: list[str], width: int) -> InputError:
        if ragged:
            line = self._find_ragged_line(width)
            return InputError(_ragged_message(ragged[0], width), where=Location(self.source, line))
        text = str(exc)
        if "UTF8" in text or "utf-8" in text.lower() or isinstance(exc, UnicodeDecodeError):
            return InputError("invalid UTF-8 in CSV data", where=Location(self.source))
        return InputError(f"cannot parse CSV: {text}", where=Location(self.source))

    def _find_open_quote(self) -> int | None:
        """The line where the unterminated quoted field starts (files only)."""
        if self._path is None:
            return None
        with open(self._path, encoding="utf-8", errors="replace", newline="") as fh:
            reader = csv.reader(fh, delimiter=self._delimiter, strict=True)
            start = 1
            try:
                for _ in reader:
                    start = reader.line_num + 1
            except csv.Error:
                return start
        return None

    def _find_ragged_line(self, width: int) -> int | None:
        if self._path is None:
            return None
        with open(self._path, encoding="utf-8", errors="replace", newline="") as fh:
            reader = csv.reader(fh, delimiter=self._delimiter)
            for record in reader:
                if len(record) != width and reader.line_num > 1:
                    return reader.line_num
        return None


def _odd_quotes(path: str) -> bool:
    """One C-speed pass over a file: is its count of '"' bytes odd?"""
    count = 0
    with open(path, "rb") as fh:
        while block := fh.read(BATCH_BYTES):
            count += block.count(b'"')
    return count % 2 == 1


def _ragged_message(text: str, width: int) -> str:
    clipped = text if len(text) <= 80 else text[:80] + "…"
    return f"ragged CSV row: expected {width} fields: {clipped!r}"


def format_value(value: Any) -> str | None:
    """A value as CSV text; None stays None (written as an empty unquoted field)."""
    if value is None or isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float | Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return orjson.dumps(value, default=str).decode()


class DelimitedWriter:
    """Writes a header fixed by the first row (or ``--columns``); a new column later is an error."""

    def __init__(self, stream: BinaryIO, delimiter: str = ",", columns: Sequence[str] | None = None):
        self._out = io.TextIOWrapper(stream, encoding="utf-8", newline="", write_through=False)
        self._delimiter = delimiter
        self._specials = frozenset(delimiter + '"\r\n')
        self._columns = ColumnSet(columns)
        self._header_written = False

    def _field(self, text: str | None) -> str:
        if text is None:
            return ""
        if text == "" or not self._specials.isdisjoint(text):
            return '"' + text.replace('"', '""') + '"'
        return text

    def _line(self, values: Iterable[str | None]) -> str:
        return self._delimiter.join(map(self._field, values)) + "\n"

    def write_rows(self, rows: Iterable[Row]) -> None:
        write = self._out.write
        columns = self._columns
        for row in rows:
            if not self._header_written:
                if not columns.fixed:
                    columns.fix(row)
                write(self._line(columns.names))
                self._header_written = True
            columns.check(row)
            write(self._line([format_value(row.get(c)) for c in columns.names]))

    def close(self) -> None:
        if not self._header_written and self._columns.names:
            self._out.write(self._line(self._columns.names))
        self._out.flush()
        self._out.detach()
