"""Sinks for rows that go to a caller instead of a file."""

from __future__ import annotations

from collections.abc import Iterable

from cdc.core.model import Row


class ListSink:
    """Collects every row (the API's results, ``--expect``'s table)."""

    def __init__(self) -> None:
        self.rows: list[Row] = []

    def write_rows(self, rows: Iterable[Row]) -> None:
        self.rows.extend(rows)

    def close(self) -> None:
        pass
