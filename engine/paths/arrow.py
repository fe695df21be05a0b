"""FROM_CHANGELOG / TO_CHANGELOG on Arrow record batches: no Python loop over rows.

For Parquet and CSV in, Parquet and CSV out. The op mapping is a dictionary lookup
(``index_in`` + ``take``), dropped kinds a filter; only bad rows ever leave Arrow, to be named
in an error (by the row path's own words: ``core.convert``) or written to the rejects file.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from cdc.core.convert import bad_kind, bad_op_code
from cdc.core.errors import InputError, Location
from cdc.core.kinds import KIND_BY_TEXT
from cdc.core.rowstore import missing_key
from cdc.core.specs import FromChangelogSpec, ToChangelogSpec
from cdc.core.stats import Counts
from cdc.engine.commands import Command, implements, lookup
from cdc.engine.job import Job, Result
from cdc.engine.session import Session, result_skips
from cdc.formats.jsonl import dumps
from cdc.formats.streams import STDIO

TABULAR = ("parquet", "csv", "tsv")


def can_run(job: Job) -> bool:
    """Parquet/CSV files in (not stdin), Parquet/CSV out: a mapping over whole columns."""
    return (
        job.out_format in TABULAR
        and bool(job.formats)
        and all(f in TABULAR for f in job.formats)
        and STDIO not in job.inputs
    )


def run(job: Job, current: Session) -> Result:
    from cdc.formats.registry import open_reader

    result = Result(path="arrow")
    command = lookup(COMMANDS, job.spec)
    assert command is not None
    convert = command.do(job.spec, result.counts)
    writer = BatchWriter(current.open_output().stream, job.out_format)
    empty_schema = declared = None
    for path, fmt in zip(job.inputs, job.formats, strict=True):
        reader: Any = open_reader(path, fmt, current.reject, current.on_bytes)
        current.where = reader.location
        try:
            for batch, where in reader.batches():
                converted = convert(batch, where, current.reject)
                empty_schema = _as_empty(converted.schema, reader.arrow_schema)
                if len(converted):
                    writer.write(converted)
        finally:
            result.read += reader.records
            if declared is None and reader.columns is not None:
                declared = (reader.columns, reader.arrow_schema)
            reader.close()
    if empty_schema is None and declared is not None:  # no batch: a header, a schema without rows
        empty_schema = _declared_empty(job.spec, *declared)
    writer.close(empty_schema)
    result.counts.written = sum(result.counts.by_kind.values())
    result_skips(current, result)
    return result


def _as_empty(schema: Any, hints: Any) -> Any:
    """The schema of a result without rows as the row path's writer makes it: a column named
    like an input column has its type (so a kind column of nulls only stays of type null)."""
    import pyarrow as pa

    if hints is None:
        return schema
    types = {f.name: f.type for f in hints}
    return pa.schema([pa.field(f.name, types.get(f.name, f.type)) for f in schema])


def _declared_empty(spec: Any, names: list[str], hints: Any) -> Any:
    """The schema of a result without rows of an input without rows that declares its columns,
    as the row path's writer makes it (``empty.empty_result``): a column named like an input
    column has its type, others are text."""
    import pyarrow as pa

    from cdc.engine.empty import empty_result

    shape = empty_result(spec, names, None)
    if shape is None:
        return None
    types = {f.name: f.type for f in hints} if hints is not None else {}
    return pa.schema([pa.field(n, types.get(n, pa.string())) for n in shape.columns])


# (batch, where(i) → location of row i, reject(err, raw)) → the converted batch
BatchConverter = Callable[[Any, Callable[[int], Location], Any], Any]
_MISSING = object()


def _bad_rows(
    batch: Any, invalid: Any, where: Callable[[int], Location], reject: Any, error: Callable[[Any], InputError]
) -> Any:
    """Raise for the first invalid row, or reject every one; returns the mask of rows to keep."""
    from cdc.formats import arrow_compute as pc

    rows = pc.indices_nonzero(invalid).to_pylist()
    for i in rows:
        row = batch.slice(i, 1).to_pylist()[0]
        err = error(row)
        err.where = where(i)
        if reject is None:
            raise err
        reject(err, dumps(row).decode().rstrip("\n"))
    return pc.invert(invalid)


def _as_unmapped(column: Any) -> Any:
    """A code column that is not text maps no row: each is bad, in the row path's words (which
    read the row's own value)."""
    import pyarrow as pa

    return pa.nulls(len(column), pa.string())


def _count(counts: Counts, kinds: Any) -> None:
    from cdc.formats import arrow_compute as pc

    for item in pc.value_counts(kinds).to_pylist():
        if item["values"] is not None:
            counts.by_kind[item["values"]] += item["counts"]


def from_changelog_batches(spec: FromChangelogSpec, counts: Counts) -> BatchConverter:
    import pyarrow as pa

    from cdc.formats import arrow_compute as pc

    codes = list(spec.mapping)
    kinds = pa.array([spec.mapping[c].value for c in codes], pa.string())
    code_set = pa.array(codes, pa.string())
    dropped = pa.array([k.value for k in spec.drop], pa.string())
    kc, op = spec.kind_column, spec.op_column

    def convert(batch: Any, where: Callable[[int], Location], reject: Any) -> Any:
        names = batch.schema.names
        if op not in names:
            raise InputError(
                f"op column {op!r} does not exist in the input schema {names}",
                where=where(0),
                hint="name the op column with --op COLUMN (or pick a --preset)",
            )
        column = batch.column(op)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            column = _as_unmapped(column)
        if kc != op and kc in names:
            raise InputError(
                f"input column {kc!r} collides with the kind column",
                where=where(0),
                hint="rename the kind column with --kind-column NAME",
            )
        for key in spec.keys:
            if key not in names:  # as the row path says it of the first row
                raise missing_key(key, dict.fromkeys(names)).located(where(0))
        index = pc.index_in(column, value_set=code_set)
        keep = None
        invalid = pc.is_null(index)
        if pc.any(invalid).as_py():
            keep = _bad_rows(
                batch, invalid, where, reject, lambda row: bad_op_code(row.get(op, _MISSING), op, spec.mapping)
            )
        kind = pc.take(kinds, index)
        if len(dropped):
            is_dropped = pc.fill_null(pc.is_in(kind, value_set=dropped), False)  # bad rows: null → False
            counts.dropped += pc.sum(is_dropped).as_py() or 0
            not_dropped = pc.invert(is_dropped)
            keep = not_dropped if keep is None else pc.and_(keep, not_dropped)
        rest = [n for n in names if n != op and n not in spec.keys]
        out = pa.RecordBatch.from_arrays(
            [kind, *(batch.column(k) for k in spec.keys), *(batch.column(n) for n in rest)],
            names=[kc, *spec.keys, *rest],
        )
        if keep is not None:
            out = pc.filter(out, keep)
        _count(counts, out.column(0))
        return out

    return convert


def to_changelog_batches(spec: ToChangelogSpec, counts: Counts) -> BatchConverter:
    import pyarrow as pa

    from cdc.formats import arrow_compute as pc

    spellings = list(KIND_BY_TEXT)
    spelling_set = pa.array(spellings, pa.string())
    kinds = pa.array([KIND_BY_TEXT[s].value for s in spellings], pa.string())
    codes = pa.array(
        [None if KIND_BY_TEXT[s] in spec.drop else spec.mapping.get(KIND_BY_TEXT[s]) for s in spellings], pa.string()
    )
    kc, op = spec.kind_column, spec.op_column

    def convert(batch: Any, where: Callable[[int], Location], reject: Any) -> Any:
        names = batch.schema.names
        if kc not in names:  # the row path would say so of the first row, in these words
            first = batch.slice(0, 1).to_pylist()[0] if len(batch) else {}
            raise bad_kind(_MISSING, kc, first).located(where(0))
        column = batch.column(kc)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            column = _as_unmapped(column)
        if op != kc and op in names:
            raise InputError(
                f"input column {op!r} collides with the output op column",
                where=where(0),
                hint="choose another name with --op NAME",
            )
        index = pc.index_in(column, value_set=spelling_set)
        keep = None
        invalid = pc.is_null(index)
        if pc.any(invalid).as_py():
            keep = _bad_rows(batch, invalid, where, reject, lambda row: bad_kind(row.get(kc, _MISSING), kc, row))
        code = pc.take(codes, index)
        kind = pc.take(kinds, index)
        rest = [n for n in names if n != kc]
        out = pa.RecordBatch.from_arrays([code, *(batch.column(n) for n in rest)], names=[op, *rest])
        if keep is None and code.null_count == 0:  # every row kept: no filter, no copy of the batch
            _count(counts, kind)
            return out
        mapped = pc.is_valid(code)
        mapped_and_valid = mapped if keep is None else pc.and_(keep, mapped)
        counts.dropped += pc.sum(pc.and_(pc.is_valid(index), pc.invert(mapped))).as_py() or 0
        _count(counts, pc.filter(kind, mapped_and_valid))
        return pc.filter(out, mapped_and_valid)

    return convert


class BatchWriter:
    """Record batches to Parquet or CSV; the first batch fixes the schema.

    Writing a batch (pyarrow, without the GIL) runs on a thread of its own while the next batch
    is read and converted; Parquet spreads its encoding over more threads still
    (``ThreadedParquetWriter``). At most one batch waits here, so memory stays flat.
    """

    def __init__(self, stream: BinaryIO, fmt: str):
        self._stream = stream
        self._fmt = fmt
        self._writer: Any = None
        self._schema: Any = None
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=1)
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def write(self, batch: Any) -> None:
        import pyarrow as pa

        self._raise_failure()
        if self._writer is None:
            self._schema = batch.schema
            self._writer = self._open(batch.schema)
            self._thread = threading.Thread(target=self._drain, name="cdc-writer", daemon=True)
            self._thread.start()
        elif batch.schema != self._schema:
            try:
                batch = batch.cast(self._schema)
            except (pa.ArrowException, ValueError) as exc:
                raise InputError(f"this input's columns do not match the first input's: {exc}") from exc
        self._queue.put(batch)

    def _drain(self) -> None:
        while (batch := self._queue.get()) is not None:
            if self._failure is None:  # after a failure keep taking batches: the reader must not block
                try:
                    self._writer.write_batch(batch)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
                    self._failure = exc

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def _finish(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._raise_failure()

    def _open(self, schema: Any) -> Any:
        if self._fmt == "parquet":
            from cdc.formats.parquet.threads import ThreadedParquetWriter

            return ThreadedParquetWriter(self._stream, schema, dictionary="auto")
        from cdc.formats.delimited import ArrowCsvWriter

        return ArrowCsvWriter(self._stream, schema, "\t" if self._fmt == "tsv" else ",")

    def close(self, empty_schema: Any = None) -> None:
        """``empty_schema``: the schema of a result without rows, when its columns are known
        (else a Parquet file of no column: a valid file all the same, as the row path writes)."""
        self._finish()
        if self._writer is None and (empty_schema is not None or self._fmt == "parquet"):
            import pyarrow as pa

            self._writer = self._open(empty_schema if empty_schema is not None else pa.schema([]))
        if self._writer is not None:
            self._writer.close()
        self._stream.flush()


# Every column kept, one row at a time (no commit pairing: a change feed goes the row path's way).
COMMANDS: dict[type, Command] = {
    FromChangelogSpec: implements(from_changelog_batches, "op_column", "mapping", "kind_column", "keys", "drop"),
    ToChangelogSpec: implements(to_changelog_batches, "mapping", "op_column", "kind_column", "drop"),
}
