"""JSON lines → Parquet: the stateless conversions on blocks of lines read by pyarrow.

The input is cut into line-aligned blocks of about a megabyte. Each block is parsed by
pyarrow's JSON reader on one of two threads (it lets go of the GIL, so both cores work) against
the input schema that the first rows fix, and converted by the Arrow path's kernels
(``arrow.from_changelog_batches`` / ``to_changelog_batches``); the batches go to the row path's
Parquet writer in input order. A block is taken this way only when pyarrow is sure to read it as
the row path's parser does (``regular``): no ``NaN``/``Infinity`` token (the reader takes them,
orjson does not), no number whose value a double cannot hold (17 digits or more) or ``-0``,
as many rows as lines that are not blank (``null`` or two objects on a line are no row for the
reader), every value of its column's type, no column the first rows lacked, no bad kind. Any
other block is converted the row path's way, line by line — its errors and rejects at their
lines — and given to the same writer. The first rows fix the file's schema as the row path's
writer fixes it: read by pyarrow when the types it finds are those the writer would choose,
else by the writer itself.

A writer error (a column the first rows lacked, a value of another type) names no input line
on this path: the run is then done again on the row path, which says where — unless stdout
has had bytes already.
"""

from __future__ import annotations

import io
from collections import deque
from typing import Any

from cdc.core.convert import FromChangelogRow, ToChangelogRow
from cdc.core.errors import CdcError, InputError, Location
from cdc.core.specs import CHANGELOG, FromChangelogSpec, ToChangelogSpec
from cdc.core.stats import Counts
from cdc.engine.commands import Command, implements, lookup
from cdc.engine.empty import empty_result, examples_for
from cdc.engine.handover import again_on_rows, restartable
from cdc.engine.inputs import line_chunks
from cdc.engine.job import Job, Result
from cdc.engine.paths.arrow import from_changelog_batches, to_changelog_batches
from cdc.engine.session import Session, result_skips

# Literals whose value the JSON reader and the row path's parser read differently: 17 digits or
# more (an exact decimal, or an integer past 64 bits, to the row path) and -0 (a double there).
# Found with bytes.translate and ``in`` (C speed): a regular expression took 55 ms a megabyte.
_DIGITS = bytes(ord("d") if chr(c) in "0123456789." else ord("x") for c in range(256))
_RUN = b"d" * 17
_NUMERIC = {bytes([c]) for c in b"0123456789."}
_FOLLOWS = {bytes([c]) for c in b"0123456789.eE"}
IN_FLIGHT = 3  # blocks parsed ahead of the writer


def different(data: bytes) -> bool:
    """Whether ``data`` holds a number literal the JSON reader would read otherwise."""
    if _RUN in data.translate(_DIGITS):
        return True
    at = data.find(b"-0")
    while at >= 0:
        before = data[at - 1 : at] if at else b""
        after = data[at + 2 : at + 3]
        if before not in _NUMERIC and after not in _FOLLOWS:
            return True
        at = data.find(b"-0", at + 2)
    return False


def records(data: bytes) -> int:
    """The lines of ``data`` that are not blank (the row path's records)."""
    return sum(1 for line in data.split(b"\n") if line.strip())


def _cut(data: bytes, count: int) -> int:
    """Where the line that makes ``count`` records ends (the end when there are fewer)."""
    at, found = 0, 0
    while found < count:
        end = data.find(b"\n", at)
        if end < 0:
            return len(data)
        if data[at:end].strip():
            found += 1
        at = end + 1
    return at


def can_run(job: Job) -> bool:
    """JSON lines in, Parquet out."""
    return (
        job.out_format == "parquet"
        and "-" not in job.inputs  # stdin: a value the writer refuses names its <stdin>:LINE: the row path keeps them
        and bool(job.formats)
        and all(f == "jsonl" for f in job.formats)
    )


def _text_column(spec: Any) -> str:
    """The column of text the conversion reads (the op codes, or the kinds)."""
    return str(spec.op_column if spec.reads != CHANGELOG else spec.kind_column)


# from-changelog / to-changelog, every column kept: (the row step, the batch converter).
COMMANDS: dict[type, Command] = {
    FromChangelogSpec: implements(
        (FromChangelogRow, from_changelog_batches), "op_column", "mapping", "kind_column", "keys", "drop"
    ),
    ToChangelogSpec: implements((ToChangelogRow, to_changelog_batches), "mapping", "op_column", "kind_column", "drop"),
}


def _conversions(spec: Any) -> Any:
    command = lookup(COMMANDS, spec)
    assert command is not None
    return command.do


class WriterFailed(Exception):
    """The Parquet writer refused a row: the row path says where."""

    def __init__(self, error: CdcError):
        super().__init__(str(error))
        self.error = error


class Irregular(Exception):
    """A block pyarrow may read otherwise than the row path: it goes the row path's way."""


def _plain(kind: Any) -> bool:
    """The types the row path's writer gives JSON values that pyarrow gives them too."""
    import pyarrow as pa

    return bool(
        pa.types.is_int64(kind) or pa.types.is_float64(kind) or pa.types.is_boolean(kind) or pa.types.is_string(kind)
    )


def io_module() -> Any:
    """The Parquet writer's module, whose ``BATCH_ROWS`` first rows fix a file's schema."""
    from cdc.formats.parquet import io as parquet_io

    return parquet_io


class Blocks:
    """Blocks of input lines → the Parquet writer, in order."""

    def __init__(self, job: Job, current: Session, result: Result, writer: Any):
        self.job = job
        self.spec = job.spec
        self.current = current
        self.result = result
        self.writer = writer
        self.input_schema: Any = None  # what pyarrow parses blocks against, once the schema is fixed
        self._decided = False  # the first rows are written (input_schema None: every block the row path's way)
        self._head: list[tuple[bytes, int, str]] = []  # the blocks before the schema is fixed
        self._head_records = 0
        self._pool: Any = None
        self._pending: deque[tuple[Any, bytes, int, str]] = deque()
        self._row_step: Any = None

    # -- the way of the row path ------------------------------------------------------------

    def _rows(self, data: bytes, first_line: int, source: str) -> None:
        """Each line parsed (numbers as written), converted and written as the row path does."""
        from cdc.formats.jsonl import bad_line_error, loads_for, not_an_object_message

        if self._row_step is None:
            make = _conversions(self.spec)[0]
            self._row_step = make(self.spec, self.result.counts)
        step, reject = self._row_step, self.current.reject
        loads = loads_for(data)
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        rows: list[Any] = []

        def bad(err: InputError, line: bytes) -> None:
            self._write(rows)  # the rows before a bad record reach the writer first, as they do there
            reject(err, _text(line))

        for line_no, line in enumerate(lines, first_line):
            where = Location(source, line_no)
            try:
                value = loads(line)
            except ValueError:
                if not line.strip():
                    continue
                self.result.read += 1
                bad(bad_line_error(line, line_no).located(where), line)
                continue
            self.result.read += 1
            if type(value) is not dict:
                bad(InputError(not_an_object_message(value, line), where=where), line)
                continue
            try:
                rows.extend(step(value))
            except InputError as err:
                bad(err.located(where), line)
        self._write(rows)

    def _write(self, rows: list[Any]) -> None:
        """Rows to the writer (the list emptied); its refusal is a WriterFailed."""
        try:
            self.writer.write_rows(rows)
        except CdcError as err:
            raise WriterFailed(err) from None
        rows.clear()

    # -- pyarrow's way ------------------------------------------------------------------------

    def _parse(self, data: bytes, schema: Any) -> Any:
        """The block as a table of its input columns (None: not the row path's reading)."""
        import pyarrow as pa
        import pyarrow.json as pj

        if b"NaN" in data or b"Infinity" in data or different(data):
            return None
        if schema is None:
            options = pj.ParseOptions()
        else:
            options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
        try:
            table = pj.read_json(
                io.BytesIO(data),
                read_options=pj.ReadOptions(use_threads=False, block_size=len(data) + 1),
                parse_options=options,
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        if len(table) != records(data):
            return None
        return table

    def _convert(self, table: Any) -> tuple[Any, Counts] | None:
        """The block's changelog conversion, with its counts (None: a bad record in it)."""
        counts = Counts()
        convert = _conversions(self.spec)[1](self.spec, counts)

        def irregular(err: InputError, raw: str) -> None:
            raise Irregular

        try:
            batches = [convert(batch, _nowhere, irregular) for batch in table.to_batches()]
        except (Irregular, CdcError):
            return None
        if not batches:
            return None
        import pyarrow as pa

        return pa.Table.from_batches(batches), counts

    def _block(self, data: bytes) -> tuple[Any, Counts] | None:
        """A block past the first rows, on a pool thread: its converted table, or None."""
        table = self._parse(data, self.input_schema)
        if table is None:
            return None
        converted = self._convert(table)
        if converted is None or not converted[0].schema.equals(self.writer.fixed_schema):
            return None
        return converted

    # -- in order -----------------------------------------------------------------------------

    def feed(self, data: bytes, first_line: int, source: str) -> None:
        if not self._decided:
            self._head.append((data, first_line, source))
            self._head_records += records(data)
            if self._head_records >= io_module().BATCH_ROWS:
                self._first_rows()
            return
        if self.input_schema is None:
            self._rows(data, first_line, source)
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(2, thread_name_prefix="cdc-json")
        self._pending.append((self._pool.submit(self._block, data), data, first_line, source))
        while len(self._pending) > IN_FLIGHT:
            self._drain_one()

    def _drain_one(self) -> None:
        future, data, first_line, source = self._pending.popleft()
        converted = future.result()
        if converted is None:
            self._rows(data, first_line, source)
            return
        table, counts = converted
        self.result.read += records(data)
        self._add(counts)
        self.writer.write_table(table)

    def _add(self, counts: Counts) -> None:
        total = self.result.counts
        total.by_kind.update(counts.by_kind)
        total.dropped += counts.dropped

    def _first_rows(self) -> None:
        """The head blocks: read by pyarrow when the writer would fix the same schema from them
        (their first rows, all of them converted, of the types pyarrow finds), else its way."""
        head, self._head = self._head, []
        self._head_records = 0
        self._decided = True
        if not head:
            return
        rest: tuple[bytes, int, str] | None = None
        if len({source for _, _, source in head}) == 1:  # the rows that fix the schema, exactly
            data = b"".join(d for d, _, _ in head)
            cut = _cut(data, io_module().BATCH_ROWS)
            if cut < len(data):
                rest = (data[cut:], head[0][1] + data.count(b"\n", 0, cut), head[0][2])
            head = [(data[:cut], head[0][1], head[0][2])]
        if self._infer(head) is None:
            for data, first_line, source in head:
                self._rows(data, first_line, source)
        schema = self.writer.fixed_schema
        if schema is not None:
            self.input_schema = self._input_schema(head[0][0], schema)
        if rest is not None:
            self.feed(*rest)

    def _infer(self, head: list[tuple[bytes, int, str]]) -> Any:
        import orjson

        if len(head) != 1:
            return None
        data = head[0][0]
        limit = io_module().BATCH_ROWS
        table = self._parse(data, None)
        if table is None:
            return None
        try:
            first = orjson.loads(data[: data.find(b"\n")] if b"\n" in data else data)
        except ValueError:
            return None
        if not isinstance(first, dict) or table.column_names != list(first):
            return None
        if not all(_plain(f.type) for f in table.schema):
            return None
        converted = self._convert(table)
        if converted is None:
            return None
        out, counts = converted
        if counts.dropped and records(data) == limit:
            return None  # the writer's first rows would reach past this block
        self.writer.fix_schema(out.schema)
        self.writer.write_table(out)
        self.result.read += len(table)
        self._add(counts)
        return out.schema

    def _input_schema(self, head: bytes, output: Any) -> Any:
        """The schema blocks are parsed against: the first row's columns, of the output's types
        (the kind or op-code column text)."""
        import orjson
        import pyarrow as pa

        if not all(_plain(f.type) for f in output):
            return None
        try:
            first = orjson.loads(next(line for line in head.split(b"\n") if line.strip()))
        except (ValueError, StopIteration):
            return None
        if not isinstance(first, dict):
            return None
        spec = self.spec
        text = _text_column(spec)
        types = {f.name: f.type for f in output}
        fields = []
        for name in first:
            if name == text:
                fields.append(pa.field(name, pa.string()))
            elif name in types:
                fields.append(pa.field(name, types[name]))
            else:
                return None
        return pa.schema(fields)

    def close(self) -> None:
        if not self._decided:  # fewer rows than fix the schema
            self._first_rows()
        while self._pending:
            self._drain_one()
        self.shutdown()

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


def _nowhere(i: int) -> Location:
    return Location("<block>")


def _text(line: bytes) -> str:
    return line.decode("utf-8", "backslashreplace").rstrip("\r")


def run(job: Job, current: Session) -> Result:
    result = Result(path="lines-arrow")
    try:
        return _run(job, current, result)
    except WriterFailed as failed:
        if not restartable(job, current):
            raise failed.error from None
        return again_on_rows(job, current, f"the Parquet writer refused a row ({failed.error.message})")


def _run(job: Job, current: Session, result: Result) -> Result:
    from cdc.formats.parquet import ParquetWriter

    writer = ParquetWriter(current.open_output().stream)
    blocks = Blocks(job, current, result, writer)
    examples = examples_for(job.spec, job.out_format)  # the first rows, for an empty result
    try:
        for chunk, first_line, name in line_chunks(job, current.on_bytes, examples=examples):
            blocks.feed(chunk, first_line, name)
        blocks.close()
    finally:
        blocks.shutdown()
    # A result without rows: the columns of the first rows read (JSON lines declare none).
    shape = empty_result(job.spec, None, examples) if not sum(result.counts.by_kind.values()) else None
    try:
        if shape is None:
            writer.close()
        else:
            writer.close(shape.columns, shape.examples)
    except CdcError as err:  # the last rows refused: the row path says where
        raise WriterFailed(err) from None
    result.counts.written = sum(result.counts.by_kind.values())
    result_skips(current, result)
    return result
