"""Comparing a materialized table with an expected one (``materialize --expect``).

Values compare by canonical text, so a CSV file (all text) can be the expectation of typed data:
numbers by value (``1.50`` = ``1.5``), booleans as ``true``/``false``, null as null.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc.core.model import Row


def canonical(value: Any) -> str | None:
    if value is None:
        return None
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float | Decimal):
        return _number_text(Decimal(repr(value)) if isinstance(value, float) else Decimal(value))
    if isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return value
        return _number_text(number) if number.is_finite() and value.strip() else value
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return str(value)


def _number_text(number: Decimal) -> str:
    if number == 0:
        return "0"
    normal = number.normalize()
    return format(normal, "f")


@dataclass
class Change:
    key: str
    result: Row
    expected: Row
    columns: list[str]


@dataclass
class TableDiff:
    columns: list[str]
    only_in_result: list[Row] = field(default_factory=list)
    only_in_expected: list[Row] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)
    columns_only_in_result: list[str] = field(default_factory=list)
    columns_only_in_expected: list[str] = field(default_factory=list)
    result_rows: int = 0
    expected_rows: int = 0

    @property
    def equal(self) -> bool:
        return not (
            self.only_in_result
            or self.only_in_expected
            or self.changed
            or self.columns_only_in_result
            or self.columns_only_in_expected
        )

    def summary(self) -> str:
        if self.equal:
            return f"equal: {self.result_rows} row{'' if self.result_rows == 1 else 's'}"
        parts = [
            f"{len(self.changed)} changed",
            f"{len(self.only_in_result)} only in result",
            f"{len(self.only_in_expected)} only in expected",
        ]
        if self.columns_only_in_result or self.columns_only_in_expected:
            parts.append("column sets differ")
        return "differs: " + ", ".join(parts)


def _columns(rows: Sequence[Row]) -> list[str]:
    return list(dict.fromkeys(c for r in rows for c in r))


def key_text(row: Row, key: Sequence[str]) -> str:
    return ", ".join(f"{c}={canonical(row.get(c))}" for c in key)


def compare_tables(result: Iterable[Row], expected: Iterable[Row], key: Sequence[str] = ()) -> TableDiff:
    result_rows, expected_rows = list(result), list(expected)
    result_cols, expected_cols = _columns(result_rows), _columns(expected_rows)
    diff = TableDiff(
        columns=list(dict.fromkeys([*result_cols, *expected_cols])),
        columns_only_in_result=[c for c in result_cols if c not in expected_cols] if expected_rows else [],
        columns_only_in_expected=[c for c in expected_cols if c not in result_cols] if result_rows else [],
        result_rows=len(result_rows),
        expected_rows=len(expected_rows),
    )
    shared = [c for c in diff.columns if c in result_cols and c in expected_cols] or diff.columns

    def cells(row: Row) -> tuple[str | None, ...]:
        return tuple(canonical(row.get(c)) for c in shared)

    if key:
        expected_by_key: dict[tuple[str | None, ...], Row] = {}
        for row in expected_rows:
            k = tuple(canonical(row.get(c)) for c in key)
            if k in expected_by_key:
                diff.only_in_expected.append(row)  # a duplicate key cannot be in a keyed table
            else:
                expected_by_key[k] = row
        for row in result_rows:
            k = tuple(canonical(row.get(c)) for c in key)
            other = expected_by_key.pop(k, None)
            if other is None:
                diff.only_in_result.append(row)
                continue
            changed = [c for c in shared if canonical(row.get(c)) != canonical(other.get(c))]
            if changed:
                diff.changed.append(Change(key_text(row, key), row, other, changed))
        diff.only_in_expected.extend(expected_by_key.values())
        return diff

    remaining = Counter(cells(r) for r in expected_rows)
    for row in result_rows:
        c = cells(row)
        if remaining[c] > 0:
            remaining[c] -= 1
        else:
            diff.only_in_result.append(row)
    wanted = +remaining
    for row in expected_rows:
        c = cells(row)
        if wanted[c] > 0:
            wanted[c] -= 1
            diff.only_in_expected.append(row)
    return diff
