"""cdc: the changelog file converter, as a library.

Every command is a function (``cdc.materialize``, ``cdc.from_changelog``, ``cdc.decode`` …, see
``cdc.engine.api``); they are imported when first used, so ``import cdc`` stays cheap.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = (
    "read",
    "from_changelog",
    "to_changelog",
    "decode",
    "debezium_encode",
    "materialize",
    "replay",
    "inspect",
    "aggregate",
    "Result",
)
_ERRORS = ("CdcError", "InputError", "UsageError", "InconsistencyError", "Location")
__all__ = [*_API, *_ERRORS, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _API:
        from cdc.engine import api

        return getattr(api, name)
    if name in _ERRORS:
        from cdc.core import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'cdc' has no attribute {name!r}")
