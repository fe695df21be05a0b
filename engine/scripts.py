"""The planner's Flink side: a job made into a Flink SQL script instead of run (``--print-sql``),
or run on a cluster through its SQL Gateway (``--on-flink``).

The scripts are ``cdc.flink``'s (a layer below the engine): the engine hands its builders the
inputs as it reads them (``READER``: formats decided, envelopes decoded, as a local run reads
them) and writes a cluster's rows as the local run writes its own (``run_job``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from cdc.core.model import Row
from cdc.core.specs import CopySpec
from cdc.core.stats import Counts
from cdc.engine.inputs import open_rows, resolve
from cdc.engine.job import Job, Result
from cdc.engine.run import run_job
from cdc.flink import print_sql
from cdc.flink.print_sql import Common, Input, Reject


class EngineReader:
    """``flink.print_sql.Reader``: the inputs as the engine reads them."""

    def resolve(self, spec: Any, inputs: tuple[str, ...], input_format: str | None) -> Input:
        job = resolve(Job(spec, inputs=inputs, input_format=input_format))
        return Input(job.spec, job.inputs, job.formats, job)

    def rows(self, given: Input, reject: Reject) -> Iterator[Row]:
        job = given.resolved if isinstance(given.resolved, Job) else resolve(Job(given.spec, inputs=given.inputs))
        yield from open_rows(job, reject, None, Counts())


READER = EngineReader()


def build(builder: str, common: Common, spec: Any) -> Any:
    """The script of ``spec`` (``builder``: the ``flink.print_sql`` function of its command)."""
    make = getattr(print_sql, builder)
    return make(common, spec)


def run_on_cluster(url: str, script: Any, job: Job) -> Result:
    """``script`` run on the cluster at ``url``, its rows written as ``job`` says (``output``,
    ``output_format``, ``sink``)."""
    from cdc.flink.on_flink import run_on_flink

    def write(rows: Iterable[Row]) -> None:
        run_job(job.with_(spec=CopySpec(), rows=rows, inputs=()))

    done = run_on_flink(
        url, str(script), write, script.shape, keys=script.keys, kind_column=script.kind_column, sort=script.sort
    )
    result = Result(path="flink", flink_job=done.job_id or "")
    result.counts.written = done.rows
    return result
