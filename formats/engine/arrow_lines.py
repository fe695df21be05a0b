"""JSON lines → Parquet: the stateless conversions, their rows never Python dicts past the first.

The lines are converted as on the JSON-lines path (``lines.convert_stream``: the C kernel in
two worker processes, every error and reject as the row path has them), which hands back the
converted rows as compact JSON lines, valid by construction. The row path's Parquet writer
takes the first rows as Python rows and fixes the file's schema from them exactly as it always
does; every later block of lines is parsed by pyarrow's JSON reader against that schema, on a
thread of its own (it lets go of the GIL), and written as a record batch. A block the reader
would read otherwise than the row path — a value that does not fit the schema, a column the
schema lacks, a number whose value a double cannot hold (17 digits or more) or ``-0`` — is
written the row path's way, row by row, so its values, and its error if it has one, are the
row path's. A writer error (a column the first rows lacked …) names no input line on this
path: the run is then done again on the row path, which says where, unless stdout has
already had bytes.
"""

from __future__ import annotations

import io
import queue
import threading
from typing import Any

from cdc.core.errors import CdcError
from cdc.core.specs import FromChangelogSpec, ToChangelogSpec
from cdc.formats.engine.job import Job, Result
from cdc.formats.engine.session import Rejects, Session, result_skips
from cdc.formats.streams import STDIO, Output

# Literals whose value the JSON reader and the row path's parser read differently: 17 digits or
# more (an exact decimal, or an integer past 64 bits, to the row path) and -0 (a double there).
# Found with bytes.translate and in (C speed): a regular expression took 55 ms a megabyte.
_DIGITS = bytes(ord("d") if chr(c) in "0123456789." else ord("x") for c in range(256))
_RUN = b"d" * 17


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


_NUMERIC = {bytes([c]) for c in b"0123456789."}
_FOLLOWS = {bytes([c]) for c in b"0123456789.eE"}


def accepts(job: Job) -> bool:
    """from-changelog / to-changelog of JSON lines files into Parquet, every column kept."""
    from cdc.formats.engine import lines

    spec = job.spec
    if not isinstance(spec, FromChangelogSpec | ToChangelogSpec) or not spec.stateless:
        return False
    return (
        job.writes_bytes
        and job.rows is None
        and job.out_format == "parquet"
        and not job.columns
        and all(f == "jsonl" for f in job.formats)
        and lines.accepts(job.with_(out_format="jsonl"))
    )


class WriterFailed(Exception):
    """The Parquet writer refused a row: the row path says where."""

    def __init__(self, error: CdcError):
        super().__init__(str(error))
        self.error = error


class Blocks:
    """Converted JSON lines in, Parquet out: the first rows through the row path's writer, the
    rest parsed by pyarrow on a thread while the next block is converted."""

    def __init__(self, writer: Any):
        self.writer = writer
        self.schema: Any = None  # fixed by the writer from the first rows
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=2)
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self.plain = False
        self._head: list[bytes] = []  # the blocks before the schema is fixed
        self._head_lines = 0

    def _first_rows(self) -> None:
        """The schema from the first rows, as the row path's writer fixes it: read by pyarrow
        when its types are those the writer would choose (integers, doubles, booleans, text, in
        the first row's column order), else by the writer itself, row by row."""
        data = b"".join(self._head)
        self._head = []
        cut = _line_end(data, io_module().BATCH_ROWS)  # the rows that fix the writer's schema
        head, rest = data[:cut], data[cut:]
        table = self._infer(head)
        if table is not None:
            self.writer.fix_schema(table.schema)
            self.writer.write_table(table)
        else:
            self._rows(head)
        schema = self.writer.fixed_schema
        if schema is not None:
            # the reader takes these types as the row path's writer does; others stay its own
            self.plain = all(_plain(f.type) for f in schema)
            self.schema = schema
            if rest:
                self.write(rest)
        elif rest:
            self._rows(rest)

    def _infer(self, head: bytes) -> Any:
        import orjson
        import pyarrow as pa
        import pyarrow.json as pj

        if different(head):
            return None
        try:
            first = orjson.loads(head[: head.find(b"\n")])
            options = pj.ReadOptions(use_threads=False, block_size=len(head) + 1)
            table = pj.read_json(io.BytesIO(head), read_options=options)
        except (ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        if not isinstance(first, dict) or table.column_names != list(first):
            return None
        if not all(_plain(f.type) for f in table.schema):
            return None
        return table.combine_chunks()

    def write(self, data: bytes | memoryview) -> None:
        """A block of converted lines (a memoryview into shared memory is copied first)."""
        self._raise()
        if not len(data):
            return
        if self.schema is None:
            self._head.append(bytes(data))
            self._head_lines += bytes(data).count(b"\n")
            if self._head_lines >= io_module().BATCH_ROWS:
                self._first_rows()
            return
        if not self.plain:
            self._rows(bytes(data))
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="cdc-json", daemon=True)
            self._thread.start()
        self._queue.put(bytes(data))

    def _drain(self) -> None:
        while (data := self._queue.get()) is not None:
            if self._failure is None:  # after a failure, keep taking blocks: the producer must not block
                try:
                    self._block(data)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
                    self._failure = exc

    def _block(self, data: bytes) -> None:
        import pyarrow as pa
        import pyarrow.json as pj

        if not different(data):
            try:
                table = pj.read_json(
                    io.BytesIO(data),
                    read_options=pj.ReadOptions(use_threads=False, block_size=len(data) + 1),
                    parse_options=pj.ParseOptions(explicit_schema=self.schema, unexpected_field_behavior="error"),
                )
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                table = None
            if table is not None and table.schema.equals(self.schema):
                self.writer.write_table(table)
                return
        self._rows(data)

    def _rows(self, data: bytes) -> None:
        """The row path's way: each line parsed (numbers as written) and given to its writer."""
        from cdc.formats.jsonl import loads_for

        loads = loads_for(data)
        rows = [loads(line) for line in data.split(b"\n") if line]
        try:
            self.writer.write_rows(rows)
        except CdcError as err:
            raise WriterFailed(err) from None

    def _raise(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def close(self) -> None:
        if self.schema is None and self._head:  # fewer rows than fix the schema
            self._first_rows()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._raise()

    def close_quietly(self) -> None:
        """Stop the parser thread, whatever it failed with."""
        try:
            self.close()
        except BaseException:  # noqa: BLE001 - the run is failing already
            pass


def run(job: Job, current: Session) -> Result:
    result = Result(path="lines-arrow")
    try:
        return _run(job, current, result)
    except WriterFailed as failed:
        if not _restartable(current):
            raise failed.error from None
        return _again_on_rows(job, current)


def _run(job: Job, current: Session, result: Result) -> Result:
    from cdc.formats.engine import lines
    from cdc.formats.engine.native.kernel import available
    from cdc.formats.parquet import ParquetWriter
    from cdc.formats.streams import decompressed, display_name, open_input

    converter = lines.converter_for(job, result.counts.__class__(), with_kernel=available())
    out = current.open_output()
    writer = ParquetWriter(out.stream)
    blocks = Blocks(writer)
    try:
        for path in job.inputs:
            plain = path != STDIO and lines._plain_file(path)
            stream = decompressed(open_input(path, None if plain else current.on_bytes), display_name(path))
            try:
                result.read += lines.convert_stream(
                    converter,
                    stream,
                    display_name(path),
                    blocks.write,
                    result.counts,
                    current.reject,
                    on_bytes=current.on_bytes if plain else None,
                    path=path if plain else None,
                )
            finally:
                if path != STDIO:
                    stream.close()
    except CdcError:
        blocks.close()  # a writer error from before this one comes first (WriterFailed)
        raise
    blocks.close()
    writer.close(_empty_columns(job))
    result.counts.written = sum(result.counts.by_kind.values())
    result_skips(current, result)
    return result


def io_module() -> Any:
    """The Parquet writer's module, whose ``BATCH_ROWS`` first rows fix a file's schema."""
    from cdc.formats.parquet import io as parquet_io

    return parquet_io


def _line_end(data: bytes, lines: int) -> int:
    """Where the first ``lines`` lines of ``data`` end."""
    at = -1
    for _ in range(lines):
        at = data.find(b"\n", at + 1)
        if at < 0:
            return len(data)
    return at + 1


def _plain(kind: Any) -> bool:
    import pyarrow as pa

    return bool(
        pa.types.is_int64(kind) or pa.types.is_float64(kind) or pa.types.is_boolean(kind) or pa.types.is_string(kind)
    )


def _empty_columns(job: Job) -> list[str]:
    """The columns of a result with no rows, as the row path knows them: none (JSON lines
    declare no columns)."""
    return []


def _restartable(current: Session) -> bool:
    """Whether the run can begin again: its output is a file (not yet committed)."""
    output = current.output
    return output is None or output.path != STDIO


def _again_on_rows(job: Job, current: Session) -> Result:
    """The whole run again on the row path, from fresh outputs, for its error's words."""
    from cdc.formats.engine import rows

    if current.output is not None:
        current.output.abort()
        current.output = Output(job.output)
    if current.rejects is not None:
        current.rejects.abort()
        current.rejects = Rejects(job.rejects)
        current.reject = current.rejects.add
    return rows.run(job, current)
