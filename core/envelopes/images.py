"""Live rows of one table, kept so that a change with a missing or partial image can be completed.

CDC tools do not always send the whole row. PostgreSQL without ``REPLICA IDENTITY FULL`` sends a
before image with the key only (Debezium); Oracle GoldenGate without full supplemental logging
sends the key and the changed columns (compressed updates and deletes); Debezium marks unchanged
TOAST values with a placeholder. Flink emits such images as they are (absent columns become NULL),
which gives retractions that match no row. With a key, the last row seen for that key is the full
image; :class:`LiveRows` keeps it and rebuilds what is missing, or says clearly why it cannot.

Without a key it can still keep a multiset of the live rows, which is what a truncate needs to
become one ``-D`` per row (``--on-truncate delete``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cdc.core.errors import InputError
from cdc.core.model import Row
from cdc.core.rowstore import KeyedRows, MultisetRows


@dataclass(frozen=True)
class ImageTexts:
    """What an envelope tells a user whose before image is missing: the likely cause, the fix."""

    cause: str
    hint: str


def what_is(value: Any) -> str:
    if value is None:
        return "null"
    return "an object" if isinstance(value, dict) else "an array" if isinstance(value, list) else "a scalar value"


class LiveRows:
    """The live rows of one table: one per key (``key`` given) or a multiset (no key).

    ``placeholder`` is a value that stands for "unchanged, not sent" (Debezium's
    ``__debezium_unavailable_value``); such a column is filled from the stored row like a missing one.
    """

    def __init__(self, key: Sequence[str] = (), texts: ImageTexts | None = None, placeholder: str | None = None):
        self.key = tuple(key)
        self.keyed: KeyedRows | None = KeyedRows(self.key) if self.key else None
        self.multiset: MultisetRows | None = None if self.key else MultisetRows()
        self.texts = texts or ImageTexts("the source sent no full before image", "give --key COLS")
        self.placeholder = placeholder

    def __len__(self) -> int:
        return len(self.keyed) if self.keyed is not None else len(self.multiset or ())

    # -- applying changes ---------------------------------------------------------------------

    def track(self, kind: str, image: Row) -> None:
        """Apply one emitted change (the images as written, metadata columns excluded)."""
        keyed = self.keyed
        if keyed is not None:
            if kind == "+I" or kind == "+U":
                keyed.put(keyed.key_of(image), image)
            else:
                keyed.pop(keyed.key_of(image))
        elif self.multiset is not None:
            if kind == "+I" or kind == "+U":
                self.multiset.add(image)
            else:
                self.multiset.remove(image)

    def stored(self, image: Row) -> Row | None:
        """The live row with the key of ``image`` (None without a key, or when absent)."""
        keyed = self.keyed
        if keyed is None or not all(image.get(c) is not None for c in keyed.columns):
            return None
        return keyed.get(keyed.key_of(image))

    def truncate(self) -> list[Row]:
        """Every live row, in first-insertion order, and forget them all (a truncate as deletes)."""
        if self.keyed is not None:
            rows = list(self.keyed.values())
            self.keyed.rows.clear()
        else:
            assert self.multiset is not None
            rows = list(self.multiset.values())
            self.multiset.rows.clear()
        return rows

    # -- completing images --------------------------------------------------------------------

    def missing(self, before: Any, after: Row | None) -> list[str]:
        """Why ``before`` cannot be used as sent: the columns it lacks (empty when complete).

        An update's before image must carry every column of its after image and, with a key,
        of the row stored for the key; a delete's is checked against the stored row (a stream
        may mix tables, so there is no global column list). A placeholder value counts as missing.
        """
        if not isinstance(before, dict) or not before:
            return ["all columns"]
        placeholder = self.placeholder
        keyed = self.keyed
        stored = None
        if keyed is not None:
            stored = self.stored(before)
            if stored is None and after is None and not all(before.get(c) is not None for c in keyed.columns):
                return [c for c in keyed.columns if before.get(c) is None]  # a delete must name its key
        if (
            (after is None or before.keys() >= after.keys())
            and (stored is None or before.keys() >= stored.keys())
            and (placeholder is None or placeholder not in before.values())
        ):
            return []
        gaps = [c for c in (after or ()) if c not in before]
        if stored is not None:
            gaps += [c for c in stored if c not in before and c not in gaps]
        if placeholder is not None:
            gaps += [c for c, v in before.items() if v == placeholder]
        return gaps

    def complete_before(self, before: Any, after: Row | None, what: str) -> Row:
        """The full before image of an UPDATE (``after`` given) or a DELETE (``after`` None).

        As sent when it is complete; else rebuilt from the row stored for its key, keeping what
        was sent. The key is read from ``before``, or — for an update, whose key does not change
        within one event — from ``after`` when ``before`` lacks it. Fails with the envelope's
        cause and hint when there is no key or the key was never seen.
        """
        gaps = self.missing(before, after)
        keyed = self.keyed
        if not gaps:
            if keyed is not None and after is None:
                # A key-only delete (the other columns null): the stored row is the real image.
                stored = self.stored(before)
                if stored is not None and all(v is None or stored.get(c) == v for c, v in before.items()):
                    return stored
            return before  # type: ignore[no-any-return]
        texts = self.texts
        if keyed is None:
            if not isinstance(before, dict) or not before:
                shown = "empty" if isinstance(before, dict) else what_is(before)
                raise InputError(f'the "before" image of {what} message is {shown}; {texts.cause}', hint=texts.hint)
            raise InputError(
                f'the "before" image of {what} message is incomplete (missing {", ".join(gaps)}); {texts.cause}',
                hint=texts.hint,
            )
        source = self._key_source(before, after, keyed.columns)
        if source is None:
            where = "'before'" if after is None else "'before' or 'after'"
            raise InputError(
                f"{what} message names no key: the key column(s) {', '.join(keyed.columns)} are not in {where}",
                hint="deletes need the key in their before image; check --key",
            )
        stored = keyed.get(keyed.key_of(source))
        if stored is None:
            raise InputError(
                f"{what} of a key never seen before ({_describe(keyed.columns, source)}): "
                "cannot rebuild its before image",
                hint="the stream must start with the row's insert (or a snapshot) for --key to rebuild images",
            )
        if isinstance(before, dict) and before:
            placeholder = self.placeholder
            return {
                c: (
                    stored.get(c)
                    if (c not in before or (placeholder is not None and before[c] == placeholder))
                    else before[c]
                )
                for c in stored
            }
        return stored

    @staticmethod
    def _key_source(before: Any, after: Row | None, columns: Sequence[str]) -> Row | None:
        for image in (before, after):
            if isinstance(image, dict) and all(image.get(c) is not None for c in columns):
                return image
        return None

    def complete_after(self, after: Row, before: Row | None = None) -> Row:
        """An after image with the columns it left out (unchanged ones) taken from ``before`` or
        from the stored row; placeholders are filled the same way. Returned as is when nothing
        is missing or nothing is known."""
        placeholder = self.placeholder
        base = before if before else self.stored(after)
        if base is None:
            if placeholder is not None and placeholder in after.values():
                gaps = [c for c, v in after.items() if v == placeholder]
                raise InputError(
                    f"column(s) {', '.join(gaps)} hold the placeholder {placeholder!r} (an unchanged value not sent)",
                    hint=self.texts.hint,
                )
            return after
        if after.keys() >= base.keys() and (placeholder is None or placeholder not in after.values()):
            return after
        out = dict(base)
        for c, v in after.items():
            if placeholder is None or v != placeholder:
                out[c] = v
        return out


def _describe(columns: Sequence[str], row: Row) -> str:
    return ", ".join(f"{c}={row.get(c)!r}" for c in columns)


class TableRows:
    """:class:`LiveRows` per table, for streams that mix tables (Canal, Maxwell, OGG name theirs)."""

    def __init__(self, key: Sequence[str] = (), texts: ImageTexts | None = None, placeholder: str | None = None):
        self.key = tuple(key)
        self.texts = texts
        self.placeholder = placeholder
        self.tables: dict[Any, LiveRows] = {}

    def of(self, table: Any) -> LiveRows:
        rows = self.tables.get(table)
        if rows is None:
            rows = self.tables[table] = LiveRows(self.key, self.texts, self.placeholder)
        return rows
