"""Forked worker processes that run tasks in order, with their output in shared memory.

Used by the stateless JSON-lines path (``lines``): an input is cut into ~1 MB chunks (or byte
ranges of a plain file, which workers read themselves); two workers convert them while the
parent writes results in input order. What a task needs is inherited through fork, never
pickled; at most ``IN_FLIGHT`` tasks are read ahead, so memory stays flat on any input size.
"""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

CHUNK_BYTES = 1 << 20
IN_FLIGHT = 6  # tasks read ahead of the writer
# Workers hand their output back through shared memory, one slot per task in flight: a pipe
# moves a megabyte in 64 KB pieces, each a context switch, which cost more than converting it.
SLOT_BYTES = 4 * CHUNK_BYTES

_PAYLOAD: Any = None  # what the workers' task function needs; set before they fork
_SLOTS: mmap.mmap | None = None  # shared with the workers: made before they fork


def payload() -> Any:
    """In a worker: the object the parent handed to ``ordered``."""
    return _PAYLOAD


def to_slot(data: bytes, slot: int) -> tuple[int, int] | None:
    """Put a task's output in its shared slot: (offset, length), or None when it does not fit
    (then it goes back through the pool's pipe)."""
    if _SLOTS is None or len(data) > SLOT_BYTES:
        return None
    offset = slot * SLOT_BYTES
    _SLOTS[offset : offset + len(data)] = data
    return offset, len(data)


def from_slot(shared: tuple[int, int]) -> memoryview:
    """In the parent: a task's output in shared memory (valid until the next task is sent)."""
    assert _SLOTS is not None
    offset, size = shared
    return memoryview(_SLOTS)[offset : offset + size]


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
    import signal

    # Ctrl-C reaches the whole process group: the parent stops the run (and rolls its output
    # back); a worker that raised KeyboardInterrupt too would print its own traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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


def ordered(
    work: Callable[[tuple[int, Any]], Any], tasks: Iterator[Any], shared: Any, workers: int
) -> Iterator[tuple[Any, Any]]:
    """``(work((slot, task)), task)`` over ``tasks`` from forked workers, in task order; the
    pool is shut down cleanly however the caller stops. ``shared`` is ``payload()`` in them."""
    import multiprocessing  # 7 ms of start-up, spent only when a big input is split

    global _PAYLOAD, _SLOTS
    _PAYLOAD = shared
    _SLOTS = mmap.mmap(-1, IN_FLIGHT * SLOT_BYTES)  # anonymous and shared; pages used on touch
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=keep_heap_memory)
    room = threading.Semaphore(IN_FLIGHT)
    stopping = threading.Event()
    sent: list[Any] = []

    def bounded() -> Iterator[tuple[int, Any]]:
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
        # Let the feeder thread finish before terminate() kills the workers: it ends by putting a
        # sentinel on the result queue, whose lock a worker holds while it writes a result — a
        # worker killed there leaves the lock taken and terminate() waiting for the feeder for
        # ever (seen as `cdc … | head -1` hanging after head exited).
        pool.close()
        feeder = getattr(pool, "_task_handler", None)
        if feeder is not None:
            feeder.join(timeout=10)
        pool.terminate()
        _PAYLOAD = None
        _SLOTS.close()
        _SLOTS = None
