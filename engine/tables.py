"""Where a job's rows go: its output file (or stdout) in its format, or a caller's sink; and the
table state of ``materialize``, whichever path built it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from cdc.core.errors import UsageError
from cdc.core.model import Row
from cdc.core.presets import COMMIT_COLUMNS
from cdc.core.rowstore import strip
from cdc.core.specs import InspectSpec, MaterializeSpec
from cdc.core.state import Findings, TableState, new_state
from cdc.core.timeorder import sort_key
from cdc.core.versioned import VersionedState
from cdc.engine.empty import SHAPED, Empty
from cdc.engine.job import Job
from cdc.engine.session import Session
from cdc.formats.base import RowReader, RowWriter
from cdc.formats.registry import open_writer


def metadata_of(spec: MaterializeSpec | InspectSpec) -> frozenset[str]:
    """The commit columns a changelog's rows may carry: named, or the known ones."""
    return frozenset(COMMIT_COLUMNS if spec.commit_columns is None else spec.commit_columns)


def new_table_state(spec: MaterializeSpec) -> TableState:
    findings = Findings(spec.policy)
    metadata = metadata_of(spec)
    ignored = frozenset(spec.ignore_columns)
    if spec.as_of is not None:
        assert spec.time_column is not None
        return VersionedState(spec.key, spec.time_column, spec.as_of, findings, metadata, ignored)
    return new_state(spec.key, findings, spec.dedup, metadata, ignored)


def table_rows(state: TableState, spec: MaterializeSpec, fill: bool = True) -> Iterable[Row]:
    """The live rows in first-insertion order of their key, or sorted by key (``--sort``), without
    a change feed's commit columns (the table the source system shows has none)."""
    rows: Iterable[Row] = state.rows()
    if state.metadata:
        rows = (strip(row, state.metadata) for row in rows)
    if fill:  # CSV, Parquet, print, table: one set of columns (JSON lines: each row as written)
        rows = all_columns(rows, lambda: state.rows(), state.metadata)
    if not spec.sort:
        return rows
    return sorted(rows, key=lambda r: tuple(sort_key(r.get(c)) for c in (spec.key or list(r))))


def all_columns(
    rows: Iterable[Row], again: Callable[[], Iterable[Row]], metadata: frozenset[str] = frozenset()
) -> Iterable[Row]:
    """A table whose rows do not all have the same columns (``ALTER TABLE … ADD COLUMN`` in the
    middle of the stream: rows last written before it lack the column) as rows of the union of
    the columns, in first-seen order, a missing column null. ``again`` lists the rows once more
    (the state holds them): the first look only collects the names."""
    names: dict[str, None] = {}
    shape: Any = None
    uneven = False
    for row in again():
        keys = row.keys()
        if shape is None:
            shape = keys
            names = dict.fromkeys(keys)
        elif keys != shape:
            uneven = True
            names.update(dict.fromkeys(keys))
    if not uneven:
        return rows
    columns = [c for c in names if c not in metadata]
    return ({c: row.get(c) for c in columns} for row in rows)


def output_kind_column(spec: Any) -> str | None:
    """The column of the output rows that holds their kind (print and table colour it)."""
    if getattr(spec, "writes_kinds", False):
        return str(spec.kind_column)
    return getattr(spec, "output_kind_column", None)


def make_writer(job: Job, current: Session, reader: RowReader | None) -> RowWriter:
    if job.sink is not None:
        return job.sink
    hints: dict[str, Any] | None = None
    if job.out_format == "parquet" and reader is not None and reader.arrow_schema is not None:
        hints = {f.name: f.type for f in reader.arrow_schema}  # a schema, or a list of fields
    out = current.open_output()
    if job.out_format in ("avro", "avro-confluent"):  # formats.avro_write.AVRO_OUTPUTS
        from cdc.formats.avro_write import AvroEventWriter

        if job.avro is None:
            raise UsageError("Avro output is Debezium events: cdc debezium-encode --format avro writes them")
        if reader is not None and reader.arrow_schema is not None:
            hints = {f.name: f.type for f in reader.arrow_schema}
        return AvroEventWriter(out.stream, job.out_format, hints, job.avro)
    writer = open_writer(out.stream, job.out_format, job.columns or None, output_kind_column(job.spec), hints)
    if job.schema_line and job.out_format == "jsonl":
        from cdc.formats.stream_schema import SchemaJsonlWriter

        def declared() -> Any:  # asked once the first rows are read: the types their source declared
            return reader.arrow_schema if reader is not None else None

        return SchemaJsonlWriter(out.stream, writer, metadata_columns(job), declared)
    return writer


def metadata_columns(job: Job) -> list[str]:
    """The output's columns that are metadata, not row identity: decode's --metadata columns, and
    those a schema line read said were; kept where the output has them."""
    spec = job.spec
    names: list[str] = []
    requests = getattr(spec, "metadata", ())  # decode's --metadata NAME[=COLUMN]
    if requests:
        from cdc.core.envelopes.base import metadata_column

        names += [m.partition("=")[2].strip() or metadata_column(m.strip()) for m in requests]
    if job.stream_schema is not None:
        names += list(job.stream_schema.metadata)
    return list(dict.fromkeys(names))


def selected(rows: Iterable[Row], columns: Sequence[str]) -> Iterator[Row]:
    """``--columns``: these columns, in this order, whatever the format (missing ones null)."""
    for row in rows:
        yield {c: row.get(c) for c in columns}


def write_rows(
    job: Job,
    current: Session,
    rows: Iterable[Row],
    reader: RowReader | None = None,
    empty: Callable[[], Empty | None] | None = None,
) -> int:
    """Write rows to the job's output; returns how many. A result with no rows still makes a
    valid file: with its header or schema when ``--columns`` or ``empty`` knows them."""
    count = 0

    def counted(rows: Iterable[Row]) -> Iterator[Row]:
        nonlocal count
        for row in rows:
            count += 1
            yield row

    writer = make_writer(job, current, reader)
    writer.write_rows(counted(selected(rows, job.columns) if job.columns else rows))
    shape = empty() if count == 0 and empty is not None and job.out_format in SHAPED else None
    if shape is None:
        writer.close()
    elif job.out_format == "parquet":
        writer.close(shape.columns, shape.examples)  # type: ignore[call-arg]
    else:
        writer.close(shape.columns)  # type: ignore[call-arg]
    return count


def write_texts(job: Job, current: Session, texts: Sequence[bytes]) -> int:
    """Write rows that are compact JSON texts already, one per line (JSON lines out)."""
    stream = current.open_output().stream
    for start in range(0, len(texts), 4096):
        stream.write(b"\n".join(texts[start : start + 4096]) + b"\n")
    stream.flush()
    return len(texts)
