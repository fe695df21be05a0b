"""``aggregate`` on Arrow batches: Flink's group aggregate (``core.aggregate``), its update log
computed with running sums per group.

The changes are lined up by group (a stable sort of group numbers). A group lives from the
change that takes its record count from 0 to 1 until the one that takes it back to 0 (a life:
an *epoch*); within an epoch each aggregate's value after each change is a running sum —
COUNT(*), COUNT(col), SUM and AVG of integers (retractions subtract) — or a running extreme —
MIN/MAX of append-only input. Each change then emits what ``GroupAggregate.apply`` emits: ``+I``
for a new group, ``-D`` with the last result for a group whose count is back to 0, ``-U``/``+U``
(or ``+U``) when the result changed, nothing when it did not; the output goes back in input
order.

Taken: ``--input-mode changelog`` or ``append``, no ``--where``, COUNT/SUM/AVG of integer columns
(COUNT of any), MIN/MAX on append-only input. The whole input is one chunk; a finding (a
retraction of an absent group, or of a row a group never counted), an overflow past 64 bits or
a bad record gives the whole input to the row path, before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc.core.aggregate import AggregateCounts
from cdc.core.specs import AggregateSpec
from cdc.core.state import Findings, Policy
from cdc.engine.empty import Empty, empty_result
from cdc.engine.job import Job, Result
from cdc.engine.paths.arrow_rules import (
    KINDS,
    ChangeRules,
    column,
    comparable,
    count_codes,
    count_true,
    expand_rows,
    group_codes,
    group_order,
    groupable_key,
    has_nan,
    integer_codes,
    same_as_previous,
)
from cdc.formats import arrow_compute as pc

PLAIN_ROWS = 65_536  # the row path's Parquet writer fixes a column's type from its first rows


def _pa() -> Any:
    import pyarrow as pa

    return pa


class AggregateSummary:
    """What ``GroupAggregate`` tells of a run: its counts and findings."""

    def __init__(self, counts: AggregateCounts, findings: Findings):
        self.counts = counts
        self.findings = findings


class Aggregate(ChangeRules):
    whole = True  # one chunk: a hand-over starts from the first change

    @staticmethod
    def takes_job(job: Job) -> bool:
        return True

    @classmethod
    def takes(cls, spec: AggregateSpec, schema: Any) -> bool:
        pa = _pa()
        query = spec.query
        if query.where is not None or spec.input_mode not in ("changelog", "append"):
            return False
        names = schema.names
        fields = {f.name: f.type for f in schema}
        readable = [n for n in names if n != spec.kind_column or spec.input_mode != "changelog"]
        for name in query.input_columns:
            if name not in readable:
                return False
        if not all(groupable_key(fields[c]) for c in query.group_by):
            return False
        for call in query.aggs:
            if call.distinct or call.func not in ("COUNT", "SUM", "AVG", "MIN", "MAX"):
                return False
            if call.arg is None:
                continue
            kind = fields[call.arg]
            if not comparable(kind):
                return False
            if call.func in ("SUM", "AVG") and not pa.types.is_integer(kind):
                return False
            if call.func in ("MIN", "MAX"):
                if query.retractions:
                    return False
                if not (
                    pa.types.is_integer(kind)
                    or pa.types.is_floating(kind)
                    or pa.types.is_string(kind)
                    or pa.types.is_temporal(kind)
                ):
                    return False
        if spec.input_mode == "changelog":
            return super().takes(spec, schema)
        return spec.kind_column not in names

    def __init__(self, spec: AggregateSpec, schema: Any, result: Result):
        super().__init__(spec, schema, result)
        self.query = spec.query
        self.info_schema = schema

    def apply(self, table: Any, offset: int, sink: Any) -> bool:
        if self.spec.input_mode == "changelog" and _upsert_first(table.column(self.spec.kind_column)):
            return False  # an upsert stream read as a changelog: the row path tells it at its row
        out = self._update_log(table)
        if out is None:
            return False
        log, kinds, counts = out
        if self._misfit(log, sink):
            return False
        self.counts = counts
        for kind, n in zip(KINDS, count_codes(kinds), strict=True):
            if n:
                self.result.counts.by_kind[kind] += n
        sink.table(log)
        return True

    def _misfit(self, log: Any, sink: Any) -> bool:
        """Parquet out: would the row path's writer give a column another type than here (it
        infers one from the first rows' values: all null is text, 19 digits a decimal)?"""
        pa = _pa()
        if sink.job.out_format != "parquet" or sink.job.sink is not None or not len(log):
            return False
        hints = {f.name: f.type for f in self.info_schema}
        head = log.slice(0, PLAIN_ROWS)
        for field in log.schema:
            if field.name in hints:
                if hints[field.name] != field.type:
                    return True
                continue
            values = column(head, field.name)
            if values.null_count == len(values):
                return True
            if pa.types.is_integer(field.type):
                extremes = pc.call("min_max", values).as_py()
                if max(abs(extremes["min"]), abs(extremes["max"])) >= 10**18:
                    return True
        return False

    def _update_log(self, table: Any) -> tuple[Any, Any, AggregateCounts] | None:
        """The output rows (kind first, group columns, aggregates) in input order, their kind
        codes and the counts; None when the row path must run instead."""
        pa = _pa()
        int64, int8 = pa.int64(), pa.int8()
        query = self.query
        n = len(table)
        counts = AggregateCounts(emit=query.emit)
        if n == 0:
            return table.select([]), pa.array([], int8), counts
        extremes = [a.arg for a in query.aggs if a.arg is not None and a.func in ("MIN", "MAX")]
        if has_nan(table, extremes) or _has_negative_zero(table, extremes):
            return None  # Python keeps the first of -0.0 and 0.0, and no NaN is greater or less
        sign = pc.take(pa.array([1, -1, 1, -1], int64), self.kinds(table))
        if query.group_by:
            # only the grouping counts here, not the group numbers' order
            codes = integer_codes(column(table, query.group_by[0])) if len(query.group_by) == 1 else None
            codes = group_codes(table, query.group_by) if codes is None else codes
            order = group_order(codes)
            groups = pc.take(codes, order)
        else:
            order = pc.cast(pc.indices_nonzero(pa.repeat(True, n)), int64)
            groups = pa.repeat(pa.scalar(0, int64), n)
        same = same_as_previous(groups)
        sg = pc.take(sign, order)
        count = _running(sg, Runs(pc.invert(same)))
        if pc.any(pc.call("less", count, 0)).as_py():
            return None  # a retraction of a group that does not exist
        created = pc.equal(pc.call("subtract", count, sg), 0)
        lives = Runs(created)  # a group's life: from the change that creates it
        epoch = lives.number
        if self.spec.policy != Policy.ignore and query.retractions and self._unmatched(table, order, epoch, sg):
            return None
        retraction = pc.equal(sg, -1)
        deleted = pc.and_(retraction, pc.equal(count, 0))
        after: list[Any] = []  # each aggregate's value after each change (in group order)
        memo: dict[Any, Any] = {}  # what aggregates of one column (or none) share
        for call in query.aggs:
            value = self._values(table, call, order, sg, lives, memo)
            if value is None:
                return None
            after.append(value)
        # emissions
        changed: Any
        if any(call.arg is None for call in query.aggs):
            changed = pa.repeat(True, n)
        else:
            changed = pa.repeat(False, n)
            for value in after:
                before = _previous(value)
                same_value = pc.or_(
                    pc.fill_null(pc.equal(before, value), False), pc.and_(pc.is_null(before), pc.is_null(value))
                )
                changed = pc.or_(changed, pc.invert(same_value))
        plain = pc.and_(pc.invert(created), pc.invert(deleted))
        updated = pc.and_(plain, changed)
        counts.inserted = count_true(created)
        counts.deleted = count_true(deleted)
        counts.updated = count_true(updated)
        counts.unchanged = count_true(pc.and_(plain, pc.invert(changed)))
        last_of_group = pa.concat_arrays([pc.invert(same.slice(1)), pa.array([True])])
        counts.groups = count_true(pc.and_(last_of_group, pc.call("greater", count, 0)))
        # The output rows, in input order: per change +I(after), -D(before), -U(before) +U(after)
        # or +U(after); a value "before" a change is the value after the change before it.
        retract = query.emit == "retract"
        one, none = pa.scalar(1, int8), pa.scalar(0, int8)
        made = pc.if_else(pc.or_(created, deleted), one, none)
        made = pc.if_else(updated, pa.scalar(2 if retract else 1, int8), made)
        first_kind = pc.if_else(created, pa.scalar(0, int8), pa.scalar(1 if retract else 2, int8))
        first_kind = pc.if_else(deleted, pa.scalar(3, int8), first_kind)
        at, second, rows = expand_rows(order, made)
        kinds_all = pc.if_else(second, pa.scalar(2, int8), pc.take(first_kind, at))
        # -U and -D (the odd kinds) show the value before their change
        before = pc.call("bit_wise_and", kinds_all, pa.scalar(1, int8))
        source = pc.call("subtract", at, pc.cast(before, int64))
        columns: dict[str, Any] = {self.kc: pc.take(pa.array(list(KINDS), pa.string()), kinds_all)}
        # A change's own group values are its group's (group columns are never floats, whose
        # -0.0 and 0.0 group together): taken in input order, not gathered from the group's
        # first change.
        for name in query.group_by:
            columns[name] = pc.take(column(table, name), rows)
        for call, value in zip(query.aggs, after, strict=True):
            columns[call.name] = pc.take(value, source)
        return pa.table(columns), kinds_all, counts

    def _values(self, table: Any, call: Any, order: Any, sg: Any, lives: Runs, memo: dict[Any, Any]) -> Any:
        """One aggregate's value after each change, in group order (None: for the row path).
        ``memo`` keeps the record count and each column's values and count for the next."""
        pa = _pa()
        int64 = pa.int64()
        if None not in memo:  # COUNT(*): the record count
            memo[None] = _running(sg, lives)
        if call.arg is None:
            return memo[None]
        if ("values", call.arg) not in memo:
            memo["values", call.arg] = pc.take(column(table, call.arg), order)
        values = memo["values", call.arg]
        if call.func in ("MIN", "MAX"):
            return _running_extreme(values, lives, call.func == "MAX")
        if ("count", call.arg) not in memo:  # the non-null values: without nulls, the record count
            present = pc.cast(pc.is_valid(values), int64)
            memo["count", call.arg] = (
                _running(pc.call("multiply", sg, present), lives) if values.null_count else memo[None]
            )
        counted = memo["count", call.arg]
        if call.func == "COUNT":
            return counted
        if call.func in ("SUM", "AVG"):
            try:
                signed = pc.call("multiply_checked", sg, pc.fill_null(pc.cast(values, int64), 0))
                total = _running(signed, lives, checked=True)
            except pa.ArrowInvalid:  # past 64 bits: Python's integers do not overflow
                return None
            empty = pc.equal(counted, 0)
            if call.func == "SUM":
                return pc.if_else(empty, pa.scalar(None, int64), total)
            safe = pc.if_else(empty, pa.scalar(1, int64), counted)
            return pc.if_else(empty, pa.scalar(None, int64), pc.call("divide", total, safe))
        raise AssertionError(call.func)  # takes() admits no other

    def _unmatched(self, table: Any, order: Any, epoch: Any, sg: Any) -> bool:
        """Does a retraction take a group's count of its operands below zero (a row the group
        never counted)?"""
        args = list(dict.fromkeys(a.arg for a in self.query.aggs if a.arg is not None))
        if not args:
            return False
        in_order = pc.take(table.select(args), order).append_column("__cdc_epoch", epoch)
        codes = group_codes(in_order, ["__cdc_epoch", *args])
        again = group_order(codes)
        counts = _running(pc.take(sg, again), Runs(pc.invert(same_as_previous(pc.take(codes, again)))))
        return bool(pc.any(pc.call("less", counts, 0)).as_py())

    def hand_over(self, steps_for: Callable[..., Any], where: Any) -> Any:
        return steps_for(self.spec, self.result, where)

    def empty(self, info: Any) -> Callable[[], Empty | None]:
        return lambda: empty_result(self.spec, None, info.examples)

    def finish(self, sink: Any) -> None:
        counts = getattr(self, "counts", None) or AggregateCounts(emit=self.query.emit)
        self.result.detail = AggregateSummary(counts, Findings(self.spec.policy))


def _upsert_first(kinds: Any) -> bool:
    """Whether a +U comes before every -U (``core.aggregate.UpsertWatch``'s finding)."""
    from cdc.engine.paths.arrow_rules import AFTER, BEFORE, kind_codes

    codes = kind_codes(kinds)
    after = pc.call("index", codes, options=_index(AFTER)).as_py()
    if after < 0:
        return False
    before = pc.call("index", codes, options=_index(BEFORE)).as_py()
    return bool(before < 0 or after < before)


def _index(code: int) -> Any:
    from pyarrow._compute import IndexOptions

    return IndexOptions(_pa().scalar(code, _pa().int8()))


class Runs:
    """Runs of rows that begin where ``starts`` is true (and at the first row), for running
    values that start again at each: where each run begins (``at``), each row's run (``run``,
    from 0; ``number`` from 1). Worked out once for every running value over the same runs."""

    def __init__(self, starts: Any):
        pa = _pa()
        if len(starts) and not starts[0].as_py():
            starts = pa.concat_arrays([pa.array([True]), starts.slice(1)])
        self.starts = starts
        self.at = pc.indices_nonzero(starts)
        self.number = pc.call("cumulative_sum", pc.cast(starts, pa.int64()))
        self.run = pc.call("subtract", self.number, 1)


def _running(steps: Any, runs: Runs, checked: bool = False) -> Any:
    """Running sums of ``steps`` that start again at each run: the running sum of the whole
    less its value before the run began (one value per run, spread by a take of ordered
    indices: cheaper than forward-filling a column of nulls)."""
    total = pc.call("cumulative_sum_checked" if checked else "cumulative_sum", steps)
    before = pc.call("subtract", pc.take(total, runs.at), pc.take(steps, runs.at))
    return pc.call("subtract", total, pc.take(before, runs.run))


def _running_extreme(values: Any, lives: Runs, greatest: bool) -> Any:
    """The least (greatest) non-null value so far in each of the runs ``lives``: each
    run's values lifted above the runs before it, one running maximum. Integers are lifted as
    they are (when the lifted values fit 64 bits); other values by their dense ranks."""
    from pyarrow._compute import RankOptions

    pa = _pa()
    int64 = pa.int64()
    n = len(values)
    if pa.types.is_integer(values.type) and n and values.null_count < n:
        extremes = pc.call("min_max", values).as_py()
        low, high = extremes["min"], extremes["max"]
        width = high - low + 2  # 0: no value yet; 1…: the value above the least
        if (len(lives.at) + 1) * width < 2**62:
            shifted = pc.call("subtract", pc.cast(values, int64), low - 1)
            if not greatest:
                shifted = pc.call("subtract", width, shifted)
            shifted = pc.fill_null(shifted, 0)
            base = pc.call("multiply", lives.number, width)
            best = pc.call("subtract", pc.call("cumulative_max", pc.call("add", base, shifted)), base)
            value = pc.call("add", best, low - 1) if greatest else pc.call("subtract", width + low - 1, best)
            return pc.if_else(pc.equal(best, 0), pa.scalar(None, values.type), pc.cast(value, values.type))
    rank = pc.cast(pc.call("rank", values, options=RankOptions("ascending", tiebreaker="dense")), int64)
    top = int(pc.call("max", rank).as_py() or 0) + 1
    if not greatest:
        rank = pc.call("subtract", top, rank)
    rank = pc.if_else(pc.is_valid(values), rank, pa.scalar(0, int64))  # 0: no value yet
    run = lives.number
    lifted = pc.call("add", pc.call("multiply", run, top + 1), rank)
    best = pc.call("subtract", pc.call("cumulative_max", lifted), pc.call("multiply", run, top + 1))
    # back from ranks to values: a rank's first row holds it
    found = pc.call("sort_indices", rank)
    sorted_ranks = pc.take(rank, found)
    firsts = pc.invert(same_as_previous(sorted_ranks))
    by_rank = pc.take(values, pc.filter(found, firsts))  # by_rank[i]: the value of the i-th rank present
    present = pc.filter(sorted_ranks, firsts)
    slot = pc.call("index_in", best, options=_lookup(present))
    out = pc.take(by_rank, slot)
    return pc.if_else(pc.equal(best, 0), pa.scalar(None, values.type), out) if n else out


def _has_negative_zero(table: Any, columns: list[str]) -> bool:
    pa = _pa()
    for name in columns:
        values = column(table, name)
        if pa.types.is_floating(values.type):
            zero = pc.equal(values, 0.0)
            if pc.any(pc.and_(zero, pc.call("less", pc.call("divide", 1.0, values), 0.0))).as_py():
                return True
    return False


def _lookup(value_set: Any) -> Any:
    from pyarrow._compute import SetLookupOptions

    return SetLookupOptions(value_set)


def _previous(values: Any) -> Any:
    """Each row's value of the row before it (null for the first)."""
    pa = _pa()
    if not len(values):
        return values
    return pa.concat_arrays([pa.array([None], values.type), values.slice(0, len(values) - 1)])
