"""A versioned table at one point in time (``materialize --as-of``), Flink's temporal-join rule:
per key, the version with the greatest time ≤ T; a delete there means the key is absent."""

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
        self.point = TimePoint(as_of)
        self.after = 0  # changes later than T, left out
        self._versions: dict[Key, tuple[Any, str, Row]] = {}  # key → (time, kind, image)
        self._multiset = MultisetRows()

    def apply(self, kind: str, image: Row, where: Where = _nowhere) -> None:
        self.by_kind[kind] += 1
        if self.time_column not in image:
            raise InputError(f"time column {self.time_column!r} does not exist in this row")
        time = image[self.time_column]
        if time is None or self.point.compare(time) > 0:
            self.after += 1
            return
        if self.key_of is None:  # keyless: the changes up to T, in arrival order
            ident = row_identity(image, self.unmatched)
            if kind in ("+I", "+U"):
                self._multiset.add(image, ident)
            elif not self._multiset.remove(image, ident):
                self.findings.add("negative multiset count", f"{kind} of a row that is not in the table", where)
            return
        key = self.key_of(image)
        current = self._versions.get(key)
        # A later version with the same time overwrites the earlier one (arrival order breaks ties).
        if current is None or TimePoint(current[0]).compare(time) >= 0:
            self._versions[key] = (time, kind, image)

    def rows(self) -> Iterator[Row]:
        if self.key_of is None:
            return self._multiset.values()
        return (image for _, kind, image in self._versions.values() if kind in ("+I", "+U"))

    def __len__(self) -> int:
        if self.key_of is None:
            return len(self._multiset)
        return sum(1 for _ in self.rows())
