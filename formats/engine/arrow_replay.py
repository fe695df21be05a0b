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

from collections.abc import Callable
from typing import Any

from cdc.core.model import Row
from cdc.core.replay import ReplayCounts, Replayer
from cdc.core.specs import ReplaySpec
from cdc.core.timeorder import TimePoint
from cdc.formats.engine import arrow_compute as pc
from cdc.formats.engine.arrow_rules import (
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
    grouped,
    previous,
    rows_equal,
    same_as_next,
    same_as_previous,
)
from cdc.formats.engine.job import Result


def _pa() -> Any:
    import pyarrow as pa

    return pa


class Replay(ChangeRules):
    @classmethod
    def takes(cls, spec: ReplaySpec, schema: Any) -> bool:
        if spec.time_column is not None and spec.time_column not in schema.names:
            return False
        if spec.reads == "changelog" and spec.time_column == spec.kind_column:
            return False
        return super().takes(spec, schema)

    def __init__(self, spec: ReplaySpec, schema: Any, result: Result):
        super().__init__(spec, schema, result)
        self.counts = ReplayCounts()
        self.since = TimePoint(spec.since) if spec.since is not None else None
        self.until = TimePoint(spec.until) if spec.until is not None else None
        self.at_since: Any = None  # --net: the state at --since

    def apply(self, table: Any, offset: int, sink: Any) -> bool:
        pa = _pa()
        counts = self.counts
        counts.read += len(table)
        emit: Any = None
        tc = self.spec.time_column
        if tc is not None:
            keep = None
            if self.until is not None:
                after = pc.call("greater", _compare(table.column(tc), self.until), 0)
                counts.after_window += count_true(after)
                keep = pc.invert(after)
            if keep is not None and not pc.all(keep).as_py():
                table = pc.filter(table, keep)
                offset_seq = pc.filter(_seqs(len(keep), offset), keep)
            else:
                offset_seq = None
            if self.since is not None:
                early = pc.call("less_equal", _compare(table.column(tc), self.since), 0)
                if self.spec.net:
                    at_since = pc.filter(table, early)
                    seqs = pc.filter(offset_seq if offset_seq is not None else _seqs(len(table), offset), early)
                    self.at_since, _, _ = self._step(self.at_since, at_since, seqs, None, count=False)
                else:
                    counts.before_window += count_true(early)
                emit = pc.invert(early)
        else:
            offset_seq = None
        seqs = offset_seq if offset_seq is not None else _seqs(len(table), offset)
        if self.spec.net:
            emit = pa.repeat(False, len(table))
        self.state, out, kinds = self._step(self.state, table, seqs, emit)
        if out is not None and len(out):
            for kind, n in zip(KINDS, _count_kinds(kinds), strict=True):
                if n:
                    self.result.counts.by_kind[kind] += n
            sink.table(out)
        return True

    def _step(self, state: Any, table: Any, seqs: Any, emit: Any, count: bool = True) -> tuple[Any, Any, Any]:
        """Apply ``table``'s changes (placed at ``seqs``) to ``state``; the output rows of those
        ``emit`` says (all when None), and their kind codes."""
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
            unchanged = rows_equal(work, pc.take(rows, at), pc.take(stored, at), self.images)
            noop = pc.call("replace_with_mask", pa.repeat(False, len(kinds)), updated, unchanged)
            updated = pc.and_(updated, pc.invert(noop))
        else:
            noop = None
        if count:
            c = self.counts
            c.ignored_retractions += count_true(is_before) + count_true(pc.and_(is_delete, pc.invert(live)))
            if noop is not None:
                c.noops += count_true(noop)
        # The state after: each key's last change other than a -U, when it holds a row; its
        # place that of the change that (re)inserted it.
        starts = pc.or_(inserted, pc.equal(kinds, LIVE))
        seq_sorted = pc.take(column(work, STATE_SEQ), order)
        places = pc.call("fill_null_forward", pc.if_else(starts, seq_sorted, pa.scalar(None, int64)))
        mask = pc.invert(is_before)
        last = pc.invert(same_as_next(same_as_previous(pc.filter(groups, mask))))
        keep = pc.and_(last, pc.filter(holds, mask))
        new_state = pc.take(work, pc.filter(pc.filter(rows, mask), keep)).drop_columns(["__cdc_emit"])
        new_state = new_state.set_column(
            new_state.schema.get_field_index(STATE_KIND), STATE_KIND, pa.array([LIVE] * count_true(keep), pa.int8())
        )
        new_state = new_state.set_column(
            new_state.schema.get_field_index(STATE_SEQ), STATE_SEQ, pc.filter(pc.filter(places, mask), keep)
        )
        if not count:
            return new_state, None, None
        # The output, in input order: per change its rows (a -U before its +U).
        emitting = pc.take(column(work, "__cdc_emit"), order)
        retract = self.spec.emit == "retract"
        main = pc.and_(emitting, pc.or_(pc.or_(deleted, inserted), updated))
        c = self.counts
        n_insert, n_delete, n_update = (count_true(pc.and_(emitting, m)) for m in (inserted, deleted, updated))
        c.written += n_insert + n_delete + n_update * (2 if retract else 1)
        c.retract_messages += n_insert + n_delete + 2 * n_update
        c.upsert_messages += n_insert + n_delete + n_update
        at = pc.indices_nonzero(main)
        out_kind = pc.take(pc.if_else(inserted, pa.scalar(INSERT, pa.int8()), pa.scalar(AFTER, pa.int8())), at)
        out_kind = pc.if_else(pc.take(deleted, at), pa.scalar(DELETE, pa.int8()), out_kind)
        out_row = pc.if_else(pc.take(deleted, at), pc.take(stored, at), pc.take(rows, at))
        out_seq = pc.call("multiply", pc.take(seq_sorted, at), 2)
        if retract and n_update:
            extra = pc.indices_nonzero(pc.and_(emitting, updated))
            out_kind = pa.concat_arrays([out_kind, pa.array([BEFORE] * len(extra), pa.int8())])
            out_row = pa.concat_arrays([out_row, pc.take(stored, extra)])
            out_seq = pa.concat_arrays([pc.call("add", out_seq, 1), pc.call("multiply", pc.take(seq_sorted, extra), 2)])
        placed = pc.call("sort_indices", out_seq)
        out_kind = pc.take(out_kind, placed)
        images = pc.take(work.select(self.images), pc.take(out_row, placed))
        texts = pc.take(pa.array(list(KINDS), pa.string()), out_kind)
        return new_state, images.add_column(0, self.kc, texts), out_kind

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
        for row in ordered.select(self.images).to_pylist():
            table.put(table.key_of(row), row)

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
    from cdc.formats.engine.arrow_rules import arange

    return arange(n, offset)


def _compare(column: Any, point: TimePoint) -> Any:
    from cdc.formats.engine.arrow_time import compare_to

    return compare_to(column, point)


def _count_kinds(codes: Any) -> list[int]:
    from cdc.formats.engine.arrow_rules import count_codes

    return count_codes(codes)


def _with_kinds(kc: str, result: Result, changes: list[tuple[str, Row]]) -> list[Row]:
    result.counts.by_kind.update(kind for kind, _ in changes)
    return [{kc: kind, **image} for kind, image in changes]


def replay_steps(spec: ReplaySpec, result: Result, replayer: Replayer) -> Any:
    """The row path's steps of ``replay`` (``rows._replay``), around a replayer already holding
    the state built here."""
    from cdc.core.inputmodes import change_reader
    from cdc.formats.engine.rows import Steps

    result.detail = replayer.counts
    change_of = change_reader(spec.input_mode, spec.kind_column, spec.delete_when)
    kc = spec.kind_column

    def step(row: Row) -> list[Row]:
        kind, image = change_of(row)
        return _with_kinds(kc, result, replayer.step(kind, image))

    return Steps(step, lambda: _with_kinds(kc, result, replayer.finish()))
