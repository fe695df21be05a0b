"""JSON lines → JSON lines at speed: line-aligned chunks converted in worker processes, in order.

Stateless conversions (from-changelog, to-changelog, debezium-decode without a key) are a
function of one input line, so the input is cut into ~1 MB chunks at line ends; two forked
workers convert chunks while the main process reads ahead and writes results in input order.
Small inputs are converted in-process with the same chunk loop.
"""

from __future__ import annotations

import mmap
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, BinaryIO, Protocol

import orjson

from cdc.core.errors import InputError, Location
from cdc.core.stats import Counts
from cdc.formats.jsonl import (
    BOM,
    CHUNK_BYTES,
    bad_line_message,
    count_lines,
    dumps,
    encode_default,
    loads_for,
    not_an_object_message,
    read_chunks,
)

IN_FLIGHT = 6  # chunks read ahead of the writer: memory stays flat whatever the input size
# Workers hand their output back through shared memory, one slot per chunk in flight: a pipe
# moves a megabyte in 64 KB pieces, each a context switch, which cost more than converting it.
SLOT_BYTES = 4 * CHUNK_BYTES
# A converter gets one parsed line (None for a tombstone when it accepts them) and the raw
# line, and returns the rows to write; bad input raises InputError.
LineConverter = Callable[[Any, bytes], "tuple[dict[str, Any], ...] | list[dict[str, Any]]"]


class Splice(Protocol):
    """Converts a whole chunk of lines as bytes (formats.splice), or declines it (None)."""

    def __call__(self, chunk: bytes) -> tuple[bytes, int] | None: ...

    def takes(self, line: bytes) -> bool:
        """False for a line it would certainly decline (checked when a chunk was declined)."""
        ...


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
    tombstones: bool = False  # blank lines and null are passed on (Debezium) instead of skipped
    # Converts whole chunks as bytes (formats.splice); a chunk it declines goes line by line.
    splice: Splice | None = None
    # The C kernel (formats.kernel): (chunk, start) → (output, position it stopped at, lines).
    kernel: Kernel | None = None


@dataclass
class ChunkResult:
    data: bytes
    records: int
    rejects: list[tuple[int, str, str]] = field(default_factory=list)  # (line, message, raw)
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
        return _take_counts(converter, result)
    splice = converter.splice if converter.splice is not None and _valid_utf8(chunk) else None
    spliced = splice(chunk) if splice is not None else None
    if spliced is not None:
        result.data, result.records = spliced
    elif splice is not None:
        result.data = _convert_mixed(converter, splice, chunk, first_line, skip, result)
    else:
        result.data = _convert_lines(converter, chunk, first_line, skip, result)
    return _take_counts(converter, result)


def _take_counts(converter: Converter, result: ChunkResult) -> ChunkResult:
    """Move the counts the chunk added from the converter into its result."""
    counts = converter.counts
    result.by_kind, counts.by_kind = counts.by_kind, Counter()
    result.notes, counts.notes = counts.notes, Counter()
    result.dropped, counts.dropped = counts.dropped, 0
    return result


def _convert_with_kernel(
    converter: Converter,
    kernel: Kernel,
    chunk: bytes,
    first_line: int,
    skip: bool,
    result: ChunkResult,
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


def _convert_mixed(
    converter: Converter, splice: Splice, chunk: bytes, first_line: int, skip: bool, result: ChunkResult
) -> bytes:
    """A chunk the splice declined: runs of lines it may take are spliced together, one line at a
    time if the run is declined too, and the rest go the general way. Whether a line is spliced
    depends on that line alone, so it is written the same however the input was cut in chunks."""
    lines = chunk.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out: list[bytes] = []

    def general(i: int) -> None:
        out.append(_convert_lines(converter, lines[i] + b"\n", first_line + i, skip, result))

    def run(start: int, end: int) -> None:
        if start < end:
            spliced = splice(b"\n".join(lines[start:end]) + b"\n")
            if spliced is not None:
                out.append(spliced[0])
                result.records += spliced[1]
                return
        for i in range(start, end):
            spliced = splice(lines[i] + b"\n") if end - start > 1 else None
            if spliced is None:
                general(i)
                if result.error is not None:
                    return
            else:
                out.append(spliced[0])
                result.records += 1

    start = 0
    for i, line in enumerate(lines):
        if not splice.takes(line):
            run(start, i)
            if result.error is None:
                general(i)
            if result.error is not None:
                break
            start = i + 1
    else:
        run(start, len(lines))
    return b"".join(out)


def _convert_lines(
    converter: Converter,
    chunk: bytes,
    first_line: int,
    skip: bool,
    result: ChunkResult,
    parser: Callable[[Callable[[bytes], Any]], Callable[[bytes], Any]] | None = None,
) -> bytes:
    """The general way: each line parsed by orjson and converted as a row."""
    loads = loads_for(chunk)
    if parser is not None:
        loads = parser(loads)
    convert = converter.convert
    tombstones = converter.tombstones
    opts = orjson.OPT_APPEND_NEWLINE
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
        except (orjson.JSONDecodeError, ValueError):
            if not line.strip():
                if not tombstones:
                    continue
                event = None
            else:
                result.records += 1
                message = bad_line_message(line)
                if not skip:
                    result.error = (line_no, message, None)
                    break
                result.rejects.append((line_no, message, _text(line)))
                continue
        result.records += 1
        if type(event) is not dict and not (event is None and tombstones):
            message = not_an_object_message(event, line)
            if not skip:
                result.error = (line_no, message, None)
                break
            result.rejects.append((line_no, message, _text(line)))
            continue
        try:
            rows = convert(event, line)
        except InputError as err:
            if not skip:
                result.error = (line_no, err.message, err.hint)
                break
            result.rejects.append((line_no, err.message, _text(line)))
            continue
        for row in rows:
            try:
                append(fast(row, default=encode_default, option=opts))
            except TypeError:
                append(dumps(row))
    return b"".join(parts)


def _valid_utf8(chunk: bytes) -> bool:
    """msgspec skips over string values it is not asked for without checking their UTF-8;
    orjson on the general path names the bad line."""
    if chunk.isascii():
        return True
    try:
        chunk.decode()
    except UnicodeDecodeError:
        return False
    return True


def _text(line: bytes) -> str:
    return line.decode("utf-8", "backslashreplace").rstrip("\r")


# -- the worker side: the converter is inherited through fork, never pickled ------------------

_WORKER: tuple[Converter, bool] | None = None
_SLOTS: mmap.mmap | None = None  # shared with the workers: made before they fork


def _to_slot(result: ChunkResult, slot: int) -> ChunkResult:
    size = len(result.data)
    if _SLOTS is not None and size <= SLOT_BYTES:
        offset = slot * SLOT_BYTES
        _SLOTS[offset : offset + size] = result.data
        result.data, result.shared = b"", (offset, size)
    return result


def _work(task: tuple[int, tuple[bytes, int]]) -> ChunkResult:
    assert _WORKER is not None
    converter, skip = _WORKER
    slot, (chunk, line) = task
    return _to_slot(convert_chunk(converter, chunk, line, skip), slot)


_FILES: dict[str, int] = {}  # path → descriptor, per worker


def _work_range(task: tuple[int, tuple[str, int, int]]) -> ChunkResult:
    """A byte range of a plain file, read by the worker itself: no input crosses the pipe.
    Line numbers in the result count from 1 at the range's start; the parent adds the offset."""
    assert _WORKER is not None
    converter, skip = _WORKER
    slot, (path, start, end) = task
    fd = _FILES.get(path)
    if fd is None:
        fd = _FILES[path] = os.open(path, os.O_RDONLY)
    chunk = os.pread(fd, end - start, start)
    if start == 0 and chunk.startswith(BOM):
        chunk = chunk[3:]
    result = convert_chunk(converter, chunk, 1, skip)
    result.lines = count_lines(chunk)
    return _to_slot(result, slot)


def line_ranges(path: str, size: int = CHUNK_BYTES, window: int = 1 << 16) -> Iterator[tuple[int, int]]:
    """Byte ranges of about ``size`` that end at line ends. Only a small window past each cut is
    read (the workers read the ranges), so the parent's memory stays flat on any file size."""
    fd = os.open(path, os.O_RDONLY)
    try:
        length = os.fstat(fd).st_size
        start = 0
        while start < length:
            cut = min(start + size, length) - 1  # the range ends at the first newline from here
            end = length
            while cut < length:
                block = os.pread(fd, window, cut)
                found = block.find(b"\n")
                if found >= 0:
                    end = cut + found + 1
                    break
                cut += len(block)
                if not block:
                    break
            yield start, end
            start = end
    finally:
        os.close(fd)


def keep_heap_memory() -> None:
    """Let glibc keep freed chunk buffers instead of unmapping them.

    Each ~1 MB chunk (read, split, joined, pickled) is above glibc's mmap threshold, so every
    one is mapped and unmapped again; the page faults that follow cost more than parsing the
    JSON (measured: 2.2 s → 1.0 s for 480k lines). Raising the thresholds keeps them on the heap,
    bounded by the chunks in flight. Inherited by the forked workers; a no-op off glibc.
    """
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
        libc.mallopt(m_mmap_threshold, 16 << 20)
        libc.mallopt(m_trim_threshold, 64 << 20)
        libc.mallopt(m_top_pad, 8 << 20)
    except (OSError, AttributeError):
        pass


def parallel_ok() -> bool:
    return (os.cpu_count() or 1) >= 2 and hasattr(os, "fork")  # multiprocessing's "fork" needs it


def convert_stream(
    converter: Converter,
    stream: BinaryIO,
    source: str,
    write: Callable[[bytes | memoryview], Any],
    counts: Counts,
    reject: Callable[[InputError, str], None] | None,
    on_bytes: Callable[[int], None] | None = None,
    workers: int = 2,
    path: str | None = None,
) -> int:
    """Convert one input; returns the records read. Raises the first bad record under fail.

    ``path`` (a plain, uncompressed file) lets workers read their byte ranges themselves.
    """
    skip = reject is not None
    records = 0
    base = 0  # lines before the chunk being absorbed (range tasks number lines from 1)

    def absorb(result: ChunkResult, size: int, relative: bool = False) -> None:
        nonlocal records, base
        offset = base if relative else 0
        if result.shared is not None and _SLOTS is not None:
            at, size = result.shared
            with memoryview(_SLOTS)[at : at + size] as data:
                write(data)
        else:
            write(result.data)
        records += result.records
        counts.by_kind.update(result.by_kind)
        counts.notes.update(result.notes)
        counts.dropped += result.dropped
        for line, message, raw in result.rejects:
            assert reject is not None
            reject(InputError(message, where=Location(source, offset + line)), raw)
        if on_bytes is not None:
            on_bytes(size)
        if result.error is not None:
            line, message, hint = result.error
            raise InputError(message, where=Location(source, offset + line), hint=hint)
        base += result.lines

    if path is not None and workers >= 2 and parallel_ok() and os.path.getsize(path) > 2 * CHUNK_BYTES:
        ranges = ((path, start, end) for start, end in line_ranges(path))
        for result, (_, start, end) in _in_order(_work_range, ranges, converter, skip, workers):
            absorb(result, end - start, relative=True)
        return records

    chunks = read_chunks(stream)
    head = [c for _, c in zip(range(2), chunks, strict=False)]
    if len(head) < 2 or workers < 2 or not parallel_ok():  # small input: no processes to start
        keep_heap_memory()
        for chunk, line in chain(head, chunks):
            absorb(convert_chunk(converter, chunk, line, skip), len(chunk))
        return records
    for result, (chunk, _) in _in_order(_work, chain(head, chunks), converter, skip, workers):
        absorb(result, len(chunk))
    return records


def _in_order(
    work: Callable[[Any], ChunkResult], tasks: Iterator[Any], converter: Converter, skip: bool, workers: int
) -> Iterator[tuple[ChunkResult, Any]]:
    """Results of ``work`` over ``tasks`` from forked workers, in task order, with at most
    ``IN_FLIGHT`` tasks read ahead; the pool is shut down cleanly however the caller stops."""
    import multiprocessing  # 7 ms of start-up, spent only when a big input is split

    global _WORKER, _SLOTS
    _WORKER = (converter, skip)  # inherited through fork, never pickled
    _SLOTS = mmap.mmap(-1, IN_FLIGHT * SLOT_BYTES)  # anonymous and shared; pages used on touch
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=keep_heap_memory)
    room = threading.Semaphore(IN_FLIGHT)
    stopping = threading.Event()
    sent: list[Any] = []

    def bounded() -> Iterator[Any]:
        # The pool's feeder thread reads as fast as it can; the semaphore holds it back. Task k
        # gets slot k % IN_FLIGHT: it is sent only once task k - IN_FLIGHT has been written.
        for k, task in enumerate(tasks):
            room.acquire()
            if stopping.is_set():
                return
            sent.append(task)
            yield k % IN_FLIGHT, task

    try:
        for i, result in enumerate(pool.imap(work, bounded(), chunksize=1)):
            task, sent[i] = sent[i], None  # drop the chunk once it is done
            yield result, task  # the caller writes the result out before asking for the next
            room.release()
    finally:
        # On any exit (an error, a closed stdout) free the feeder thread first: terminate()
        # waits for it, and it may be parked on the semaphore.
        stopping.set()
        for _ in range(IN_FLIGHT + 1):
            room.release()
        pool.terminate()
        _WORKER = None
        _SLOTS.close()
        _SLOTS = None
