"""Comparing time-column values the way a user means them.

Two values compare as numbers when both parse as numbers, else as ISO date-times (or times of
day), else as text (SPEC §3, materialize --as-of).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any


def as_number(value: Any) -> Decimal | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | Decimal):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return None
        return number if number.is_finite() else None
    return None


def as_datetime(value: Any) -> dt.datetime | dt.time | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is None else value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    if isinstance(value, dt.time):
        return value
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            return as_datetime(dt.datetime.fromisoformat(text))
        except ValueError:
            pass
        try:
            return dt.time.fromisoformat(text)
        except ValueError:
            return None
    return None


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


class TimePoint:
    """A bound (``--as-of``, ``--since``, ``--until``) compared against row values."""

    def __init__(self, value: Any):
        self.value = value
        self.number = as_number(value)
        self.moment = as_datetime(value)
        self.text = text_of(value)

    def compare(self, value: Any) -> int:
        """-1, 0 or 1 as ``value`` is before, at or after this point."""
        if self.number is not None:
            number = as_number(value)
            if number is not None:
                return (number > self.number) - (number < self.number)
        if self.moment is not None:
            moment = as_datetime(value)
            if moment is not None and type(moment) is type(self.moment):
                return (moment > self.moment) - (moment < self.moment)  # type: ignore[operator]
        text = text_of(value)
        return (text > self.text) - (text < self.text)


def sort_key(value: Any) -> tuple[int, Any]:
    """An ordering over mixed values: nulls first, then numbers, date-times, text."""
    if value is None:
        return (0, 0)
    number = as_number(value)
    if number is not None:
        return (1, number)
    moment = as_datetime(value)
    if isinstance(moment, dt.datetime):
        return (2, moment)
    return (3, text_of(value))
