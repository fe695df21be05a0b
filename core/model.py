"""The shapes every layer passes around: a row, a change, how bad records are handled.

One definition each; formats, the engine and the CLI import them from here.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from cdc.core.errors import InputError

Row = dict[str, Any]
"""One record: column name → value, in column order."""

Key = tuple[Any, ...]
"""A row's key (one value per key column), hashable."""

Change = tuple[str, Row]
"""A row kind (``+I -U +U -D``) and the image it refers to, without the kind column."""

Reject = Callable[[InputError, str], None]
"""Called for a bad record under ``--on-error skip``: the located error and the record as it
stood in the input. Under ``fail`` the engine raises instead; nothing else decides."""


class OnError(StrEnum):
    """What a bad input record does: stop the run, or be counted and set aside."""

    fail = "fail"
    skip = "skip"


def fail_on_bad(err: InputError, raw: str) -> None:
    """The ``Reject`` of ``--on-error fail``: the first bad record ends the run."""
    raise err
