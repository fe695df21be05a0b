"""The column set of a tabular output: fixed by the first row unless ``--columns`` names it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cdc.core.errors import InputError


class ColumnSet:
    def __init__(self, columns: Sequence[str] | None = None):
        self.names: list[str] = list(columns) if columns else []
        self._set = frozenset(self.names)
        self.fixed = bool(columns)

    def fix(self, row: dict[str, Any]) -> None:
        self.names = list(row)
        self._set = frozenset(self.names)
        self.fixed = True

    def grow(self, row: dict[str, Any]) -> None:
        """Take a row's new columns after the ones seen (the schema is not written yet: a stream
        whose table gained a column, ALTER TABLE … ADD COLUMN, earlier rows null)."""
        if not (row.keys() <= self._set):
            self.names += [k for k in row if k not in self._set]
            self._set = frozenset(self.names)

    def check(self, row: dict[str, Any]) -> None:
        if not (row.keys() <= self._set):
            new = [k for k in row if k not in self._set]
            raise InputError(
                f"column {new[0]!r} is not in the output schema {self.names}",
                hint="the first row fixes the columns of CSV and Parquet output; list them all with --columns a,b,c",
            )
