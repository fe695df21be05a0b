"""Counters a command keeps so that every input record is accounted for."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from cdc.core.kinds import ALL_KINDS


@dataclass
class Counts:
    by_kind: Counter[str] = field(default_factory=Counter)  # rows written, by row kind
    written: int = 0
    dropped: int = 0  # filtered out on purpose (--drop, unmapped kinds)
    skipped: int = 0  # bad records under --on-error skip
    notes: Counter[str] = field(default_factory=Counter)  # e.g. tombstones, no-op updates
    tables: dict[str, Any] = field(default_factory=dict)  # change events: table → TableSeen

    def kinds_text(self) -> str:
        return ", ".join(f"{k} {self.by_kind[k]}" for k in ALL_KINDS if self.by_kind.get(k))

    def summary(self, read: int | None = None) -> str:
        parts = []
        if read is not None:
            parts.append(f"read {read}")
        kinds = self.kinds_text()
        parts.append(f"wrote {self.written}" + (f" ({kinds})" if kinds else ""))
        if self.dropped:
            parts.append(f"dropped {self.dropped}")
        if self.skipped:
            parts.append(f"skipped {self.skipped}")
        parts.extend(f"{name} {n}" for name, n in sorted(self.notes.items()))
        return ", ".join(parts)
