"""The planner's Flink side: a job made into a Flink SQL script instead of run (``--print-sql``),
or run on a cluster through its SQL Gateway (``--on-flink``).

The scripts are ``cdc.flink``'s (a layer below the engine). As ``plan.choose`` gives a path only
the jobs its table declares, ``script_of`` gives a builder only the jobs ``flink.commands.SCRIPTS``
says it writes: a job that sets any other field or option is refused, naming the option and why,
before the input is read. The engine hands the builders the inputs as it reads them (``READER``:
formats decided, envelopes decoded) and writes a cluster's rows as the local run writes its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from cdc.core.errors import UsageError
from cdc.core.model import Row
from cdc.core.specs import CopySpec
from cdc.core.stats import Counts
from cdc.engine.commands import lookup, set_fields, set_options
from cdc.engine.inputs import open_rows, resolve
from cdc.engine.job import Job, Result
from cdc.engine.run import run_job
from cdc.flink.commands import SCRIPTS, Script, option_of, why_not
from cdc.flink.print_sql import Common, FlinkScript, Input, Reject
from cdc.formats.streams import check_input_exists


class EngineReader:
    """``flink.print_sql.Reader``: the inputs as the engine reads them."""

    def resolve(self, spec: Any, inputs: tuple[str, ...], input_format: str | None) -> Input:
        job = resolve(Job(spec, inputs=inputs, input_format=input_format))
        return Input(job.spec, job.inputs, job.formats, job)

    def rows(self, given: Input, reject: Reject) -> Iterator[Row]:
        job = given.resolved if isinstance(given.resolved, Job) else resolve(Job(given.spec, inputs=given.inputs))
        yield from open_rows(job, reject, None, Counts())


READER = EngineReader()


def undone(job: Job, cluster: bool, sql_sink: str = "none") -> list[str]:
    """The fields and options ``job`` sets that its command's script does not do (``cluster``:
    for ``--on-flink``, whose rows the engine writes unless a ``--sql-sink`` takes them)."""
    entry: Script | None = lookup(SCRIPTS, job.spec)
    if entry is None:
        return ["spec"]
    extra = entry.cluster if cluster and sql_sink == "none" else frozenset()
    fields = [name for name in set_fields(job.spec) if name not in entry.fields and name not in extra]
    return fields + [name for name in set_options(job) if name not in entry.job and name not in extra]


def check(job: Job, cluster: bool, sql_sink: str = "none") -> None:
    """Refuse ``job`` (a ``UsageError`` naming each option and why) unless its script does all of it."""
    names = undone(job, cluster, sql_sink)
    if not names:
        return
    spec_type = type(job.spec)
    mode = "--on-flink" if cluster else "--print-sql"
    if names == ["spec"]:
        raise UsageError(f"{mode}: this command has no Flink script")
    refused = [(name, option_of(spec_type, name), why_not(spec_type, name)) for name in names]
    hint = next((r.hint for _, _, r in refused if r.hint is not None), None)
    said = [f"{option} {r.why.format(value=_shown(job, name))}" for name, option, r in refused]
    raise UsageError(f"{mode}: " + "; ".join(said), hint=hint)


def _shown(job: Job, name: str) -> str:
    """A field's (or option's) value as its option spells it: ``a,b`` for names."""
    value = getattr(job.spec, name, getattr(job, name, None))
    return ",".join(map(str, value)) if isinstance(value, tuple | list) else str(value)


def script_of(job: Job, sql: Mapping[str, Any], cluster: bool = False) -> FlinkScript:
    """The script of ``job`` (``sql``: ``flink.print_sql.Common``'s keywords: the Flink version,
    where the script reads and writes), once ``check`` has found that it does all the job asks."""
    if job.rows is None:
        for name in job.inputs:
            check_input_exists(name)
    resolved = resolve(job)
    check(resolved, cluster, str(sql.get("sql_sink", "none")))
    entry: Script | None = lookup(SCRIPTS, job.spec)
    assert entry is not None  # check found it
    common = Common(READER, list(job.inputs), job.input_format, job.on_error, avro=job.avro, **sql)
    return entry.build(common, job.spec)


def run_on_cluster(url: str, script: FlinkScript, job: Job) -> Result:
    """``script`` run on the cluster at ``url``, its rows written as ``job`` says (``output``,
    ``output_format``, ``columns``, ``sink``)."""
    from cdc.flink.on_flink import run_on_flink

    schema_line = resolve(job).schema_line  # as the local run would write it (into a cdc pipe)

    def write(rows: Iterable[Row]) -> None:
        run_job(job.with_(spec=CopySpec(), rows=rows, inputs=(), schema_line=schema_line))

    done = run_on_flink(
        url, str(script), write, script.shape, keys=script.keys, kind_column=script.kind_column, sort=script.sort
    )
    result = Result(path="flink", flink_job=done.job_id or "")
    result.counts.written = done.rows
    return result
