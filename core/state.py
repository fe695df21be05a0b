"""The state engine: a changelog applied to a table held in memory.

Keyed state is an upsert table (``+I``/``+U`` put, ``-U``/``-D`` remove); without a key the
table is a multiset (a retraction removes one equal row). Changes that contradict the state are
findings, handled by one policy: fail, warn (count and keep the first examples) or ignore.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from cdc.core.errors import InconsistencyError, Location
from cdc.core.model import Key, Row
from cdc.core.rowstore import KeyedRows, MultisetRows, differing_columns, row_identity, same_row
from cdc.core.values import json_text

Where = Callable[[], Location | None]
MAX_EXAMPLES = 5


class Policy(StrEnum):
    fail = "fail"
    warn = "warn"
    ignore = "ignore"


@dataclass
class Finding:
    what: str
    message: str
    where: Location | None

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where is not None else self.message


@dataclass
class Findings:
    """Inconsistencies, counted by what they are, with the first few examples kept."""

    policy: Policy = Policy.warn
    counts: Counter[str] = field(default_factory=Counter)
    examples: list[Finding] = field(default_factory=list)

    def add(self, what: str, message: str, where: Where) -> None:
        if self.policy == Policy.fail:
            raise InconsistencyError(message, where=where(), hint="--on-inconsistency warn reports and goes on")
        self.counts[what] += 1
        if self.policy == Policy.warn and len(self.examples) < MAX_EXAMPLES:
            self.examples.append(Finding(what, message, where()))

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _nowhere() -> Location | None:
    return None


def describe_key(columns: Sequence[str], row: Row) -> str:
    return ", ".join(f"{c}={json_text(row.get(c))}" for c in columns)


class TableState:
    """What every state offers: apply a change, list the rows, count messages both ways.

    ``metadata`` columns (a change feed's commit columns) are not part of a row's identity: a
    retraction matches the row it retracts whatever they hold."""

    def __init__(
        self,
        findings: Findings | None = None,
        metadata: frozenset[str] = frozenset(),
        ignored: frozenset[str] = frozenset(),
    ):
        self.findings = findings if findings is not None else Findings()
        self.metadata = metadata  # left out of identity and of the table
        self.ignored = ignored  # left out of identity only (--ignore-columns, a schema line's metadata)
        self.unmatched = metadata | ignored
        self.by_kind: Counter[str] = Counter()
        self.retract_messages = 0  # messages this log needs when encoded with -U (retract)
        self.upsert_messages = 0  # ... and without -U, deletes by key (upsert)

    def apply(self, kind: str, image: Row, where: Where = _nowhere) -> None:
        raise NotImplementedError

    def rows(self) -> Iterator[Row]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class KeyedState(TableState):
    """One live row per key.

    ``dedup`` is Flink's ``table.exec.source.cdc-events-duplicate``: changes are normalized to
    upserts by key (ChangelogNormalize), so a redelivered event changes nothing — a ``+I``/``+U``
    equal to the stored row and a retraction of an absent key are dropped as duplicates, and
    ``-U`` is dropped because its ``+U`` carries the update.
    """

    def __init__(
        self,
        key: Sequence[str],
        findings: Findings | None = None,
        dedup: bool = False,
        metadata: frozenset[str] = frozenset(),
        ignored: frozenset[str] = frozenset(),
    ):
        super().__init__(findings, metadata, ignored)
        self.table = KeyedRows(key)
        self.key = tuple(key)
        self.key_of = self.table.key_of
        self.rows_by_key = self.table.rows
        self.dedup = dedup
        self.duplicates = 0
        # Keys retracted by -U keep their slot, so that the +U after them does not move the key
        # to the end: output order is the first insertion of each live key.
        self._retracted: set[Key] = set()

    def __len__(self) -> int:
        return len(self.table) - len(self._retracted)

    def rows(self) -> Iterator[Row]:
        if not self._retracted:
            return self.table.values()
        retracted = self._retracted
        return (row for key, row in self.table.rows.items() if key not in retracted)

    def get(self, key: Key) -> Row | None:
        return None if key in self._retracted else self.table.get(key)

    def load(self, row: Row, retracted: bool = False) -> None:
        """Take a row as stored (after a table built elsewhere), in order; a retracted one keeps
        its slot for the +U that is to come."""
        key = self.key_of(row)
        self.rows_by_key[key] = row
        if retracted:
            self._retracted.add(key)

    def apply(self, kind: str, image: Row, where: Where = _nowhere) -> None:
        # Once per change: attribute and method lookups are kept to locals.
        self.by_kind[kind] += 1
        key = self.key_of(image)
        rows = self.rows_by_key
        retracted = self._retracted
        stored = None if (retracted and key in retracted) else rows.get(key)
        if self.dedup and self._normalized(kind, key, image, stored):
            return
        if kind == "+I" or kind == "+U":
            if stored is None:
                self.retract_messages += 1
                self.upsert_messages += 1
            else:
                if kind == "+I":
                    self.findings.add(
                        "insert of an existing key",
                        f"+I of a key that already exists ({describe_key(self.key, image)})",
                        where,
                    )
                self.retract_messages += 2
                self.upsert_messages += 1
            rows[key] = image
            if retracted:
                retracted.discard(key)
        elif kind == "-U":
            if stored is None:
                self.findings.add(
                    "retraction of an absent row",
                    f"-U of a key that does not exist ({describe_key(self.key, image)})",
                    where,
                )
                return
            if stored != image and not same_row(stored, image, self.unmatched):
                self.findings.add(
                    "update-before differs from the stored row",
                    f"-U image differs from the stored row for {describe_key(self.key, image)}: "
                    f"{_changed_columns(stored, image, self.unmatched)}",
                    where,
                )
            retracted.add(key)
            self.retract_messages += 1  # a message only the retract encoding has
        else:  # -D
            if stored is None:
                self.findings.add(
                    "retraction of an absent row",
                    f"-D of a key that does not exist ({describe_key(self.key, image)})",
                    where,
                )
                return
            self.retract_messages += 1
            self.upsert_messages += 1
            del rows[key]
            if retracted:
                retracted.discard(key)

    def _normalized(self, kind: str, key: Key, image: Row, stored: Row | None) -> bool:
        """True when ``--dedup`` consumes the change (it is a duplicate, or a -U)."""
        if kind == "-U":
            if stored is None:
                self.duplicates += 1
            return True
        if kind == "-D":
            if stored is None:
                self.duplicates += 1
                return True
            return False
        if stored is not None:
            if stored == image or same_row(stored, image, self.unmatched):
                self.duplicates += 1
                return True
            if kind == "+I":  # a redelivered insert of an older version: an upsert, not an error
                self.table.put(key, image)
                self.retract_messages += 2
                self.upsert_messages += 1
                return True
        return False


def _changed_columns(stored: Row, image: Row, metadata: frozenset[str] = frozenset()) -> str:
    """The differing columns, each with both values as JSON spells them (a missing column reads
    as null)."""
    names = differing_columns(stored, image, metadata)
    more = f" (and {len(names) - 3} more)" if len(names) > 3 else ""
    return ", ".join(f"{c}: stored {json_text(stored.get(c))}, got {json_text(image.get(c))}" for c in names[:3]) + more


class MultisetState(TableState):
    """Rows without a key: a retraction removes one equal row; there are no negative counts."""

    def __init__(
        self,
        findings: Findings | None = None,
        dedup: bool = False,
        metadata: frozenset[str] = frozenset(),
        ignored: frozenset[str] = frozenset(),
    ):
        super().__init__(findings, metadata, ignored)
        self.table = MultisetRows()
        self.dedup = dedup
        self.duplicates = 0
        self._previous: tuple[str, Key] | None = None

    def __len__(self) -> int:
        return len(self.table)

    def rows(self) -> Iterator[Row]:
        return self.table.values()

    def apply(self, kind: str, image: Row, where: Where = _nowhere) -> None:
        self.by_kind[kind] += 1
        ident = row_identity(image, self.unmatched)
        if self.dedup:
            if self._previous == (kind, ident):
                self.duplicates += 1
                return
            self._previous = (kind, ident)
        if kind == "+I" or kind == "+U":
            self.table.add(image, ident)
            self.retract_messages += 1
            self.upsert_messages += 1
        else:
            if not self.table.remove(image, ident):
                self.findings.add(
                    "negative multiset count",
                    f"{kind} of a row that is not in the table (its count would go negative)",
                    where,
                )
                return
            self.retract_messages += 1
            if kind == "-D":
                self.upsert_messages += 1


def new_state(
    key: Sequence[str],
    findings: Findings,
    dedup: bool = False,
    metadata: frozenset[str] = frozenset(),
    ignored: frozenset[str] = frozenset(),
) -> TableState:
    if key:
        return KeyedState(key, findings, dedup, metadata, ignored)
    return MultisetState(findings, dedup, metadata, ignored)
