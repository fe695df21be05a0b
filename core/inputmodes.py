"""How input rows become changes: changelog rows carry their kind; plain rows are inserts
(``append``) or upserts of their key, with a flag column marking deletes (``upsert``)."""

from __future__ import annotations

from collections.abc import Callable

from cdc.core.compare import canonical
from cdc.core.convert import split_change
from cdc.core.errors import UsageError
from cdc.core.model import Change, Row

MODES = ("changelog", "upsert", "append")


def parse_delete_when(text: str | None) -> tuple[str, str] | None:
    """``__deleted=true`` → ``('__deleted', 'true')``."""
    if text is None:
        return None
    column, sep, value = text.partition("=")
    if not sep or not column.strip():
        raise UsageError(f"--delete-when: expected COLUMN=VALUE, got {text!r}; e.g. --delete-when __deleted=true")
    return column.strip(), value


def change_reader(mode: str, kind_column: str, delete_when: tuple[str, str] | None = None) -> Callable[[Row], Change]:
    """A function from one input row to its change; a bad row raises ``InputError``."""
    if mode == "changelog":
        return lambda row: split_change(row, kind_column)
    if mode == "append":
        return lambda row: ("+I", row)
    if mode != "upsert":
        raise UsageError(f"--input-mode: unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if delete_when is None:
        return lambda row: ("+U", row)
    column, value = delete_when
    marker = canonical(value)
    return lambda row: ("-D" if canonical(row.get(column)) == marker else "+U", row)
