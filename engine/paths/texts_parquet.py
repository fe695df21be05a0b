"""A table held as compact JSON texts (the keyed kernel's rows) → Parquet, a block at a time.

Parsing every live row into a dict only for the Parquet writer to take it apart again cost most
of a run at size (10M keys: 140 s, 5 GB, where JSON lines out took 15 s). Here the first
``BATCH_ROWS`` rows go to the writer as rows (they fix the file's schema, as on every path); the
rest, in blocks of that many, are joined into JSON lines and read by pyarrow's JSON reader
against that schema on two pool threads (it lets go of the GIL), then written as Arrow tables in
order. A block pyarrow may read otherwise than the row path (a type the writer gives otherwise,
``NaN``, a number a double cannot hold, a column the schema lacks, a value of another type) goes
the row path's way: parsed line by line and given to the writer as rows, which says what does not
fit in its own words. Each block's texts are let go once it is joined: no second full copy.
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from cdc.engine.empty import Empty
from cdc.engine.job import Job
from cdc.engine.session import Session

IN_FLIGHT = 3  # blocks parsed ahead of the writer


def takes(job: Job) -> bool:
    """Parquet out, every column, in first-insertion order, to a file (which a table whose rows
    gain a column late can be written to again: see ``write_parquet``)."""
    from cdc.formats.streams import STDIO

    return (
        job.writes_bytes
        and job.out_format == "parquet"
        and not job.columns
        and not job.spec.sort
        and job.output != STDIO
    )


class Uneven(Exception):
    """A row with a column the first rows lack: the table is the union of its rows' columns."""


def write_parquet(job: Job, current: Session, texts: Sequence[bytes], empty: Callable[[], Empty | None]) -> int:
    """Write the rows ``texts`` hold (JSON objects, compact) as Parquet; returns how many. A row
    with a column the first rows lack (which a block read against their schema finds) makes the
    file again from the start, the row path's way: the table is the union of its rows' columns."""
    from cdc.formats.parquet.io import BATCH_ROWS

    def blocks() -> Iterator[bytes]:
        total = len(texts)
        for start in range(0, total, BATCH_ROWS):
            yield b"\n".join(texts[start : min(start + BATCH_ROWS, total)])  # type: ignore[arg-type]

    try:
        return write_blocks(job, current, blocks(), empty)
    except Uneven:
        output = current.output
        if output is None or not output.atomic:
            raise AssertionError("texts_parquet takes files only") from None
        from cdc.engine.tables import all_columns, write_rows
        from cdc.formats.jsonl import loads_for
        from cdc.formats.streams import Output

        output.abort()  # begun again the row path's way: every row, the union of their columns
        current.output = Output(job.output)

        def rows() -> Iterator[Any]:
            return (loads_for(t)(t) for t in texts)  # type: ignore[arg-type]

        return write_rows(job, current, all_columns(rows(), rows), empty=empty)


def write_blocks(job: Job, current: Session, blocks: Iterable[bytes], empty: Callable[[], Empty | None]) -> int:
    """Write blocks of ``BATCH_ROWS`` rows (the last may be short) as Parquet, each block JSON
    objects one a line (no final newline); returns how many rows."""
    from cdc.formats.parquet import ParquetWriter

    writer = ParquetWriter(current.open_output().stream)
    total = 0
    schema: Any = None
    pool: Any = None
    pending: deque[tuple[Any, bytes]] = deque()

    def by_rows(block: bytes) -> None:
        rows = list(_rows(block))
        fixed = writer.fixed_schema
        if fixed is not None:
            names = set(fixed.names)
            if any(not (row.keys() <= names) for row in rows):
                raise Uneven
        writer.write_rows(rows)

    def drain_one() -> None:
        future, block = pending.popleft()
        table = future.result()
        if table is None:
            by_rows(block)
        else:
            writer.write_table(table)

    try:
        for block in blocks:
            rows = block.count(b"\n") + 1
            total += rows
            if schema is None:
                writer.write_rows(_rows(block))
                schema = _parse_schema(writer.fixed_schema)
                if schema is not None:
                    from concurrent.futures import ThreadPoolExecutor

                    pool = ThreadPoolExecutor(2, thread_name_prefix="cdc-json")
                continue
            if pool is None:
                by_rows(block)
                continue
            pending.append((pool.submit(_read, block, rows, schema), block))
            while len(pending) > IN_FLIGHT:
                drain_one()
        while pending:
            drain_one()
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    shape = empty() if total == 0 else None
    if shape is None:
        writer.close()
    else:
        writer.close(shape.columns, shape.examples)
    return total


def _rows(block: bytes) -> Any:
    """The block's rows parsed as the row path parses them (numbers as written)."""
    from cdc.formats.jsonl import loads_for

    loads = loads_for(block)
    return (loads(line) for line in block.split(b"\n"))


def _parse_schema(schema: Any) -> Any:
    """What blocks are read against: the file's schema when pyarrow reads each of its types as
    the row path's writer makes it (64-bit integers, doubles, booleans, text), else None."""
    import pyarrow as pa

    if schema is None:
        return None
    plain = (pa.types.is_int64, pa.types.is_float64, pa.types.is_boolean, pa.types.is_string)
    if not all(any(test(f.type) for test in plain) for f in schema):
        return None
    return schema


def _read(block: bytes, rows: int, schema: Any) -> Any:
    """The block as a table of ``schema`` (None: not sure to be the row path's reading)."""
    import pyarrow as pa
    import pyarrow.json as pj

    from cdc.engine.paths.lines_arrow import different

    if b"NaN" in block or b"Infinity" in block or different(block):
        return None
    try:
        table = pj.read_json(
            io.BytesIO(block),
            read_options=pj.ReadOptions(use_threads=False, block_size=len(block) + 1),
            parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    if len(table) != rows:
        return None
    table = table.select(schema.names)
    return table if table.schema.equals(schema) else None
