"""How deep a Parquet schema nests: a column deeper than readers open is refused before writing."""

from __future__ import annotations

from typing import Any

from cdc.core.errors import InputError

# Parquet readers refuse a schema deeper than this (Arrow C++'s limit: the root, each struct,
# two levels for each list or map, and the value): a file past it is written but never read back.
PARQUET_DEPTH = 100


def _depth(kind: Any) -> int:
    import pyarrow as pa

    t = pa.types
    if t.is_struct(kind):
        return 1 + max((_depth(f.type) for f in kind), default=0)
    if t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind) or t.is_list_view(kind):
        return 2 + _depth(kind.value_type)
    if t.is_map(kind):
        return 2 + max(_depth(kind.key_type), _depth(kind.item_type))
    if t.is_dictionary(kind):
        return _depth(kind.value_type)
    return 1


def check_depth(schema: Any) -> None:
    """Refuse, before writing, a column nested deeper than a Parquet reader opens."""
    for field in schema:
        depth = 1 + _depth(field.type)
        if depth > PARQUET_DEPTH:
            raise InputError(
                f"column {field.name!r} is nested too deeply for Parquet ({depth} schema levels, each list "
                f"two; readers open at most {PARQUET_DEPTH}): nothing was written",
                hint="write JSON lines (-f jsonl) or CSV, which hold values nested up to 1,024 deep",
            )
