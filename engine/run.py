"""Running a job: its formats decided, a path chosen, its outputs committed or rolled back."""

from __future__ import annotations

import sys

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
    chosen = choose(job, path)
    if progress is not None:
        sizes = [input_size(name) for name in job.inputs] if job.rows is None else [None]
        progress.start(None if None in sizes else sum(s for s in sizes if s is not None))
    with session(job, progress) as current:
        return chosen.run(job, current)
