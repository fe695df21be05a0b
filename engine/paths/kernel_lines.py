"""The kernel-lines path: the lines path (``lines.py``: chunks converted in two workers, in
order) with the C kernel converting the lines it is sure of as bytes first, for the options the
kernel implements (``native.kernel.COMMANDS``: its table is this path's); a line it declines
goes the lines path's general way, so the lines path's conditions on a job hold here too."""

from __future__ import annotations

from cdc.engine.commands import Command, lookup
from cdc.engine.job import Job, Result
from cdc.engine.paths import lines
from cdc.engine.paths.native import kernel
from cdc.engine.session import Session

COMMANDS: dict[type, Command] = kernel.COMMANDS


def can_run(job: Job) -> bool:
    """The kernel built, and the lines path's conditions on the job (the kernel runs inside it)."""
    command = lookup(lines.COMMANDS, job.spec)
    return kernel.available() and lines.can_run(job) and command is not None and command.can_run(job)


def run(job: Job, current: Session) -> Result:
    return lines.run(job, current, with_kernel=True)
