"""One hand-over to the row semantics, for every fast path, and always shown.

A fast path that meets what only the row path's rules may answer (a finding, a bad record, a
row its kernel or its vectors do not read) gives the run to them: from that point on, the state
built so far loaded into the row path's own (arrow-state, the state and keyed kernels), or, where
that cannot be, the whole run again on the row path from fresh outputs (``again_on_rows``).
Either way it says so here (``hand_over``, once, with the first reason): the run's
``Result.path`` is then ``<path>→rows`` and ``Result.handover`` the reason, which ``--verbose``
prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cdc.engine.job import Job, Result
    from cdc.engine.session import Session

ARROW = "→"
ROWS = "rows"


def hand_over(current: Session, reason: str) -> None:
    """The run goes on by the row path's rules, for ``reason`` (the first one given is kept)."""
    if current.handed_over is None:
        current.handed_over = reason


def taken(name: str, current: Session) -> str:
    """The name of the path a run took: ``name``, or ``name→rows`` after a hand-over."""
    return name if current.handed_over is None or name == ROWS else f"{name}{ARROW}{ROWS}"


def again_on_rows(job: Job, current: Session, reason: str) -> Result:
    """The whole run again on the row path, from fresh outputs (the caller made sure none has
    gone out: ``restartable``)."""
    from cdc.engine.paths import rows
    from cdc.engine.session import Rejects
    from cdc.formats.streams import Output

    hand_over(current, reason)
    if current.output is not None:
        current.output.abort()
        current.output = Output(job.output)
    if current.rejects is not None:
        current.rejects.abort()
        current.rejects = Rejects(job.rejects)
        current.reject = current.rejects.add
    return rows.run(job, current)


def restartable(job: Job, current: Session) -> bool:
    """Whether the run can begin again: its inputs can be read twice (not stdin, which the first
    run used up) and its output and rejects are files not yet committed (not stdout, a FIFO or a
    device, where what went out stays out)."""
    from cdc.formats.streams import STDIO

    output, rejects = current.output, current.rejects
    rereadable = job.rows is None and STDIO not in job.inputs
    return rereadable and (output is None or output.atomic) and (rejects is None or rejects.atomic)
