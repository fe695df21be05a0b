"""Running a job: its formats decided, a path chosen, its outputs committed or rolled back."""

from __future__ import annotations

import sys

from cdc.engine.handover import taken
from cdc.engine.inputs import resolve
from cdc.engine.job import Job, Progress, Result
from cdc.engine.plan import choose
from cdc.engine.session import session
from cdc.formats.streams import check_input_exists, input_size

# The JSON parser reads values nested 1,024 deep; walking one (identity, comparison, writing)
# takes up to three frames a level, past Python's default 1,000.
NESTING_STACK = 10_000


def run_job(job: Job, progress: Progress | None = None, path: str | None = None) -> Result:
    """Run ``job`` on the fastest path that takes it (or on ``path``); raises ``CdcError``."""
    if sys.getrecursionlimit() < NESTING_STACK:
        sys.setrecursionlimit(NESTING_STACK)
    if job.rows is None:
        for name in job.inputs:  # before anything peeks at stdin
            check_input_exists(name)
    job = resolve(job)
    if progress is not None:
        sizes = [input_size(name) for name in job.inputs] if job.rows is None else [None]
        progress.start(None if None in sizes else sum(s for s in sizes if s is not None))
    if job.memory_limit is not None and path is None:
        from cdc.engine.spill import run_limited  # spills past the limit, else runs in memory as below

        return run_limited(job, progress, lambda job: _in_memory(job, progress, path))
    return _in_memory(job, progress, path)


def _in_memory(job: Job, progress: Progress | None, path: str | None) -> Result:
    chosen = choose(job, path)
    with session(job, progress) as current:
        result = chosen.run(job, current)
        result.path, result.handover = taken(chosen.name, current), current.handed_over
        return result


def memory_limit(text: str | int | None) -> int:
    """``--memory-limit`` in bytes: ``8GB``, ``40%`` of the machine's memory, bytes; None: half
    of the machine's memory."""
    from cdc.engine.spill import default_limit, parse_size

    return default_limit() if text is None else parse_size(text)
