"""Row kinds as Flink names them, and the spellings a changelog file may use for them."""

from __future__ import annotations

from enum import StrEnum


class RowKind(StrEnum):
    """A change's kind; the value is Flink's short string (``RowKind.shortString()``)."""

    INSERT = "+I"
    UPDATE_BEFORE = "-U"
    UPDATE_AFTER = "+U"
    DELETE = "-D"

    @property
    def abbreviation(self) -> str:
        """How Flink prints the kind inside a changelog mode, e.g. ``[I,UB,UA,D]``."""
        return _ABBREVIATIONS[self]


INSERT = RowKind.INSERT
UPDATE_BEFORE = RowKind.UPDATE_BEFORE
UPDATE_AFTER = RowKind.UPDATE_AFTER
DELETE = RowKind.DELETE

ALL_KINDS: tuple[RowKind, ...] = (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE)

_ABBREVIATIONS = {INSERT: "I", UPDATE_BEFORE: "UB", UPDATE_AFTER: "UA", DELETE: "D"}

# Every spelling a reader of changelog rows accepts: the short codes and the long names.
KIND_BY_TEXT: dict[str, RowKind] = {k.value: k for k in ALL_KINDS} | {k.name: k for k in ALL_KINDS}

LONG_NAMES = ", ".join(k.name for k in ALL_KINDS)


def parse_kind_name(text: str) -> RowKind | None:
    """The kind named by ``text`` (long name or short code, surrounding blanks ignored)."""
    return KIND_BY_TEXT.get(text.strip())


def changelog_mode(kinds: set[RowKind] | set[str]) -> str:
    """Flink's notation for the kinds present, in Flink's order: ``[I,UB,UA,D]``."""
    return "[" + ",".join(k.abbreviation for k in ALL_KINDS if k in kinds) + "]"
