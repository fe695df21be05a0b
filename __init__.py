"""cdc: the changelog file converter, as a library.

Every command is a function (``cdc.materialize``, ``cdc.from_changelog``, ``cdc.decode`` …, see
``cdc.engine.api``); they are imported when first used, so ``import cdc`` stays cheap.
"""

from __future__ import annotations

import os
import sys


def _interrupted_at_start(signum: int, frame: object) -> None:
    """Ctrl-C while the command line starts (its imports take a tenth of a second): nothing is
    open yet, so one line and exit 130, not a traceback of an import. The command swaps in
    Python's own handler (``cli.errors.reported_errors``) before it opens anything to roll back."""
    os.write(2, b"cdc: interrupted\n")
    os._exit(130)


if os.path.basename(sys.argv[0]) == "cdc":  # the console script; `import cdc` in a program leaves Ctrl-C alone
    import signal

    signal.signal(signal.SIGINT, _interrupted_at_start)

from typing import Any  # noqa: E402

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
