"""What the state engines over JSON lines share (``state``, ``aggregate``): the kernel State's
flags, questions and counters as ``_kernel.c`` names them, where a parsed chunk came from, and the
engine a command runs in the kernel until it hands over to the core's state.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc.core.errors import InputError, Location
from cdc.core.kinds import KIND_BY_TEXT
from cdc.core.model import Reject, Row
from cdc.engine.empty import Examples
from cdc.engine.job import Job, Result
from cdc.engine.paths.native.kernel import KINDS, escape_at
from cdc.engine.session import Session
from cdc.formats.jsonl import loads

# _kernel.State: commands, flags, what it asks (H_*), and its counters, as _kernel.c names them
MULTISET, KEYED, REPLAY = 0, 1, 2
F_DEDUP, F_KEEP, F_TIME, F_ORDER, F_WINDOW = 1, 2, 4, 8, 16
F_SINCE, F_UNTIL, F_NET, F_RETRACT, F_KEEP_NOOP, F_INT_BOUNDS = 32, 64, 128, 256, 512, 1024
H_EQUAL, H_EXISTS, H_ABSENT, H_DIFFERS, H_NO_TIME, H_TIME_LESS, H_LATE, H_WINDOW, H_NO_ORDER, H_NO_WINDOW = range(1, 11)
COUNTERS = (
    "+I", "-U", "+U", "-D", "retract", "upsert", "duplicates", "changes", "time_missing",
    "read", "written", "noops", "late", "before_window", "after_window", "ignored", "out_retract", "out_upsert",
    "out+I", "out-U", "out+U", "out-D",
)  # fmt: skip
RETRACTED, DELETED = 1, 2
INT64 = 2**63


class Chunk:
    """Where the records of one parse call came from: for the handle's places and raw lines."""

    def __init__(self, chunk: bytes, source: str, first_line: int, reject: Reject):
        self.chunk, self.source, self.first_line, self.reject = chunk, source, first_line, reject

    def where(self, line: int) -> Location:
        return Location(self.source, self.first_line + line)

    def raw(self, offset: int) -> str:
        end = self.chunk.find(b"\n", offset)
        line = self.chunk[offset : len(self.chunk) if end < 0 else end]
        return line.decode("utf-8", "backslashreplace").rstrip("\r\n")

    def bad(self, err: InputError, line: int, offset: int) -> None:
        """A record the row path sets aside (or fails on): told to the session's reject."""
        self.reject(err.located(self.where(line)), self.raw(offset))


class HandOver(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a handle: the kernel stops at this record (line, byte offset in its chunk) and
    the general way takes it and the rest."""

    def __init__(self, line: int, offset: int, kind: str):
        super().__init__(line, offset, kind)
        self.line, self.offset, self.kind = line, offset, kind


class Engine:
    """One command's state: the kernel's State while it lasts, the core's after a hand-over."""

    kind_column: str | None  # None: rows without one, each an insert (aggregate --input-mode append)
    parse_args: tuple[Any, ...]
    kernel: Any  # the _kernel.State; None once handed over
    watch: tuple[bytes, ...] = ()  # names that hand a chunk naming one over (unknown commit columns)
    examples: Examples | None = None  # the first changes, for an empty result's columns and types

    def hands_over(self, chunk: bytes) -> bool:
        """Whether the general way is to take this chunk and the rest (before the kernel sees it):
        one with an escape the kernel would copy as written (``kernel.escape_at``), or naming a
        watched column."""
        return escape_at(chunk) >= 0 or any(name in chunk for name in self.watch)

    def apply(self, packed: bytes, at: Chunk) -> int | None:
        """Apply the records; None, or the byte offset in them of the record the kernel stopped
        at (the engine is to hand over before it: the general way takes it and the rest)."""
        raise NotImplementedError

    def hand_over(self) -> None:
        raise NotImplementedError

    def undo(self, kind: str) -> None:
        """After a ``HandOver``: the stopped record, counted by the kernel, is not applied yet."""
        raise NotImplementedError

    def step(self, row: Row, where: Location) -> None:
        """One change the general way (the row path's step); raises InputError for a bad one."""
        raise NotImplementedError

    def finish(self) -> None:
        raise NotImplementedError

    def result(self, result: Result, job: Job, current: Session) -> None:
        raise NotImplementedError


def _spellings() -> tuple[tuple[bytes, int], ...]:
    return tuple((orjson.dumps(text), KINDS.index(kind.value)) for text, kind in KIND_BY_TEXT.items())


def _row(text: bytes | None) -> Any:
    """A row (or value) the kernel kept as its JSON text, parsed as the row path parses its line."""
    assert text is not None
    return loads(text)
