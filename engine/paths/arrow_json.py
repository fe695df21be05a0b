"""Arrow columns as JSON text, byte for byte as the row writers write the same values.

A row path writes ``orjson.dumps(row, default=encode_default)`` (``formats.jsonl``): compact,
columns in order, strings with orjson's escapes, numbers as orjson (or their literal) spells
them, dates as ISO text. Here each column becomes an array of JSON value texts with Arrow
kernels where the spelling is certain — integers, booleans, strings without control
characters, doubles in the range where orjson writes plain decimals (``12.5``, ``3.0``) —
and value by value by the row writer's own function elsewhere (other types, the rest of a
double column). Rows are then joined column by column, never built as dicts.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc.formats.jsonl import encode_default

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME
# Control characters orjson writes as escapes (\n, \u0001 …): such strings are written by orjson.
_CONTROL = "[\\x00-\\x1f]"
# orjson writes a double in plain decimals from 1e-5 up to 1e16 (and 0), as the shortest digits
# that read back the same — which is what Arrow's cast writes there, less the ".0" of a whole number.
_PLAIN_LOW, _PLAIN_HIGH = 1e-5, 1e16


def _python_texts(column: Any) -> Any:
    """The column's values as the row writer spells them, one by one."""
    import pyarrow as pa

    from cdc.formats.jsonl import dumps

    texts = []
    for value in column.to_pylist():
        try:
            texts.append(orjson.dumps(value, default=encode_default, option=_OPTIONS).decode())
        except TypeError:  # integers past 64 bits: the row writer's slow path
            texts.append(dumps(value).decode().rstrip("\n"))
    return pa.array(texts, pa.string())


def value_texts(column: Any) -> Any:
    """A column (an Arrow array) as a string array of JSON texts, ``null`` for nulls."""
    import pyarrow as pa

    from cdc.formats import arrow_compute as pc

    kind = column.type
    if pa.types.is_dictionary(kind):
        column = pc.cast(column, kind.value_type)
        kind = column.type
    if pa.types.is_integer(kind):
        return pc.fill_null(pc.cast(column, pa.string()), "null")
    if pa.types.is_boolean(kind):
        return pc.fill_null(pc.if_else(column, "true", "false"), "null")
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if len(column) and pc.any(pc.match_substring_regex(column, _CONTROL)).as_py():
            return _python_texts(column)
        escaped = pc.replace_substring(pc.replace_substring(column, "\\", "\\\\"), '"', '\\"')
        return pc.fill_null(pc.binary_join_element_wise('"', escaped, '"', ""), "null")
    if pa.types.is_floating(kind):
        return _double_texts(column)
    return _python_texts(column)


def _double_texts(column: Any) -> Any:
    """Doubles: Arrow's shortest digits where orjson writes plain decimals, orjson elsewhere."""
    import pyarrow as pa

    from cdc.formats import arrow_compute as pc

    if not pa.types.is_float64(column.type):
        return _python_texts(column)  # a float32 is widened to a double by the row path first
    text = pc.cast(column, pa.string())
    magnitude = pc.call("abs", column)
    plain = pc.or_(
        pc.and_(pc.call("greater_equal", magnitude, _PLAIN_LOW), pc.call("less", magnitude, _PLAIN_HIGH)),
        pc.equal(magnitude, 0.0),
    )
    plain = pc.and_(plain, pc.invert(pc.match_substring(text, "e")))
    plain = pc.fill_null(plain, True)  # nulls: written "null" below
    whole = pc.invert(pc.match_substring(text, "."))
    text = pc.if_else(whole, pc.binary_join_element_wise(text, ".0", ""), text)
    if not pc.all(plain).as_py():
        odd = pc.indices_nonzero(pc.invert(plain))
        spelled = _python_texts(pc.take(column, odd))
        text = pc.call("replace_with_mask", text, pc.invert(plain), spelled)
    return pc.fill_null(text, "null")


def member_prefix(name: str) -> str:
    """``"name":`` as orjson writes an object's member name."""
    return orjson.dumps(name).decode() + ":"


def object_texts(columns: list[tuple[str, Any]], length: int) -> Any:
    """Per row, ``{"a":…,"b":…}`` of these (name, array) columns, in this order."""
    import pyarrow as pa

    from cdc.formats import arrow_compute as pc

    if not columns:
        return pa.repeat(pa.scalar("{}", pa.string()), length)
    members = [pc.binary_join_element_wise(member_prefix(name), value_texts(array), "") for name, array in columns]
    inner = pc.binary_join_element_wise(*members, ",")
    return pc.binary_join_element_wise("{", inner, "}", "")


def lines_of(texts: Any) -> memoryview:
    """A string array without nulls as its texts, one per line."""
    import pyarrow as pa

    from cdc.formats import arrow_compute as pc

    lines = pc.binary_join_element_wise(texts, pa.scalar(""), "\n")
    _, offsets, data = lines.buffers()
    bounds = memoryview(offsets).cast("i")
    if data is None:  # no rows
        return memoryview(b"")
    return memoryview(data)[bounds[lines.offset] : bounds[lines.offset + len(lines)]]


def json_lines(batch: Any) -> memoryview:
    """A record batch (or table) as JSON lines, each row an object of its columns."""
    if not len(batch):
        return memoryview(b"")
    columns = [(name, _array(batch.column(i))) for i, name in enumerate(batch.schema.names)]
    return lines_of(object_texts(columns, len(batch)))


def _array(column: Any) -> Any:
    """A chunked column as one array."""
    combine = getattr(column, "combine_chunks", None)
    return combine() if combine is not None else column
