"""CSV and TSV. Values are text; an empty unquoted field is null, a quoted ``""`` the empty string.

Reading goes through pyarrow's streaming CSV reader (vectorized, and it can tell the two kinds of
empty field apart); writing is done here, because the standard library's writer cannot.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any, BinaryIO

import orjson

from cdc.core.errors import InputError, Location
from cdc.core.model import Reject, Row, fail_on_bad
from cdc.formats.base import RowReader
from cdc.formats.jsonl import encode_default, number_text
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
        self.columns: list[str] = []
        self._row: Row | None = None  # the row being handed out, and its line
        self._line = 0
        self._raw: str | None = None  # the text of a ragged row being reported
        self._next_line = 2  # where the next record starts (line 1 is the header)
        self._ragged_starts: deque[int] | None = None  # lines where ragged records start (a file's)
        self._pending: deque[str] = deque()  # ragged records reported by the parser, not yet placed

    def location(self) -> Location:
        return Location(self.source, line=self._line or None)

    def raw(self) -> str:
        """The record as CSV text: a ragged row as it stood, a good one written back (minimal
        quoting, so as it stood unless it had quotes it did not need)."""
        if self._raw is not None:
            return self._raw
        if self._row is None:
            return ""
        return DelimitedWriter.line_of(self._delimiter, [format_value(v) for v in self._row.values()]).rstrip("\n")

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
        for batch, where in self.batches():
            for i, row in enumerate(batch.to_pylist()):
                self._row, self._raw = row, None
                self._line = where(i).line or 0
                yield row

    def batches(self) -> Iterator[tuple[Any, Callable[[int], Location]]]:
        """Record batches of text columns, each with a function from a row in it to its location
        (its physical line: a quoted value may span lines)."""
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
        failing = self.reject is fail_on_bad

        def on_invalid_row(row: Any) -> str:
            ragged.append(row.text)
            return "error" if failing else "skip"

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
                lines = self._lines_of(batch, ragged, len(names))
                self.records += len(batch)
                yield batch, lines
            self._lines_of(None, ragged, len(names))
            if counted.quotes % 2:
                raise InputError(
                    "unterminated quoted CSV field (a quote opened here is never closed)",
                    where=Location(self.source, self._find_open_quote()),
                )
        except pa.ArrowInvalid as exc:
            if "Empty CSV file" in str(exc):  # a header and no rows: an empty table
                return
            raise self._parse_error(exc, ragged, len(names)) from exc
        except UnicodeDecodeError as exc:
            raise self._parse_error(exc, ragged, len(names)) from exc

    def close(self) -> None:
        self._stream.close()

    def _lines_of(self, batch: Any, ragged: list[str], width: int) -> Callable[[int], Location]:
        """Where each row of ``batch`` starts, reporting the ragged rows read so far at theirs.

        A record takes one line plus the newlines inside its values; ragged records (skipped
        by the parser, perhaps while it read ahead) are placed by their lines in the file,
        found once by a re-scan when the first one turns up — on stdin their lines are not
        known. ``batch`` None: the ragged rows after the last row.
        """
        self._pending.extend(ragged)
        ragged.clear()
        if self._pending and self._ragged_starts is None:
            self._ragged_starts = deque(self._find_ragged_lines(width))
        starts, pending = self._ragged_starts or deque(), self._pending
        while pending and not starts:  # stdin: nowhere to place them
            self._report_ragged(None, pending.popleft(), width)
        newlines = _newlines_per_row(batch) if batch is not None else None
        n = len(batch) if batch is not None else 0
        if not starts and newlines is None:  # one line per record: arithmetic
            base = self._next_line
            self._next_line += n
            return lambda i: Location(self.source, line=base + i)
        line = self._next_line
        row_lines = []
        for i in range(n):
            while starts and pending and starts[0] <= line:  # a ragged record starts here
                line = self._ragged(starts.popleft(), pending.popleft(), width)
            row_lines.append(line)
            line += 1 + (newlines[i] if newlines is not None else 0)
        while batch is None and starts and pending:
            line = self._ragged(starts.popleft(), pending.popleft(), width)
        self._next_line = line
        return lambda i: Location(self.source, line=row_lines[i])

    def _ragged(self, start: int, text: str, width: int) -> int:
        """Report a ragged record at its line; returns the line after it."""
        self._report_ragged(start, text, width)
        return start + 1 + text.count("\n")

    def _report_ragged(self, line: int | None, text: str, width: int) -> None:
        self.records += 1
        self._raw, self._line = text, line or 0
        self.reject(InputError(_ragged_message(text, width), where=Location(self.source, line)), text)
        self._raw = None

    def _parse_error(self, exc: Exception, ragged: list[str], width: int) -> InputError:
        if ragged:
            lines = self._find_ragged_lines(width)
            return InputError(
                _ragged_message(ragged[0], width), where=Location(self.source, lines[0] if lines else None)
            )
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

    def _find_ragged_lines(self, width: int) -> list[int]:
        """The lines where records with the wrong number of fields start (files only)."""
        if self._path is None:
            return []
        found = []
        with open(self._path, encoding="utf-8", errors="replace", newline="") as fh:
            reader = csv.reader(fh, delimiter=self._delimiter)
            start = 1
            for record in reader:
                if len(record) != width and start > 1 and record:
                    found.append(start)
                start = reader.line_num + 1
        return found


def _newlines_per_row(batch: Any) -> list[int] | None:
    """How many newlines each row's values hold; None when no value has one (the usual case)."""
    from cdc.formats.engine import arrow_compute as pc

    counts = None
    for column in batch.columns:
        if not pc.any(pc.match_substring(column, "\n")).as_py():
            continue
        found = pc.fill_null(pc.count_substring(column, "\n"), 0)
        counts = found if counts is None else pc.add(counts, found)
    return None if counts is None else counts.to_pylist()


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
        return number_text(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return orjson.dumps(value, default=encode_default, option=orjson.OPT_PASSTHROUGH_DATETIME).decode()


class DelimitedWriter:
    """Writes a header fixed by the first row (or ``--columns``); a new column later is an error."""

    def __init__(self, stream: BinaryIO, delimiter: str = ",", columns: Sequence[str] | None = None):
        self._out = io.TextIOWrapper(stream, encoding="utf-8", newline="", write_through=False)
        self._delimiter = delimiter
        self._columns = ColumnSet(columns)
        self._header_written = False

    @staticmethod
    def line_of(delimiter: str, values: Iterable[str | None]) -> str:
        """One CSV line, quoting only what needs it: the empty string (null is unquoted
        emptiness), and values holding the delimiter, a quote or a line break."""
        specials = frozenset(delimiter + '"\r\n')

        def field(text: str | None) -> str:
            if text is None:
                return ""
            if text == "" or not specials.isdisjoint(text):
                return '"' + text.replace('"', '""') + '"'
            return text

        return delimiter.join(map(field, values)) + "\n"

    def _line(self, values: Iterable[str | None]) -> str:
        return self.line_of(self._delimiter, values)

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

    def close(self, empty_columns: Sequence[str] = ()) -> None:
        """``empty_columns``: the header of a result with no rows, when the columns are known."""
        if not self._header_written and (self._columns.names or empty_columns):
            self._out.write(self._line(self._columns.names or empty_columns))
        self._out.flush()
        self._out.detach()


class ArrowCsvWriter:
    """Record batches as CSV, written exactly as ``DelimitedWriter`` writes the same rows
    (minimal quoting, null unquoted, numbers as every text output spells them), column by
    column with Arrow kernels: text, integers, booleans and decimals never become Python
    objects; other types are formatted value by value by the row writer's own function."""

    def __init__(self, stream: BinaryIO, schema: Any, delimiter: str = ","):
        self._stream = stream
        self._delimiter = delimiter
        self._specials = f'[{re.escape(delimiter)}"\\r\\n]'
        stream.write(DelimitedWriter.line_of(delimiter, schema.names).encode())

    def write_batch(self, batch: Any) -> None:
        import pyarrow as pa

        from cdc.formats.engine import arrow_compute as pc

        if not len(batch):
            return
        if not batch.num_columns:
            return
        fields = [self._field(column) for column in batch.columns]
        lines = pc.binary_join_element_wise(*fields, self._delimiter)
        lines = pc.binary_join_element_wise(lines, pa.scalar(""), "\n")  # each line ends in a newline
        # No nulls: the values buffer, from the first offset to the last, is the CSV text.
        _, offsets, data = lines.buffers()
        bounds = memoryview(offsets).cast("i")
        self._stream.write(memoryview(data)[bounds[lines.offset] : bounds[lines.offset + len(lines)]])

    def _field(self, column: Any) -> Any:
        """The column as CSV fields: quoted where needed, null as the empty string."""
        import pyarrow as pa

        from cdc.formats.engine import arrow_compute as pc

        kind = column.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            text = column
        elif pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_decimal(kind):
            text = pc.cast(column, pa.string())
        else:
            text = pa.array([format_value(v) for v in column.to_pylist()], pa.string())
        quote = pc.or_(pc.equal(text, ""), pc.match_substring_regex(text, self._specials))
        quoted = pc.binary_join_element_wise('"', pc.replace_substring(text, '"', '""'), '"', "")
        return pc.fill_null(pc.if_else(quote, quoted, text), "")

    def close(self) -> None:
        self._stream.flush()
