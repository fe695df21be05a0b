"""JSON lines → JSON lines at speed: line-aligned chunks converted in worker processes, in order.

Stateless conversions (from-changelog, to-changelog, decode without a key) are a function of
one input line, so the input is cut into ~1 MB chunks at line ends; two forked workers
(``workers``) convert chunks while the main process writes results in input order. Small inputs
are converted in-process with the same chunk loop. Each line is parsed and converted the general
way (the row path's own steps); where the C kernel is built and implements the spec's options
(``native.kernel.COMMANDS``), it converts the lines it is sure of as bytes first: the
kernel-lines path (``kernel_lines.py``).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, BinaryIO, Protocol

import orjson

from cdc.core.errors import InputError, Location
from cdc.core.model import Reject, Row
from cdc.core.specs import DecodeSpec, FromChangelogSpec, ToChangelogSpec
from cdc.core.stats import Counts
from cdc.engine import workers
from cdc.engine.commands import Command, implements, lookup
from cdc.engine.job import Job, Result
from cdc.engine.paths.native.kernel import count_lines
from cdc.engine.session import Session, result_skips
from cdc.formats.jsonl import (
    BOM,
    CHUNK_BYTES,
    WRITE,
    bad_line_error,
    dumps,
    encode_default,
    loads_for,
    not_an_object_message,
    read_chunks,
)
from cdc.formats.streams import GZIP_MAGIC, STDIO, ZSTD_MAGIC, decompressed, display_name, open_input

# A converter gets one parsed line (None for a tombstone when it accepts them) and the raw
# line, and returns the rows to write; bad input raises InputError.
LineConverter = Callable[[Any, bytes], "tuple[Row, ...] | list[Row]"]
JSON_LINES = "jsonl"


class Kernel(Protocol):
    """Converts lines from ``start`` until one it declines: (output, that line's position, lines)."""

    def __call__(self, chunk: bytes, start: int) -> tuple[bytes, int, int]: ...

    def declined_run(self, chunk: bytes, position: int) -> int:
        """The end of the lines from ``position`` that are surely declined (at least that line)."""
        ...

    def run_parser(self, loads: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
        """How to parse the lines of that run, given the general way's parser."""
        ...


@dataclass
class Converter:
    convert: LineConverter
    counts: Counts
    tombstones: bool = False  # blank lines and null are passed on (envelopes) instead of skipped
    kernel: Kernel | None = None  # the C kernel: (chunk, start) → (output, position, lines)


def can_run(job: Job) -> bool:
    """JSON lines out, as bytes (no caller's sink: the job would declare one)."""
    return job.out_format == JSON_LINES


def _json_lines_in(job: Job) -> bool:
    return bool(job.formats) and all(f == JSON_LINES for f in job.formats)


def _one_format_in(job: Job) -> bool:
    """Changelog rows, or envelopes decoded on the way in (one kind of input)."""
    return len(set(job.formats)) == 1 and (job.formats[0] == JSON_LINES or _stateless_envelope(job))


def _decided_stateless(job: Job) -> bool:
    """Its envelope decided (resolve), and no state across events."""
    spec = job.spec
    return bool(spec.stateless and spec.envelope != "auto")


def _stateless_envelope(job: Job) -> bool:
    from cdc.formats.envelopes import ENVELOPES

    return job.formats[0] in ENVELOPES


def _from_changelog(job: Job, counts: Counts, with_kernel: bool) -> Converter:
    from cdc.core.convert import FromChangelogRow
    from cdc.engine.paths.native import kernel as native

    kernel = native.kernel_for(job.spec, counts) if with_kernel else None
    return Converter(FromChangelogRow(job.spec, counts), counts, kernel=kernel)


def _to_changelog(job: Job, counts: Counts, with_kernel: bool) -> Converter:
    from cdc.core.convert import ToChangelogRow
    from cdc.engine.paths.native import kernel as native
    from cdc.formats.envelopes import ENVELOPES, decoder_for

    spec = job.spec
    convert = ToChangelogRow(spec, counts)
    if job.formats[0] in ENVELOPES:  # e.g. -i debezium: decoded, then converted
        # the rows are counted once, as converted; the decoder's notes (tombstones) are the command's
        decoded_counts = Counts(notes=counts.notes)
        decode = decoder_for(DecodeSpec(envelope=job.formats[0], kind_column=spec.kind_column), decoded_counts).decode

        def decoded(event: Any, raw: bytes) -> list[Row]:
            return [out for row in decode(event, raw) for out in convert(row)]

        return Converter(decoded, counts, tombstones=True)
    kernel = native.kernel_for(spec, counts) if with_kernel else None
    return Converter(convert, counts, kernel=kernel)


def _decode(job: Job, counts: Counts, with_kernel: bool) -> Converter:
    from cdc.engine.paths.native import kernel as native
    from cdc.formats.envelopes import decoder_for

    decoder = decoder_for(job.spec, counts)
    kernel = native.kernel_for(job.spec, counts, decoder) if with_kernel else None
    return Converter(decoder.fast_decode(), counts, tombstones=True, kernel=kernel)


# A conversion of one line at a time, every column kept; JSON lines out (``can_run``).
FROM_CHANGELOG = ("op_column", "mapping", "kind_column", "keys", "drop")
TO_CHANGELOG = ("mapping", "op_column", "kind_column", "drop")
DECODE = (
    "envelope",
    "kind_column",
    "schema_include",
    "raw_values",
    "metadata",
    "on_truncate",
    "database_include",
    "table_include",
    "bootstrap",
    "policy",  # the decoder's own (Debezium findings)
    "unavailable_placeholder",
)
COMMANDS: dict[type, Command] = {
    FromChangelogSpec: implements(_from_changelog, *FROM_CHANGELOG, can_run=_json_lines_in),
    ToChangelogSpec: implements(_to_changelog, *TO_CHANGELOG, can_run=_one_format_in),
    DecodeSpec: implements(_decode, *DECODE, can_run=_decided_stateless),
}


def converter_for(job: Job, counts: Counts, with_kernel: bool) -> Converter:
    """One line's conversion, the general way (the row path's own steps), and the kernel's."""
    command = lookup(COMMANDS, job.spec)
    assert command is not None, type(job.spec).__name__
    converter: Converter = command.do(job, counts, with_kernel)
    return converter


def run(job: Job, current: Session, with_kernel: bool = False) -> Result:
    """Every input's lines converted in order and written to the output."""
    result = Result(path="kernel-lines" if with_kernel else "lines")
    out = current.open_output()
    converter = converter_for(job, Counts(), with_kernel)
    for path in job.inputs:
        plain = path != STDIO and _plain_file(path)
        # Progress: a plain file is counted by converted chunks (workers read it, not us);
        # anything else by the bytes we read.
        stream = decompressed(open_input(path, None if plain else current.on_bytes), display_name(path))
        try:
            result.read += convert_stream(
                converter,
                stream,
                display_name(path),
                out.stream.write,
                result.counts,
                current.reject,
                on_bytes=current.on_bytes if plain else None,
                path=path if plain else None,
            )
        finally:
            if path != STDIO:
                stream.close()
    out.stream.flush()
    result.counts.written = sum(result.counts.by_kind.values())
    result_skips(current, result)
    return result


def _plain_file(path: str) -> bool:
    """Not gzip or zstd inside, whatever the name says."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    return not head.startswith(GZIP_MAGIC) and head != ZSTD_MAGIC


@dataclass
class ChunkResult:
    data: bytes
    records: int
    rejects: list[tuple[int, str, str | None, str]] = field(default_factory=list)  # (line, message, hint, raw)
    error: tuple[int, str, str | None] | None = None  # (line, message, hint) under fail
    by_kind: Counter[str] = field(default_factory=Counter)
    dropped: int = 0
    notes: Counter[str] = field(default_factory=Counter)
    lines: int = 0  # newlines in the chunk (range tasks: the parent numbers lines from them)
    shared: tuple[int, int] | None = None  # (offset, length) of ``data`` in the shared slots instead


def convert_chunk(converter: Converter, chunk: bytes, first_line: int, skip: bool) -> ChunkResult:
    """Convert the lines of one chunk; line numbers start at ``first_line``."""
    result = ChunkResult(b"", 0)
    if converter.kernel is not None:
        result.data = _convert_with_kernel(converter, converter.kernel, chunk, first_line, skip, result)
    else:
        result.data = _convert_lines(converter, chunk, first_line, skip, result)
    return _take_counts(converter, result)


def _take_counts(converter: Converter, result: ChunkResult) -> ChunkResult:
    """Move the counts the chunk added from the converter into its result. The counters are
    copied and cleared, not swapped: a converter may hold on to them (``fast_decode``)."""
    counts = converter.counts
    result.by_kind = Counter(counts.by_kind)
    result.notes = Counter(counts.notes)
    result.dropped = counts.dropped
    counts.by_kind.clear()
    counts.notes.clear()
    counts.dropped = 0
    return result


def _convert_with_kernel(
    converter: Converter, kernel: Kernel, chunk: bytes, first_line: int, skip: bool, result: ChunkResult
) -> bytes:
    """The kernel converts lines until one it declines; that line goes the general way."""
    out: list[bytes] = []
    position, line_no, size = 0, first_line, len(chunk)
    while position < size:
        data, position, lines = kernel(chunk, position)
        out.append(data)
        result.records += lines
        line_no += lines
        if position >= size:
            break
        end = kernel.declined_run(chunk, position)
        out.append(_convert_lines(converter, chunk[position:end], line_no, skip, result, kernel.run_parser))
        if result.error is not None:
            break
        line_no += chunk.count(b"\n", position, end) + (end == size and not chunk.endswith(b"\n"))
        position = end
    return b"".join(out)


def _convert_lines(
    converter: Converter,
    chunk: bytes,
    first_line: int,
    skip: bool,
    result: ChunkResult,
    parser: Callable[[Callable[[bytes], Any]], Callable[[bytes], Any]] | None = None,
) -> bytes:
    """The general way: each line parsed (numbers keep their spelling) and converted as a row."""
    loads = loads_for(chunk)
    if parser is not None:
        loads = parser(loads)
    convert = converter.convert
    tombstones = converter.tombstones
    opts = WRITE
    fast = orjson.dumps
    parts: list[bytes] = []
    append = parts.append
    lines = chunk.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    line_no = first_line - 1
    for line in lines:
        line_no += 1
        try:
            event = loads(line)
        except ValueError:  # orjson.JSONDecodeError is one
            if not line.strip():
                if not tombstones:
                    continue
                event = None
            else:
                result.records += 1
                err = bad_line_error(line, line_no)
                if not skip:
                    result.error = (line_no, err.message, err.hint)
                    break
                result.rejects.append((line_no, err.message, err.hint, _text(line)))
                continue
        result.records += 1
        if type(event) is not dict and not (event is None and tombstones):
            message = not_an_object_message(event, line)
            if not skip:
                result.error = (line_no, message, None)
                break
            result.rejects.append((line_no, message, None, _text(line)))
            continue
        try:
            rows = convert(event, line)
        except InputError as err:
            if not skip:
                result.error = (line_no, err.message, err.hint)
                break
            result.rejects.append((line_no, err.message, err.hint, _text(line)))
            continue
        for row in rows:
            try:
                append(fast(row, default=encode_default, option=opts))
            except TypeError:
                append(dumps(row))
    return b"".join(parts)


def _text(line: bytes) -> str:
    return line.decode("utf-8", "backslashreplace").rstrip("\r")


# -- the worker side: the converter is inherited through fork, never pickled ------------------

_FILES: dict[str, int] = {}  # path → descriptor, per worker


def _shared(result: ChunkResult, slot: int) -> ChunkResult:
    shared = workers.to_slot(result.data, slot)
    if shared is not None:
        result.data, result.shared = b"", shared
    return result


def _work(task: tuple[int, tuple[bytes, int]]) -> ChunkResult:
    converter, skip = workers.payload()
    slot, (chunk, line) = task
    return _shared(convert_chunk(converter, chunk, line, skip), slot)


def _work_range(task: tuple[int, tuple[str, int, int]]) -> ChunkResult:
    """A byte range of a plain file, read by the worker itself: no input crosses the pipe.
    Line numbers in the result count from 1 at the range's start; the parent adds the offset."""
    converter, skip = workers.payload()
    slot, (path, start, end) = task
    fd = _FILES.get(path)
    if fd is None:
        fd = _FILES[path] = os.open(path, os.O_RDONLY)
    chunk = os.pread(fd, end - start, start)
    if start == 0 and chunk.startswith(BOM):
        chunk = chunk[3:]
    result = convert_chunk(converter, chunk, 1, skip)
    result.lines = count_lines(chunk)
    return _shared(result, slot)


def convert_stream(
    converter: Converter,
    stream: BinaryIO,
    source: str,
    write: Callable[[bytes | memoryview], Any],
    counts: Counts,
    reject: Reject,
    skip: bool | None = None,
    on_bytes: Callable[[int], None] | None = None,
    n_workers: int = 2,
    path: str | None = None,
) -> int:
    """Convert one input; returns the records read. Raises the first bad record under fail.

    ``path`` (a plain, uncompressed file) lets workers read their byte ranges themselves.
    """
    from cdc.core.model import fail_on_bad

    skipping = reject is not fail_on_bad if skip is None else skip
    records = 0
    base = 0  # lines before the chunk being absorbed (range tasks number lines from 1)

    def absorb(result: ChunkResult, size: int, relative: bool = False) -> None:
        nonlocal records, base
        offset = base if relative else 0
        if result.shared is not None:
            with workers.from_slot(result.shared) as data:
                write(data)
        else:
            write(result.data)
        records += result.records
        counts.by_kind.update(result.by_kind)
        counts.notes.update(result.notes)
        counts.dropped += result.dropped
        for line, message, hint, raw in result.rejects:
            reject(InputError(message, where=Location(source, offset + line), hint=hint), raw)
        if on_bytes is not None:
            on_bytes(size)
        if result.error is not None:
            line, message, hint = result.error
            raise InputError(message, where=Location(source, offset + line), hint=hint)
        base += result.lines

    parallel = n_workers >= 2 and workers.parallel_ok()
    if path is not None and parallel and os.path.getsize(path) > 2 * CHUNK_BYTES:
        ranges = ((path, start, end) for start, end in workers.line_ranges(path))
        for result, (_, start, end) in workers.ordered(_work_range, ranges, (converter, skipping), n_workers):
            absorb(result, end - start, relative=True)
        return records

    chunks = read_chunks(stream, count_lines=count_lines)
    head = [c for _, c in zip(range(2), chunks, strict=False)]
    if len(head) < 2 or not parallel:  # small input: no processes to start
        workers.keep_heap_memory()
        for chunk, line in chain(head, chunks):
            absorb(convert_chunk(converter, chunk, line, skipping), len(chunk))
        return records
    for result, (chunk, _) in workers.ordered(_work, chain(head, chunks), (converter, skipping), n_workers):
        absorb(result, len(chunk))
    return records
