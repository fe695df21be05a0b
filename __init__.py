"""cdc: the changelog file converter, as a library.

Every command is a function with the command's options as keyword-only arguments (named as
its flags: ``--on-inconsistency`` → ``on_inconsistency``; an unknown keyword is a ``TypeError``).
A source is a path, a list of paths, or rows (dicts); each function returns a ``Result``::

    import cdc

    table = cdc.materialize("changes.jsonl", key="id", expect="expected.csv")
    if not table.ok:
        print(table.differences.summary())
    table.check()  # raises cdc.ExpectationFailed when the table differs

Functions:

- ``from_changelog``: op-coded append-only rows → changelog rows (Flink FROM_CHANGELOG)
- ``to_changelog``: changelog rows → append-only rows with an op column (Flink TO_CHANGELOG)
- ``decode``: Debezium, Canal, Maxwell or OGG change events → changelog rows
- ``debezium_decode``: Debezium change events → changelog rows (``decode(envelope="debezium")``)
- ``debezium_encode``: changelog rows → Debezium change events
- ``materialize``: a changelog applied to state → the table (``expect=`` compares it)
- ``replay``: a changelog through keyed state, re-emitted as retract or upsert
- ``replay_steps``: replay's state one change at a time (``cdc replay --live``)
- ``aggregate``: a continuous GROUP BY → Flink's update log
- ``inspect``: what kind of changelog this is (``result.report``)
- ``read``: the rows of a file in any format cdc reads

Types: ``Result`` (rows, counts, findings, skipped, path, ok, differences, report, sql),
``ReplayStep``. Errors: ``CdcError`` and its kinds ``UsageError`` (bad arguments),
``InputError`` (bad input, with ``where``: file and line), ``InconsistencyError``,
``ExpectationFailed`` (``Result.check()``). The functions are imported when first used, so
``import cdc`` stays cheap (see ``cdc.engine.api``).
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

from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_API = (
    "read",
    "from_changelog",
    "to_changelog",
    "decode",
    "debezium_decode",
    "debezium_encode",
    "materialize",
    "replay",
    "replay_steps",
    "inspect",
    "aggregate",
    "Result",
    "ReplayStep",
)
_ERRORS = ("CdcError", "InputError", "UsageError", "InconsistencyError", "ExpectationFailed", "Location")
__all__ = [*_API, *_ERRORS, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _API:
        from cdc.engine import api

        return getattr(api, name)
    if name in _ERRORS:
        from cdc.core import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'cdc' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names (``__all__``: imported when first used) and the module's own dunders."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})
