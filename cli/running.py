"""The CLI as a client of the Python API: a command's flags → one API call, its result rendered
(rows as a table, the ``--stats`` line, skips; the SQL script of ``--print-sql``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from cdc.cli.errors import say
from cdc.cli.options import Common
from cdc.core.errors import UsageError
from cdc.engine.job import Result, RowSink

# Shared options that only change how the result is shown; the rest reach the API by name
# (``inputs`` as its source, ``--progress`` as the bar it advances).
RENDERING = frozenset({"inputs", "stats", "verbose", "progress"})


def table_sink(common: Common, kind_column: str | None, title: str | None = None) -> RowSink | None:
    """``-f table``: rows drawn with rich on stdout, instead of a file format."""
    if common.output_format != "table":
        return None
    if common.output != "-":
        raise UsageError("-f table draws on the terminal; to write a file, name a file format (jsonl, csv, parquet)")
    from cdc.cli.table import TableWriter

    return TableWriter(kind_column, title)


def call(
    common: Common,
    function: Callable[..., Result],
    command: str,
    *,
    summary: Callable[[Result], str] | None = None,
    table_kinds: str | None = None,
    draws_tables: bool = True,
    **options: Any,
) -> Result:
    """``function`` (a ``cdc.engine.api`` function) called with the command's own ``options`` and
    its shared flags; then its SQL printed, or its summary (``--stats``) and skips reported.
    ``-f table`` becomes a rich table of the rows (its ``table_kinds`` column coloured by kind),
    unless the command ``draws_tables=False`` (its output is not rows)."""
    shared = {name: getattr(common, name) for name in sorted(common.given - RENDERING)}
    sink = table_sink(common, table_kinds) if "output_format" in shared and draws_tables else None
    if sink is not None:
        shared.update(output=sink, output_format=None)
    shared.update(options)
    bar = None
    if "progress" in common.given and not common.print_sql:
        from cdc.cli.progress import Bar, wanted

        bar = Bar() if wanted(common.progress, common.inputs, common.output) else None
        shared["progress"] = bar
    try:
        result = function(common.inputs, **shared)
    finally:
        if bar is not None:
            bar.stop()
    if result.sql is not None:
        sys.stdout.write(result.sql)
        sys.stdout.flush()
        return result
    if result.flink_job is not None:  # --on-flink: the cluster made the rows
        if common.sql_sink != "none":
            say(f"cdc: {command}: flink job {result.flink_job} wrote to the {common.sql_sink} sink")
        elif common.stats:
            say(f"cdc: {command}: flink job {result.flink_job}: {result.counts.written} row(s) written")
        return result
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
