"""JSON lines → JSON lines at speed: line-aligned chunks converted in worker processes, in order.

Stateless conversions (from-changelog, to-changelog, debezium-decode without a key) are a
function of one input line, so the input is cut into ~1 MB chunks at line ends; two forked
workers convert chunks while the main process reads ahead and writes results in input order.
Small inputs are converted in-process with the same chunk loop.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, BinaryIO

import orjson

from cdc.core.errors import InputError, Location
from cdc.core.stats import Counts
from cdc.formats.jsonl import (
    BOM,
    CHUNK_BYTES,
    _clip,
    _loads_exact,
    bad_line_message,
    dumps,
    encode_default,
    has_long_digit_run,
    read_chunks,
)

IN_FLIGHT = 6  # chunks read ahead of the writer: memory stays flat whatever the input size
# A converter gets one parsed line (None for a tombstone when it accepts them) and the raw
# line, and returns the rows to write; bad input raises InputError.
LineConverter = Callable[[Any, bytes], "tuple[dict[str, Any], ...] | list[dict[str, Any]]"]


@dataclass
class Converter:
    convert: LineConverter
    counts: Counts
    tombstones: bool = False  # blank lines and null are passed on (Debezium) instead of skipped


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


def convert_chunk(converter: Converter, chunk: bytes, first_line: int, skip: bool) -> ChunkResult:
    """Convert the lines of one chunk; line numbers start at ``first_line``."""
    loads = _loads_exact if has_long_digit_run(chunk) else orjson.loads
    convert = converter.convert
    tombstones = converter.tombstones
    opts = orjson.OPT_APPEND_NEWLINE
    fast = orjson.dumps
    parts: list[bytes] = []
    append = parts.append
    result = ChunkResult(b"", 0)
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
            what = "null" if event is None else type(event).__name__
            message = f"expected a JSON object, found {what}: {_clip(line)}"
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
    result.data = b"".join(parts)
    counts = converter.counts
    result.by_kind, counts.by_kind = counts.by_kind, Counter()
    result.notes, counts.notes = counts.notes, Counter()
    result.dropped, counts.dropped = counts.dropped, 0
    return result


def _text(line: bytes) -> str:
    return line.decode("utf-8", "backslashreplace").rstrip("\r")


# -- the worker side: the converter is inherited through fork, never pickled ------------------

_WORKER: tuple[Converter, bool] | None = None


def _work(task: tuple[bytes, int]) -> ChunkResult:
    assert _WORKER is not None
    converter, skip = _WORKER
    return convert_chunk(converter, task[0], task[1], skip)


_FILES: dict[str, int] = {}  # path → descriptor, per worker


def _work_range(task: tuple[str, int, int]) -> ChunkResult:
    """A byte range of a plain file, read by the worker itself: no input crosses the pipe.
    Line numbers in the result count from 1 at the range's start; the parent adds the offset."""
    assert _WORKER is not None
    converter, skip = _WORKER
    path, start, end = task
    fd = _FILES.get(path)
    if fd is None:
        fd = _FILES[path] = os.open(path, os.O_RDONLY)
    chunk = os.pread(fd, end - start, start)
    if start == 0 and chunk.startswith(BOM):
        chunk = chunk[3:]
    result = convert_chunk(converter, chunk, 1, skip)
    result.lines = chunk.count(b"\n")
    return result


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
    return (os.cpu_count() or 1) >= 2 and "fork" in multiprocessing.get_all_start_methods()


def convert_stream(
    converter: Converter,
    stream: BinaryIO,
    source: str,
    write: Callable[[bytes], Any],
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
    global _WORKER
    _WORKER = (converter, skip)  # inherited through fork, never pickled
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=keep_heap_memory)
    room = threading.Semaphore(IN_FLIGHT)
    stopping = threading.Event()
    sent: list[Any] = []

    def bounded() -> Iterator[Any]:
        # The pool's feeder thread reads as fast as it can; the semaphore holds it back.
        for task in tasks:
            room.acquire()
            if stopping.is_set():
                return
            sent.append(task)
            yield task

    try:
        for i, result in enumerate(pool.imap(work, bounded(), chunksize=1)):
            room.release()
            task, sent[i] = sent[i], None  # drop the chunk once it is done
            yield result, task
    finally:
        # On any exit (an error, a closed stdout) free the feeder thread first: terminate()
        # waits for it, and it may be parked on the semaphore.
        stopping.set()
        for _ in range(IN_FLIGHT + 1):
            room.release()
        pool.terminate()
        _WORKER = None
