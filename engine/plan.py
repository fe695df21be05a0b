"""The one place that chooses how a job runs: a closed world.

Each path has a table of the commands it runs (``COMMANDS``: spec type → ``commands.Command``),
each naming the spec fields and job options it implements, and the finer conditions it has
(``can_run``: input formats, column types, the kernel built). ``choose`` takes the first path,
fastest first, whose table declares every field the job sets (``commands.declines``) and whose
conditions hold; a field that no fast path declares sends the job on to the row path, which
declares every one and is the reference the others are held to by tests
(``tests/test_paths.py``, ``tests/test_closed_world.py``). ``path=`` (the API) or ``CDC_PATH``
(tests, benchmarks) forces one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from cdc.core.errors import UsageError
from cdc.engine.commands import Command, declines
from cdc.engine.job import Job, Result
from cdc.engine.session import Session


def _anything(job: Job) -> bool:
    return True


@dataclass(frozen=True)
class Path:
    name: str
    commands: Mapping[type, Command]  # what it runs of each command, and which fields
    run: Callable[[Job, Session], Result]
    can_run: Callable[[Job], bool] = _anything  # conditions on every job (the kernel built …)

    def declines(self, job: Job) -> str | None:
        """Why this path does not take ``job`` (None: it does)."""
        reason = declines(self.commands, job)
        if reason is None and not self.can_run(job):
            reason = "not available for this job"
        return reason

    def accepts(self, job: Job) -> bool:
        return self.declines(job) is None


def _keyed_kernel() -> Path:
    from cdc.engine.paths.native import keyed

    return Path("keyed-kernel", keyed.COMMANDS, keyed.run, keyed.can_run)


def _state_kernel() -> Path:
    from cdc.engine.paths.native import state

    return Path("state-kernel", state.COMMANDS, state.run, state.can_run)


def _arrow() -> Path:
    from cdc.engine.paths import arrow

    return Path("arrow", arrow.COMMANDS, arrow.run, arrow.can_run)


def _arrow_state() -> Path:
    from cdc.engine.paths import arrow_state

    return Path("arrow-state", arrow_state.COMMANDS, arrow_state.run, arrow_state.can_run)


def _lines_arrow() -> Path:
    from cdc.engine.paths import lines_arrow

    return Path("lines-arrow", lines_arrow.COMMANDS, lines_arrow.run, lines_arrow.can_run)


def _kernel_lines() -> Path:
    from cdc.engine.paths import kernel_lines

    return Path("kernel-lines", kernel_lines.COMMANDS, kernel_lines.run, kernel_lines.can_run)


def _lines() -> Path:
    from cdc.engine.paths import lines

    return Path("lines", lines.COMMANDS, lines.run, lines.can_run)


def _rows() -> Path:
    from cdc.engine.paths import rows

    return Path("rows", rows.COMMANDS, rows.run)


# Fastest first. Each is built when asked for: a run imports only the path it takes.
PATHS: dict[str, Callable[[], Path]] = {
    "keyed-kernel": _keyed_kernel,
    "state-kernel": _state_kernel,
    "arrow": _arrow,
    "arrow-state": _arrow_state,
    "lines-arrow": _lines_arrow,
    "kernel-lines": _kernel_lines,
    "lines": _lines,
    "rows": _rows,
}


def choose(job: Job, forced: str | None = None) -> Path:
    """The fastest path that takes ``job``, or the one named by ``forced`` / ``CDC_PATH``."""
    forced = forced or os.environ.get("CDC_PATH") or None
    if forced is not None:
        if forced not in PATHS:
            raise UsageError(f"unknown path {forced!r}; choose one of {', '.join(PATHS)}")
        path = PATHS[forced]()
        reason = path.declines(job)
        if reason is not None:
            raise UsageError(f"the {forced} path does not take this job: {reason}")
        return path
    for make in PATHS.values():
        path = make()
        if path.accepts(job):
            return path
    raise AssertionError("the row path takes every job")  # pragma: no cover
