"""A running job's outputs: ``-o`` and ``--rejects`` committed together, or neither.

On any failure (an error, an interrupt, a closed pipe) the output is rolled back: the target
keeps its old content and no temporary file is left.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from cdc.core.errors import CdcError, InputError, Location, UsageError
from cdc.core.model import OnError, Reject, fail_on_bad
from cdc.engine.job import Job, Progress
from cdc.formats.streams import STDIO, Output, check_input_exists, same_target


class Rejects:
    """Counts records skipped under ``--on-error skip`` and, with a path, writes each one."""

    def __init__(self, path: str | None):
        self.count = 0
        self.first: InputError | None = None
        self._output = Output(path) if path else None

    def add(self, err: InputError, raw: str) -> None:
        self.count += 1
        if self.first is None:
            self.first = err
        if self._output is not None:
            where = err.where
            record = {
                "file": where.source if where else None,
                "line": where.number if where else None,
                "error": err.message,
                "raw": raw,
            }
            self._output.stream.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))

    @property
    def atomic(self) -> bool:
        """Whether nothing written has reached the rejects target yet (see ``Output.atomic``)."""
        return self._output is None or self._output.atomic

    def commit(self) -> None:
        if self._output is not None:
            self._output.commit()

    def abort(self) -> None:
        if self._output is not None:
            self._output.abort()


class Session:
    """What a running job holds: its output, its rejects, progress, and where it is reading."""

    def __init__(self, job: Job, progress: Progress | None):
        self.job = job
        self.progress = progress
        self.rejects = Rejects(job.rejects) if job.on_error == OnError.skip else None
        self.reject: Reject = self.rejects.add if self.rejects is not None else fail_on_bad
        self.output: Output | None = None
        self.where: Callable[[], Location] | None = None  # the reader to blame for an error
        self.handed_over: str | None = None  # why the row path's rules took over (``handover``)

    @property
    def on_bytes(self) -> Callable[[int], None] | None:
        return self.progress.advance if self.progress is not None else None

    def open_output(self) -> Output:
        """The ``-o`` file (written atomically) or stdout, opened when the first byte is due."""
        if self.output is None:
            self.output = Output(self.job.output)
        return self.output

    def bad(self, err: InputError, raw: str) -> None:
        """A bad record: located at the current reader unless it knows its place already."""
        if self.where is not None:
            err.located(self.where())
        self.reject(err, raw)


@contextmanager
def session(job: Job, progress: Progress | None = None) -> Iterator[Session]:
    """The one place that opens ``-o`` and ``--rejects`` and commits both, or neither."""
    if job.rejects and job.on_error != OnError.skip:
        raise UsageError("--rejects needs --on-error skip")
    if job.rejects == STDIO or (job.rejects and same_target(job.rejects, job.output or STDIO)):
        what = "stdout carries the data" if same_target(job.rejects, STDIO) else "-o writes there"
        raise UsageError(f"--rejects needs a place of its own: {what}")
    if job.rows is None:
        for path in job.inputs:  # before anything peeks at stdin
            check_input_exists(path)
    current = Session(job, progress)
    try:
        yield current
        if current.output is not None:
            current.output.commit()
        if current.rejects is not None:
            current.rejects.commit()
    except BaseException as exc:
        if isinstance(exc, CdcError) and current.where is not None:
            exc.located(current.where())
        if current.output is not None:
            current.output.abort()
        if current.rejects is not None:
            current.rejects.abort()
        raise


def result_skips(current: Session, result: Any) -> None:
    """Copy the skip accounting into a result."""
    if current.rejects is not None:
        result.skipped = current.rejects.count
        result.first_skip = current.rejects.first
        result.counts.skipped = current.rejects.count
