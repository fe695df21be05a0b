"""``inspect`` on Arrow batches: the table state of ``materialize`` (keyed or a multiset, its
findings handed to the row path), plus the keys ever seen and the time range.

The distinct keys are kept as an Arrow table, one row per key, merged with each chunk's; the
time range is each chunk's least and greatest value by ``core.timeorder.sort_key`` (the first
to appear on a tie), merged as ``core.profile.Profile`` merges them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc.core.profile import Profile
from cdc.core.specs import InspectSpec, MaterializeSpec
from cdc.core.timeorder import sort_key
from cdc.engine.job import Result
from cdc.engine.paths.arrow_rules import (
    ChangeRules,
    KeyedMaterialize,
    MultisetMaterialize,
    group_codes,
)
from cdc.formats import arrow_compute as pc


class KeyCount:
    """The number of distinct keys, where ``Profile`` keeps the keys themselves."""

    def __init__(self, count: int):
        self.count = count

    def __len__(self) -> int:
        return self.count


class Inspect:
    writes = False  # a report, no rows: the output is never opened

    @classmethod
    def takes(cls, spec: InspectSpec, schema: Any) -> bool:
        tc = spec.time_column
        if tc is not None and (tc not in schema.names or tc == spec.kind_column):
            return False
        return ChangeRules.takes(spec, schema)

    def __init__(self, spec: InspectSpec, schema: Any, result: Result):
        self.spec = spec
        self.result = result
        table_spec = MaterializeSpec(spec.kind_column, spec.key, commit_columns=spec.commit_columns)
        self.table: Any = (KeyedMaterialize if spec.key else MultisetMaterialize)(table_spec, schema, result)
        self.changes = 0
        self.keys: Any = None  # the distinct keys seen so far (a table of the key columns)
        self.time_missing = 0
        self.time_min: Any = None
        self.time_max: Any = None

    def regular(self, batch: Any) -> bool:
        return bool(self.table.regular(batch))

    def apply(self, table: Any, offset: int, sink: Any) -> bool:
        if not self.table.apply(table, offset, sink):
            return False
        self.changes += len(table)
        if self.spec.key:
            self._merge_keys(table.select(list(self.spec.key)))
        if self.spec.time_column is not None:
            self._merge_times(table.column(self.spec.time_column))
        return True

    def _merge_keys(self, keys: Any) -> None:
        """The keys seen so far and this chunk's, each once (by hash: no sort)."""
        import pyarrow as pa

        both = keys if self.keys is None else pa.concat_tables([self.keys, keys.cast(self.keys.schema)])
        codes = group_codes(both, list(self.spec.key))  # numbered in order of first appearance
        if not len(codes):
            self.keys = both
            return
        # so a number's first row is where the running greatest number grows (one pass, where
        # looking each number up in the codes by index_in is a hash table of them all)
        top = pc.call("cumulative_max", codes)
        grows = pc.call("greater", top.slice(1), top.slice(0, len(top) - 1))
        firsts = pc.indices_nonzero(pa.concat_arrays([pa.array([True]), grows]))
        self.keys = pc.take(both, firsts)

    def _merge_times(self, times: Any) -> None:
        from cdc.engine.paths.arrow_time import first_extremes

        self.time_missing += times.null_count
        extremes = first_extremes(times)
        if extremes is None:
            return
        low, high = extremes
        if self.time_min is None or sort_key(low) < sort_key(self.time_min):
            self.time_min = low
        if self.time_max is None or sort_key(high) > sort_key(self.time_max):
            self.time_max = high

    def _fill(self, profile: Profile) -> None:
        profile.changes = self.changes
        profile.time_missing = self.time_missing
        profile.time_min, profile.time_max = self.time_min, self.time_max

    def hand_over(self, steps_for: Callable[..., Any], where: Any) -> Any:
        steps = steps_for(self.spec, self.result, where)
        profile: Profile = self.result.detail
        self.table.load_into(profile.state)
        self._fill(profile)
        if self.keys is not None:
            columns = [self.keys.column(c).to_pylist() for c in self.spec.key]
            if len(columns) == 1:
                profile.distinct_keys = set(columns[0])
            else:
                profile.distinct_keys = set(zip(*columns, strict=True))
        return steps

    def finish(self, sink: Any) -> None:
        from cdc.engine.tables import metadata_of

        profile = Profile(
            self.spec.key, self.spec.time_column, metadata_of(self.spec), frozenset(self.spec.ignore_columns)
        )
        profile.state = self.table.summary()
        self._fill(profile)
        profile.distinct_keys = KeyCount(len(self.keys) if self.keys is not None else 0)  # type: ignore[assignment]
        self.result.detail = profile

    def empty(self, info: Any) -> None:
        return None
