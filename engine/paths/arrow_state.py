"""The stateful commands on Arrow record batches: Parquet and CSV input never becomes Python rows.

``materialize`` (keyed and multiset, ``--dedup``, ``--as-of``), ``inspect``, ``replay``,
``debezium-encode`` and ``aggregate`` read their input as record batches, gathered into chunks
of about a million rows. A chunk is applied to the state with pyarrow compute kernels: each
change's key becomes a dense group number (``dictionary_encode``), a stable sort by it lines up
every key's changes in input order, and shifted comparisons give each change the change before
it — which is all the state the row path's rules look at. The state between chunks is an Arrow
table too (one row per live key), carried into the next chunk as rows that come first.

The row path stays the reference, and exactness comes first: a chunk whose changes would raise
a finding (an insert of a live key, a retraction of an absent row, a ``-U`` unlike the stored
row, a negative count …) or hold a bad record is not applied here. The state built so far is
handed to the row path's own state (``rows.steps_for``), which takes that chunk and the rest of
the input row by row, with the same messages, locations, counts and ``--strict`` failure.
Output rows go out as Arrow tables (Parquet, CSV, or JSON lines written by ``arrow_json``), or as
rows after a hand-over, through one ``Sink`` so that either way the bytes are the row path's.

Each command's vectorized rules live in ``arrow_rules``; this module reads, chunks, hands over
and writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from cdc.core.errors import CdcError, InputError, Location
from cdc.core.model import Row
from cdc.core.specs import AggregateSpec, EncodeSpec, InspectSpec, MaterializeSpec, ReplaySpec
from cdc.engine.commands import SESSION, Command, implements, lookup
from cdc.engine.empty import Empty, Examples, examples_for
from cdc.engine.handover import hand_over
from cdc.engine.job import Job, Result
from cdc.engine.session import Session, result_skips
from cdc.formats.parquet.io import VECTOR_BATCH_ROWS
from cdc.formats.streams import STDIO

TABULAR = ("parquet", "csv", "tsv")
CHUNK_ROWS = 1 << 20  # changes applied at once: bigger chunks merge state less often, use more memory


def can_run(job: Job) -> bool:
    """Parquet/CSV files in (not stdin)."""
    return bool(job.formats) and all(f in TABULAR for f in job.formats) and STDIO not in job.inputs


def _materialize(spec: MaterializeSpec) -> Any:
    from cdc.engine.paths import arrow_rules

    if spec.as_of is not None:
        from cdc.engine.paths.arrow_versioned import AsOf

        return AsOf
    return arrow_rules.KeyedMaterialize if spec.key else arrow_rules.MultisetMaterialize


def _aggregate(spec: AggregateSpec) -> Any:
    from cdc.engine.paths.arrow_aggregate import Aggregate

    return Aggregate


def _encode(spec: EncodeSpec) -> Any:
    from cdc.engine.paths.arrow_encode import Encode

    return Encode


def _inspect(spec: InspectSpec) -> Any:
    from cdc.engine.paths.arrow_inspect import Inspect

    return Inspect


def _replay(spec: ReplaySpec) -> Any:
    from cdc.engine.paths.arrow_replay import Replay

    return Replay


def rules_for(spec: Any) -> Any:
    """The rules class of a spec's command (``arrow_rules`` and the modules built on it)."""
    command = lookup(COMMANDS, spec)
    return None if command is None else command.do(spec)


def _schema_fits(job: Job) -> bool:
    """The rules take the input's one schema: columns they can compare (no nested values in
    keys or compared rows), and what else they need of the job (``takes_job``)."""
    rules = rules_for(job.spec)
    if rules is None or not getattr(rules, "takes_job", lambda job: True)(job):
        return False
    schema = input_schema(job)
    return schema is not None and bool(rules.takes(job.spec, schema))


ROWS_OUT = SESSION | {"sink"}  # output rows through ``Sink``: a caller's sink too
COMMANDS: dict[type, Command] = {
    MaterializeSpec: implements(
        _materialize,
        "kind_column",
        "key",
        "policy",
        "dedup",
        "as_of",
        "time_column",
        "sort",
        "commit_columns",
        job=ROWS_OUT,
        can_run=_schema_fits,
    ),
    InspectSpec: implements(
        _inspect, "kind_column", "key", "time_column", "commit_columns", job=ROWS_OUT, can_run=_schema_fits
    ),
    ReplaySpec: implements(
        _replay,
        "key",
        "emit",
        "keep_noop",
        "order_by",
        "time_column",
        "since",
        "until",
        "net",
        "input_mode",
        "delete_when",
        "kind_column",
        job=ROWS_OUT,
        can_run=_schema_fits,
    ),
    EncodeSpec: implements(
        _encode, "kind_column", "split_updates", "time_column", "source", "key", can_run=_schema_fits
    ),
    AggregateSpec: implements(
        _aggregate, "query", "input_mode", "kind_column", "policy", job=ROWS_OUT, can_run=_schema_fits
    ),
}


def input_schema(job: Job) -> Any:
    """The one Arrow schema of every input (CSV: text columns), or None when they differ or a
    file cannot be read ahead (the run itself then says what is wrong, on the row path)."""
    import pyarrow as pa

    from cdc.engine.inputs import first_columns

    schema = None
    for path, fmt in zip(job.inputs, job.formats, strict=True):
        if fmt == "parquet":
            from cdc.formats.parquet.io import read_schema

            try:
                found = read_schema(path)
            except Exception:  # noqa: BLE001 - a bad file: the row path names the error
                return None
            found = found.remove_metadata()
        else:
            try:
                names = first_columns(path, fmt)
            except Exception:  # noqa: BLE001 - as above
                return None
            if not names or len(set(names)) != len(names):
                return None
            found = pa.schema([pa.field(n, pa.string()) for n in names])
        if schema is None:
            schema = found
        elif not found.equals(schema):
            return None
    return schema


class ReaderInfo:
    """What the row path's writer learns from its reader: the input's Arrow schema and columns."""

    def __init__(self) -> None:
        self.arrow_schema: Any = None
        self.columns: list[str] | None = None
        self.examples: Examples | None = None  # the first changes, for an empty result


class Sink:
    """A job's output rows, as Arrow tables or as rows (after a hand-over), written as the row
    path writes them: Parquet/CSV through ``arrow.BatchWriter``, JSON lines by ``arrow_json``,
    anything else (print, a caller's sink) as rows through the row path's own writer."""

    def __init__(self, job: Job, current: Session, info: ReaderInfo):
        self.job = job
        self.current = current
        self.info = info
        self.written = 0
        self._batches: Any = None  # arrow.BatchWriter, once a table went out as batches
        self._rows: Any = None  # the row path's writer, once rows went out through it
        self._stream: Any = None  # JSON lines: the output stream

    def _tabular(self) -> bool:
        return self.job.sink is None and self.job.out_format in TABULAR

    def table(self, table: Any) -> None:
        """Output rows as an Arrow table (their columns in order, the kind column first if any)."""
        if not len(table):
            return
        self.written += len(table)
        if self._rows is None and self._tabular():
            if self._batches is None:
                from cdc.engine.paths.arrow import BatchWriter

                self._batches = BatchWriter(self.current.open_output().stream, self.job.out_format)
            # batches of the writer's size: each is a row group, encoded on a thread of its own
            for batch in table.to_batches(max_chunksize=VECTOR_BATCH_ROWS):
                self._batches.write(batch)
        elif self._rows is None and self.job.sink is None and self.job.out_format == "jsonl":
            from cdc.engine.paths.arrow_json import json_lines

            if self._stream is None:
                self._stream = self.current.open_output().stream
            for batch in table.to_batches(max_chunksize=1 << 16):
                self._stream.write(json_lines(batch))
        else:
            self._row_writer().write_rows(table.to_pylist())

    def texts(self, lines: Any, count: int) -> None:
        """Output rows as JSON lines already (``count`` of them): JSON lines output only."""
        assert self.job.sink is None and self.job.out_format == "jsonl"
        if not count:
            return
        self.written += count
        if self._stream is None:
            self._stream = self.current.open_output().stream
        self._stream.write(lines)

    def rows(self, rows: Iterable[Row]) -> None:
        """Output rows as the row path makes them."""
        rows = list(rows)
        if not rows:
            return
        self.written += len(rows)
        if self._batches is not None:
            import pyarrow as pa

            self._batches.write(pa.RecordBatch.from_pylist(rows, schema=self._batches._schema))
        elif self._stream is not None and self._rows is None:
            from cdc.formats.jsonl import JsonlWriter

            self._rows = JsonlWriter(self._stream)
            self._rows.write_rows(rows)
        else:
            self._row_writer().write_rows(rows)

    def _row_writer(self) -> Any:
        if self._rows is None:
            from cdc.engine.tables import make_writer

            self._rows = make_writer(self.job, self.current, self.info)  # type: ignore[arg-type]
        return self._rows

    def close(self, empty: Callable[[], Empty | None] | None) -> int:
        """Finish the file; with nothing written, the row path writes its empty output."""
        if self.written == 0 and self._rows is None:
            from cdc.engine.tables import write_rows

            return write_rows(self.job, self.current, iter(()), self.info, empty)  # type: ignore[arg-type]
        if self._batches is not None:
            self._batches.close()
        if self._rows is not None:
            self._rows.close()
        if self._stream is not None:
            self._stream.flush()
        return self.written


class Exact:
    """The row path's steps, taking over from a chunk on: one row at a time, located."""

    def __init__(self, current: Session, sink: Sink):
        self.steps: Any = None
        self.current = current
        self.sink = sink
        self.here = Location("<inputs>")
        current.where = self.where

    def where(self) -> Location:
        return self.here

    def batch(self, batch: Any, where: Callable[[int], Location], fmt: str) -> None:
        step, bad, sink = self.steps.step, self.current.bad, self.sink
        raw = _raw_parquet if fmt == "parquet" else _raw_delimited("\t" if fmt == "tsv" else ",")
        for i, row in enumerate(batch.to_pylist()):
            self.here = where(i)
            try:
                out = step(row)
            except InputError as err:
                bad(err, raw(row))
                continue
            if out:
                sink.rows(out)

    def finish(self) -> None:
        self.here = AFTER_INPUTS
        self.sink.rows(self.steps.finish())


AFTER_INPUTS = Location("<inputs>")


def _after_inputs() -> Location:
    return AFTER_INPUTS


def _raw_parquet(row: Row) -> str:
    from cdc.formats.jsonl import dumps

    return dumps(row).decode().rstrip("\n")


def _raw_delimited(delimiter: str) -> Callable[[Row], str]:
    def raw(row: Row) -> str:
        from cdc.formats.delimited import DelimitedWriter, format_value

        return DelimitedWriter.line_of(delimiter, [format_value(v) for v in row.values()]).rstrip("\n")

    return raw


def run(job: Job, current: Session) -> Result:
    from cdc.formats.registry import open_reader

    result = Result(path="arrow-state")
    schema = input_schema(job)
    rules = rules_for(job.spec)
    assert rules is not None and schema is not None
    state = rules(job.spec, schema, result)
    info = ReaderInfo()
    examples = info.examples = examples_for(job.spec, job.out_format)
    sink = Sink(job, current, info)
    exact: Exact | None = None
    whole = getattr(state, "whole", False)  # the input as one chunk (a hand-over starts at the first change)
    pending: list[tuple[Any, Callable[[int], Location], str]] = []
    pending_rows = 0
    offset = 0  # changes before the first pending one

    def take_over(reason: str) -> Exact:
        from cdc.engine.paths.rows import steps_for

        hand_over(current, reason)
        holder = Exact(current, sink)
        holder.steps = state.hand_over(steps_for, holder.where)
        return holder

    def flush() -> None:
        """Apply the pending batches: vectorized, or row by row from a hand-over on."""
        nonlocal exact, pending, pending_rows, offset
        batches, pending, rows = pending, [], pending_rows
        pending_rows = 0
        if not batches:
            return
        if exact is None:
            import pyarrow as pa

            table = pa.Table.from_batches([b for b, _, _ in batches])
            if len(batches) > 1:
                table = table.combine_chunks()
            if state.apply(table, offset, sink):
                offset += rows
                return
            exact = take_over("a chunk of changes the vectorized rules do not apply (a finding)")
        for batch, where, fmt in batches:
            exact.batch(batch, where, fmt)
        offset += rows

    for path, fmt in zip(job.inputs, job.formats, strict=True):
        reader: Any = open_reader(path, fmt, current.reject, current.on_bytes)
        if exact is None:
            current.where = reader.location
        try:
            # Parquet in chunks of whole changes; CSV in the reader's blocks (its lines stay exact)
            batches: Iterator[tuple[Any, Callable[[int], Location]]] = (
                reader.batches(CHUNK_ROWS) if fmt == "parquet" else reader.batches()
            )
            while True:
                try:
                    batch, where = next(batches)
                except StopIteration:
                    break
                except CdcError:  # a bad record the reader raises for: the rows before it first
                    flush()
                    raise
                info.arrow_schema, info.columns = reader.arrow_schema, reader.columns
                if examples is not None and not examples.full:
                    examples.add_batch(batch)
                if exact is not None:
                    exact.batch(batch, where, fmt)
                    continue
                if not state.regular(batch):  # a bad record in it: the row path takes it from here
                    bad = "a batch with a bad record (the row path says what is wrong with it)"
                    if whole:  # ... from the first change
                        exact = take_over(bad)
                    flush()
                    if exact is None:
                        exact = take_over(bad)
                    exact.batch(batch, where, fmt)
                    continue
                pending.append((batch, where, fmt))
                pending_rows += len(batch)
                if pending_rows >= CHUNK_ROWS and not whole:
                    flush()
        finally:
            result.read += reader.records
            info.arrow_schema, info.columns = reader.arrow_schema, reader.columns
            reader.close()
    flush()
    current.where = _after_inputs  # where the row path's chained reader is when its inputs are read
    if exact is not None:
        exact.finish()
    else:
        state.finish(sink)
    if getattr(state, "writes", True):
        result.counts.written = sink.close(state.empty(info))
    result_skips(current, result)
    return result
