"""Live rows kept by key (or as a multiset), for commands that must remember what they saw."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from cdc.core.errors import InputError
from cdc.core.model import Key, Row


def hashable(value: Any) -> Any:
    """A hashable stand-in for a JSON value (nested objects and arrays included)."""
    if isinstance(value, dict):
        return ("{}", tuple((k, hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("[]", tuple(hashable(v) for v in value))
    return value


def missing_key(column: str, row: Mapping[str, Any]) -> InputError:
    """A key column a row lacks, with the columns it has (a typo shows at once)."""
    have = ", ".join(row) or "none"
    return InputError(f"key column {column!r} does not exist in this row; its columns are {have}")


def key_getter(columns: Sequence[str]) -> Any:
    """A function row → key; a missing key column is an input error.

    A one-column key is the value itself (this runs once per change, so no tuple is built);
    several columns make a tuple. Objects and arrays become hashable stand-ins.
    """
    cols = tuple(columns)
    if len(cols) == 1:
        (col,) = cols

        def single(row: Mapping[str, Any]) -> Any:
            try:
                value = row[col]
            except KeyError:
                raise missing_key(col, row) from None
            return hashable(value) if type(value) in (dict, list) else value

        return single

    def key_of(row: Mapping[str, Any]) -> Key:
        try:
            return tuple(hashable(row[c]) for c in cols)
        except KeyError as exc:
            raise missing_key(exc.args[0], row) from None

    return key_of


def row_identity(row: Mapping[str, Any], metadata: frozenset[str] = frozenset()) -> Key:
    """A whole row as a hashable value (column order does not matter), its metadata columns
    left out: the multiset key under which a ``-U``/``-D`` finds the row it retracts (a change
    feed's retraction carries the commit that removed the row, not the one that wrote it).

    A null column is left out too: an absent column and a null are the same value (a row
    written before ``ALTER TABLE … ADD COLUMN c`` lacks ``c``; its delete after it has
    ``c: null``), as Flink's formats read a missing field as null."""
    return tuple(sorted((k, hashable(v)) for k, v in row.items() if v is not None and k not in metadata))


def same_row(a: Mapping[str, Any], b: Mapping[str, Any], metadata: frozenset[str] = frozenset()) -> bool:
    """``a`` and ``b`` hold the same values, metadata columns aside and an absent column
    equal to a null (keyed state's check that a ``-U`` retracts the row it stores)."""
    if a == b:
        return True
    if not metadata and len(a) == len(b) and a.keys() == b.keys():
        return False  # the same columns: ``==`` said it
    return differing_columns(a, b, metadata) == []


def differing_columns(a: Mapping[str, Any], b: Mapping[str, Any], metadata: frozenset[str] = frozenset()) -> list[str]:
    """The columns whose values differ between ``a`` and ``b`` (a missing column reads as null),
    metadata columns aside, in first-seen order."""
    return [c for c in dict.fromkeys([*a, *b]) if c not in metadata and hashable(a.get(c)) != hashable(b.get(c))]


def strip(row: Row, columns: Iterable[str]) -> Row:
    """``row`` without ``columns`` (a new dict; the row itself when it has none of them)."""
    drop = [c for c in columns if c in row]
    if not drop:
        return row
    return {k: v for k, v in row.items() if k not in drop}


class KeyedRows:
    """One live row per key, in first-insertion order."""

    def __init__(self, columns: Sequence[str]):
        self.columns = tuple(columns)
        self.key_of = key_getter(columns)
        self.rows: dict[Key, Row] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def get(self, key: Key) -> Row | None:
        return self.rows.get(key)

    def put(self, key: Key, row: Row) -> None:
        self.rows[key] = row

    def pop(self, key: Key) -> Row | None:
        return self.rows.pop(key, None)

    def values(self) -> Iterator[Row]:
        return iter(self.rows.values())


class MultisetRows:
    """Rows without a key: each distinct row with its multiplicity, in first-insertion order."""

    def __init__(self) -> None:
        self.rows: dict[Key, list[Any]] = {}  # identity → [row, count]

    def __len__(self) -> int:
        return sum(entry[1] for entry in self.rows.values())

    def add(self, row: Row, identity: Key | None = None) -> None:
        ident = row_identity(row) if identity is None else identity
        entry = self.rows.get(ident)
        if entry is None:
            self.rows[ident] = [row, 1]
        else:
            entry[1] += 1

    def remove(self, row: Row, identity: Key | None = None) -> bool:
        """Remove one copy; False when there was none."""
        ident = row_identity(row) if identity is None else identity
        entry = self.rows.get(ident)
        if entry is None:
            return False
        entry[1] -= 1
        if entry[1] == 0:
            del self.rows[ident]
        return True

    def values(self) -> Iterator[Row]:
        for row, count in self.rows.values():
            for _ in range(count):
                yield row
