"""``replay`` on Arrow batches: Flink's ChangelogNormalize (``core.replay``) a chunk at a time.

Per key, in input order, the state a change meets is told by the change before it other than a
``-U`` (``-U`` rows are consumed on the way in): after ``+I``/``+U`` the key holds that change's
row, after ``-D`` (or none) it is absent. So each change's output is known at once — ``+I`` of
a new key, ``-U``/``+U`` of an update (``+U`` alone for ``--emit upsert``), nothing for an
update that changes nothing, ``-D`` with the stored row — and the output rows are put back in
input order. ``--since``/``--until`` compare the time column as ``core.timeorder`` does
(``arrow_time``); ``--net`` keeps the state at ``--since`` as well and hands both states to the
row path's ``Replayer.finish`` for the difference. Replay raises no findings: a hand-over only
comes with a bad kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from cdc.core.model import Row
from cdc.core.replay import ReplayCounts, Replayer
from cdc.core.specs import ReplaySpec
from cdc.core.timeorder import TimePoint
from cdc.engine.empty import Empty, empty_result
from cdc.engine.job import Result
from cdc.engine.paths.arrow_rules import (
    AFTER,
    BEFORE,
    DELETE,
    INSERT,
    KINDS,
    LIVE,
    NONE,
    STATE_KIND,
    STATE_SEQ,
    ChangeRules,
    column,
    count_true,
    expand,
    grouped,
    previous,
    rows_equal,
    same_as_next,
    same_as_previous,
    without,
)
from cdc.formats import arrow_compute as pc


def _pa() -> Any:
    import pyarrow as pa

    return pa


class Replay(ChangeRules):
    @classmethod
    def takes(cls, spec: ReplaySpec, schema: Any) -> bool:
        for name in (spec.time_column, spec.order_by):
            if name is not None and (
                name not in schema.names or (spec.reads == "changelog" and name == spec.kind_column)
            ):
                return False
        if spec.reads == "changelog" and spec.time_column == spec.kind_column:
            return False
        return super().takes(spec, schema)

    def __init__(self, spec: ReplaySpec, schema: Any, result: Result):
        super().__init__(spec, schema, result)
        self.counts = ReplayCounts()
        self.since = TimePoint(spec.since, "--since", spec.time_column) if spec.since is not None else None
        self.until = TimePoint(spec.until, "--until", spec.time_column) if spec.until is not None else None
        self.at_since: Any = None  # --net: the state at --since
        # a change and the stored row it meets are of one key: equal key values (Arrow groups
        # keys as Python compares them), so only the other columns tell them apart
        self.unkeyed = without(self.images, spec.key)

    def apply(self, table: Any, offset: int, sink: Any) -> bool:
        pa = _pa()
        delta: Counter[str] = Counter(read=len(table))  # nothing changes until the chunk is done
        emit: Any = None
        at_since = self.at_since
        seqs = _seqs(len(table), offset)
        tc = self.spec.time_column
        if tc is not None:
            if self.until is not None:
                after = pc.call("greater", _compare(table.column(tc), self.until), 0)
                delta["after_window"] += count_true(after)
                if pc.any(after).as_py():
                    keep = pc.invert(after)
                    table, seqs = pc.filter(table, keep), pc.filter(seqs, keep)
            if self.since is not None:
                early = pc.call("less_equal", _compare(table.column(tc), self.since), 0)
                if self.spec.net:
                    found = self._step(
                        at_since, pc.filter(table, early), pc.filter(seqs, early), None, Counter(), output=False
                    )
                    if found is None:
                        return False
                    at_since = found[0]
                else:
                    delta["before_window"] += count_true(early)
                emit = pc.invert(early)
        if self.spec.net:
            emit = pa.repeat(False, len(table))
        found = self._step(self.state, table, seqs, emit, delta)
        if found is None:
            return False
        self.state, out, kinds = found
        self.at_since = at_since
        for name, n in delta.items():
            setattr(self.counts, name, getattr(self.counts, name) + n)
        if out is not None and len(out):
            for kind, n in zip(KINDS, _count_kinds(kinds), strict=True):
                if n:
                    self.result.counts.by_kind[kind] += n
            sink.table(out)
        return True

    def _late(self, work: Any, order: Any, same: Any, kinds: Any) -> Any:
        """``--order-by``: whether each change (in ``order``) is older than its key's stored
        version. The stored version's value is the greatest of the puts before it since the
        key was last deleted, taking every ``-D`` for a deletion — None (a hand-over) when a
        ``-D`` itself is late, which breaks that, or when the values cannot be ranked."""
        from cdc.engine.paths.arrow_time import ranks

        pa = _pa()
        int64 = pa.int64()
        assert self.spec.order_by is not None
        values = column(work, self.spec.order_by)
        if values.null_count:
            return None
        ranked = ranks(values)
        if ranked is None:
            return None
        rank = pc.call("add", pc.take(ranked, order), 1)  # 1…R: 0 is "no put"
        width = int(pc.call("max", rank).as_py() or 0) + 1
        is_delete = pc.equal(kinds, DELETE)
        starts = pc.or_(pc.invert(same), previous(is_delete, same, False))
        epoch = pc.call("cumulative_sum", pc.cast(starts, int64))
        base = pc.call("multiply", epoch, width)
        put = pc.or_(pc.or_(pc.equal(kinds, INSERT), pc.equal(kinds, AFTER)), pc.equal(kinds, LIVE))
        highest = pc.call("cumulative_max", pc.call("add", base, pc.if_else(put, rank, pa.scalar(0, int64))))
        shifted = (
            pa.concat_arrays([pa.array([0], int64), highest.slice(0, len(highest) - 1)]) if len(highest) else highest
        )
        before = pc.call("subtract", pc.if_else(starts, base, shifted), base)  # greatest put rank before, or 0
        late = pc.and_(pc.call("greater", before, 0), pc.call("less", rank, before))
        if pc.any(pc.and_(late, is_delete)).as_py():
            return None
        return late

    def _step(
        self, state: Any, table: Any, seqs: Any, emit: Any, delta: Counter[str], output: bool = True
    ) -> tuple[Any, Any, Any] | None:
        """Apply ``table``'s changes (placed at ``seqs``) to ``state``, their counts into
        ``delta``: the state after, the output rows of the changes ``emit`` says (all when
        None) and their kind codes; None when the chunk is for the row path."""
        pa = _pa()
        int64 = pa.int64()
        chunk = table.append_column(STATE_KIND, self.kinds(table)).append_column(STATE_SEQ, seqs)
        chunk = chunk.append_column("__cdc_emit", emit if emit is not None else pa.repeat(True, len(table)))
        if state is not None and len(state):
            carried = state.append_column("__cdc_emit", pa.repeat(False, len(state)))
            work = pa.concat_tables([carried.cast(chunk.schema), chunk]).combine_chunks()
        else:
            work = chunk
        order, groups = grouped(work, self.spec.key)
        same = same_as_previous(groups)
        kinds = pc.take(column(work, STATE_KIND), order)
        if self.spec.order_by is not None:
            late = self._late(work, order, same, kinds)
            if late is None:
                return None
            if pc.any(late).as_py():
                delta["late"] += count_true(late)
                current = pc.invert(late)
                order, groups, kinds = pc.filter(order, current), pc.filter(groups, current), pc.filter(kinds, current)
                same = same_as_previous(groups)
        is_before = pc.equal(kinds, BEFORE)
        effective = pc.if_else(is_before, pa.scalar(None, pa.int8()), kinds)
        before = pc.call("fill_null_forward", previous(effective, same, NONE))
        live = pc.take(pa.array([True, False, True, False, True, False, False]), before)
        put = pc.or_(pc.equal(kinds, INSERT), pc.equal(kinds, AFTER))
        holds = pc.or_(put, pc.equal(kinds, LIVE))
        rows = pc.cast(order, int64)
        stored = pc.call("fill_null_forward", previous(pc.if_else(holds, rows, pa.scalar(None, int64)), same, -1))
        is_delete = pc.equal(kinds, DELETE)
        deleted = pc.and_(is_delete, live)
        inserted = pc.and_(put, pc.invert(live))
        updated = pc.and_(put, live)
        if pc.any(updated).as_py() and not self.spec.keep_noop:
            at = pc.indices_nonzero(updated)
            unchanged = rows_equal(work, pc.take(rows, at), pc.take(stored, at), self.unkeyed)
            noop = pc.call("replace_with_mask", pa.repeat(False, len(kinds)), updated, unchanged)
            updated = pc.and_(updated, pc.invert(noop))
        else:
            noop = None
        delta["ignored_retractions"] += count_true(is_before) + count_true(pc.and_(is_delete, pc.invert(live)))
        if noop is not None:
            delta["noops"] += count_true(noop)
        # The state after: each key's last change other than a -U, when it holds a row; its
        # place that of the change that (re)inserted it.
        starts = pc.or_(inserted, pc.equal(kinds, LIVE))
        seq_sorted = pc.take(column(work, STATE_SEQ), order)
        places = pc.call("fill_null_forward", pc.if_else(starts, seq_sorted, pa.scalar(None, int64)))
        mask = pc.invert(is_before)
        last = pc.invert(same_as_next(same_as_previous(pc.filter(groups, mask))))
        keep = pc.and_(last, pc.filter(holds, mask))
        new_state = pc.take(work, pc.filter(pc.filter(rows, mask), keep)).drop_columns(["__cdc_emit"])
        live = pa.repeat(pa.scalar(LIVE, pa.int8()), count_true(keep))
        new_state = new_state.set_column(new_state.schema.get_field_index(STATE_KIND), STATE_KIND, live)
        new_state = new_state.set_column(
            new_state.schema.get_field_index(STATE_SEQ), STATE_SEQ, pc.filter(pc.filter(places, mask), keep)
        )
        if not output:  # the state at --since
            return new_state, None, None
        # The output, in input order: per change its rows (a -U before its +U).
        emitting = pc.take(column(work, "__cdc_emit"), order)
        retract = self.spec.emit == "retract"
        main = pc.and_(emitting, pc.or_(pc.or_(deleted, inserted), updated))
        n_insert, n_delete, n_update = (count_true(pc.and_(emitting, m)) for m in (inserted, deleted, updated))
        delta["written"] += n_insert + n_delete + n_update * (2 if retract else 1)
        delta["retract_messages"] += n_insert + n_delete + 2 * n_update
        delta["upsert_messages"] += n_insert + n_delete + n_update
        int8 = pa.int8()
        if (not retract or not n_update) and self._deletes_as_stored(work, rows, stored, pc.and_(emitting, deleted)):
            # Each output row is its change's own row (a -D's image is the stored row): the rows
            # in input order, filtered — no gather.
            from pyarrow._compute import InversePermutationOptions

            back = pc.call("inverse_permutation", rows, options=InversePermutationOptions(max_index=len(work) - 1))
            kind = pc.if_else(inserted, pa.scalar(INSERT, int8), pa.scalar(AFTER, int8))
            kind = pc.if_else(deleted, pa.scalar(DELETE, int8), kind)
            keep = pc.fill_null(pc.take(main, back), False)
            out_kind = pc.filter(pc.take(kind, back), keep)
            images = pc.filter(work.select(self.images), keep)
        else:
            made = pc.if_else(main, pa.scalar(1, int8), pa.scalar(0, int8))
            if retract:
                made = pc.if_else(pc.and_(emitting, updated), pa.scalar(2, int8), made)
            at, second = expand(order, made, len(work))
            first_kind = pc.if_else(inserted, pa.scalar(INSERT, int8), pa.scalar(BEFORE if retract else AFTER, int8))
            first_kind = pc.if_else(deleted, pa.scalar(DELETE, int8), first_kind)
            out_kind = pc.if_else(second, pa.scalar(AFTER, int8), pc.take(first_kind, at))
            of_stored = pc.or_(deleted, pc.and_(updated, pa.scalar(retract)))  # -D(stored), -U(stored)
            from_stored = pc.and_(pc.invert(second), pc.take(of_stored, at))
            out_row = pc.if_else(from_stored, pc.take(stored, at), pc.take(rows, at))
            images = pc.take(work.select(self.images), out_row)
        texts = pc.take(pa.array(list(KINDS), pa.string()), out_kind)
        return new_state, images.add_column(0, self.kc, texts), out_kind

    def _deletes_as_stored(self, work: Any, rows: Any, stored: Any, deletes: Any) -> bool:
        """Whether each of these -D rows holds the very values of the row it deletes."""
        if not pc.any(deletes).as_py():
            return True
        import pyarrow as pa

        # equal is not identical for floats (0.0 == -0.0): the stored row's own values are written
        if any(pa.types.is_floating(work.schema.field(c).type) for c in self.images):
            return False
        at = pc.indices_nonzero(deletes)
        return bool(pc.all(rows_equal(work, pc.take(rows, at), pc.take(stored, at), self.unkeyed)).as_py())

    def hand_over(self, steps_for: Callable[..., Any], where: Any) -> Any:
        replayer = Replayer(self.spec, self.counts)
        self._load(replayer.state, self.state)
        if replayer.at_since is not None:
            self._load(replayer.at_since, self.at_since)
        self.state = self.at_since = None
        return replay_steps(self.spec, self.result, replayer)

    def _load(self, keyed: Any, state: Any) -> None:
        ordered = self._ordered_state(state)
        if ordered is None:
            return
        table = keyed.table
        order_by = self.spec.order_by
        for row in ordered.select(self.images).to_pylist():
            key = table.key_of(row)
            table.put(key, row)
            if order_by is not None:
                keyed._order[key] = row[order_by]

    def empty(self, info: Any) -> Callable[[], Empty | None]:
        names = info.columns if info.columns is not None else self.schema.names
        return lambda: empty_result(self.spec, names, info.examples)

    def finish(self, sink: Any) -> None:
        self.result.detail = self.counts
        if not self.spec.net:
            return
        replayer = Replayer(self.spec, self.counts)
        self._load(replayer.state, self.state)
        assert replayer.at_since is not None
        self._load(replayer.at_since, self.at_since)
        sink.rows(_with_kinds(self.spec.kind_column, self.result, replayer.finish()))


def _seqs(n: int, offset: int) -> Any:
    from cdc.engine.paths.arrow_rules import arange

    return arange(n, offset)


def _compare(column: Any, point: TimePoint) -> Any:
    from cdc.engine.paths.arrow_time import compare_to

    return compare_to(column, point)


def _count_kinds(codes: Any) -> list[int]:
    from cdc.engine.paths.arrow_rules import count_codes

    return count_codes(codes)


def _with_kinds(kc: str, result: Result, changes: list[tuple[str, Row]]) -> list[Row]:
    result.counts.by_kind.update(kind for kind, _ in changes)
    return [{kc: kind, **image} for kind, image in changes]


def replay_steps(spec: ReplaySpec, result: Result, replayer: Replayer) -> Any:
    """The row path's steps of ``replay`` (``rows._replay``), around a replayer already holding
    the state built here."""
    from cdc.core.inputmodes import change_reader
    from cdc.engine.paths.rows import Steps

    result.detail = replayer.counts
    change_of = change_reader(spec.input_mode, spec.kind_column, spec.delete_when)
    kc = spec.kind_column

    def step(row: Row) -> list[Row]:
        kind, image = change_of(row)
        return _with_kinds(kc, result, replayer.step(kind, image))

    return Steps(step, lambda: _with_kinds(kc, result, replayer.finish()))
