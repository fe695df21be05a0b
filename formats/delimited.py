"""CSV and TSV. Values are text; an empty unquoted field is null, a quoted ``""`` the empty string.

Reading goes through pyarrow's streaming CSV reader (vectorized, and it can tell the two kinds of
empty field apart); writing is done here, because the standard library's writer cannot.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any, BinaryIO

import orjson

from cdc.core.errors import InputError, Location
from cdc.core.model import Reject, Row
from cdc.formats.base import RowReader
from cdc.formats.jsonl import dumps, encode_default, number_text
from cdc.formats.schema import ColumnSet

BATCH_BYTES = 1 << 20


class _QuoteCounter(io.RawIOBase):
    """Counts '"' bytes as pyarrow reads: a well-formed CSV has an even number of them (quotes
    inside quoted fields are doubled), so an odd count means a quote left open at the end,
    which pyarrow would otherwise read as a value running to the end of the file.

    ``keep``: the bytes read are also kept there (a stream's, whose ragged records can only
    be found again in them), until ``_StreamLines`` lets them go."""

    def __init__(self, stream: BinaryIO, keep: bytearray | None = None, quote: bytes = b'"'):
        self._stream = stream
        self._quote = quote
        self.quotes = 0
        self.kept = keep
        self.eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.quotes += data.count(self._quote)
        if self.kept is not None:
            self.kept += data
        if not n:
            self.eof = True
        return n


class _FileLines:
    """The physical lines of a file after its header, read again from the start."""

    def __init__(self, path: str, header: bool = True):
        self._file = open(path, encoding="utf-8", errors="replace", newline="")  # noqa: SIM115 - closed with the reader
        if header:
            self._file.readline()

    def next_line(self) -> str | None:
        return self._file.readline() or None

    def skip(self, lines: int) -> int:
        """Lines known to hold no unplaced ragged record: a file is read past them anyway."""
        return 0

    def forget(self) -> None:
        """Nothing is kept of a file."""

    def close(self) -> None:
        self._file.close()


class _StreamLines:
    """The physical lines of a stream after its header, from the bytes kept as pyarrow read them
    (only complete lines: the rest is yet to come, unless the stream has ended)."""

    TRIM = 4 << 20  # let go of lines already placed once this much is kept

    def __init__(self, counter: _QuoteCounter):
        self._counter = counter
        self._kept = counter.kept if counter.kept is not None else bytearray()
        self._pos = 0

    def next_line(self) -> str | None:
        kept, pos = self._kept, self._pos
        end = kept.find(b"\n", pos)
        if end < 0:
            if not self._counter.eof or pos >= len(kept):
                return None
            end = len(kept) - 1
        self._pos = end + 1
        return kept[pos : end + 1].decode("utf-8", "replace")

    def skip(self, lines: int) -> int:
        """Drop ``lines`` lines (no ragged record in them is unplaced) once enough is kept;
        returns how many were dropped (all or none)."""
        kept = self._kept
        if len(kept) - self._pos < self.TRIM:
            return 0
        end = _after_newlines(kept, self._pos, lines)
        if end is None:
            return 0
        self._pos = end
        self.forget()
        return lines

    def forget(self) -> None:
        """Let go of the lines read already."""
        if self._pos > self.TRIM // 4:
            del self._kept[: self._pos]
            self._pos = 0

    def close(self) -> None:
        self._kept.clear()
        self._pos = 0


def _after_newlines(data: bytearray, start: int, count: int) -> int | None:
    """The offset just after the ``count``-th newline from ``start`` (None: fewer there), by
    halving the span with C-speed counts rather than a Python loop per line."""
    lo, hi = start, len(data)
    while hi - lo > 4096:
        mid = (lo + hi) // 2
        found = data.count(b"\n", lo, mid)
        if found >= count:
            hi = mid
        else:
            count -= found
            lo = mid
    pos = lo
    for _ in range(count):
        pos = data.find(b"\n", pos, hi)
        if pos < 0:
            return None
        pos += 1
    return pos


class _RaggedFinder:
    """Where ragged records start: the CSV read again by the csv module, from the file or from
    the bytes kept of a stream, as far as the records pyarrow reported (pyarrow does not say
    where they stood)."""

    def __init__(self, lines: _FileLines | _StreamLines, delimiter: str, width: int, quote: str = '"', first: int = 2):
        self._lines = lines
        self._delimiter = delimiter
        self._quote = quote
        self._width = width
        self._line = first  # where the next record to read starts

    def find(self, count: int) -> list[int | None]:
        """The lines of the next ``count`` ragged records (None: not found, e.g. a reading the
        csv module does not share)."""
        found: list[int | None] = []
        if count <= 0:
            return found
        lines = self._lines

        def texts() -> Iterator[str]:
            while (line := lines.next_line()) is not None:
                yield line

        base = self._line
        reader = csv.reader(texts(), delimiter=self._delimiter, quotechar=self._quote)
        try:
            for record in reader:
                start = self._line
                self._line = base + reader.line_num
                if record and len(record) != self._width:
                    found.append(start)
                    if len(found) == count:
                        break
        except csv.Error:  # a reading of the csv module's own (a lone CR in a stream): unplaced
            pass
        lines.forget()
        return found + [None] * (count - len(found))

    def skip_to(self, line: int) -> None:
        """The records before ``line`` are placed: no need to read them again."""
        if line > self._line:
            self._line += self._lines.skip(line - self._line)

    def close(self) -> None:
        self._lines.close()


class DelimitedReader(RowReader):
    def __init__(
        self,
        stream: BinaryIO,
        source: str,
        delimiter: str = ",",
        reject: Reject | None = None,
        path: str | None = None,
        dialect: Any = None,
    ):
        super().__init__(source, reject)
        self._stream = stream
        self._delimiter = dialect.delimiter if dialect is not None and dialect.delimiter else delimiter
        self._quote = dialect.quote if dialect is not None else '"'
        self._header = dialect.header if dialect is not None else True
        self._names = tuple(dialect.names) if dialect is not None else ()
        self._path = path  # a real file can be re-scanned to find the line of a ragged row
        self.columns: list[str] = []
        self._row: Row | None = None  # the row being handed out, and its line
        self._line = 0
        self._raw: str | None = None  # the text of a ragged row being reported
        self._next_line = 2 if self._header else 1  # where the next record starts (line 1: the header)
        self._finder: _RaggedFinder | None = None  # finds the lines of ragged records, once one is
        self._pending: deque[tuple[int | None, str]] = deque()  # ragged records placed, not yet reported

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
        if not self._header:
            return list(self._names)
        names = self._header_names()
        if self._names and names and len(self._names) != len(names):
            raise InputError(
                f"--header-names gives {len(self._names)} names; the header has {len(names)} columns",
                where=Location(self.source, 1),
            )
        return list(self._names) if self._names and names else names

    def _header_names(self) -> list[str]:
        line = self._stream.readline()
        if line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        if not line.strip():
            return []
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError("invalid UTF-8 in the CSV header", where=Location(self.source, 1)) from exc
        try:
            names = next(csv.reader([text], delimiter=self._delimiter, quotechar=self._quote))
        except csv.Error as exc:  # a bare CR ends no line here: the whole file reads as one
            raise InputError(
                f"cannot read the CSV header: {exc}",
                where=Location(self.source, 1),
                hint="lines must end in LF or CRLF (a file with bare CR line ends: tr '\\r' '\\n' < FILE)",
            ) from exc
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
        (its physical line: a quoted value may span lines). A ragged record (the wrong number of
        fields: the parser skips it) is reported in its place: between the batches, a batch cut
        in two where one stood — so errors and rejects come in the order of the input."""
        import pyarrow as pa
        import pyarrow.csv as pacsv

        names = self._read_header()
        self.columns = names
        if not names:
            return
        if self._path is not None and _odd_quotes(self._path, self._quote.encode()):
            # Say so before any row: pyarrow would read the open field to the end of the file
            # and the first complaint would be about that value, not the quote.
            raise InputError(
                "unterminated quoted CSV field (a quote opened here is never closed)",
                where=Location(self.source, self._find_open_quote()),
            )
        ragged: list[str] = []

        def on_invalid_row(row: Any) -> str:
            ragged.append(row.text)
            return "skip"  # also when failing: the rows before it are converted first

        counted = _QuoteCounter(
            self._stream, keep=bytearray() if self._path is None else None, quote=self._quote.encode()
        )
        lines: _FileLines | _StreamLines = (
            _FileLines(self._path, self._header) if self._path is not None else _StreamLines(counted)
        )
        self._finder = _RaggedFinder(lines, self._delimiter, len(names), self._quote, self._next_line)
        self._undecodable = False
        hook = sys.unraisablehook

        def undecodable(unraisable: Any) -> None:
            # pyarrow decodes a ragged row's text before calling on_invalid_row: invalid UTF-8 there
            # is an "Exception ignored" traceback on stderr, then a parse error — said once, located
            if isinstance(unraisable.exc_value, UnicodeDecodeError):
                self._undecodable = True
            else:
                hook(unraisable)

        sys.unraisablehook = undecodable
        try:
            reader = pacsv.open_csv(
                io.BufferedReader(counted, BATCH_BYTES),
                read_options=pacsv.ReadOptions(column_names=names, block_size=BATCH_BYTES),
                parse_options=pacsv.ParseOptions(
                    delimiter=self._delimiter,
                    quote_char=self._quote,
                    newlines_in_values=True,
                    invalid_row_handler=on_invalid_row,
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: pa.string() for n in names},
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=False,
                    null_values=[""],
                ),
            )
            for batch in reader:
                yield from self._placed(batch, ragged, len(names))
            yield from self._placed(None, ragged, len(names))
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
        finally:
            sys.unraisablehook = hook
            self._finder.close()

    def close(self) -> None:
        self._stream.close()

    def _place(self, ragged: list[str]) -> None:
        """The ragged records the parser reported (perhaps while reading ahead) to be reported
        at their lines, found by reading the input again from where the last one was."""
        if ragged and self._finder is not None:
            self._pending.extend(zip(self._finder.find(len(ragged)), ragged, strict=True))
        ragged.clear()

    def _placed(self, batch: Any, ragged: list[str], width: int) -> Iterator[tuple[Any, Callable[[int], Location]]]:
        """``batch`` with where each row starts, cut where ragged records stood, each reported
        between the pieces. ``batch`` None: the ragged records after the last row."""
        self._place(ragged)
        pending = self._pending
        newlines = _newlines_per_row(batch) if batch is not None and len(batch) else None
        n = len(batch) if batch is not None else 0
        if not pending and newlines is None:  # one line per record, nothing between: arithmetic
            base = self._next_line
            self._next_line += n
            self._forget_placed()
            if batch is not None:
                self.records += n
                yield batch, lambda i: Location(self.source, line=base + i)
            return
        line = self._next_line
        row_lines: list[int] = []
        cut = 0
        for i in range(n):
            while pending and (pending[0][0] is None or pending[0][0] <= line):  # one stood here
                if i > cut:
                    yield self._piece(batch, cut, i, row_lines)
                    cut = i
                line = self._ragged(line, *pending.popleft(), width)
            row_lines.append(line)
            line += 1 + (newlines[i] if newlines is not None else 0)
        if batch is not None and (n > cut or n == 0):
            yield self._piece(batch, cut, n, row_lines)
        while batch is None and pending:
            line = self._ragged(line, *pending.popleft(), width)
        self._next_line = line
        self._forget_placed()

    def _piece(self, batch: Any, start: int, end: int, row_lines: list[int]) -> tuple[Any, Callable[[int], Location]]:
        lines = row_lines[start:end]
        self.records += end - start
        piece = batch if start == 0 and end == len(batch) else batch.slice(start, end - start)
        return piece, lambda i: Location(self.source, line=lines[i])

    def _forget_placed(self) -> None:
        """Every record before the next line is placed (a ragged one among them was found when
        the parser reported it): a stream's copy of them can go."""
        if self._finder is not None:
            self._finder.skip_to(self._next_line)

    def _ragged(self, line: int, start: int | None, text: str, width: int) -> int:
        """Report a ragged record at its line; returns the line after it."""
        self._report_ragged(start, text, width)
        return line if start is None else max(line, start + 1 + text.count("\n"))

    def _report_ragged(self, line: int | None, text: str, width: int) -> None:
        self.records += 1
        self._raw, self._line = text, line or 0
        self.reject(InputError(_ragged_message(text, width), where=Location(self.source, line)), text)
        self._raw = None

    def _parse_error(self, exc: Exception, ragged: list[str], width: int) -> InputError:
        """A parse error; the ragged records before it are reported first (when failing, the
        first of them is the error)."""
        self._place(ragged)
        while self._pending:
            self._ragged(0, *self._pending.popleft(), width)
        text = str(exc)
        if "UTF8" in text or "utf-8" in text.lower() or isinstance(exc, UnicodeDecodeError) or self._undecodable:
            return InputError("invalid UTF-8 in CSV data", where=Location(self.source, self._invalid_line()))
        return InputError(f"cannot parse CSV: {text}", where=Location(self.source))

    def _invalid_line(self) -> int | None:
        """The first line that is not UTF-8 (of a file)."""
        if self._path is not None:
            with open(self._path, "rb") as fh:
                for number, line in enumerate(fh, 1):
                    try:
                        line.decode("utf-8")
                    except UnicodeDecodeError:
                        return number
            return None
        return None  # stdin: its bytes are let go as they are parsed, their line numbers with them

    def _find_open_quote(self) -> int | None:
        """The line where the unterminated quoted field starts (files only)."""
        if self._path is None:
            return None
        with open(self._path, encoding="utf-8", errors="replace", newline="") as fh:
            reader = csv.reader(fh, delimiter=self._delimiter, quotechar=self._quote, strict=True)
            start = 1
            try:
                for _ in reader:
                    start = reader.line_num + 1
            except csv.Error:
                return start
        return None


def _newlines_per_row(batch: Any) -> list[int] | None:
    """How many newlines each row's values hold; None when no value has one (the usual case)."""
    from cdc.formats import arrow_compute as pc

    counts = None
    for column in batch.columns:
        if not pc.any(pc.match_substring(column, "\n")).as_py():
            continue
        found = pc.fill_null(pc.count_substring(column, "\n"), 0)
        counts = found if counts is None else pc.add(counts, found)
    return None if counts is None else counts.to_pylist()


def _odd_quotes(path: str, quote: bytes = b'"') -> bool:
    """One C-speed pass over a file: is its count of quote bytes odd?"""
    count = 0
    with open(path, "rb") as fh:
        while block := fh.read(BATCH_BYTES):
            count += block.count(quote)
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
    try:
        return orjson.dumps(value, default=encode_default, option=orjson.OPT_PASSTHROUGH_DATETIME).decode()
    except TypeError:  # nested past orjson's depth, or an integer past 64 bits
        return dumps(value)[:-1].decode()


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

        from cdc.formats import arrow_compute as pc

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

        from cdc.formats import arrow_compute as pc

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
