"""Comparing time-column values the way a user means them.

A bound (``--as-of``, ``--since``, ``--until``) is read as the type of the value it meets:

- a number (or a numeric string, as CSV holds them) against a number: compared as numbers;
- an epoch number against an ISO instant, either way round: the number is an instant since
  1970-01-01 UTC in milliseconds, unless its magnitude says otherwise — below 1e11 it is seconds
  (1e11 s is the year 5138), from 1e14 microseconds, from 1e17 nanoseconds;
- ISO date-times with a zone are instants; without one they are UTC; a date is its midnight UTC;
- times of day (``13:00:00``) against times of day; text that is none of these against text.

A bound that cannot be read as the value's type (``--as-of banana`` over numbers, a time of day
over dates) is a usage error naming the option and the column (SPEC §3, time travel).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc.core.errors import UsageError
from cdc.core.values import json_text

_EPOCH = dt.datetime(1970, 1, 1)
# |n| below the first limit: seconds; then milliseconds, microseconds, nanoseconds
_UNITS = ((Decimal(10) ** 11, Decimal(1)), (Decimal(10) ** 14, Decimal("0.001")), (Decimal(10) ** 17, Decimal("1e-6")))


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
        return value.replace(tzinfo=None) if value.tzinfo is not None else value
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        if not text[:1].isdigit():
            return None
        try:
            return as_datetime(dt.datetime.fromisoformat(text))
        except ValueError:
            pass
        try:
            return as_datetime(dt.time.fromisoformat(text))
        except ValueError:
            return None
    return None


def epoch_instant(number: Decimal) -> dt.datetime | int:
    """An epoch number as a UTC instant (the unit by its magnitude, see above); -1 or 1 for a
    number before or after every instant Python holds."""
    seconds = number * Decimal("1e-9")
    for limit, scale in _UNITS:
        if abs(number) < limit:
            seconds = number * scale
            break
    try:
        return _EPOCH + dt.timedelta(microseconds=int(seconds * 1_000_000))
    except OverflowError:
        return -1 if number < 0 else 1


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


class BoundError(UsageError):
    """A bound the column's values cannot be compared with: the flag is at fault, not a row."""

    def located(self, where: Any) -> BoundError:
        return self


def _describe(value: Any) -> str:
    if as_number(value) is not None:
        return "epoch numbers"
    moment = as_datetime(value)
    if isinstance(moment, dt.datetime):
        return "date-times"
    if isinstance(moment, dt.time):
        return "times of day"
    return "text"


def _sign(a: Any, b: Any) -> int:
    return (a > b) - (a < b)  # type: ignore[no-any-return]


class TimePoint:
    """A bound (``--as-of``, ``--since``, ``--until``) compared against row values; with no
    ``option`` (two row values compared), values of classes that do not convert order by class."""

    def __init__(self, value: Any, option: str | None = None, column: str | None = None):
        self.value = value
        self.option = option
        self.column = column
        self.number = as_number(value)
        self.moment = as_datetime(value)
        self.text = text_of(value)
        self.instant: dt.datetime | int | None = None
        if isinstance(self.moment, dt.datetime):
            self.instant = self.moment
        elif self.number is not None:
            self.instant = epoch_instant(self.number)

    def compare(self, value: Any) -> int:
        """-1, 0 or 1 as ``value`` is before, at or after this point (a null: after every point)."""
        if value is None:
            return 1
        number = as_number(value)
        if number is not None:
            if self.number is not None:
                return _sign(number, self.number)
            if isinstance(self.moment, dt.datetime):
                return _instants(epoch_instant(number), self.moment)
            return self._mismatch(value)
        moment = as_datetime(value)
        if isinstance(moment, dt.datetime):
            if self.instant is not None:
                return _instants(moment, self.instant)
            return self._mismatch(value)
        if moment is not None:
            if isinstance(self.moment, dt.time):
                return _sign(moment, self.moment)
            return self._mismatch(value)
        if self.number is None and self.moment is None:
            text = text_of(value)
            return _sign(text, self.text)
        return self._mismatch(value)

    def _mismatch(self, value: Any) -> int:
        if self.option is None:
            return _sign(sort_key(value), sort_key(self.value))
        raise BoundError(
            f"{self.option} {json_text(self.value)} cannot be read as a time of column {self.column!r}, "
            f"which holds {_describe(value)} ({json_text(value)})",
            hint="give the bound as the column holds its times: an epoch number (ms) or an ISO date-time",
        )


def _instants(a: dt.datetime | int, b: dt.datetime | int) -> int:
    if isinstance(a, int) or isinstance(b, int):
        ka = (a, _EPOCH) if isinstance(a, int) else (0, a)
        kb = (b, _EPOCH) if isinstance(b, int) else (0, b)
        return _sign(ka, kb)
    return _sign(a, b)


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
