"""What a path does for each command, and which of its options it honours: a closed world.

Each path keeps one table, keyed by spec type (the command), of ``Command``: the function the
path runs for it (``do``) and the spec fields and job options it implements. The planner hands a
job to a path only when its table has the command and declares every field the job sets away from
its default (``declines``): a field no path has heard of sends the job to the row path, which
declares them all (``EVERY``). A new command is one entry per path that runs it; a new field, one
word in the table of each path that honours it — until then those paths decline it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

EVERY: frozenset[str] = frozenset({"*"})  # the row path: every field of every command

# The job's fields every path reads: what to do, from where, to where (formats decided by
# ``inputs.resolve``). No path declares them.
EVERY_PATH_READS = ("spec", "inputs", "input_format", "output", "output_format", "formats", "out_format")
# The runner's, read before a path is chosen (``run.run_job``: past --memory-limit the state
# spills, ``spill.py``, and each part runs on a path of its own): a bound, not an answer.
RUNNER_READS = ("memory_limit", "temp_dir", "stdin_read_ahead")
# A job's options that a path must declare to be given them, as the spec's fields are declared.
# Closed by default: a ``Job`` field in none of these three lists is an option too, that no path
# but the row path declares (``set_options``); ``tests/test_closed_world.py`` keeps the lists
# equal to ``dataclasses.fields(Job)``.
JOB_OPTIONS = (
    "columns",
    "on_error",
    "rejects",
    "rows",
    "sink",
    "stream_schema",
    "schema_line",
    "container",
    "csv",
    "arrays",
    "avro",
)
SESSION = frozenset({"on_error", "rejects"})  # bad records told to the session (``Session.bad``)

T = TypeVar("T")


def _always(job: Any) -> bool:
    return True


@dataclass(frozen=True)
class Command:
    """One command on one path: what the path runs for it, what of it the path implements, and
    the path's finer conditions on a job (input formats, column types) beyond its options."""

    do: Any
    fields: frozenset[str]
    job: frozenset[str] = SESSION
    can_run: Callable[[Any], bool] = _always


def implements(
    do: Any, *fields: str, job: frozenset[str] = SESSION, can_run: Callable[[Any], bool] = _always
) -> Command:
    return Command(do, frozenset(fields), job, can_run)


def lookup(table: Mapping[type, T], spec: Any) -> T | None:
    """The entry of ``spec``'s command in a table keyed by spec type (a subclass finds its base's)."""
    for cls in type(spec).__mro__:
        found = table.get(cls)
        if found is not None:
            return found
    return None


_REQUIRED = object()


@functools.cache
def _defaults(cls: type, names: tuple[str, ...] | None) -> tuple[tuple[str, Any], ...]:
    """Each dataclass field of ``cls`` (of ``names``) with its default (``_REQUIRED``: none)."""
    out = []
    for f in dataclasses.fields(cls):
        if names is not None and f.name not in names:
            continue
        if f.default is not dataclasses.MISSING:
            out.append((f.name, f.default))
        elif f.default_factory is not dataclasses.MISSING:
            out.append((f.name, f.default_factory()))
        else:
            out.append((f.name, _REQUIRED))
    return tuple(out)


def _set(obj: Any, names: tuple[str, ...] | None = None) -> list[str]:
    """The dataclass fields of ``obj`` whose value is not their default (a field without a default
    is always set)."""
    cls: type = type(obj)
    return [name for name, default in _defaults(cls, names) if default is _REQUIRED or getattr(obj, name) != default]


def set_fields(spec: Any) -> list[str]:
    """The spec fields a job sets: those a path must implement to be given it."""
    return _set(spec)


def set_options(job: Any) -> list[str]:
    """The job options a job sets: its fields but those every path or the runner reads (a field
    that ``JOB_OPTIONS`` does not name yet is an option all the same)."""
    cls: type = type(job)
    return _set(job, _options(cls))


@functools.cache
def _options(cls: type) -> tuple[str, ...]:
    read = {*EVERY_PATH_READS, *RUNNER_READS}
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in read)


def declines(table: Mapping[type, Command], job: Any) -> str | None:
    """Why a path with this table does not take ``job`` (None: it does)."""
    command = lookup(table, job.spec)
    if command is None:
        return f"no {type(job.spec).__name__} here"
    if command.fields is not EVERY:
        missing = [name for name in set_fields(job.spec) if name not in command.fields]
        if missing:
            return f"{type(job.spec).__name__}.{', '.join(missing)} not implemented"
    if command.job is not EVERY:
        missing = [name for name in set_options(job) if name not in command.job]
        if missing:
            return f"job option {', '.join(missing)} not honoured"
    if not command.can_run(job):
        return "the input or output is not one it reads or writes"
    return None
