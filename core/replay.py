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

from cdc.core.errors import InputError, UsageError
from cdc.core.rowstore import Key, KeyedRows, Row
from cdc.core.timeorder import TimePoint

Change = tuple[str, Row]


@dataclass(frozen=True)
class ReplayOptions:
    key: tuple[str, ...]
    emit: str = "retract"  # retract | upsert
    keep_noop: bool = False
    order_by: str | None = None
    time_column: str | None = None
    since: Any = None
    until: Any = None
    net: bool = False

    def check(self) -> None:
        if not self.key:
            raise UsageError("replay needs --key: its state holds one row per key")
        if (self.since is not None or self.until is not None) and not self.time_column:
            raise UsageError("--since/--until need --time-column COL")
        if self.net and (self.since is None or self.until is None):
            raise UsageError("--net needs both --since and --until: it is the change between two states")


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

    def __init__(self, options: ReplayOptions, counts: ReplayCounts | None = None):
        self.options = options
        self.counts = counts if counts is not None else ReplayCounts()
        self.table = KeyedRows(options.key)
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
        if stored == image and not self.options.keep_noop:
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


def replay(changes: Iterable[Change], options: ReplayOptions, counts: ReplayCounts | None = None) -> Iterator[Change]:
    """Re-emit ``changes`` as ``options.emit`` says, within the ``--since``/``--until`` window."""
    options.check()
    counts = counts if counts is not None else ReplayCounts()
    since = TimePoint(options.since) if options.since is not None else None
    until = TimePoint(options.until) if options.until is not None else None
    if options.net:
        yield from _net(changes, options, counts, since, until)  # type: ignore[arg-type]
        return
    state = KeyedReplay(options, counts)
    tc = options.time_column
    for kind, image in changes:
        counts.read += 1
        emit = True
        if tc is not None:
            if tc not in image:
                raise InputError(f"time column {tc!r} does not exist in this row")
            t = image[tc]
            if until is not None and until.compare(t) > 0:
                counts.after_window += 1
                continue
            if since is not None and since.compare(t) <= 0:
                counts.before_window += 1
                emit = False
        out = state.apply(kind, image, emit)
        if out:
            _count_output(counts, out)
            yield from out


def _net(
    changes: Iterable[Change], options: ReplayOptions, counts: ReplayCounts, since: TimePoint, until: TimePoint
) -> Iterator[Change]:
    """The changelog that turns the state at ``since`` into the state at ``until``."""
    at_since = KeyedReplay(options)
    at_until = KeyedReplay(options)
    tc = options.time_column
    assert tc is not None
    for kind, image in changes:
        counts.read += 1
        if tc not in image:
            raise InputError(f"time column {tc!r} does not exist in this row")
        t = image[tc]
        if until.compare(t) > 0:
            counts.after_window += 1
            continue
        at_until.apply(kind, image, emit=False)
        if since.compare(t) <= 0:
            at_since.apply(kind, image, emit=False)
    counts.late = at_until.counts.late
    before, after = at_since.table.rows, at_until.table.rows
    out: list[Change] = []
    for key, old in before.items():
        new = after.get(key)
        if new is None:
            out.append(("-D", old))
        elif new != old:
            out.extend([("-U", old), ("+U", new)] if options.emit == "retract" else [("+U", new)])
    out.extend(("+I", new) for key, new in after.items() if key not in before)
    _count_output(counts, out)
    yield from out
