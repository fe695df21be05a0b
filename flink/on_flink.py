"""``--on-flink URL``: a printed script run on a Flink cluster, its rows written as the local run
writes them.

The script's last statement is its result: a ``SELECT`` whose changelog the gateway streams back,
or an ``INSERT INTO`` a sink (run with ``table.dml-sync`` so that the command ends when the job
does). ``shape`` says how the command's local output is made from that changelog:

- ``changelog``: each row with its kind in the kind column (``+I -U +U -D``) — from-changelog,
  decode, replay and aggregate (``--emit retract``);
- ``rows``: the rows as they come (the script ends in TO_CHANGELOG: its kind is a data column) —
  to-changelog, ``--emit upsert``;
- ``table``: the changelog folded into the table it describes (materialize; with ``--key`` in
  cdc's keyed state: first-insertion order of keys, as the local run orders them);
- ``counts``: the last count per kind (inspect's per-kind part);
- ``sink``: rows went to the script's sink on the cluster's side; nothing is written here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc.core.errors import UsageError
from cdc.core.model import Row
from cdc.core.timeorder import sort_key
from cdc.flink.gateway import Gateway, convert, is_local, split_statements

SHAPES = ("changelog", "rows", "table", "counts", "sink")
CLUSTER_SCHEMES = ("s3://", "s3a://", "hdfs://", "gs://", "abfs://", "abfss://", "oss://", "viewfs://")


def cluster_input(path: str, url: str) -> str:
    """The input as cdc reads it here, checked to be a path the cluster at ``url`` reads too.

    ``file:///…`` names a file on a file system the cluster shares (the same path there and
    here); a plain path is accepted only when the gateway runs on this machine (it becomes an
    absolute ``file://`` path in the script). Object stores and HDFS are refused: cdc reads the
    input itself to declare its column types, and it reads local files only."""
    if path == "-":
        raise UsageError(
            "--on-flink needs an input file: the cluster reads a path, not cdc's stdin",
            hint="save the input to a file the cluster can read, and name it",
        )
    if path.startswith(CLUSTER_SCHEMES):
        raise UsageError(
            f"--on-flink: {path} is read by the cluster, but cdc also reads the input to declare its column types, "
            "and cdc reads local files only",
            hint="mount the storage on both machines and name the file as file:///PATH (the same path on both)",
        )
    if path.startswith("file://"):
        return path[len("file://") :]
    if not is_local(url):
        raise UsageError(
            f"--on-flink: {path} is a file of this machine, and the cluster at {url} is on another one: it opens "
            "the path itself",
            hint="put the file on a file system the cluster shares and name it as file:///PATH (the same path on "
            "both machines), or run the gateway on this machine (127.0.0.1)",
        )
    return path


def session_settings(url: str) -> tuple[str, dict[str, str]]:
    """``http://host:8083?parallelism.default=4`` → the gateway's URL and the session settings its
    query names (each becomes a ``SET`` after the script's own)."""
    import urllib.parse

    parts = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
    settings = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    for key, value in settings.items():
        if "'" in key or "'" in value:
            raise UsageError(f"--on-flink: a session setting may not contain a quote: {key}={value}")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), settings


@dataclass
class FlinkRun:
    """What a run on the cluster did: rows written, the last statement's job."""

    rows: int = 0
    job_id: str | None = None


def run_on_flink(
    url: str,
    script: str,
    write: Callable[[Iterable[Row]], None],
    shape: str,
    *,
    keys: Sequence[str] = (),
    kind_column: str = "op",
    settings: Mapping[str, str] | None = None,
    sort: bool = False,
) -> FlinkRun:
    """Run ``script`` on the SQL Gateway at ``url``; hand its result rows to ``write`` (the engine
    writes them as the local run would); see the module's doc for ``shape`` (``sort``: a table by key).
    ``settings``: SET statements applied after the script's own (e.g. ``parallelism.default``). Flink's errors raise
    :class:`FlinkError` (exit 3) with Flink's message."""
    if shape not in SHAPES:
        raise ValueError(f"unknown result shape {shape!r}")
    url, from_url = session_settings(url)
    statements = split_statements(script)
    if not statements:
        raise UsageError("--on-flink: the script has no statement")
    extra = {**from_url, **(settings or {})}
    if shape == "sink":
        extra.setdefault("table.dml-sync", "true")
    sets = [f"SET '{k}' = '{v}'" for k, v in extra.items()]
    first = next((i for i, s in enumerate(statements) if not s.upper().startswith("SET ")), len(statements))
    statements = statements[:first] + sets + statements[first:]
    done = FlinkRun()
    with Gateway(url) as gateway:
        outcome, changes = gateway.run_all(statements)
        if shape == "sink":
            for _ in changes:
                pass
            done.job_id = outcome.job_id
            return done

        def rows() -> Iterator[tuple[str, Row]]:
            for kind, fields in changes:
                columns = outcome.columns
                yield kind, {c.name: convert(v, c) for c, v in zip(columns, fields, strict=False)}

        written = _shaped(rows(), shape, keys, kind_column, sort)
        counted = _Counted(written)
        write(counted)
        done.rows = counted.n
        done.job_id = outcome.job_id
    return done


class _Counted:
    def __init__(self, rows: Iterator[Row]) -> None:
        self.rows = rows
        self.n = 0

    def __iter__(self) -> Iterator[Row]:
        for row in self.rows:
            self.n += 1
            yield row


def _shaped(
    changes: Iterator[tuple[str, Row]], shape: str, keys: Sequence[str], kind_column: str, sort: bool = False
) -> Iterator[Row]:
    if shape == "changelog":
        for kind, row in changes:
            if kind_column in row:
                raise UsageError(f"the kind column {kind_column!r} is also a data column; rename it with --kind-column")
            yield {kind_column: kind, **row}
    elif shape == "rows":
        for _, row in changes:
            yield row
    elif shape == "table":
        from cdc.core.state import Findings, Policy, new_state

        state = new_state(tuple(keys), Findings(Policy.ignore))
        for kind, row in changes:
            state.apply(kind, row)
        if sort:  # --sort: by key (all columns without one), as the local run sorts
            yield from sorted(state.rows(), key=lambda r: tuple(sort_key(r.get(c)) for c in (keys or list(r))))
        else:
            yield from state.rows()
    else:  # counts: the GROUP BY's update log; its last +I/+U per kind is the count
        last: dict[Any, Row] = {}
        for kind, row in changes:
            k = row.get("kind")
            if kind in ("+I", "+U"):
                last[k] = row
            else:
                last.pop(k, None)
        yield from last.values()
