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
from cdc.core.specs import CHANGELOG, MaterializeSpec
from cdc.core.state import Findings, KeyedState, MultisetState
from cdc.engine.empty import Empty, empty_result
from cdc.engine.job import Result
from cdc.formats import arrow_compute as pc

SPELLINGS = list(KIND_BY_TEXT)  # +I -U +U -D, then the long names in the same order
INSERT, BEFORE, AFTER, DELETE = 0, 1, 2, 3  # kind codes: KINDS[code] is the kind
KINDS = ("+I", "-U", "+U", "-D")
LIVE, RETRACTED, NONE = 4, 5, 6  # carried state rows, and "no change before" for a key's first
STATE_KIND, STATE_SEQ, STATE_COUNT = "__cdc_kind", "__cdc_seq", "__cdc_count"  # columns of carried state

OUTPUT_SLICE = 1 << 16  # output rows taken from the state at a time
GROUP_BY_ROWS = 50_000  # grouping by several columns: from this many rows on, by a hash aggregation
Rules = Any  # a class below: arrow_state.rules_for(spec)(spec, schema, result)


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
    column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    index = pc.index_in(column, value_set=pa.array(SPELLINGS, pa.string()))
    return pc.take(pa.array([0, 1, 2, 3] * 2, pa.int8()), index)


def arange(n: int, start: int = 0) -> Any:
    """``start, start+1, …`` as int64."""
    pa = _pa()
    if n == 0:
        return pa.array([], pa.int64())
    values = pc.cast(pc.indices_nonzero(pa.repeat(True, n)), pa.int64())
    return pc.add(values, start) if start else values


def _grouping_columns(table: Any, columns: tuple[str, ...] | list[str]) -> list[Any]:
    """The columns to group by as arrays: ``-0.0`` made ``0.0``, columns of nulls only left out
    (they tell no rows apart)."""
    pa = _pa()
    out = []
    for name in columns:
        column = table.column(name)
        column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
        if pa.types.is_null(column.type):
            continue
        if pa.types.is_floating(column.type):
            column = pc.add(column, 0.0)  # -0.0 + 0.0 is +0.0
        out.append(column)
    return out


def group_codes(table: Any, columns: tuple[str, ...] | list[str]) -> Any:
    """A dense group number per row for its values of ``columns``, numbered in order of first
    appearance (null a value like any other; ``-0.0`` the same value as ``0.0``)."""
    pa = _pa()
    from pyarrow._compute import DictionaryEncodeOptions

    encode = DictionaryEncodeOptions("encode")
    codes: Any = None
    for column in _grouping_columns(table, columns):
        encoded = pc.call("dictionary_encode", column, options=encode)
        if codes is None:
            codes = encoded.indices
        else:  # pairs of codes, numbered densely again
            pair = pc.add(pc.call("multiply", pc.cast(codes, pa.int64()), len(encoded.dictionary)), encoded.indices)
            codes = pc.call("dictionary_encode", pair, options=encode).indices
    return codes if codes is not None else pa.repeat(pa.scalar(0, pa.int32()), len(table))


COUNTING_BITS = 12  # Arrow sorts integers by counting when their range is at most 4096 values


def group_order(codes: Any) -> Any:
    """The stable sort of dense group numbers (≥ 0, no nulls): their row indices, as
    ``sort_indices`` gives them. Arrow sorts a range of at most 4096 integers by counting, but
    more than that (100k keys) by comparing: 90 ms a million rows. So this sorts 12 bits at a
    time from the lowest (a radix sort, each pass a stable counting sort): 15 ms."""
    pa = _pa()
    n = len(codes)
    top = pc.call("max", codes).as_py() if n else None
    if top is None or top < 1 << COUNTING_BITS or codes.null_count:
        return pc.call("sort_indices", codes)
    mask = pa.scalar((1 << COUNTING_BITS) - 1, codes.type)
    order: Any = None
    shift = 0
    while top >> shift:
        digits = pc.call("shift_right", codes, pa.scalar(shift, codes.type)) if shift else codes
        digits = pc.cast(pc.call("bit_wise_and", digits, mask), pa.uint16())
        if order is None:
            order = pc.call("sort_indices", digits)
        else:  # the next digit of the rows in the order so far, sorted stably
            order = pc.take(order, pc.call("sort_indices", pc.take(digits, order)))
        shift += COUNTING_BITS
    return order


def integer_codes(values: Any) -> Any:
    """Group numbers of an integer column of a dense range, where their order does not count:
    its values less the least (nulls after the greatest), with no hash table of them
    (``dictionary_encode``: 16 ms a million rows, this 2). None for other columns."""
    pa = _pa()
    n = len(values)
    if not pa.types.is_integer(values.type) or not n or values.null_count == n:
        return None
    extremes = pc.call("min_max", values).as_py()
    low, high = extremes["min"], extremes["max"]
    if high - low >= min(4 * n, 2**31 - 2) or high >= 2**63:  # sparse (more sort passes), or past int64
        return None
    codes = pc.cast(pc.call("subtract", pc.cast(values, pa.int64()), low), pa.int32())
    return pc.fill_null(codes, high - low + 1) if values.null_count else codes


def grouped(table: Any, columns: tuple[str, ...] | list[str]) -> tuple[Any, Any]:
    """The rows of ``table`` lined up by their values of ``columns``, input order kept within a
    group: (row indices in that order, their group numbers in that order).
    Null is a value like any other; ``-0.0`` groups with ``0.0`` (floats with NaN are the
    caller's to keep out: Python never finds one NaN equal to another).

    One column: a stable sort of its dense group numbers. Several: one hash aggregation listing
    each group's rows (``group_by`` loads pyarrow.acero, ~50 ms, which grouping by several
    columns with dictionary codes and a sort costs more than)."""
    pa = _pa()
    n = len(table)
    arrays = _grouping_columns(table, columns)
    if not arrays:  # one group
        return arange(n), pa.repeat(pa.scalar(0, pa.int32()), n)
    if len(arrays) == 1 or n < GROUP_BY_ROWS:
        # the groups' order does not count (their rows keep theirs): integers number themselves
        codes = integer_codes(arrays[0]) if len(arrays) == 1 else None
        codes = group_codes(table, columns) if codes is None else codes
        order = group_order(codes)
        return order, pc.take(codes, order)
    data = {f"k{i}": a for i, a in enumerate(arrays)}
    data["row"] = arange(n)
    lists = pa.table(data).group_by(list(data)[:-1], use_threads=False).aggregate([("row", "list")])
    rows = lists.column("row_list").combine_chunks()
    return rows.flatten(), pc.call("list_parent_indices", rows)


def expand(order: Any, counts: Any, rows: int | None = None) -> tuple[Any, Any]:
    at, second, _ = expand_rows(order, counts, rows)
    return at, second


def expand_rows(order: Any, counts: Any, rows: int | None = None) -> tuple[Any, Any, Any]:
    """Output slots of changes that make 0, 1 or 2 rows each, in input order.

    ``order`` lists the changes' rows in group order and ``counts`` (in that order) how many
    output rows each makes. Returns, per output slot in input order, the group-order position
    of the change that makes it and whether it is that change's second row — without a sort:
    the counts go back to input order (an inverse permutation) and their running sum places
    each change's rows (``list_parent_indices`` of the list they make). ``rows``: the number of
    input rows, when ``order`` leaves some out (they make no row). ``expand_rows`` gives also
    each slot's input row (ascending: a column of the input taken by it is read in order)."""
    from pyarrow._compute import InversePermutationOptions

    pa = _pa()
    int64 = pa.int64()
    options = InversePermutationOptions(max_index=(len(order) if rows is None else rows) - 1)
    back = pc.call("inverse_permutation", pc.cast(order, int64), options=options)  # input row → position
    per_row = pc.fill_null(pc.cast(pc.take(counts, back), pa.int32()), 0)
    if not len(per_row):
        return pa.array([], int64), pa.array([], pa.bool_()), pa.array([], int64)
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.call("cumulative_sum", per_row)])
    total = offsets[len(offsets) - 1].as_py()
    rows = pc.call("list_parent_indices", pa.ListArray.from_arrays(offsets, pa.nulls(total, pa.int8())))
    second = same_as_previous(rows)  # a change's second slot follows its first
    return pc.take(back, rows), second, rows


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
        if pa.types.is_null(kind):  # nulls only: every row alike
            continue
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


def rows_equal(table: Any, left: Any, right: Any, columns: list[str]) -> Any:
    """Per pair, whether rows ``left[i]`` and ``right[i]`` hold equal values in ``columns``
    (null equals null, as Python's None; NaN equals nothing, as two Python NaNs)."""
    pa = _pa()
    n = len(left)
    ok: Any = pa.repeat(True, n)
    arrays = []
    for name in columns:
        column = table.column(name)
        column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
        if not pa.types.is_null(column.type):  # nulls only: every row alike
            arrays.append(column)
    # Fixed-width columns first: they gather faster than texts. Once a quarter of the pairs
    # differ, only the pairs still alike are gathered from the next columns (replay's updates,
    # most of which change a number, compare their texts a few times over, not for all).
    arrays.sort(key=lambda column: not _fixed_width(column.type))
    narrowed = False  # left and right: the pairs where ok is True, in order (else all of them)
    for column in arrays:
        a, b = pc.take(column, left), pc.take(column, right)
        same = pc.fill_null(pc.equal(a, b), False)
        if a.null_count or b.null_count:
            same = pc.or_(same, pc.and_(pc.is_null(a), pc.is_null(b)))
        ok = pc.call("replace_with_mask", ok, ok, same) if narrowed else pc.and_(ok, same)
        alike = count_true(same) if narrowed else count_true(ok)
        if alike == len(left):
            continue
        if not alike:
            break
        if narrowed or alike * 4 < n * 3:
            keep = same if narrowed else ok
            left, right, narrowed = pc.filter(left, keep), pc.filter(right, keep), True
    return ok


def _fixed_width(kind: Any) -> bool:
    pa = _pa()
    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_temporal(kind))


def count_true(mask: Any) -> int:
    return int(pc.sum(mask).as_py() or 0)  # Arrow sums booleans as their trues: no int64 copy


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


# -- what every change rule shares ----------------------------------------------------------------


class ChangeRules:
    """Changes in (changelog rows with a kind column of text, or plain rows read as inserts or
    upserts of their key), compared and grouped by column values."""

    @classmethod
    def takes(cls, spec: Any, schema: Any) -> bool:
        pa = _pa()
        names = schema.names
        kc = spec.kind_column
        if spec.reads == CHANGELOG:
            if kc not in names:
                return False
            kind = schema.field(kc).type
            if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
                return False
        elif kc in names:  # plain rows whose own column would take the kind's place
            return False
        key = getattr(spec, "key", ())
        if not all(k in names and k != kc and groupable_key(schema.field(k).type) for k in key):
            return False
        return all(comparable(f.type) for f in schema)

    def __init__(self, spec: Any, schema: Any, result: Result):
        self.spec = spec
        self.result = result
        self.schema = schema
        self.kc = spec.kind_column
        self.changelog = spec.reads == CHANGELOG
        # a change's image: the row without its kind (plain rows: the row)
        self.images = without(schema.names, self.kc) if self.changelog else list(schema.names)
        self.state: Any = None  # rows carried from chunk to chunk (STATE_KIND, STATE_SEQ …)
        self._codes: dict[tuple[int, int, int], tuple[Any, Any]] = {}  # kind codes found by regular()

    def regular(self, batch: Any) -> bool:
        """No bad kind (the row path says what is wrong with such a row, in order)."""
        if not self.changelog:
            return True
        column = batch.column(self.kc)
        codes = kind_codes(column)
        self._codes[_identity(column)] = (column, codes)  # apply looks them up, not again
        return bool(codes.null_count == 0)

    def kinds(self, table: Any) -> Any:
        """Each row's kind code: its kind column's, or what its input mode makes of a plain row."""
        pa = _pa()
        if self.changelog:
            column = table.column(self.kc)
            chunks = getattr(column, "chunks", [column])
            known = [self._codes.get(_identity(c)) for c in chunks]
            self._codes.clear()
            if chunks and all(k is not None for k in known):  # the batches regular() looked at
                return pa.concat_arrays([k[1] for k in known if k is not None])
            return kind_codes(column)
        mode = getattr(self.spec, "input_mode", "append")
        if mode == "append":
            return pa.repeat(pa.scalar(INSERT, pa.int8()), len(table))
        delete_when = getattr(self.spec, "delete_when", None)
        if delete_when is None or delete_when[0] not in table.schema.names:
            return pa.repeat(pa.scalar(AFTER, pa.int8()), len(table))
        from cdc.core.compare import canonical
        from cdc.engine.paths.arrow_time import distinct

        column, value = delete_when
        marker = canonical(value)
        values, index = distinct(table.column(column))
        codes = pa.array([DELETE if canonical(v) == marker else AFTER for v in values], pa.int8())
        return pc.take(codes, index)

    def _with_state(self, table: Any, offset: int, kinds: Any = None, state: Any = None, **extra: Any) -> Any:
        """The chunk with its kind codes and place in the input, after carried state rows
        (``state``, else this rule's)."""
        pa = _pa()
        chunk = table.append_column(STATE_KIND, self.kinds(table) if kinds is None else kinds)
        chunk = chunk.append_column(STATE_SEQ, arange(len(table), offset))
        for name, values in extra.items():
            chunk = chunk.append_column(name, values)
        state = self.state if state is None else state
        if state is None or not len(state):
            return chunk
        state = state.cast(chunk.schema) if state.schema != chunk.schema else state
        return pa.concat_tables([state, chunk]).combine_chunks()

    def _keep_state(self, work: Any, rows: Any, **columns: Any) -> None:
        """The carried state: rows of ``work``, some columns set anew."""
        state = pc.take(work, rows)
        for name, values in columns.items():
            state = state.set_column(state.schema.get_field_index(name), name, values)
        self.state = state

    def _ordered_state(self, state: Any = None) -> Any:
        """The carried rows (``state``, else this rule's) in their places (first insertion)."""
        state = self.state if state is None else state
        if state is None or not len(state):
            return None
        return pc.take(state, pc.call("sort_indices", state.column(STATE_SEQ)))

    def empty(self, info: Any) -> Callable[[], Empty | None] | None:
        """The empty result, asked for when the run wrote no row (None: no columns shown)."""
        return None


def _identity(array: Any) -> tuple[int, int, int]:
    """Where an array's values are (its data buffer, offset, length): the same array seen again."""
    buffers = array.buffers()
    data = buffers[2] if len(buffers) > 2 and buffers[2] is not None else buffers[-1]
    return (data.address if data is not None else 0, array.offset, len(array))


def column(table: Any, name: str) -> Any:
    """A table's column as one array."""
    found = table.column(name)
    return found.combine_chunks() if hasattr(found, "combine_chunks") else found


def has_nan(table: Any, columns: list[str]) -> bool:
    """Whether a float column holds a NaN (which Python finds equal to no other NaN)."""
    pa = _pa()
    for name in columns:
        column = table.column(name)
        if pa.types.is_floating(column.type) and pc.any(pc.call("is_nan", column)).as_py():
            return True
    return False


class Materialize(ChangeRules):
    """What keyed and multiset tables share: counts, the output, the account."""

    def __init__(self, spec: MaterializeSpec, schema: Any, result: Result):
        from cdc.engine.tables import metadata_of

        super().__init__(spec, schema, result)
        self.metadata = metadata_of(spec)
        self.compared = without(self.images, self.metadata)  # a row's identity
        self.by_kind = [0, 0, 0, 0]
        self.retract = 0
        self.upsert = 0
        self.duplicates = 0

    def _count(self, kinds: Any) -> list[int]:
        counts = count_codes(kinds)
        for i in range(4):
            self.by_kind[i] += counts[i]
        return counts

    def _count_into(self, state: Any) -> None:
        for kind, n in zip(KINDS, self.by_kind, strict=True):
            if n:
                state.by_kind[kind] += n
        state.retract_messages += self.retract
        state.upsert_messages += self.upsert
        state.duplicates = self.duplicates

    def _table(self) -> Any:
        """The live rows in first-insertion order, as the output has them."""
        raise NotImplementedError

    def _summary(self, live: int) -> Any:
        raise NotImplementedError

    def load_into(self, state: Any) -> None:
        raise NotImplementedError

    def hand_over(self, steps_for: Callable[..., Any], where: Any) -> Any:
        steps = steps_for(self.spec, self.result, where)
        self.load_into(self.result.detail)
        return steps

    def _output(self) -> tuple[Any, Any] | None:
        """The carried rows and the positions of the output's rows among them, in output order
        (an index, not a copy: the table is written from it a slice at a time)."""
        table = self._table()
        if table is None:
            return None
        return table, arange(len(table))

    def summary(self, table: Any = None) -> Any:
        """The table's account (counts, live rows) as the row path's state object gives it."""
        found = self._output()
        summary = self._summary(len(found[1]) if found is not None else 0)
        self._count_into(summary)
        return summary

    def finish(self, sink: Any) -> None:
        found = self._output()
        summary = self._summary(len(found[1]) if found is not None else 0)
        self._count_into(summary)
        self.result.detail = summary
        self.state = None
        if found is None or not len(found[1]):
            return
        table, rows = found
        table = table.select(without(self.images, self.metadata))
        if self.spec.sort:
            sink.table(sort_by_key(pc.take(table, rows), self.spec.key))
            return
        for start in range(0, len(rows), OUTPUT_SLICE):
            sink.table(pc.take(table, rows.slice(start, OUTPUT_SLICE)))

    def empty(self, info: Any) -> Callable[[], Empty | None]:
        names = info.columns if info.columns is not None else self.schema.names
        return lambda: empty_result(self.spec, names, info.examples, self.metadata)


# -- materialize --key ------------------------------------------------------------------------


class KeyedMaterialize(Materialize):
    """``KeyedState`` (core.state): one live row per key, in first-insertion order.

    With no finding, the state a change meets is told by the change before it for its key:
    after ``+I``/``+U`` the key is live (its row that change's image), after ``-U`` retracted,
    after ``-D`` (or none) absent. A change is a finding when it is ``+I`` of a live key, a
    ``-U``/``-D`` of a key that is not live, or a ``-U`` whose image differs from the live row.
    A key keeps its place from the change that inserted it (the first after a ``-D``).

    ``--dedup`` (``KeyedState._normalized``) makes every change an upsert: ``-U`` is consumed,
    a retraction of an absent key and a row equal to the stored one are duplicates, an ``+I`` of
    a live key overwrites it; there are no findings. The state a change meets is told by the
    change before it other than a ``-U``."""

    def apply(self, table: Any, offset: int, sink: Any) -> bool:
        """The chunk applied to the carried rows of the keys it holds only: the others (most of a
        big table) are set aside and joined again after, not sorted with every chunk (10M keys:
        each of 21 chunks sorted the whole table)."""
        split = self._split(table)
        if split is None:
            return self._apply(self._with_state(table, offset))
        touched, untouched = split
        whole = self.state
        if not self._apply(self._with_state(table, offset, state=touched)):
            self.state = whole  # as it was: the row path takes it from here
            return False
        after = self.state
        if after is not None and len(after):
            if untouched.schema != after.schema:
                untouched = untouched.cast(after.schema)
            untouched = _pa().concat_tables([untouched, after])
        self.state = untouched
        return True

    def _split(self, table: Any) -> tuple[Any, Any] | None:
        """The carried rows of the chunk's keys, and the others (None: not worth it, or a key
        of several columns)."""
        state = self.state
        if state is None or len(state) <= len(table) or len(self.spec.key) != 1:
            return None
        new, old = _grouping_columns(table, self.spec.key), _grouping_columns(state, self.spec.key)
        if len(new) != 1 or len(old) != 1 or new[0].type != old[0].type:
            return None
        mask = pc.is_in(old[0], pc.call("unique", new[0]))
        return state.filter(mask), state.filter(pc.invert(mask))

    def _apply(self, work: Any) -> bool:
        order, groups = grouped(work, self.spec.key)
        kinds = pc.take(column(work, STATE_KIND), order)
        if self.spec.dedup:
            return self._upserts(work, order, groups, kinds)
        pa = _pa()
        same = same_as_previous(groups)
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
        counts = self._count(kinds)
        updates = count_true(pc.and_(pc.equal(kinds, AFTER), live_before))
        self.retract += sum(counts) + updates
        self.upsert += counts[INSERT] + counts[AFTER] + counts[DELETE]
        # The state after the chunk: each key's last change, unless a -D; its place is that of
        # the change that (re)inserted it.
        seqs = pc.take(column(work, STATE_SEQ), order)
        starts = pc.or_(pc.invert(same), pc.equal(before, DELETE))
        places = pc.call("fill_null_forward", pc.if_else(starts, seqs, pa.scalar(None, pa.int64())))
        keep = pc.and_(pc.invert(same_as_next(same)), pc.invert(pc.equal(kinds, DELETE)))
        after = pa.array([LIVE, RETRACTED, LIVE, RETRACTED, LIVE, RETRACTED], pa.int8())
        self._keep_state(
            work,
            pc.filter(order, keep),
            **{STATE_KIND: pc.take(after, pc.filter(kinds, keep)), STATE_SEQ: pc.filter(places, keep)},
        )
        return True

    def _upserts(self, work: Any, order: Any, groups: Any, kinds: Any) -> bool:
        """``--dedup``: every change an upsert by key (see the class)."""
        pa = _pa()
        int64 = pa.int64()
        same = same_as_previous(groups)
        is_before = pc.equal(kinds, BEFORE)
        # The kind of the change before each one other than a -U (NONE: the key's first).
        effective = pc.if_else(is_before, pa.scalar(None, pa.int8()), kinds)
        before = pc.call("fill_null_forward", previous(effective, same, NONE))
        live_before = pc.take(pa.array([True, False, True, False, True, False, False]), before)
        put = pc.or_(pc.or_(pc.equal(kinds, INSERT), pc.equal(kinds, AFTER)), pc.equal(kinds, LIVE))
        # The row of the last put before each change: the stored row when the key is live.
        rows = pc.cast(order, int64)
        stored = pc.call("fill_null_forward", previous(pc.if_else(put, rows, pa.scalar(None, int64)), same, -1))
        chunk = pc.invert(pc.equal(kinds, LIVE))
        live_put = pc.and_(pc.and_(put, live_before), chunk)
        equal = pa.repeat(False, len(kinds))
        if pc.any(live_put).as_py():
            at = pc.indices_nonzero(live_put)
            same_row = rows_equal(work, pc.take(rows, at), pc.take(stored, at), without(self.compared, self.spec.key))
            equal = pc.call("replace_with_mask", equal, live_put, same_row)
        retraction = pc.or_(is_before, pc.equal(kinds, DELETE))
        duplicate = pc.or_(pc.and_(retraction, pc.invert(live_before)), equal)
        self._count(kinds)
        self.duplicates += count_true(duplicate)
        deletes = count_true(pc.and_(pc.equal(kinds, DELETE), live_before))
        new_puts = count_true(pc.and_(pc.and_(put, chunk), pc.invert(live_before)))
        updates = count_true(live_put) - count_true(equal)
        self.retract += deletes + new_puts + 2 * updates
        self.upsert += deletes + new_puts + updates
        # The state after the chunk: each key's last change other than a -U, if a put.
        starts = pc.or_(pc.and_(put, pc.invert(live_before)), pc.equal(kinds, LIVE))
        seqs = pc.take(column(work, STATE_SEQ), order)
        places = pc.call("fill_null_forward", pc.if_else(starts, seqs, pa.scalar(None, int64)))
        mask = pc.invert(is_before)
        last = pc.invert(same_as_next(same_as_previous(pc.filter(groups, mask))))
        keep = pc.and_(last, pc.filter(put, mask))
        self._keep_state(
            work,
            pc.filter(pc.filter(order, mask), keep),
            **{
                STATE_KIND: pa.repeat(pa.scalar(LIVE, pa.int8()), count_true(keep)),
                STATE_SEQ: pc.filter(pc.filter(places, mask), keep),
            },
        )
        return True

    def _output(self) -> tuple[Any, Any] | None:
        state = self.state
        if state is None or not len(state):
            return None
        live = pc.indices_nonzero(pc.equal(state.column(STATE_KIND), LIVE))
        return state, pc.take(live, pc.call("sort_indices", pc.take(state.column(STATE_SEQ), live)))

    def _summary(self, live: int) -> Any:
        summary = KeyedSummary(self.spec.key, Findings(self.spec.policy), self.spec.dedup, self.metadata)
        summary.live = live
        return summary

    def load_into(self, state: KeyedState) -> None:
        """The state built so far, into the row path's."""
        self._count_into(state)
        ordered = self._ordered_state()
        if ordered is not None:
            retracted = pc.equal(ordered.column(STATE_KIND), RETRACTED).to_pylist()
            for row, gone in zip(ordered.select(self.images).to_pylist(), retracted, strict=True):
                state.load(row, gone)
        self.state = None


class KeyedSummary(KeyedState):
    """A keyed table's account (counts, findings) without its rows, which went out as Arrow."""

    live = 0

    def __len__(self) -> int:
        return self.live


# -- materialize (a multiset) -------------------------------------------------------------------


class MultisetMaterialize(Materialize):
    """``MultisetState``: rows without a key, each distinct row (its identity: every column but
    the kind and commit columns) with a count. In a row's group, the count after each change
    is a running sum of +1 (``+I``/``+U``) and -1 (``-U``/``-D``); a count below zero is a
    finding. A row's entry keeps its place (and the row that made it) from the change that took
    its count from 0 to 1. ``--dedup`` drops a change equal to the change just before it."""

    def __init__(self, spec: MaterializeSpec, schema: Any, result: Result):
        super().__init__(spec, schema, result)
        self.last: Any = None  # --dedup: the chunk before's last change (kind code and image)

    def apply(self, table: Any, offset: int, sink: Any) -> bool:
        pa = _pa()
        int64 = pa.int64()
        if has_nan(table, self.compared):
            return False
        kinds_in = self.kinds(table)
        signs = pc.take(pa.array([1, -1, 1, -1], int64), kinds_in)
        work = self._with_state(table, offset, kinds_in, **{STATE_COUNT: signs})
        carried = len(work) - len(table)
        duplicate = None
        if self.spec.dedup:
            duplicate = self._duplicates(table, kinds_in)
            if pc.any(duplicate).as_py():
                keep = pa.concat_arrays([pa.repeat(True, carried), pc.invert(duplicate)])
                work = pc.filter(work, keep)
        order, groups = grouped(work, self.compared)
        same = same_as_previous(groups)
        kinds = pc.take(column(work, STATE_KIND), order)
        steps = pc.take(column(work, STATE_COUNT), order)
        total = pc.call("cumulative_sum", steps)
        base = pc.call("fill_null_forward", pc.if_else(same, pa.scalar(None, int64), pc.call("subtract", total, steps)))
        count = pc.call("subtract", total, base)
        if pc.any(pc.call("less", count, 0)).as_py():
            return False
        if self.spec.dedup:
            self.last = (table.slice(len(table) - 1), kinds_in.slice(len(kinds_in) - 1))
            self.duplicates += count_true(duplicate)
        counts = count_codes(kinds)
        self._count(kinds_in)
        self.retract += sum(counts)
        self.upsert += counts[INSERT] + counts[AFTER] + counts[DELETE]
        made = pc.or_(pc.equal(kinds, LIVE), pc.and_(pc.equal(steps, 1), pc.equal(count, 1)))
        seqs = pc.take(column(work, STATE_SEQ), order)
        places = pc.call("fill_null_forward", pc.if_else(made, seqs, pa.scalar(None, int64)))
        rows = pc.call("fill_null_forward", pc.if_else(made, pc.cast(order, int64), pa.scalar(None, int64)))
        keep = pc.and_(pc.invert(same_as_next(same)), pc.call("greater", count, 0))
        kept = count_true(keep)
        self._keep_state(
            work,
            pc.filter(rows, keep),
            **{
                STATE_KIND: pa.repeat(pa.scalar(LIVE, pa.int8()), kept),
                STATE_SEQ: pc.filter(places, keep),
                STATE_COUNT: pc.filter(count, keep),
            },
        )
        return True

    def _duplicates(self, table: Any, kinds: Any) -> Any:
        """Per change, whether it equals the change just before it (kind and identity)."""
        pa = _pa()
        columns = [*self.compared, STATE_KIND]
        current = table.select(self.compared).append_column(STATE_KIND, kinds)
        if self.last is not None:
            last_table, last_kind = self.last
            before = last_table.select(self.compared).append_column(STATE_KIND, last_kind)
            both = pa.concat_tables([before.cast(current.schema), current]).combine_chunks()
            return shifted_equal(both, arange(len(both)), columns).slice(1)
        return shifted_equal(current, arange(len(current)), columns)

    def _output(self) -> tuple[Any, Any] | None:
        state = self.state
        if state is None or not len(state):
            return None
        order = pc.call("sort_indices", state.column(STATE_SEQ))
        counts = pc.take(state.column(STATE_COUNT), order)
        if pc.call("max", counts).as_py() != 1:  # each row as many times as it is in the table
            pa = _pa()
            positions, counts_list = order.to_pylist(), counts.to_pylist()
            order = pa.array([p for p, c in zip(positions, counts_list, strict=True) for _ in range(c)], pa.int64())
        return state, order

    def _table(self) -> Any:
        found = self._output()
        return None if found is None else pc.take(*found)

    def _summary(self, live: int) -> Any:
        summary = MultisetSummary(Findings(self.spec.policy), self.spec.dedup, self.metadata)
        summary.live = live
        return summary

    def load_into(self, state: MultisetState) -> None:
        """The state built so far, into the row path's."""
        from cdc.core.rowstore import row_identity

        self._count_into(state)
        ordered = self._ordered_state()
        if ordered is not None:
            entries = state.table.rows
            counts = ordered.column(STATE_COUNT).to_pylist()
            for row, count in zip(ordered.select(self.images).to_pylist(), counts, strict=True):
                entries[row_identity(row, self.metadata)] = [row, count]
        if self.last is not None:
            last_table, last_kind = self.last
            image = last_table.select(self.images).to_pylist()[0]
            state._previous = (KINDS[last_kind[0].as_py()], row_identity(image, self.metadata))
        self.state = None


class MultisetSummary(MultisetState):
    """A multiset's account without its rows, which went out as Arrow."""

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
