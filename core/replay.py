"""``replay``: a changelog run through keyed state and re-emitted as retract or upsert.

The rules are Flink's ChangelogNormalize (notes/flink-semantics.md §4.1): update-befores are
dropped on the way in; ``+I``/``+U`` of a new key emits ``+I``; of a known key emits ``-U(old)``
(retract only) and ``+U(new)``, unless nothing changed; ``-D``/``-U`` of a known key emits
``-D(stored image)``. ``order_by`` is keep-last-row deduplication on event time: a row older than
the stored version does not overwrite it (ties: the later arrival wins).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cdc.core.errors import InputError
from cdc.core.model import Change, Key, Row
from cdc.core.rowstore import KeyedRows, same_row
from cdc.core.specs import ReplaySpec
from cdc.core.timeorder import TimePoint


@dataclass
class ReplayCounts:
    read: int = 0
    written: int = 0
    noops: int = 0
    late: int = 0  # older than the stored version (--order-by)
    before_window: int = 0  # applied silently: they build the state at --since
    after_window: int = 0  # later than --until
    ignored_retractions: int = 0  # -U rows (dropped on the way in) and deletes of unknown keys
    retract_messages: int = 0  # the output encoded with -U
    upsert_messages: int = 0  # ... and without


class KeyedReplay:
    """State plus the emission rules; ``apply`` returns what to emit for one change."""

    def __init__(self, options: ReplaySpec, counts: ReplayCounts | None = None):
        self.options = options
        self.counts = counts if counts is not None else ReplayCounts()
        self.table = KeyedRows(options.key)
        self.ignored = frozenset(options.ignore_columns)
        self._order: dict[Key, Any] = {}  # key → order-by value of the stored version

    def apply(self, kind: str, image: Row, emit: bool = True) -> list[Change]:
        table = self.table
        key = table.key_of(image)
        stored = table.get(key)
        order_by = self.options.order_by
        if order_by is not None:
            if order_by not in image:
                raise InputError(f"--order-by column {order_by!r} does not exist in this row")
            seen = self._order.get(key)
            if seen is not None and TimePoint(seen).compare(image[order_by]) < 0:
                self.counts.late += 1
                return []
        if kind == "-U":
            self.counts.ignored_retractions += 1  # its +U follows and carries the update
            return []
        if kind == "-D":
            if stored is None:
                self.counts.ignored_retractions += 1
                return []
            table.pop(key)
            self._order.pop(key, None)
            return [("-D", stored)] if emit else []
        # +I or +U: an upsert
        if order_by is not None:
            self._order[key] = image[order_by]
        table.put(key, image)
        if stored is None:
            return [("+I", image)] if emit else []
        if not self.options.keep_noop and (stored == image or same_row(stored, image, self.ignored)):
            self.counts.noops += 1
            return []
        if not emit:
            return []
        if self.options.emit == "retract":
            return [("-U", stored), ("+U", image)]
        return [("+U", image)]

    def rows(self) -> Iterator[Row]:
        return self.table.values()


def _count_output(counts: ReplayCounts, changes: list[Change]) -> None:
    for kind, _ in changes:
        counts.written += 1
        counts.retract_messages += 1
        if kind != "-U":
            counts.upsert_messages += 1
        if kind == "+U" and not any(k == "-U" for k, _ in changes):
            counts.retract_messages += 1  # the -U a retract encoding would add


class Replayer:
    """Re-emits changes as ``spec.emit`` says, within the ``--since``/``--until`` window: ``step``
    per change, ``finish`` at the end (``--net`` emits only then)."""

    def __init__(self, spec: ReplaySpec, counts: ReplayCounts | None = None):
        self.spec = spec
        self.counts = counts if counts is not None else ReplayCounts()
        self.since = TimePoint(spec.since, "--since", spec.time_column) if spec.since is not None else None
        self.until = TimePoint(spec.until, "--until", spec.time_column) if spec.until is not None else None
        self.state = KeyedReplay(spec, self.counts)
        self.at_since = KeyedReplay(spec) if spec.net else None  # --net: the state at --since too

    def step(self, kind: str, image: Row) -> list[Change]:
        counts = self.counts
        counts.read += 1
        emit = True
        tc = self.spec.time_column
        if tc is not None:
            if tc not in image:
                raise InputError(f"time column {tc!r} does not exist in this row")
            t = image[tc]
            if self.until is not None and self.until.compare(t) > 0:
                counts.after_window += 1
                return []
            if self.since is not None and self.since.compare(t) <= 0:
                if self.at_since is not None:
                    self.at_since.apply(kind, image, emit=False)
                else:
                    counts.before_window += 1
                emit = False
        if self.at_since is not None:
            self.state.apply(kind, image, emit=False)
            return []
        out = self.state.apply(kind, image, emit)
        if out:
            _count_output(counts, out)
        return out

    def finish(self) -> list[Change]:
        if self.at_since is None:
            return []
        before, after = self.at_since.table.rows, self.state.table.rows
        out: list[Change] = []
        for key, old in before.items():
            new = after.get(key)
            if new is None:
                out.append(("-D", old))
            elif new != old:
                out.extend([("-U", old), ("+U", new)] if self.spec.emit == "retract" else [("+U", new)])
        out.extend(("+I", new) for key, new in after.items() if key not in before)
        _count_output(self.counts, out)
        return out


def replay(changes: Iterable[Change], spec: ReplaySpec, counts: ReplayCounts | None = None) -> Iterator[Change]:
    """Re-emit ``changes`` as ``spec`` says (the whole stream at once)."""
    replayer = Replayer(spec, counts)
    for kind, image in changes:
        yield from replayer.step(kind, image)
    yield from replayer.finish()
