"""The ``table`` output format: a rich table for people, kinds coloured."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from cdc.formats.printed import print_value

KIND_STYLES = {"+I": "green", "-U": "yellow", "+U": "cyan", "-D": "red"}
MAX_ROWS = 10_000


class StdoutConsole(Console):
    """rich's console, except that a reader going away (`cdc … -f table | head`) is the
    BrokenPipeError every other output format raises — exit 0, as they end — not rich's exit 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def cell(value: Any) -> Text:
    if value is None:
        return Text("null", style="dim italic")
    return Text(print_value(value))


class TableWriter:
    """Collects rows (a table needs its widths) and prints them on close."""

    def __init__(self, kind_column: str | None, title: str | None = None):
        self._kind_column = kind_column
        self._rows: list[dict[str, Any]] = []
        self._columns: dict[str, None] = {}
        self._more = 0
        self._title = title

    def write_rows(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            if len(self._rows) >= MAX_ROWS:
                self._more += 1
                continue
            self._rows.append(row)
            self._columns.update(dict.fromkeys(row))

    def close(self) -> None:
        console = StdoutConsole()
        table = Table(title=self._title, show_edge=False, header_style="bold")
        for name in self._columns:
            # Numbers right-aligned, text left; nothing cut short (a long value folds).
            values = [row.get(name) for row in self._rows if row.get(name) is not None]
            numeric = bool(values) and all(_is_number(v) for v in values)
            table.add_column(name, justify="right" if numeric else "left", overflow="fold")
        kc = self._kind_column
        for row in self._rows:
            cells = []
            for name in self._columns:
                value = row.get(name)
                if name == kc and isinstance(value, str):
                    cells.append(Text(value, style=KIND_STYLES.get(value, "")))
                else:
                    cells.append(cell(value))
            table.add_row(*cells)
        console.print(table)
        if self._more:
            console.print(
                f"… the first {MAX_ROWS:,} rows of {MAX_ROWS + self._more:,}: write JSONL or CSV (-f jsonl, -o FILE) "
                "for all of them",
                style="dim",
            )
