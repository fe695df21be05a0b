"""The stateless conversions, on Flink's own test programs (notes/flink-semantics.md §1.5)."""

from __future__ import annotations

from typing import Any

import pytest

import cdc
from cdc.core.convert import from_changelog, to_changelog
from cdc.core.errors import InputError
from cdc.core.kinds import UPDATE_BEFORE
from cdc.core.mapping import parse_from_mapping, parse_to_mapping
from cdc.core.specs import FromChangelogSpec, ToChangelogSpec
from cdc.core.stats import Counts

RETRACT = [
    {"id": 1, "op": "INSERT", "name": "Alice"},
    {"id": 2, "op": "INSERT", "name": "Bob"},
    {"id": 1, "op": "UPDATE_BEFORE", "name": "Alice"},
    {"id": 1, "op": "UPDATE_AFTER", "name": "Alice2"},
    {"id": 2, "op": "DELETE", "name": "Bob"},
]


def printed(rows: list[dict[str, Any]], kind: str = "op") -> list[str]:
    return [f"{r[kind]}[{', '.join(str(v) for k, v in r.items() if k != kind)}]" for r in rows]


def from_(rows: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    spec = FromChangelogSpec(op_column=kw.pop("op", "op"), mapping=kw.pop("mapping", parse_from_mapping([])), **kw)
    return list(from_changelog(rows, spec, Counts()))


def test_from_changelog_retract() -> None:
    assert printed(from_(RETRACT)) == ["+I[1, Alice]", "+I[2, Bob]", "-U[1, Alice]", "+U[1, Alice2]", "-D[2, Bob]"]


def test_from_changelog_custom_mapping() -> None:
    rows = [dict(r, op=c) for r, c in zip(RETRACT, ["c", "r", "ub", "ua", "d"], strict=True)]
    mapping = parse_from_mapping(["c, r=INSERT", "ub=UPDATE_BEFORE", "ua=UPDATE_AFTER", "d=DELETE"])
    assert printed(from_(rows, mapping=mapping)) == printed(from_(RETRACT))


def test_from_changelog_partition_key_moves_first() -> None:
    rows = [{"name": "Alice", "id": 1, "op": "INSERT"}, {"name": "Alice2", "id": 1, "op": "UPDATE_AFTER"}]
    mapping = parse_from_mapping(["INSERT=INSERT", "UPDATE_AFTER=UPDATE_AFTER", "DELETE=DELETE"])
    out = from_(rows, mapping=mapping, keys=("id",))
    assert [list(r) for r in out] == [["op", "id", "name"]] * 2
    assert printed(out) == ["+I[1, Alice]", "+U[1, Alice2]"]


def test_skip_drops_unknown_and_null_codes_and_reports_them() -> None:
    rows = [{"id": 1, "op": "INSERT"}, {"id": 2, "op": None}, {"id": 3, "op": "UNKNOWN"}, {"id": 4, "op": "DELETE"}]
    result = cdc.from_changelog(rows, on_error="skip")
    assert [r["id"] for r in result.rows] == [1, 4]
    assert result.skipped == 2
    assert str(result.first_skip).startswith("<rows>: row 2: NULL op code")


def test_op_codes_match_exactly() -> None:
    with pytest.raises(InputError, match="invalid op code 'insert'"):
        from_([{"op": "insert"}])
    with pytest.raises(InputError, match="invalid op code ' INSERT'"):
        from_([{"op": " INSERT"}])


def test_op_column_missing_or_not_a_string() -> None:
    with pytest.raises(InputError, match="op column 'op' does not exist"):
        from_([{"id": 1}])
    with pytest.raises(InputError, match="must be of STRING type, but was number"):
        from_([{"op": 1}])


def test_drop_filter_counts_dropped_rows() -> None:
    counts = Counts()
    spec = FromChangelogSpec(op_column="op", mapping=parse_from_mapping([]), drop=frozenset({UPDATE_BEFORE}))
    out = list(from_changelog(RETRACT, spec, counts))
    assert "-U" not in [r["op"] for r in out]
    assert (counts.written, counts.dropped) == (4, 1)


def to_(rows: list[dict[str, Any]], mapping: list[str] | None = None, op: str = "op") -> list[dict[str, Any]]:
    spec = ToChangelogSpec(mapping=parse_to_mapping(mapping or []), op_column=op)
    return list(to_changelog(rows, spec, Counts()))


CHANGES = [
    {"op": k, "name": n, "score": s}
    for k, n, s in [("+I", "Alice", 10), ("+I", "Bob", 20), ("-U", "Alice", 10), ("+U", "Alice", 30), ("-D", "Bob", 20)]
]


def test_to_changelog_default_puts_op_first_with_long_names() -> None:
    assert [list(r.values()) for r in to_(CHANGES)] == [
        ["INSERT", "Alice", 10],
        ["INSERT", "Bob", 20],
        ["UPDATE_BEFORE", "Alice", 10],
        ["UPDATE_AFTER", "Alice", 30],
        ["DELETE", "Bob", 20],
    ]


def test_to_changelog_custom_mapping_drops_unmapped_kinds() -> None:
    out = to_(CHANGES, ["INSERT=I", "UPDATE_AFTER=U"], op="op_code")
    assert [list(r.items()) for r in out] == [
        [("op_code", "I"), ("name", "Alice"), ("score", 10)],
        [("op_code", "I"), ("name", "Bob"), ("score", 20)],
        [("op_code", "U"), ("name", "Alice"), ("score", 30)],
    ]


def test_to_changelog_deletion_flag() -> None:
    out = to_(CHANGES, ["INSERT, UPDATE_AFTER=false", "DELETE=true"], op="deleted")
    assert [(r["deleted"], r["name"], r["score"]) for r in out] == [
        ("false", "Alice", 10),
        ("false", "Bob", 20),
        ("false", "Alice", 30),
        ("true", "Bob", 20),
    ]


def test_to_changelog_reads_long_kind_names_too() -> None:
    assert to_([{"op": "UPDATE_AFTER", "x": 1}])[0]["op"] == "UPDATE_AFTER"


def test_round_trip_with_default_mappings() -> None:
    assert from_(to_(CHANGES)) == CHANGES
