"""A versioned table at one point in time (``materialize --as-of``): the table as it stood at T.

Per key, a version starts at its ``+I``/``+U``'s time and lasts until the key's next version or
its delete; the table at T holds each key's version with the greatest start ≤ T (the latest to
arrive on a tie) unless a delete at or before T ended it. A ``-U`` marks no time: it carries
either the old version's time (a row's own ``updated_at``) or the change's (an event time), and
the ``+U`` after it bounds the old version either way. A ``-D`` is placed at the later of its own
time and the greatest time seen before it in the stream: a delete that carries its old image's
time happened after every change that came before it. Without a key the same changes make a
multiset, a ``-U`` taking effect with the ``+U`` that follows it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from cdc.core.errors import InputError
from cdc.core.model import Key, Row
from cdc.core.rowstore import MultisetRows, key_getter, row_identity
from cdc.core.state import Findings, TableState, Where, _nowhere
from cdc.core.timeorder import TimePoint


class VersionedState(TableState):
    def __init__(
        self,
        key: Sequence[str],
        time_column: str,
        as_of: Any,
        findings: Findings | None = None,
        metadata: frozenset[str] = frozenset(),
        ignored: frozenset[str] = frozenset(),
    ):
        super().__init__(findings, metadata, ignored)
        self.key = tuple(key)
        self.key_of = key_getter(key) if key else None
        self.time_column = time_column
        self.point = TimePoint(as_of, "--as-of", time_column)
        self.after = 0  # changes later than T, left out
        self._versions: dict[Key, tuple[Any, str, Row]] = {}  # key → (time, kind, image)
        self._multiset = MultisetRows()
        self.clock: Any = None  # the greatest time seen so far (a -D's earliest time)
        self._pending: tuple[Row, Where] | None = None  # keyless: a -U waiting for its +U

    def apply(self, kind: str, image: Row, where: Where = _nowhere) -> None:
        self.by_kind[kind] += 1
        if self.time_column not in image:
            raise InputError(f"time column {self.time_column!r} does not exist in this row")
        time = image[self.time_column]
        at = time
        if kind == "-D" and time is not None and self.clock is not None and TimePoint(time).compare(self.clock) > 0:
            at = self.clock
        if time is not None and (self.clock is None or TimePoint(self.clock).compare(time) > 0):
            self.clock = time
        counts = at is not None and self.point.compare(at) <= 0
        if self.key_of is None:
            self._keyless(kind, image, counts, where)
            return
        if kind == "-U":
            if not counts:
                self.after += 1
            return
        if not counts:
            self.after += 1
            return
        key = self.key_of(image)
        current = self._versions.get(key)
        # A later version with the same time overwrites the earlier one (arrival order breaks ties).
        if current is None or TimePoint(current[0]).compare(at) >= 0:
            self._versions[key] = (at, kind, image)

    def _keyless(self, kind: str, image: Row, counts: bool, where: Where) -> None:
        """The changes up to T in arrival order; a -U goes with the +U after it."""
        pending, self._pending = self._pending, None
        if pending is not None and kind == "+U":
            if counts:
                self._remove("-U", *pending)
        elif pending is not None:
            self._remove("-U", *pending)  # a -U without its +U: at its own time, which counted
        if kind == "-U":
            if counts:
                self._pending = (image, where)
            else:
                self.after += 1
            return
        if not counts:
            self.after += 1
        elif kind in ("+I", "+U"):
            self._multiset.add(image, row_identity(image, self.unmatched))
        else:
            self._remove(kind, image, where)

    def _remove(self, kind: str, image: Row, where: Where) -> None:
        if not self._multiset.remove(image, row_identity(image, self.unmatched)):
            self.findings.add("negative multiset count", f"{kind} of a row that is not in the table", where)

    def rows(self) -> Iterator[Row]:
        if self.key_of is None:
            if self._pending is not None:
                self._remove("-U", *self._pending)
                self._pending = None
            return self._multiset.values()
        return (image for _, kind, image in self._versions.values() if kind in ("+I", "+U"))

    def __len__(self) -> int:
        if self.key_of is None:
            return len(self._multiset)
        return sum(1 for _ in self.rows())
