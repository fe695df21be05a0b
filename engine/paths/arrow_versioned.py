"""``materialize --as-of`` on Arrow batches (``core.versioned.VersionedState``).

A change counts when its time is not null and at or before the point (``arrow_time``); a
``-D``'s time is the later of its own and the greatest time before it in the stream (a running
maximum of ranks, carried across chunks as ``clock``), and a ``-U`` marks no time. With a key,
the key's version is the counting ``+I``/``+U``/``-D`` with the greatest time, the latest to
arrive on a tie (``TimePoint(stored).compare(new) >= 0`` replaces), and the key keeps the place
of its first counting change; a version that is a ``-D`` leaves the key out. Times are ranked
over the carried versions and the chunk together, so they compare across chunks; values of
mixed classes (numbers and date-times …) hand the input to the row path, which knows their
pairwise order. Without a key, the counting changes make a multiset (``MultisetMaterialize``);
a ``-U`` there goes with the ``+U`` after it, which the row path pairs: such a chunk is handed over.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc.core.specs import MaterializeSpec
from cdc.core.state import Findings
from cdc.core.timeorder import TimePoint
from cdc.core.versioned import VersionedState
from cdc.engine.job import Result
from cdc.engine.paths.arrow_rules import (
    AFTER,
    BEFORE,
    DELETE,
    INSERT,
    KINDS,
    STATE_SEQ,
    Materialize,
    MultisetMaterialize,
    column,
    count_codes,
    kind_codes,
    same_as_previous,
    without,
)
from cdc.formats import arrow_compute as pc

ARRIVAL = "__cdc_arrival"


def _pa() -> Any:
    import pyarrow as pa

    return pa


class VersionedSummary(VersionedState):
    """A versioned table's account without its rows, which went out as Arrow."""

    live = 0

    def __len__(self) -> int:
        return self.live


class AsOf(Materialize):
    @classmethod
    def takes(cls, spec: MaterializeSpec, schema: Any) -> bool:
        tc = spec.time_column
        if tc is None or tc not in schema.names or tc == spec.kind_column:
            return False
        return super().takes(spec, schema)

    def __init__(self, spec: MaterializeSpec, schema: Any, result: Result):
        super().__init__(spec, schema, result)
        assert spec.time_column is not None
        self.tc = spec.time_column
        self.point = TimePoint(spec.as_of, "--as-of", spec.time_column)
        self.after = 0
        self.clock: Any = None  # the greatest time seen so far
        # Without a key: a multiset of the changes that count
        self.multiset = None if spec.key else MultisetMaterialize(spec, schema, result)

    def _times(self, table: Any, kinds: Any) -> Any:
        """Each change's time as the row path places it (a ``-D`` no earlier than the greatest
        time before it), and the new clock; None when the times are of mixed classes."""
        from pyarrow._compute import CumulativeOptions

        from cdc.engine.paths.arrow_time import ranks

        pa = _pa()
        times = column(table, self.tc)
        times = times.combine_chunks() if hasattr(times, "combine_chunks") else times
        values = pa.concat_arrays([pa.array([self.clock], times.type), times])
        ranked = ranks(values)
        if ranked is None:
            return None
        ranked = pc.fill_null(ranked, -1)
        running = pc.call("cumulative_max", ranked, options=CumulativeOptions(skip_nulls=True))
        before, own = running[:-1], ranked[1:]
        later = pc.and_(pc.equal(kinds, DELETE), pc.call("greater", before, own))
        later = pc.and_(later, pc.is_valid(times))
        at = times
        if pc.any(later).as_py():
            at = pc.if_else(later, pc.take(values, pc.index_in(before, ranked)), times)
        top = running[-1].as_py()
        clock = values[pc.index_in(pa.array([top], pa.int64()), ranked)[0].as_py()].as_py() if top >= 0 else None
        return at, clock

    def _counting(self, times: Any) -> Any:
        """Whether each change is at or before the point (a null time never is)."""
        from cdc.engine.paths.arrow_time import compare_to

        at_or_before = pc.call("less_equal", compare_to(times, self.point), 0)
        return pc.and_(pc.is_valid(times), at_or_before)

    def apply(self, table: Any, offset: int, sink: Any) -> bool:
        pa = _pa()
        kinds = kind_codes(table.column(self.kc))
        if self.multiset is not None and pc.any(pc.equal(kinds, BEFORE)).as_py():
            return False  # a -U pairs with the +U after it: the row path's work
        found = self._times(table, kinds)
        if found is None:
            return False
        at, clock = found
        counting = self._counting(at)
        left_out = len(table) - count_true(counting)
        if self.multiset is not None:
            multiset = self.multiset
            saved = (list(multiset.by_kind), multiset.retract, multiset.upsert)
            if not multiset.apply(pc.filter(table, counting), offset, sink):
                return False
            multiset.by_kind, multiset.retract, multiset.upsert = saved  # counted here, as the row path does
        else:
            versions = pc.and_(counting, pc.invert(pc.equal(kinds, BEFORE)))
            timed = table.set_column(table.schema.get_field_index(self.tc), self.tc, at)
            chunk = pc.filter(timed, versions)
            arrivals = pc.filter(_arange(len(table), offset), versions)
            chunk = chunk.append_column(STATE_SEQ, arrivals).append_column(ARRIVAL, arrivals)
            work = chunk if self.state is None else pa.concat_tables([self.state, chunk]).combine_chunks()
            if not self._versions(work):
                return False
        self.clock = clock
        self.after += left_out
        for i, n in enumerate(count_codes(kinds)):
            self.by_kind[i] += n
        return True

    def _versions(self, work: Any) -> bool:
        """The state after ``work`` (carried versions, then the chunk's counting changes)."""
        from pyarrow._compute import SortOptions

        from cdc.engine.paths.arrow_rules import group_codes, group_order, same_as_next
        from cdc.engine.paths.arrow_time import ranks

        pa = _pa()
        if not len(work):
            self.state = work
            return True
        ranked = ranks(column(work, self.tc))
        if ranked is None:
            return False
        codes = group_codes(work, self.spec.key)  # dense, numbered in order of first appearance
        # each key's place: its first counting change (a carried version keeps its own)
        order = group_order(codes)
        first = pc.filter(order, pc.invert(same_as_previous(pc.take(codes, order))))
        places = pc.take(column(work, STATE_SEQ), first)  # by group number
        # each key's version: the greatest time, the latest arrival on a tie
        table = pa.table({"g": codes, "t": ranked, "a": column(work, ARRIVAL)})
        options = SortOptions([("g", "ascending"), ("t", "ascending"), ("a", "ascending")])
        versions = pc.call("sort_indices", table, options=options)
        last = pc.invert(same_as_next(same_as_previous(pc.take(codes, versions))))
        state = pc.take(work, pc.filter(versions, last))  # by group number too
        self.state = state.set_column(state.schema.get_field_index(STATE_SEQ), STATE_SEQ, places)
        return True

    def _table(self) -> Any:
        if self.multiset is not None:
            return self.multiset._table()
        state = self._ordered_state()
        if state is None:
            return None
        kinds = kind_codes(state.column(self.kc))
        return pc.filter(state, pc.or_(pc.equal(kinds, INSERT), pc.equal(kinds, AFTER)))

    def finish(self, sink: Any) -> None:
        table = self._table()
        summary = VersionedSummary(self.spec.key, self.tc, self.spec.as_of, Findings(self.spec.policy), self.metadata)
        summary.live = len(table) if table is not None else 0
        summary.after = self.after
        for kind, n in zip(KINDS, self.by_kind, strict=True):
            if n:
                summary.by_kind[kind] += n
        self.result.detail = summary
        if table is None or not len(table):
            return
        out = table.select(without(self.images, self.metadata))
        if self.spec.sort:
            from cdc.engine.paths.arrow_rules import sort_by_key

            out = sort_by_key(out, self.spec.key)
        sink.table(out)

    def hand_over(self, steps_for: Callable[..., Any], where: Any) -> Any:
        from cdc.core.rowstore import row_identity

        steps = steps_for(self.spec, self.result, where)
        state: VersionedState = self.result.detail
        state.after = self.after
        state.clock = self.clock
        for kind, n in zip(KINDS, self.by_kind, strict=True):
            if n:
                state.by_kind[kind] += n
        if self.multiset is not None:
            ordered = self.multiset._ordered_state()
            if ordered is not None:
                entries = state._multiset.rows
                counts = ordered.column("__cdc_count").to_pylist()
                for row, count in zip(ordered.select(self.images).to_pylist(), counts, strict=True):
                    entries[row_identity(row, self.metadata)] = [row, count]
            return steps
        ordered = self._ordered_state()
        if ordered is not None:
            kinds = ordered.column(self.kc).to_pylist()
            for row, text in zip(ordered.select(self.images).to_pylist(), kinds, strict=True):
                key = state.key_of(row)  # type: ignore[misc]
                state._versions[key] = (row[self.tc], KINDS[KIND_CODE[text]], row)
        self.state = None
        return steps


KIND_CODE = {"+I": 0, "-U": 1, "+U": 2, "-D": 3, "INSERT": 0, "UPDATE_BEFORE": 1, "UPDATE_AFTER": 2, "DELETE": 3}


def count_true(mask: Any) -> int:
    from cdc.engine.paths.arrow_rules import count_true as count

    return count(mask)


def _arange(n: int, start: int) -> Any:
    from cdc.engine.paths.arrow_rules import arange

    return arange(n, start)
