"""The row path's state rules, applied to a chunk of changes at once with pyarrow compute.

Each class here is one command's state on the Arrow path (``arrow_state`` runs it): it says
which jobs it takes (``takes``), whether a batch holds only changes it can apply (``regular``:
no bad record), applies a chunk (``apply``, False when a change would raise a finding — the
state is then left as it was), hands its state to the row path (``hand_over``) and writes what
only the end can (``finish``).

The shared technique: every change gets its key's dense group number (``group_codes``), a
stable sort by it puts each key's changes together in input order, and the change before each
one (``previous``) tells the state it met. Changes are numbered by their place in the whole
input (``seq``); the state carried from the chunks before is a table of rows that sort first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc.core.kinds import KIND_BY_TEXT
from cdc.core.specs import MaterializeSpec
from cdc.core.state import Findings, KeyedState
from cdc.formats.engine import arrow_compute as pc
from cdc.formats.engine.job import Result

SPELLINGS = list(KIND_BY_TEXT)  # +I -U +U -D, then the long names in the same order
INSERT, BEFORE, AFTER, DELETE = 0, 1, 2, 3  # kind codes: KINDS[code] is the kind
KINDS = ("+I", "-U", "+U", "-D")
LIVE, RETRACTED, NONE = 4, 5, 6  # carried state rows, and "no change before" for a key's first
STATE_KIND, STATE_SEQ = "__cdc_kind", "__cdc_seq"  # columns of the carried state rows

Rules = Any  # a class below: rules_for(spec)(spec, schema, result)


def rules_for(spec: Any) -> Rules | None:
    """The rules class of a spec, or None when the Arrow path does not vectorize its options."""
    if isinstance(spec, MaterializeSpec) and spec.key and not spec.dedup and spec.as_of is None:
        return KeyedMaterialize
    return None


# -- helpers ------------------------------------------------------------------------------------


def _pa() -> Any:
    import pyarrow as pa

    return pa


def is_nested(kind: Any) -> bool:
    pa = _pa()
    return bool(pa.types.is_nested(kind) or pa.types.is_dictionary(kind) or isinstance(kind, pa.ExtensionType))


def comparable(kind: Any) -> bool:
    """Values Arrow compares and groups as Python compares them (rows of one column type)."""
    return not is_nested(kind)


def groupable_key(kind: Any) -> bool:
    """A key column whose values Arrow groups as Python's dict does: not floats (``-0.0`` and
    ``0.0`` are one key to Python, each ``NaN`` another), not nested."""
    pa = _pa()
    return comparable(kind) and not pa.types.is_floating(kind)


def kind_codes(column: Any) -> Any:
    """The kind code of each change (0..3), null where the kind is not one of the spellings."""
    pa = _pa()
    index = pc.index_in(column, value_set=pa.array(SPELLINGS, pa.string()))
    return pc.take(pa.array([0, 1, 2, 3] * 2, pa.int8()), index)


def arange(n: int, start: int = 0) -> Any:
    """``start, start+1, …`` as int64."""
    pa = _pa()
    if n == 0:
        return pa.array([], pa.int64())
    values = pc.cast(pc.indices_nonzero(pa.repeat(True, n)), pa.int64())
    return pc.add(values, start) if start else values


def group_codes(table: Any, columns: tuple[str, ...] | list[str]) -> Any:
    """A dense group number per row for its values of ``columns`` (int64; null a value like
    any other; ``-0.0`` the same value as ``0.0``)."""
    pa = _pa()
    from pyarrow._compute import DictionaryEncodeOptions

    encode = DictionaryEncodeOptions("encode")
    codes: Any = None
    for name in columns:
        column = table.column(name)
        column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
        if pa.types.is_floating(column.type):
            column = pc.add(column, 0.0)  # -0.0 + 0.0 is +0.0
        encoded = pc.call("dictionary_encode", column, options=encode)
        index = pc.cast(encoded.indices, pa.int64())
        if codes is None:
            codes = index
        else:  # pairs of codes, numbered densely again
            combined = pc.add(pc.call("multiply", codes, len(encoded.dictionary)), index)
            codes = pc.cast(pc.call("dictionary_encode", combined, options=encode).indices, pa.int64())
    return codes


def grouped(table: Any, columns: tuple[str, ...] | list[str]) -> tuple[Any, Any]:
    """The rows of ``table`` lined up by their values of ``columns``, input order kept within a
    group: (row indices in that order, whether each is of the same group as the one before).
    Null is a value like any other; ``-0.0`` groups with ``0.0`` (floats with NaN are the
    caller's to keep out: Python never finds one NaN equal to another).

    A stable sort of dense group numbers (no ``group_by``: it would load pyarrow.acero and
    pyarrow.compute, 50 ms of start-up)."""
    pa = _pa()
    n = len(table)
    if not columns:  # one group
        if not n:
            return arange(0), pa.array([], pa.bool_())
        return arange(n), pa.concat_arrays([pa.array([False]), pa.repeat(True, n - 1)])
    codes = group_codes(table, columns)
    order = pc.call("sort_indices", codes)
    return order, same_as_previous(pc.take(codes, order))


def shifted_equal(table: Any, order: Any, columns: list[str]) -> Any:
    """Per row in ``order``, whether it holds the same values in ``columns`` as the row before
    it in that order (null equals null, as Python's None; NaN equals nothing, as two Python
    NaNs); False for the first."""
    pa = _pa()
    from pyarrow._compute import DictionaryEncodeOptions

    n = len(order)
    if not n:
        return pa.array([], pa.bool_())
    ok: Any = pa.repeat(True, n - 1)
    for name in columns:
        column = table.column(name)
        column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
        kind = column.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind):
            # equal codes are equal texts, and int32 codes move faster than texts
            column = pc.call("dictionary_encode", column, options=DictionaryEncodeOptions("mask")).indices
        values = pc.take(column, order)
        a, b = values.slice(1), values.slice(0, n - 1)
        same = pc.equal(a, b)
        if values.null_count:
            same = pc.or_(pc.fill_null(same, False), pc.and_(pc.is_null(a), pc.is_null(b)))
        ok = pc.and_(ok, same)
    return pa.concat_arrays([pa.array([False]), ok])


def same_as_previous(sorted_codes: Any) -> Any:
    """True where a row (in group order) is of the same group as the row before it."""
    pa = _pa()
    n = len(sorted_codes)
    if n == 0:
        return pa.array([], pa.bool_())
    tail = pc.equal(sorted_codes.slice(1), sorted_codes.slice(0, n - 1))
    return pa.concat_arrays([pa.array([False]), tail])


def previous(values: Any, same: Any, fill: Any) -> Any:
    """Each row's value of the row before it in its group (``same``: the row before is of the
    same group), ``fill`` for a group's first row."""
    pa = _pa()
    if len(values) == 0:
        return values
    shifted = pa.concat_arrays([pa.array([fill], values.type), values.slice(0, len(values) - 1)])
    return pc.if_else(same, shifted, pa.scalar(fill, values.type))


def same_as_next(same_prev: Any) -> Any:
    pa = _pa()
    n = len(same_prev)
    if n == 0:
        return same_prev
    return pa.concat_arrays([same_prev.slice(1), pa.array([False])])


def count_true(mask: Any) -> int:
    pa = _pa()
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)


def count_codes(codes: Any) -> list[int]:
    """How many of each kind code 0..3."""
    counts = [0, 0, 0, 0]
    for item in pc.value_counts(codes).to_pylist():
        value = item["values"]
        if value is not None and 0 <= value < 4:
            counts[value] += item["counts"]
    return counts


def without(names: list[str], *drop: Any) -> list[str]:
    gone: set[str] = set()
    for d in drop:
        gone.update([d] if isinstance(d, str) else d)
    return [n for n in names if n not in gone]


# -- materialize --key ------------------------------------------------------------------------


class KeyedMaterialize:
    """``KeyedState`` (core.state): one live row per key, in first-insertion order.

    With no finding, the state a change meets is told by the change before it for its key:
    after ``+I``/``+U`` the key is live (its row that change's image), after ``-U`` retracted,
    after ``-D`` (or none) absent. A change is a finding when it is ``+I`` of a live key, a
    ``-U``/``-D`` of a key that is not live, or a ``-U`` whose image differs from the live row.
    A key keeps its place from the change that inserted it (the first after a ``-D``)."""

    @classmethod
    def takes(cls, spec: MaterializeSpec, schema: Any) -> bool:
        pa = _pa()
        names = schema.names
        if spec.kind_column not in names:
            return False
        kind = schema.field(spec.kind_column).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            return False
        if not all(k in names and groupable_key(schema.field(k).type) for k in spec.key):
            return False
        return all(comparable(f.type) for f in schema)

    def __init__(self, spec: MaterializeSpec, schema: Any, result: Result):
        from cdc.formats.engine.tables import metadata_of

        self.spec = spec
        self.result = result
        self.schema = schema
        self.kc = spec.kind_column
        self.metadata = metadata_of(spec)
        self.images = without(schema.names, self.kc)  # the stored row: every column but the kind
        self.compared = without(self.images, self.metadata)  # what a -U must match
        self.by_kind = [0, 0, 0, 0]
        self.retract = 0
        self.upsert = 0
        self.state: Any = None  # the live and retracted keys: their rows + STATE_KIND + STATE_SEQ

    def regular(self, batch: Any) -> bool:
        return bool(kind_codes(batch.column(self.kc)).null_count == 0)

    def _with_state(self, table: Any, offset: int) -> Any:
        pa = _pa()
        codes = kind_codes(table.column(self.kc))
        chunk = table.append_column(STATE_KIND, codes).append_column(STATE_SEQ, arange(len(table), offset))
        if self.state is None or not len(self.state):
            return chunk
        state = self.state.cast(chunk.schema) if self.state.schema != chunk.schema else self.state
        return pa.concat_tables([state, chunk]).combine_chunks()

    def apply(self, table: Any, offset: int, sink: Any) -> bool:
        pa = _pa()
        work = self._with_state(table, offset)
        order, same = grouped(work, self.spec.key)
        kinds = pc.take(work.column(STATE_KIND), order).combine_chunks()
        before = previous(kinds, same, NONE)
        live_before = pc.take(pa.array([True, False, True, False, True, False, False]), before)
        retraction = pc.or_(pc.equal(kinds, BEFORE), pc.equal(kinds, DELETE))
        finding = pc.or_(
            pc.and_(pc.equal(kinds, INSERT), live_before),
            pc.and_(retraction, pc.invert(live_before)),
        )
        if pc.any(finding).as_py():
            return False
        update_before = pc.equal(kinds, BEFORE)
        if pc.any(update_before).as_py():  # each -U's row before it is the stored row
            compared = without(self.compared, self.spec.key)
            unlike = pc.and_(update_before, pc.invert(shifted_equal(work, order, compared)))
            if pc.any(unlike).as_py():
                return False
        counts = count_codes(kinds)
        for i in range(4):
            self.by_kind[i] += counts[i]
        updates = count_true(pc.and_(pc.equal(kinds, AFTER), live_before))
        self.retract += sum(counts) + updates
        self.upsert += counts[INSERT] + counts[AFTER] + counts[DELETE]
        # The state after the chunk: each key's last change, unless a -D; its place is that of
        # the change that (re)inserted it.
        seqs = pc.take(work.column(STATE_SEQ), order)
        starts = pc.or_(pc.invert(same), pc.equal(before, DELETE))
        places = pc.call("fill_null_forward", pc.if_else(starts, seqs, pa.scalar(None, pa.int64())))
        last = pc.invert(same_as_next(same))
        keep = pc.and_(last, pc.invert(pc.equal(kinds, DELETE)))
        rows = pc.filter(order, keep)
        after = pa.array([LIVE, RETRACTED, LIVE, RETRACTED, LIVE, RETRACTED], pa.int8())
        final = pc.take(after, pc.filter(kinds, keep))
        state = pc.take(work, rows)
        state = state.set_column(state.schema.get_field_index(STATE_KIND), STATE_KIND, final)
        state = state.set_column(state.schema.get_field_index(STATE_SEQ), STATE_SEQ, pc.filter(places, keep))
        self.state = state
        return True

    def _live(self) -> Any:
        """The live rows in first-insertion order (retracted keys left out)."""
        if self.state is None:
            return None
        live = pc.filter(self.state, pc.equal(self.state.column(STATE_KIND), LIVE))
        return pc.take(live, pc.call("sort_indices", live.column(STATE_SEQ)))

    def hand_over(self, steps_for: Callable[..., Any], where: Any) -> Any:
        steps = steps_for(self.spec, self.result, where)
        state: KeyedState = self.result.detail
        self._count_into(state)
        if self.state is not None and len(self.state):
            ordered = pc.take(self.state, pc.call("sort_indices", self.state.column(STATE_SEQ)))
            retracted = pc.equal(ordered.column(STATE_KIND), RETRACTED).to_pylist()
            for row, gone in zip(ordered.select(self.images).to_pylist(), retracted, strict=True):
                state.load(row, gone)
        self.state = None
        return steps

    def _count_into(self, state: Any) -> None:
        for kind, n in zip(KINDS, self.by_kind, strict=True):
            if n:
                state.by_kind[kind] += n
        state.retract_messages += self.retract
        state.upsert_messages += self.upsert

    def finish(self, sink: Any) -> None:
        live = self._live()
        state = KeyedSummary(self.spec.key, Findings(self.spec.policy), metadata=self.metadata)
        self._count_into(state)
        state.live = len(live) if live is not None else 0
        self.result.detail = state
        if live is None or not len(live):
            return
        out = live.select(without(self.images, self.metadata))
        if self.spec.sort:
            out = sort_by_key(out, self.spec.key)
        sink.table(out)

    def empty_columns(self, info: Any) -> Callable[[], list[str]]:
        names = info.columns if info.columns is not None else self.schema.names
        return lambda: [n for n in names if n != self.kc and n not in self.metadata]


class KeyedSummary(KeyedState):
    """A keyed table's account (counts, findings) without its rows, which went out as Arrow."""

    live = 0

    def __len__(self) -> int:
        return self.live


def sort_by_key(table: Any, key: tuple[str, ...]) -> Any:
    """``--sort``: rows ordered as the row path's ``sort_key`` orders their key values (nulls
    first, numbers, date-times, text); stable, so equal keys keep first-insertion order."""
    pa = _pa()
    columns = list(key) or list(table.schema.names)
    kinds = [table.schema.field(c).type for c in columns]
    if all(pa.types.is_integer(k) or pa.types.is_decimal(k) for k in kinds):
        from pyarrow._compute import SortOptions

        options = SortOptions([(c, "ascending", "at_start") for c in columns])
        return pc.take(table, pc.call("sort_indices", table.select(columns), options=options))
    from cdc.core.timeorder import sort_key

    values = list(zip(*(table.column(c).to_pylist() for c in columns), strict=True))
    order = sorted(range(len(values)), key=lambda i: tuple(sort_key(v) for v in values[i]))
    return pc.take(table, pa.array(order, pa.int64()))
