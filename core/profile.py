"""What kind of changelog is this? (``cdc inspect``)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc.core.errors import InputError
from cdc.core.kinds import changelog_mode
from cdc.core.model import Key, Row
from cdc.core.rowstore import key_getter
from cdc.core.state import Findings, Policy, TableState, Where, new_state
from cdc.core.timeorder import sort_key


def mode_of(kinds: set[str]) -> str:
    """append-only, upsert (UA without UB) or retract, as Flink's changelog modes say."""
    if not kinds:
        return "empty"
    if kinds == {"+I"}:
        return "append-only"
    if "+U" in kinds and "-U" not in kinds:
        return "upsert"
    return "retract"


@dataclass
class Profile:
    key: tuple[str, ...] = ()
    time_column: str | None = None
    metadata: frozenset[str] = frozenset()  # commit columns: not part of a row's identity
    ignored: frozenset[str] = frozenset()  # --ignore-columns: neither
    state: TableState = field(init=False)
    distinct_keys: set[Key] = field(default_factory=set)
    changes: int = 0
    time_min: Any = None
    time_max: Any = None
    time_missing: int = 0

    def __post_init__(self) -> None:
        self.state = new_state(self.key, Findings(Policy.warn), metadata=self.metadata, ignored=self.ignored)
        self._key_of = key_getter(self.key) if self.key else None

    def add(self, kind: str, image: Row, where: Where) -> None:
        self.changes += 1
        self.state.apply(kind, image, where)
        if self._key_of is not None:
            self.distinct_keys.add(self._key_of(image))
        if self.time_column is not None:
            if self.time_column not in image:
                raise InputError(f"time column {self.time_column!r} does not exist in this row")
            value = image[self.time_column]
            if value is None:
                self.time_missing += 1
            else:
                if self.time_min is None or sort_key(value) < sort_key(self.time_min):
                    self.time_min = value
                if self.time_max is None or sort_key(value) > sort_key(self.time_max):
                    self.time_max = value

    @property
    def findings(self) -> Findings:
        """The changes that contradicted the state (the API's ``result.findings``)."""
        return self.state.findings

    def as_dict(self, sources: Sequence[str]) -> dict[str, Any]:
        kinds = {k for k, n in self.state.by_kind.items() if n}
        findings = self.state.findings
        out: dict[str, Any] = {
            "inputs": list(sources),
            "changes": self.changes,
            "kinds": changelog_mode(kinds),
            "mode": mode_of(kinds),
            "counts": {k: self.state.by_kind.get(k, 0) for k in ("+I", "-U", "+U", "-D")},
            "live_rows": len(self.state),
            "messages": {"retract": self.state.retract_messages, "upsert": self.state.upsert_messages},
            "consistency": {
                "inconsistent_changes": findings.total,
                "by_finding": dict(findings.counts),
                "examples": [str(f) for f in findings.examples],
            },
        }
        if self.key:
            out["key"] = {"columns": list(self.key), "distinct": len(self.distinct_keys), "live": len(self.state)}
        if self.time_column is not None:
            out["time"] = {
                "column": self.time_column,
                "min": self.time_min,
                "max": self.time_max,
                "missing": self.time_missing,
            }
        return out
