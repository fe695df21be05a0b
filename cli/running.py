"""The CLI as a client of the engine: flags → a job, the job run, its account on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from cdc.cli.errors import say
from cdc.cli.options import Common
from cdc.core.errors import UsageError
from cdc.engine.job import Job, Result, RowSink
from cdc.engine.run import run_job
from cdc.engine.tables import output_kind_column


def job_of(common: Common, spec: Any, sink: RowSink | None = None, limits: dict[str, Any] | None = None) -> Job:
    return Job(
        spec,
        inputs=tuple(common.inputs),
        input_format=common.input_format,
        output=common.output,
        output_format=common.output_format,
        columns=common.columns,
        on_error=common.on_error,
        rejects=common.rejects,
        sink=sink,
        **(limits or {}),
    )


def table_sink(common: Common, spec: Any, title: str | None = None) -> RowSink | None:
    """``-f table``: rows drawn with rich on stdout, instead of a file format."""
    if common.output_format != "table":
        return None
    if common.output != "-":
        raise UsageError("-f table draws on the terminal; to write a file, name a file format (jsonl, csv, parquet)")
    from cdc.cli.table import TableWriter

    return TableWriter(output_kind_column(spec), title)


def run(
    common: Common,
    spec: Any,
    command: str,
    summary: Callable[[Result], str] | None = None,
    sink: RowSink | None = None,
    limits: dict[str, Any] | None = None,
) -> Result:
    """Run the job the flags describe; print its summary (``--stats``) and its skips. ``limits``:
    ``memory_limit`` and ``temp_dir`` of a command that can spill."""
    from cdc.cli.progress import Bar, wanted

    job = job_of(common, spec, sink if sink is not None else table_sink(common, spec), limits)
    bar = Bar() if wanted(common.progress, common.inputs, common.output) else None
    try:
        result = run_job(job, bar)
    finally:
        if bar is not None:
            bar.stop()
    report(common, command, result, summary)
    return result


def report(common: Common, command: str, result: Result, summary: Callable[[Result], str] | None = None) -> None:
    """Skips are always reported; the full summary with ``--stats``; with ``--verbose`` the path
    the run took, and why it handed over to the row path's rules if it did."""
    if common.verbose:
        handover = f" (handed over: {result.handover})" if result.handover else ""
        say(f"cdc: {command}: path {result.path}{handover}")
    if common.stats:
        say(f"cdc: {command}: " + (summary(result) if summary else result.counts.summary(result.read)))
    if result.skipped:
        where = f"; written to {common.rejects}" if common.rejects else "; keep them with --rejects FILE"
        first = f" (first: {result.first_skip})" if result.first_skip else ""
        say(f"cdc: {command}: skipped {result.skipped} bad record(s){first}{where}")


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()
