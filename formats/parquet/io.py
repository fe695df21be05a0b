"""Parquet, batch by batch. pyarrow is imported here only, when a Parquet path needs it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any, BinaryIO

from cdc.core.errors import InputError, Location
from cdc.core.model import Reject, Row
from cdc.core.values import DbText
from cdc.formats.base import RowReader
from cdc.formats.schema import ColumnSet

BATCH_ROWS = 65_536
# Vectorized conversions: 131,072-row batches were no faster (row groups are encoded on every
# core) and peaked at 143 MB on 1.6M rows and 178 MB on 9.7M (126 / 141 MB at this size).
VECTOR_BATCH_ROWS = 65_536


class ParquetFile:
    """A Parquet file read through ``pyarrow._parquet`` directly, as ``pyarrow.parquet.ParquetFile``
    reads it with the same options: importing ``pyarrow.parquet`` loads pyarrow's file systems
    (and with them ``ssl``), 15 ms of a small file's start-up that a local file never needs."""

    def __init__(self, source: Any, buffer_size: int = 0, pre_buffer: bool = True):
        from pyarrow._parquet import ParquetReader as Reader

        self._reader = Reader()
        self._reader.open(
            source,
            use_memory_map=False,
            buffer_size=buffer_size,
            pre_buffer=pre_buffer,
            arrow_extensions_enabled=True,
        )

    @property
    def schema_arrow(self) -> Any:
        return self._reader.schema_arrow

    @property
    def metadata(self) -> Any:
        return self._reader.metadata

    def iter_batches(self, batch_size: int) -> Iterator[Any]:
        groups = list(range(self._reader.num_row_groups))
        return self._reader.iter_batches(batch_size, groups, None, use_threads=True)  # type: ignore[no-any-return]

    def close(self) -> None:
        self._reader.close()


def plain_type(kind: Any) -> Any:
    """The type every path reads a stored type as: a dictionary as its values, a view as its
    plain layout (``string_view`` → ``string``), inside lists and structs too — so a kind column
    stored dictionary-encoded is the same strings to the row path and to Arrow's kernels."""
    import pyarrow as pa

    t = pa.types
    if t.is_dictionary(kind):
        return plain_type(kind.value_type)
    if t.is_string_view(kind):
        return pa.string()
    if t.is_binary_view(kind):
        return pa.binary()
    if t.is_list_view(kind) or t.is_list(kind):
        return pa.list_(kind.value_field.with_type(plain_type(kind.value_field.type)))
    if t.is_large_list_view(kind) or t.is_large_list(kind):
        return pa.large_list(kind.value_field.with_type(plain_type(kind.value_field.type)))
    if t.is_struct(kind):
        return pa.struct([f.with_type(plain_type(f.type)) for f in kind])
    if t.is_map(kind):
        return pa.map_(plain_type(kind.key_type), plain_type(kind.item_type))
    return kind


def plain_schema(schema: Any) -> Any:
    import pyarrow as pa

    return pa.schema([f.with_type(plain_type(f.type)) for f in schema], metadata=schema.metadata)


def read_schema(path: str) -> Any:
    """The Arrow schema of a Parquet file (``pyarrow.parquet.read_schema``)."""
    file = ParquetFile(path)
    try:
        return plain_schema(file.schema_arrow)
    finally:
        file.close()


class ParquetReader(RowReader):
    def __init__(self, stream: BinaryIO | None, source: str, reject: Reject | None = None, path: str | None = None):
        super().__init__(source, reject)
        import pyarrow as pa

        try:
            if path is not None:
                # Read through a 1 MB buffer, not pre-buffered whole row groups or a memory map:
                # either keeps memory growing with the row groups or the file (85 → 140 MB from
                # 1.6M to 9.7M rows), at the same speed.
                self._file = ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)
            else:
                # A Parquet footer is at the end: stdin has to be buffered whole.
                assert stream is not None
                self._file = ParquetFile(pa.BufferReader(stream.read()))
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"not a valid Parquet file: {exc}", where=Location(source)) from exc
        stored = self._file.schema_arrow
        self.arrow_schema = plain_schema(stored)
        self._cast = None if self.arrow_schema.equals(stored) else self.arrow_schema
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

    def batches(self, rows: int = VECTOR_BATCH_ROWS) -> Iterator[tuple[Any, Callable[[int], Location]]]:
        """Record batches of up to ``rows`` rows, each with a function from a row in it to its
        location."""
        import pyarrow as pa

        offset = 0
        try:
            for batch in self._file.iter_batches(batch_size=rows):
                if self._cast is not None:
                    batch = batch.cast(self._cast)
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
        batch_rows: int | None = None,
    ):
        self._stream = stream
        self._columns = ColumnSet(columns)
        self._named = bool(columns)  # --columns: exactly these; else the rows' own, grown until written
        self._hints = type_hints or {}
        self._batch_rows = batch_rows or BATCH_ROWS  # the rows that fix the schema, and a row group
        self._buffer: list[Row] = []
        self._written = 0  # rows already written, for the place of a value that does not fit
        self._schema: Any = None
        self._writer: Any = None

    def write_rows(self, rows: Iterable[Row]) -> None:
        buffer = self._buffer
        columns = self._columns
        for row in rows:
            if not columns.fixed:
                columns.fix(row)
            if self._schema is None and not self._named:
                columns.grow(row)
            columns.check(row)
            buffer.append(row)
            if len(buffer) >= self._batch_rows:
                self._flush()  # empties the buffer in place

    @property
    def fixed_schema(self) -> Any:
        """The file's schema once the first rows fixed it (None before)."""
        return self._schema

    def fix_schema(self, schema: Any) -> None:
        """Take this schema as the first rows would have fixed it (before any row is written)."""
        from cdc.formats.parquet.threads import ThreadedParquetWriter

        assert self._schema is None and not self._buffer
        self._columns = ColumnSet(schema.names)
        self._schema = schema
        self._writer = ThreadedParquetWriter(self._stream, schema, dictionary="auto")

    def write_table(self, table: Any) -> None:
        """Rows that are an Arrow table of the fixed schema already, after the rows buffered."""
        if self._buffer:
            self._flush()
        for batch in table.to_batches():
            self._writer.write_batch(batch)
        self._written += len(table)

    def _flush(self) -> None:
        import pyarrow as pa

        rows = self._buffer
        if self._schema is None:
            self._fix([pa.field(n, self._infer(n, rows)) for n in self._columns.names])
        arrays = []
        for field in self._schema:
            values = [r.get(field.name) for r in rows]
            if pa.types.is_string(field.type) and any(type(v) is DbText for v in values):
                raise self._misfit(field.name, field.type, values)  # a date/time as text: not silently
            try:
                arrays.append(_array(values, field.type))
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                raise self._misfit(field.name, field.type, values) from None
        self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self._schema))
        self._written += len(rows)
        rows.clear()

    def _fix(self, fields: list[Any]) -> None:
        import pyarrow as pa

        from cdc.formats.parquet.threads import ThreadedParquetWriter

        self._schema = pa.schema(fields)
        self._writer = ThreadedParquetWriter(self._stream, self._schema, dictionary="auto")

    def _like(self, name: str, examples: list[Row]) -> Any:
        """A column's type inferred from rows like the ones a run would have written; text
        where they could not all be written (no row was: the file is valid all the same)."""
        import pyarrow as pa

        try:
            return self._infer(name, examples)
        except InputError:
            return pa.string()

    def _infer(self, name: str, rows: list[Row]) -> Any:
        """The Parquet type of a column, from its values in the first rows: integers past 64
        bits become decimal128 (or decimal256) with scale 0; text stays text."""
        import pyarrow as pa

        if name in self._hints:
            return self._hints[name]
        values = [r.get(name) for r in rows]
        kinds = {_kind(v) for v in values if v is not None}
        if kinds == {"integer"}:
            widest = max(len(str(abs(v))) for v in values if v is not None)
            if widest > MAX_DIGITS:
                raise self._misfit(name, None, values)
            if widest > 18:
                return pa.decimal128(38, 0) if widest <= 38 else pa.decimal256(MAX_DIGITS, 0)
        try:
            inferred = pa.array(values).type
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            raise self._misfit(name, None, values) from None
        return pa.string() if pa.types.is_null(inferred) else inferred

    def _misfit(self, name: str, fixed: Any, values: list[Any]) -> InputError:
        """A value the column's Parquet type cannot hold: which row of the output, and why."""
        first = next((v for v in values if v is not None), None)
        at = _misfit_at(values, fixed, first)
        value = values[at] if values else None
        where = Location("<output>", row=self._written + at + 1)
        if _too_wide(value):
            return InputError(
                f"column {name!r} holds integer {_digits(value)}: no Parquet type holds an integer of more "
                f"than {MAX_DIGITS} digits",
                where=where,
                hint="write JSON lines (-f jsonl), which keep it exactly",
            )
        special = next((v for v in values if type(v) is DbText), None)
        if special is not None:
            at = values.index(special)
            return InputError(
                f"column {name!r} holds {str(special)!r} ({special.what}), which no Parquet date, time or "
                "timestamp column holds",
                where=Location("<output>", row=self._written + at + 1),
                hint="write JSON lines (-f jsonl) or CSV, which keep it as the database shows it; "
                "or decode with --raw-values to keep Debezium's numbers",
            )
        what = f"{_kind(value)} {_clip(value)}" if values else "a value"
        if fixed is None:
            message = f"column {name!r} mixes {_kind(first)} and {what}: one Parquet column holds one type"
        else:
            message = f"column {name!r} is {fixed} (fixed by the first rows) and cannot hold {what}"
        return InputError(
            message,
            where=where,
            hint="write JSON lines (-f jsonl) or CSV, whose values are not typed per column; "
            "or give the column one type in the input",
        )

    def close(self, empty_columns: Sequence[str] = (), examples: Sequence[Row] = ()) -> None:
        """``empty_columns``: the columns of a result with no rows, when they are known;
        ``examples``: rows like the ones it would have had, whose types its columns take."""
        import pyarrow as pa

        if self._schema is None and not self._columns.names:
            self._columns = ColumnSet(empty_columns)  # no row came: a valid file all the same
        if self._schema is None and not self._buffer and examples:
            like = list(examples)
            self._fix([pa.field(n, self._like(n, like)) for n in self._columns.names])
        if self._buffer or self._schema is None:
            self._flush()
        if self._writer is not None:
            self._writer.close()
        self._stream.flush()


MAX_DIGITS = 76  # decimal256's precision: the widest integer a Parquet column holds


def _too_wide(value: Any) -> bool:
    return type(value) is int and len(str(abs(value))) > MAX_DIGITS


def _misfit_at(values: list[Any], fixed: Any, first: Any) -> int:
    """The index of the first value that does not fit: an integer too wide for any Parquet
    type, one of another kind than the first value, or (a type fixed) one the type refuses."""
    import pyarrow as pa

    for i, value in enumerate(values):
        if value is None:
            continue
        if _too_wide(value) or _kind(value) != _kind(first):
            return i
        if fixed is not None:
            try:
                _array([value], fixed)
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                return i
    return 0


def _digits(value: Any) -> str:
    """A wide integer in words: in full up to 100 digits, else its ends and its length."""
    text = str(value)
    digits = len(text.lstrip("-"))
    shown = text if len(text) <= 100 else f"{text[:20]}…{text[-10:]}"
    return f"{shown} ({digits} digits)"


def _kind(value: Any) -> str:
    """A value's kind in words, for messages."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float | Decimal):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _clip(value: Any) -> str:
    from cdc.core.values import json_text

    text = json_text(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _array(values: list[Any], kind: Any) -> Any:
    """An Arrow array of the column's type; integers for a decimal column go in as decimals."""
    import pyarrow as pa

    if pa.types.is_decimal(kind) and any(type(v) is int for v in values):
        values = [Decimal(v) if type(v) is int else v for v in values]
    return pa.array(values, type=kind)
