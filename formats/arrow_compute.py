"""The pyarrow compute kernels the vectorized paths use, called without importing pyarrow.compute.

Importing ``pyarrow.compute`` builds a documented Python wrapper for each of its ~300 kernels:
25–60 ms, as long as converting half a million rows. ``call_function`` (which pyarrow.compute
re-exports) runs a kernel by name and needs none of them. Names and arguments mirror
pyarrow.compute, so ``from cdc.formats import arrow_compute as pc`` reads as the real thing.
"""

from __future__ import annotations

from typing import Any

try:
    from pyarrow._compute import SetLookupOptions, call_function
except ImportError:  # pragma: no cover - a pyarrow that moved its kernels: the public module has them
    from pyarrow.compute import SetLookupOptions, call_function


def index_in(values: Any, value_set: Any) -> Any:
    return call_function("index_in", [values], SetLookupOptions(value_set))


def is_in(values: Any, value_set: Any) -> Any:
    return call_function("is_in", [values], SetLookupOptions(value_set))


def take(values: Any, indices: Any) -> Any:
    return call_function("take", [values, indices])


def filter(values: Any, mask: Any) -> Any:  # noqa: A001 - the kernel's name
    return call_function("filter", [values, mask])


def is_null(values: Any) -> Any:
    return call_function("is_null", [values])


def is_valid(values: Any) -> Any:
    return call_function("is_valid", [values])


def invert(values: Any) -> Any:
    return call_function("invert", [values])


def and_(left: Any, right: Any) -> Any:
    return call_function("and", [left, right])


def any(values: Any) -> Any:  # noqa: A001 - the kernel's name
    return call_function("any", [values])


def sum(values: Any) -> Any:  # noqa: A001 - the kernel's name
    return call_function("sum", [values])


def fill_null(values: Any, fill_value: Any) -> Any:
    import pyarrow as pa

    return call_function("coalesce", [values, pa.scalar(fill_value, type=values.type)])


def value_counts(values: Any) -> Any:
    return call_function("value_counts", [values])


def indices_nonzero(values: Any) -> Any:
    return call_function("indices_nonzero", [values])


def match_substring(values: Any, pattern: str) -> Any:
    from pyarrow._compute import MatchSubstringOptions

    return call_function("match_substring", [values], MatchSubstringOptions(pattern))


def count_substring(values: Any, pattern: str) -> Any:
    from pyarrow._compute import MatchSubstringOptions

    return call_function("count_substring", [values], MatchSubstringOptions(pattern))


def add(left: Any, right: Any) -> Any:
    return call_function("add", [left, right])


def binary_join_element_wise(*values: Any) -> Any:
    """The last argument is the separator."""
    return call_function("binary_join_element_wise", list(values))


def cast(values: Any, target_type: Any) -> Any:
    from pyarrow._compute import CastOptions

    return call_function("cast", [values], CastOptions.safe(target_type))


def or_(left: Any, right: Any) -> Any:
    return call_function("or", [left, right])


def equal(left: Any, right: Any) -> Any:
    return call_function("equal", [left, right])


def if_else(condition: Any, left: Any, right: Any) -> Any:
    return call_function("if_else", [condition, left, right])


def match_substring_regex(values: Any, pattern: str) -> Any:
    from pyarrow._compute import MatchSubstringOptions

    return call_function("match_substring_regex", [values], MatchSubstringOptions(pattern))


def replace_substring(values: Any, pattern: str, replacement: str) -> Any:
    from pyarrow._compute import ReplaceSubstringOptions

    return call_function("replace_substring", [values], ReplaceSubstringOptions(pattern, replacement))


def call(name: str, *args: Any, options: Any = None) -> Any:
    """Any kernel by name (``pc.call("abs", x)``): scalars in ``args`` are Python values."""
    return call_function(name, list(args), options)


def all(values: Any) -> Any:  # noqa: A001 - the kernel's name
    return call_function("all", [values])
