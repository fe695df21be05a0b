"""Running a job: its formats decided, a path chosen, its outputs committed or rolled back."""

from __future__ import annotations

from cdc.engine.handover import taken
from cdc.engine.inputs import resolve
from cdc.engine.job import Job, Progress, Result
from cdc.engine.plan import choose
from cdc.engine.session import session
from cdc.formats.streams import check_input_exists, input_size


def run_job(job: Job, progress: Progress | None = None, path: str | None = None) -> Result:
    """Run ``job`` on the fastest path that takes it (or on ``path``); raises ``CdcError``."""
    if job.rows is None:
        for name in job.inputs:  # before anything peeks at stdin
            check_input_exists(name)
    job = resolve(job)
    chosen = choose(job, path)
    if progress is not None:
        sizes = [input_size(name) for name in job.inputs] if job.rows is None else [None]
        progress.start(None if None in sizes else sum(s for s in sizes if s is not None))
    with session(job, progress) as current:
        result = chosen.run(job, current)
        result.path, result.handover = taken(chosen.name, current), current.handed_over
        return result
