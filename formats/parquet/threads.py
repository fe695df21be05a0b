"""A Parquet file whose row groups are encoded on several threads at once.

pyarrow encodes a file's column chunks on one thread (its writer's ``use_threads`` is not
exposed), and encoding is most of a Parquet-to-Parquet run. A row group's bytes do not depend
on where in the file it lands; only the footer holds absolute offsets. So each batch is
encoded by pyarrow as a small Parquet file of its own, on a pool thread (pyarrow drops the
GIL); its row group bytes are appended to the output in batch order, and its footer entry,
moved by the offset it landed at, goes into the one footer written at the end. The result is
byte for byte the file one ``pyarrow.parquet.ParquetWriter`` writes from the same batches (with
the same options: the engine's writers choose per column whether a dictionary pays, below).
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO

from cdc.formats.parquet import thrift
from cdc.formats.parquet.thrift import I16, I64, LIST, STRUCT

MAGIC = b"PAR1"
# Field ids in parquet.thrift (FileMetaData, RowGroup, ColumnChunk, ColumnMetaData) read or moved here.
FILE_NUM_ROWS, FILE_ROW_GROUPS = 3, 4
GROUP_COLUMNS, GROUP_FILE_OFFSET, GROUP_ORDINAL = 1, 5, 7
CHUNK_FILE_OFFSET, CHUNK_META, CHUNK_OFFSET_INDEX, CHUNK_COLUMN_INDEX = 2, 3, 4, 6
META_OFFSETS = (9, 10, 11, 14)  # absolute: data, index and dictionary page; bloom filter


def _encoded(schema: Any, batch: Any | None, dictionary: Any = True) -> memoryview:
    """A Parquet file holding ``batch`` as its one row group (no row group for None)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    # pyarrow's defaults, but never a page index: it sits after the row groups with offsets of
    # its own, which _moved cannot move.
    writer = parquet_writer(sink, schema, dictionary)
    try:
        if batch is not None:
            writer.write_table(pa.Table.from_batches([batch], batch.schema), row_group_size=None)
    finally:  # a refused batch still lets go of the writer's buffers
        writer.close()
    return memoryview(sink.getvalue())


def parquet_writer(sink: Any, schema: Any, dictionary: Any = True) -> Any:
    """``pyarrow.parquet.ParquetWriter(sink, schema, use_dictionary=dictionary)`` on a stream,
    with the same options (its defaults), made through ``pyarrow._parquet``: the same bytes."""
    from pyarrow._parquet import ParquetWriter as Writer

    from cdc.formats.parquet.depth import check_depth

    check_depth(schema)
    return Writer(
        sink,
        schema,
        version="2.6",
        compression="snappy",
        use_dictionary=dictionary,
        write_statistics=True,
        use_deprecated_int96_timestamps=False,
        compression_level=None,
        use_byte_stream_split=False,
        column_encoding=None,
        writer_engine_version="V2",
        data_page_version="1.0",
        use_compliant_nested_type=True,
        encryption_properties=None,
        write_batch_size=None,
        dictionary_pagesize_limit=None,
        store_schema=True,
        write_page_index=False,
        write_page_checksum=False,
        sorting_columns=None,
        store_decimal_as_integer=False,
        write_time_adjusted_to_utc=False,
        max_rows_per_page=None,
        bloom_filter_options=None,
        use_content_defined_chunking=False,
    )


DICTIONARY_SHARE = 0.5  # a column is dictionary-encoded when at most this share of its values differ


def dictionary_columns(batch: Any) -> list[str]:
    """The columns whose dictionary pays for itself in this batch: fewer distinct values than
    half its rows. pyarrow encodes every column with a dictionary (and falls back to plain only
    past a 1 MB dictionary page), so in a 64k-row group a column of nearly unique values — ids,
    uuids, amounts, times — is stored as a dictionary of all its values plus an index per row,
    a third larger than its plain values, and slower to write."""
    import pyarrow as pa

    from cdc.formats import arrow_compute as pc

    rows = len(batch)
    chosen = []
    for field, column in zip(batch.schema, batch.columns, strict=True):
        kind = field.type
        if pa.types.is_nested(kind) or pa.types.is_dictionary(kind) or pa.types.is_null(kind) or rows == 0:
            chosen.append(field.name)  # pyarrow's own choice
            continue
        if pa.types.is_boolean(kind):
            continue  # booleans are bit-packed: no dictionary either way
        distinct = pc.call("count_distinct", column).as_py()
        if distinct <= rows * DICTIONARY_SHARE:
            chosen.append(field.name)
    return chosen


class ThreadedParquetWriter:
    """``write_batch`` and ``close``, like ``pyarrow.parquet.ParquetWriter`` on a stream that
    need not seek (a pipe). At most ``threads + 1`` batches are in flight, so memory stays flat.

    ``dictionary`` is pyarrow's ``use_dictionary`` (True: every column), or ``"auto"``: the
    columns ``dictionary_columns`` picks from the first batch, for the whole file."""

    def __init__(self, stream: BinaryIO, schema: Any, threads: int | None = None, dictionary: Any = True):
        from cdc.formats.parquet.depth import check_depth

        check_depth(schema)  # before a byte is written
        self._stream = stream
        self._schema = schema
        self._dictionary = dictionary
        threads = threads or min(4, os.cpu_count() or 1)
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="cdc-parquet")
        self._pending: deque[Future[memoryview]] = deque()
        self._most_pending = threads + 1
        self._position = 0
        self._footer: thrift.Struct = []
        self._row_groups: list[thrift.Struct] = []
        self._rows = 0

    def write_batch(self, batch: Any) -> None:
        if batch.schema != self._schema:
            raise ValueError(f"batch schema {batch.schema} is not the file's {self._schema}")
        if self._dictionary == "auto":
            self._dictionary = dictionary_columns(batch)
        self._pending.append(self._pool.submit(_encoded, self._schema, batch, self._dictionary))
        while len(self._pending) > self._most_pending:
            self._append(self._pending.popleft().result())

    def close(self) -> None:
        try:
            while self._pending:
                self._append(self._pending.popleft().result())
        finally:
            self._pool.shutdown(cancel_futures=True)
        if not self._position:  # no batch: the schema and no row groups
            self._append(_encoded(self._schema, None, True if self._dictionary == "auto" else self._dictionary))
        footer = thrift.with_field(self._footer, FILE_NUM_ROWS, I64, self._rows)
        footer = thrift.with_field(footer, FILE_ROW_GROUPS, LIST, (STRUCT, self._row_groups))
        encoded = thrift.write_struct(footer)
        self._stream.write(encoded + len(encoded).to_bytes(4, "little") + MAGIC)

    def _append(self, encoded: memoryview) -> None:
        footer_size = int.from_bytes(encoded[-8:-4], "little")
        footer_at = len(encoded) - 8 - footer_size
        if encoded[:4] != MAGIC or encoded[-4:] != MAGIC or footer_at < 4:
            raise thrift.ThriftError("pyarrow wrote something that is not a Parquet file")
        footer, _ = thrift.read_struct(bytes(encoded[footer_at:-8]))
        if not self._position:
            self._stream.write(MAGIC)
            self._position = len(MAGIC)
            self._footer = footer
        shift = self._position - len(MAGIC)
        for group in thrift.field(footer, FILE_ROW_GROUPS, (STRUCT, []))[1]:
            self._row_groups.append(_moved(group, shift, ordinal=len(self._row_groups)))
        self._rows += thrift.field(footer, FILE_NUM_ROWS, 0)
        self._stream.write(encoded[len(MAGIC) : footer_at])
        self._position += footer_at - len(MAGIC)


def _moved(group: thrift.Struct, shift: int, ordinal: int) -> thrift.Struct:
    """A row group's footer entry for its bytes moved ``shift`` bytes further into the file."""
    chunks = []
    for chunk in thrift.field(group, GROUP_COLUMNS)[1]:
        if thrift.field(chunk, CHUNK_OFFSET_INDEX) is not None or thrift.field(chunk, CHUNK_COLUMN_INDEX) is not None:
            # Page indexes sit after all row groups and hold offsets of their own; the writer
            # options used here never write them.
            raise thrift.ThriftError("a row group with a page index cannot be moved")
        meta = _shifted(thrift.field(chunk, CHUNK_META), META_OFFSETS, shift)
        chunk = thrift.with_field(chunk, CHUNK_META, STRUCT, meta)
        chunks.append(_shifted(chunk, (CHUNK_FILE_OFFSET,), shift))
    group = _shifted(thrift.with_field(group, GROUP_COLUMNS, LIST, (STRUCT, chunks)), (GROUP_FILE_OFFSET,), shift)
    if thrift.field(group, GROUP_ORDINAL) is not None:
        group = thrift.with_field(group, GROUP_ORDINAL, I16, ordinal)
    return group


def _shifted(fields: thrift.Struct, fids: tuple[int, ...], shift: int) -> thrift.Struct:
    # 0 is no offset (the file's first bytes are its magic): Arrow writes it for the deprecated
    # ColumnChunk.file_offset and for the data page offset of an empty row group.
    return [(fid, kind, value + shift if fid in fids and value else value) for fid, kind, value in fields]
