"""Parquet encoded on several threads is the file pyarrow's own writer makes, byte for byte."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.formats.parquet import thrift
from cdc.formats.parquet.threads import ThreadedParquetWriter


def _pyarrow_bytes(schema: Any, batches: list[Any]) -> bytes:
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue()


def _threaded_bytes(schema: Any, batches: list[Any], threads: int) -> bytes:
    sink = io.BytesIO()
    writer = ThreadedParquetWriter(sink, schema, threads=threads)
    for batch in batches:
        writer.write_batch(batch)
    writer.close()
    return sink.getvalue()


MIXED = pa.table(
    {
        "op": pa.array(["INSERT", "UPDATE_BEFORE", None, "DELETE"] * 250),
        "id": pa.array(range(1000), pa.int64()),
        "ratio": pa.array([i / 7 if i % 5 else None for i in range(1000)], pa.float64()),
        "flag": pa.array([i % 3 == 0 for i in range(1000)]),
        "price": pa.array([Decimal(i) / 100 for i in range(1000)], pa.decimal128(12, 2)),
        "at": pa.array([dt.datetime(2026, 1, 1, tzinfo=dt.UTC)] * 1000, pa.timestamp("us", tz="UTC")),
        "tags": pa.array([["a", "ü"][: i % 3] for i in range(1000)], pa.list_(pa.string())),
        "nested": pa.array([{"x": i, "y": str(i)} for i in range(1000)]),
        "country": pa.array(["DE", "FR"] * 500).dictionary_encode(),
    }
)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("rows_per_batch", [7, 97, 1000])
def test_the_file_is_pyarrows_byte_for_byte(threads: int, rows_per_batch: int) -> None:
    batches = MIXED.to_batches(rows_per_batch)
    written = _threaded_bytes(MIXED.schema, batches, threads)
    assert written == _pyarrow_bytes(MIXED.schema, batches)
    assert pq.read_table(io.BytesIO(written)).equals(MIXED)


def test_no_batch_and_an_empty_batch_write_what_pyarrow_writes() -> None:
    assert _threaded_bytes(MIXED.schema, [], 2) == _pyarrow_bytes(MIXED.schema, [])
    empty = pa.RecordBatch.from_pylist([], schema=MIXED.schema)  # an empty row group, data page offset 0
    batches = [empty, *MIXED.to_batches(400), empty]
    assert _threaded_bytes(MIXED.schema, batches, 2) == _pyarrow_bytes(MIXED.schema, batches)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(0, 300), min_size=1, max_size=12),
    values=st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=300, max_size=300),
    texts=st.lists(st.one_of(st.none(), st.text(max_size=12)), min_size=300, max_size=300),
)
def test_any_cut_into_batches_is_pyarrows_file(sizes: list[int], values: list[Any], texts: list[Any]) -> None:
    schema = pa.schema([("n", pa.int64()), ("s", pa.string())])
    batches = [pa.record_batch([pa.array(values[:k], pa.int64()), pa.array(texts[:k])], schema=schema) for k in sizes]
    assert _threaded_bytes(schema, batches, 2) == _pyarrow_bytes(schema, batches)


def test_a_batch_of_another_schema_is_refused() -> None:
    writer = ThreadedParquetWriter(io.BytesIO(), MIXED.schema, threads=2)
    with pytest.raises(ValueError, match="schema"):
        writer.write_batch(pa.record_batch({"other": [1]}))
    writer.close()


def test_a_footer_reads_and_writes_back_unchanged() -> None:
    data = _pyarrow_bytes(MIXED.schema, MIXED.to_batches(300))
    size = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - size : -8]
    fields, end = thrift.read_struct(footer)
    assert end == len(footer)
    assert bytes(thrift.write_struct(fields)) == footer
    assert thrift.field(fields, 3) == MIXED.num_rows  # num_rows, read as the number it is
    with pytest.raises(thrift.ThriftError):
        thrift.read_struct(footer[: len(footer) // 2])


def test_dictionary_auto_is_pyarrows_file_with_those_columns() -> None:
    from cdc.formats.parquet.threads import dictionary_columns

    batches = MIXED.to_batches(97)
    chosen = dictionary_columns(batches[0])
    assert "id" not in chosen and "op" in chosen and "flag" not in chosen  # unique ids: plain
    sink = io.BytesIO()
    writer = ThreadedParquetWriter(sink, MIXED.schema, threads=2, dictionary="auto")
    for batch in batches:
        writer.write_batch(batch)
    writer.close()
    expected = io.BytesIO()
    with pq.ParquetWriter(expected, MIXED.schema, use_dictionary=chosen) as reference:
        for batch in batches:
            reference.write_batch(batch)
    assert sink.getvalue() == expected.getvalue()
    assert pq.read_table(io.BytesIO(sink.getvalue())).equals(MIXED)
