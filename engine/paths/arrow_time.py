"""Time columns on the Arrow path, compared exactly as ``core.timeorder`` compares values.

``TimePoint.compare`` reads two values as numbers when both are, else as date-times, else as
text; ``sort_key`` orders mixed values by class. Columns of integers (against a point that is a
number) are compared with kernels; any other column is compared value by distinct value by
``core.timeorder`` itself (a dictionary of a column's values is usually far shorter than it),
so the answer is the row path's by construction.
"""

from __future__ import annotations

from decimal import ROUND_FLOOR, Decimal
from typing import Any

from cdc.core.timeorder import TimePoint, as_datetime, as_number, sort_key
from cdc.formats import arrow_compute as pc


def _pa() -> Any:
    import pyarrow as pa

    return pa


def _array(column: Any) -> Any:
    return column.combine_chunks() if hasattr(column, "combine_chunks") else column


def distinct(column: Any) -> tuple[list[Any], Any]:
    """A column's distinct values (Python, in order of first appearance) and each row's index
    into them (nulls are a value: None)."""
    from pyarrow._compute import DictionaryEncodeOptions

    column = _array(column)
    if _pa().types.is_null(column.type):
        return [None], _pa().repeat(_pa().scalar(0, _pa().int32()), len(column))
    encoded = pc.call("dictionary_encode", column, options=DictionaryEncodeOptions("encode"))
    return encoded.dictionary.to_pylist(), encoded.indices


def compare_to(column: Any, point: TimePoint) -> Any:
    """Per row, ``point.compare(value)`` (-1, 0, 1 as an int8 array)."""
    pa = _pa()
    column = _array(column)
    if pa.types.is_integer(column.type) and point.number is not None and column.null_count == 0:
        return _compare_integers(column, point.number)
    values, index = distinct(column)
    answers = pa.array([point.compare(v) for v in values], pa.int8())
    return pc.take(answers, index)


def _compare_integers(column: Any, number: Decimal) -> Any:
    pa = _pa()
    floor = int(number.to_integral_value(rounding=ROUND_FLOOR))
    exact = floor == number
    lo, hi = -(2**63), 2**63 - 1
    if floor < lo:
        return pa.repeat(pa.scalar(1, pa.int8()), len(column))
    if floor > hi:
        return pa.repeat(pa.scalar(-1, pa.int8()), len(column))
    bound = pa.scalar(floor, pa.int64())
    wide = pc.cast(column, pa.int64()) if column.type != pa.int64() else column
    # sign(value - number): above the floor is after (or, if number is whole, at when equal)
    greater = pc.call("greater", wide, bound)
    equal = pc.equal(wide, bound)
    after = pc.if_else(greater, pa.scalar(1, pa.int8()), pa.scalar(-1, pa.int8()))
    if exact:
        return pc.if_else(equal, pa.scalar(0, pa.int8()), after)
    return after  # the value equals the floor or is below: before a point between two integers


def ranks(column: Any) -> Any | None:
    """Numbers that order the column's non-null values as ``TimePoint`` compares them pairwise
    (equal numbers: values at the same time), null for nulls; None when the values are of mixed
    classes (a number and a date-time …), whose pairwise order only the row path knows."""
    pa = _pa()
    column = _array(column)
    kind = column.type
    if pa.types.is_integer(kind):
        return pc.cast(column, pa.int64())
    values, index = distinct(column)
    keys: list[Any] = []
    classes: set[Any] = set()
    for v in values:
        if v is None:
            keys.append(None)
            continue
        number = as_number(v)
        if number is not None:
            classes.add("number")
            keys.append(number)
            continue
        moment = as_datetime(v)
        if moment is not None:
            classes.add(type(moment))
            keys.append(moment)
            continue
        classes.add("text")
        keys.append(v if isinstance(v, str) else str(v))
    if len(classes) > 1:
        return None
    if any(isinstance(k, Decimal) and not k.is_finite() for k in keys if k is not None):
        return None  # NaN: Decimal refuses to order it
    order = sorted(range(len(keys)), key=lambda i: (keys[i] is None, keys[i] if keys[i] is not None else 0))
    rank = [0] * len(keys)
    previous: Any = object()
    r = -1
    for i in order:
        if keys[i] is None:
            rank[i] = -1
            continue
        if r < 0 or keys[i] != previous:
            r += 1
            previous = keys[i]
        rank[i] = r
    by_value = pa.array([None if keys[i] is None else rank[i] for i in range(len(keys))], pa.int64())
    return pc.take(by_value, index)


def first_extremes(column: Any) -> tuple[Any, Any] | None:
    """The column's least and greatest non-null values by ``sort_key`` (on a tie, the first to
    appear), as Python values; None when there is no non-null value."""
    pa = _pa()
    column = _array(column)
    if column.null_count == len(column):
        return None
    if pa.types.is_integer(column.type):
        extremes = pc.call("min_max", column).as_py()
        return extremes["min"], extremes["max"]
    values, _ = distinct(column)
    present = [v for v in values if v is not None]
    low = high = present[0]
    low_key = high_key = sort_key(low)
    for v in present[1:]:
        key = sort_key(v)
        if key < low_key:
            low, low_key = v, key
        if key > high_key:
            high, high_key = v, key
    return low, high
