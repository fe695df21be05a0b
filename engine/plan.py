"""The one place that chooses how a job runs.

Each path states next to its code which jobs it accepts (``accepts(job)``); ``choose`` takes
the first, fastest, that does. The row path accepts every job and is the reference the others
are held to by tests; ``path=`` (the API) or ``CDC_PATH`` (tests, benchmarks) forces one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from cdc.core.errors import UsageError
from cdc.engine.job import Job, Result
from cdc.engine.session import Session


@dataclass(frozen=True)
class Path:
    name: str
    accepts: Callable[[Job], bool]
    run: Callable[[Job, Session], Result]


def _keyed_kernel() -> Path:
    from cdc.engine.paths.native import keyed

    return Path("keyed-kernel", keyed.accepts, keyed.run)


def _state_kernel() -> Path:
    from cdc.engine.paths.native import state

    return Path("state-kernel", state.accepts, state.run)


def _arrow() -> Path:
    from cdc.engine.paths import arrow

    return Path("arrow", arrow.accepts, arrow.run)


def _arrow_state() -> Path:
    from cdc.engine.paths import arrow_state

    return Path("arrow-state", arrow_state.accepts, arrow_state.run)


def _lines_arrow() -> Path:
    from cdc.engine.paths import arrow_lines

    return Path("lines-arrow", arrow_lines.accepts, arrow_lines.run)


def _kernel_lines() -> Path:
    from cdc.engine.paths import lines
    from cdc.engine.paths.native import kernel

    def accepts(job: Job) -> bool:
        return lines.accepts(job) and kernel.accepts(job.spec)

    return Path("kernel-lines", accepts, lambda job, current: lines.run(job, current, with_kernel=True))


def _lines() -> Path:
    from cdc.engine.paths import lines

    return Path("lines", lines.accepts, lambda job, current: lines.run(job, current, with_kernel=False))


def _rows() -> Path:
    from cdc.engine.paths import rows

    return Path("rows", rows.accepts, rows.run)


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
    """The fastest path that accepts ``job``, or the one named by ``forced`` / ``CDC_PATH``."""
    forced = forced or os.environ.get("CDC_PATH") or None
    if forced is not None:
        if forced not in PATHS:
            raise UsageError(f"unknown path {forced!r}; choose one of {', '.join(PATHS)}")
        path = PATHS[forced]()
        if not path.accepts(job):
            raise UsageError(f"the {forced} path does not take this job")
        return path
    if job.stream_schema is not None or job.schema_line:  # a schema line in or out: the row path's readers
        return PATHS["rows"]()
    for make in PATHS.values():
        path = make()
        if path.accepts(job):
            return path
    raise AssertionError("the row path takes every job")  # pragma: no cover
