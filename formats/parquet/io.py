"""Parquet, batch by batch. pyarrow is imported here only, when a Parquet path needs it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, BinaryIO

from cdc.core.errors import InputError, Location
from cdc.core.model import Reject, Row
from cdc.formats.base import RowReader
from cdc.formats.schema import ColumnSet

BATCH_ROWS = 65_536
# Vectorized conversions: 131,072-row batches were no faster (row groups are encoded on every
# core) and peaked at 143 MB on 1.6M rows and 178 MB on 9.7M (126 / 141 MB at this size).
VECTOR_BATCH_ROWS = 65_536


class ParquetReader(RowReader):
    def __init__(self, stream: BinaryIO | None, source: str, reject: Reject | None = None, path: str | None = None):
        super().__init__(source, reject)
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            if path is not None:
                # Read through a 1 MB buffer, not pre-buffered whole row groups or a memory map:
                # either keeps memory growing with the row groups or the file (85 → 140 MB from
                # 1.6M to 9.7M rows), at the same speed.
                self._file = pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)
            else:
                # A Parquet footer is at the end: stdin has to be buffered whole.
                assert stream is not None
                self._file = pq.ParquetFile(pa.BufferReader(stream.read()))
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"not a valid Parquet file: {exc}", where=Location(source)) from exc
        self.arrow_schema = self._file.schema_arrow
        self.columns = list(self.arrow_schema.names)
        self._row = -1
        self._last: Row | None = None

    def location(self) -> Location:
        return Location(self.source, row=max(self._row, 0) + 1)

    def raw(self) -> str:
        from cdc.formats.jsonl import dumps

        return dumps(self._last).decode().rstrip("\n") if self._last is not None else ""

    def __iter__(self) -> Iterator[Row]:
        for batch, _ in self.batches():
            for row in batch.to_pylist():
                self._row += 1
                self._last = row
                yield row

    def batches(self) -> Iterator[tuple[Any, Callable[[int], Location]]]:
        """Record batches, each with a function from a row in it to its location."""
        import pyarrow as pa

        offset = 0
        try:
            for batch in self._file.iter_batches(batch_size=VECTOR_BATCH_ROWS):
                self.records += len(batch)
                yield batch, self._locator(offset)
                offset += len(batch)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"corrupt Parquet data: {exc}", where=Location(self.source, row=offset + 1)) from exc

    def _locator(self, offset: int) -> Callable[[int], Location]:
        return lambda i: Location(self.source, row=offset + i + 1)

    def close(self) -> None:
        self._file.close()


class ParquetWriter:
    """Buffers rows into record batches; the first batch fixes the schema.

    ``type_hints`` carries column types over from a typed input (Parquet → Parquet keeps its
    types); other columns are inferred, and a column that is null throughout the first batch is
    written as string.
    """

    def __init__(
        self,
        stream: BinaryIO,
        columns: Sequence[str] | None = None,
        type_hints: dict[str, Any] | None = None,
        batch_rows: int = BATCH_ROWS,
    ):
        self._stream = stream
        self._columns = ColumnSet(columns)
        self._hints = type_hints or {}
        self._batch_rows = batch_rows
        self._buffer: list[Row] = []
        self._schema: Any = None
        self._writer: Any = None

    def write_rows(self, rows: Iterable[Row]) -> None:
        buffer = self._buffer
        columns = self._columns
        for row in rows:
            if not columns.fixed:
                columns.fix(row)
            columns.check(row)
            buffer.append(row)
            if len(buffer) >= self._batch_rows:
                self._flush()  # empties the buffer in place

    def _flush(self) -> None:
        import pyarrow as pa

        from cdc.formats.parquet.threads import ThreadedParquetWriter

        rows = self._buffer
        names = self._columns.names
        if self._schema is None:
            self._schema = pa.schema([pa.field(n, self._infer(n, rows)) for n in names])
            self._writer = ThreadedParquetWriter(self._stream, self._schema)
        arrays = []
        for field in self._schema:
            values = [r.get(field.name) for r in rows]
            try:
                arrays.append(pa.array(values, type=field.type))
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
                raise InputError(
                    f"column {field.name!r}: a value does not fit the Parquet type {field.type} "
                    f"fixed by the first rows ({exc})",
                    hint="write JSONL or CSV, whose values are not typed per column",
                ) from exc
        self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self._schema))
        rows.clear()

    def _infer(self, name: str, rows: list[Row]) -> Any:
        import pyarrow as pa

        if name in self._hints:
            return self._hints[name]
        try:
            inferred = pa.array([r.get(name) for r in rows]).type
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            raise InputError(f"column {name!r} mixes value types and cannot be written to Parquet ({exc})") from exc
        return pa.string() if pa.types.is_null(inferred) else inferred

    def close(self, empty_columns: Sequence[str] = ()) -> None:
        """``empty_columns``: the columns of a result with no rows, when they are known."""
        if self._schema is None and not self._columns.names:
            self._columns = ColumnSet(empty_columns)  # no row came: a valid file all the same
        if self._buffer or self._schema is None:
            self._flush()
        if self._writer is not None:
            self._writer.close()
        self._stream.flush()
