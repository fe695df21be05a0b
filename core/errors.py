"""One error hierarchy for every layer; the CLI turns these into a message and an exit code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self


@dataclass(frozen=True, slots=True)
class Location:
    """Where a record came from: ``orders.jsonl:17`` or ``orders.parquet: row 1042``.

    Lines and rows both count from 1: ``row 1`` is a Parquet file's first row."""

    source: str
    line: int | None = None
    row: int | None = None  # 1-based row number, for formats without lines (Parquet)

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.source}:{self.line}"
        if self.row is not None:
            return f"{self.source}: row {self.row}"
        return self.source

    @property
    def number(self) -> int | None:
        """The line (or row number) to report in a rejects file."""
        return self.line if self.line is not None else self.row


class CdcError(Exception):
    """An expected failure: bad flags, bad input, a changelog that contradicts state."""

    exit_code = 3

    def __init__(self, message: str, *, where: Location | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def located(self, where: Location | None) -> Self:
        """Attach a location unless the error already carries one; returns self."""
        if self.where is None and where is not None:
            self.where = where
        return self

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where is not None else self.message


class UsageError(CdcError):
    """Bad flags, a bad mapping, a missing input file: exit 2."""

    exit_code = 2


class InputError(CdcError):
    """A record cannot be read or understood: exit 3."""


class InconsistencyError(InputError):
    """A change contradicts the state built so far (under ``--on-inconsistency fail``)."""


class ExpectationFailed(CdcError):
    """``materialize(..., expect=...)``: the table differs from the expected one (exit 1 on the
    command line). Raised by ``Result.check()``; ``differences`` is the ``TableDiff`` (rows only
    in the result, only in the expected table, changed cells, column sets)."""

    exit_code = 1

    def __init__(self, message: str, differences: object, *, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.differences = differences
