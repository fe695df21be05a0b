"""Runs a command's row transform from its inputs to its output, accounting for every record."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from typing import Any, Protocol

from cdc.cli.errors import say
from cdc.cli.options import OnError
from cdc.cli.progress import byte_progress
from cdc.core.errors import CdcError, UsageError
from cdc.core.stats import Counts
from cdc.formats.base import Reject, Row, RowReader, RowWriter
from cdc.formats.chunked import Converter, convert_stream
from cdc.formats.jsonl import read_chunks
from cdc.formats.registry import INPUT_FORMATS, input_format, open_inputs, open_writer, output_format
from cdc.formats.rejects import Rejects
from cdc.formats.streams import (
    GZIP_MAGIC,
    PARQUET_MAGIC,
    STDIO,
    ZSTD_MAGIC,
    Output,
    check_input_exists,
    decompressed,
    display_name,
    open_input,
)

Transform = Callable[[RowReader, Reject | None], Iterable[Row]]
# Given the counts to keep, a converter of single JSON lines: the fast JSONL → JSONL path.
FastPath = Callable[[Counts], Converter]
JSON_LINE_FORMATS = ("jsonl", "debezium")
# Given the counts to keep, a converter of Arrow record batches: Parquet/CSV in and out.
VectorPath = Callable[[Counts], Any]
TABULAR = ("parquet", "csv", "tsv")


@dataclass
class IOConfig:
    inputs: Sequence[str] | None
    output: str = STDIO
    input_format: str | None = None
    output_format: str | None = None
    columns: Sequence[str] = ()
    on_error: OnError = OnError.fail
    rejects: str | None = None
    stats: bool = False
    progress: bool | None = None
    kind_column: str | None = None  # set when the output rows carry a kind (print/table colour it)
    command: str = ""

    @property
    def paths(self) -> list[str]:
        return list(self.inputs) if self.inputs else [STDIO]


CHANGELOG_INPUTS = (*INPUT_FORMATS, "debezium")


def changelog_readers(kind_column: str) -> dict[str, Callable[..., RowReader]]:
    """``--input-format debezium``: any command that reads changelog rows can read Debezium events.
    The decoder (one for all inputs: its state spans them) is made when a Debezium input opens."""
    decoders: list[Any] = []

    def debezium(*args: Any, **kwargs: Any) -> RowReader:
        if not decoders:
            from cdc.formats.debezium import DebeziumDecoder, DebeziumOptions

            decoders.append(DebeziumDecoder(DebeziumOptions(kind_column=kind_column)))
        return decoders[0].reader(*args, **kwargs)  # type: ignore[no-any-return]

    return {"debezium": debezium}


def make_writer(out: Output, fmt: str, cfg: IOConfig, reader: RowReader | None, title: str | None = None) -> RowWriter:
    if fmt == "table":
        from cdc.cli.table import TableWriter

        return TableWriter(cfg.kind_column, title)
    hints: dict[str, Any] | None = None
    if fmt == "parquet" and reader is not None and reader.arrow_schema is not None:
        hints = {f.name: f.type for f in reader.arrow_schema}  # a schema, or a list of fields
    return open_writer(out.stream, fmt, cfg.columns or None, cfg.kind_column, hints)


@dataclass
class Session:
    """What a running command holds: its output, its rejects, and the reader to blame."""

    out: Output | None
    rejects: Rejects | None
    on_bytes: Callable[[int], None] | None
    reader: RowReader | None = None

    @property
    def reject(self) -> Callable[..., None] | None:
        return self.rejects.add if self.rejects is not None else None

    def watch(self, reader: RowReader) -> RowReader:
        """Errors are located at this reader's current record; skipped ones are charged to it."""
        self.reader = reader
        if self.rejects is not None:
            self.rejects.reader = reader
        return reader


@contextmanager
def session(cfg: IOConfig, write: bool = True) -> Iterator[Session]:
    """The one place that opens ``-o`` and ``--rejects`` and commits both, or neither.

    On any failure (an error, an interrupt, a closed pipe) the output is rolled back: the
    target keeps its old content and no temporary file is left.
    """
    if cfg.rejects and cfg.on_error != OnError.skip:
        raise UsageError("--rejects needs --on-error skip")
    if cfg.rejects == STDIO:
        raise UsageError("--rejects needs a file name: stdout carries the data")
    for path in cfg.paths:  # before anything peeks at stdin
        check_input_exists(path)
    rejects = Rejects(cfg.rejects) if cfg.on_error == OnError.skip else None
    with byte_progress(cfg.paths, cfg.progress) as on_bytes:
        out = Output(cfg.output) if write else None
        current = Session(out, rejects, on_bytes)
        try:
            yield current
            if out is not None:
                out.commit()
            if rejects is not None:
                rejects.commit()
        except BaseException as exc:
            if isinstance(exc, CdcError) and current.reader is not None:
                exc.located(current.reader.location())
            if out is not None:
                out.abort()
            if rejects is not None:
                rejects.abort()
            raise


def run(
    cfg: IOConfig,
    transform: Transform,
    counts: Counts,
    *,
    readers: dict[str, Callable[..., RowReader]] | None = None,
    input_choices: Sequence[str] = INPUT_FORMATS,
    summary: Callable[[int], str] | None = None,
    fast: FastPath | None = None,
    vector: VectorPath | None = None,
) -> None:
    """Read, transform, write — on the fastest path the formats allow."""
    out_fmt = output_format(cfg.output, cfg.output_format)
    with session(cfg) as current:
        assert current.out is not None
        if fast is not None and out_fmt == "jsonl" and _json_lines_only(cfg, input_choices):
            read = _run_fast(cfg, current, fast(Counts()), counts)
            counts.written = sum(counts.by_kind.values())
        elif vector is not None and out_fmt in TABULAR and not cfg.columns and _tabular_only(cfg, input_choices):
            read = _run_vectorized(cfg, current, vector(counts), out_fmt)
            counts.written = sum(counts.by_kind.values())
        else:
            reader = current.watch(
                open_inputs(cfg.paths, cfg.input_format, current.rejects, current.on_bytes, readers, input_choices)
            )
            rows = iter(transform(reader, current.rejects))
            first = next(rows, None)  # the first row opens the input: Parquet output learns its types
            writer = make_writer(current.out, out_fmt, cfg, reader)
            if first is not None:
                writer.write_rows(chain((first,), rows))
            writer.close()
            read = reader.records
    counts.skipped = current.rejects.count if current.rejects is not None else counts.skipped
    report(cfg, counts, read, current.rejects, summary)


def _json_lines_only(cfg: IOConfig, choices: Sequence[str], formats: Sequence[str] = JSON_LINE_FORMATS) -> bool:
    """Every input is JSON lines (stdin: unless it turns out to be Parquet)."""
    for path in cfg.paths:
        fmt = input_format(path, cfg.input_format, choices)
        if fmt is None:  # stdin without --input-format: sniff, as the generic path would
            peek = getattr(sys.stdin.buffer, "peek", None)
            if peek is None or peek(4)[:4] == PARQUET_MAGIC:
                return False
        elif fmt not in formats:
            return False
    return True


class ChunkFeed(Protocol):
    """A stateful command's consumer of line-aligned chunks (``formats.keyed_lines``)."""

    records: int

    def feed(self, chunk: bytes, source: str, first_line: int, reject: Callable[..., None] | None) -> None: ...

    def finish(self) -> None:
        """After the last chunk, while rejects can still be written."""
        ...


def read_line_chunks(cfg: IOConfig, consumer: ChunkFeed, choices: Sequence[str]) -> bool:
    """Every input's line-aligned chunks, in order, to ``consumer``; False (nothing read)
    unless every input is JSON lines. The chunk-path twin of ``read_all``."""
    if not _json_lines_only(cfg, choices, formats=("jsonl",)):
        return False
    with session(cfg, write=False) as current:
        for path in cfg.paths:
            stream = decompressed(open_input(path, current.on_bytes), display_name(path))
            try:
                for chunk, first in read_chunks(stream):
                    consumer.feed(chunk, display_name(path), first, current.reject)
            finally:
                if path != STDIO:
                    stream.close()
        consumer.finish()
    if current.rejects is not None and current.rejects.count:
        report(cfg, Counts(), consumer.records, current.rejects)
    return True


def _tabular_only(cfg: IOConfig, choices: Sequence[str]) -> bool:
    return all(path != STDIO and input_format(path, cfg.input_format, choices) in TABULAR for path in cfg.paths)


def _run_vectorized(cfg: IOConfig, current: Session, convert: Any, out_fmt: str) -> int:
    """Parquet/CSV → Parquet/CSV on record batches (pyarrow compute, no loop over rows)."""
    from cdc.formats.registry import open_reader
    from cdc.formats.vectorized import BatchWriter

    assert current.out is not None
    writer = BatchWriter(current.out.stream, out_fmt)
    empty_schema = None
    read = 0
    for path in cfg.paths:
        reader: Any = current.watch(
            open_reader(path, input_format(path, cfg.input_format), current.rejects, current.on_bytes)
        )
        try:
            for batch, where in reader.batches():
                converted = convert(batch, where, current.reject)
                empty_schema = converted.schema
                if len(converted):
                    writer.write(converted)
        finally:
            read += reader.records
            reader.close()
    writer.close(empty_schema)
    return read


def _run_fast(cfg: IOConfig, current: Session, converter: Converter, counts: Counts) -> int:
    """The JSONL → JSONL path: chunks converted in worker processes, written in order."""
    assert current.out is not None
    read = 0
    for path in cfg.paths:
        plain = path != STDIO and _plain_file(path)
        # Progress: a plain file is counted by converted chunks (workers read it, not us);
        # anything else by the bytes we read.
        raw = open_input(path, None if plain else current.on_bytes)
        stream = decompressed(raw, display_name(path))
        try:
            read += convert_stream(
                converter,
                stream,
                display_name(path),
                current.out.stream.write,
                counts,
                current.reject,
                on_bytes=current.on_bytes if plain else None,
                path=path if plain else None,
            )
        finally:
            if path != STDIO:
                stream.close()
    current.out.stream.flush()
    return read


def _plain_file(path: str) -> bool:
    """Not gzip or zstd inside, whatever the name says."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    return not head.startswith(GZIP_MAGIC) and head != ZSTD_MAGIC


def read_all(
    cfg: IOConfig,
    consume: Callable[[RowReader, Reject | None], None],
    *,
    readers: dict[str, Callable[..., RowReader]] | None = None,
    input_choices: Sequence[str] = INPUT_FORMATS,
) -> tuple[RowReader, Rejects | None]:
    """For commands that need all of their input before they write (stateful ones)."""
    with session(cfg, write=False) as current:
        reader = current.watch(
            open_inputs(cfg.paths, cfg.input_format, current.rejects, current.on_bytes, readers, input_choices)
        )
        consume(reader, current.rejects)
    if current.rejects is not None and current.rejects.count:
        report(cfg, Counts(), reader.records, current.rejects)
    return reader, current.rejects


def write_rows(cfg: IOConfig, rows: Iterable[Row], reader: RowReader | None = None, title: str | None = None) -> None:
    """Write a finished table to ``-o`` (atomically) or stdout."""
    out_fmt = output_format(cfg.output, cfg.output_format)
    with _committed(cfg) as out:
        writer = make_writer(out, out_fmt, cfg, reader, title)
        writer.write_rows(rows)
        writer.close()


def write_texts(cfg: IOConfig, texts: Sequence[bytes]) -> None:
    """Write a finished table of rows that are JSON texts already, one per line."""
    with _committed(cfg) as out:
        stream = out.stream
        for start in range(0, len(texts), 4096):
            stream.write(b"\n".join(texts[start : start + 4096]) + b"\n")
        stream.flush()


@contextmanager
def _committed(cfg: IOConfig) -> Iterator[Output]:
    """``-o`` replaced only when everything was written (stdout: as it goes)."""
    out = Output(cfg.output)
    try:
        yield out
        out.commit()
    except BaseException:
        out.abort()
        raise


def report(
    cfg: IOConfig, counts: Counts, read: int, rejects: Rejects | None, summary: Callable[[int], str] | None = None
) -> None:
    """Skips are always reported; the full summary with ``--stats``."""
    if cfg.stats:
        say(f"cdc: {cfg.command}: " + (summary(read) if summary else counts.summary(read)))
    if rejects is not None and rejects.count:
        where = f"; written to {cfg.rejects}" if cfg.rejects else "; keep them with --rejects FILE"
        first = f" (first: {rejects.first})" if rejects.first else ""
        say(f"cdc: {cfg.command}: skipped {rejects.count} bad record(s){first}{where}")
