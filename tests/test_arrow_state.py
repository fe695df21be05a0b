"""The stateful commands on Arrow batches (``arrow-state``) say what the row path says.

Changelogs are generated mostly consistent (so that the vectorized rules run) with some
inconsistent changes and bad kinds mixed in (so that the hand-over to the row path runs), in
Parquet and CSV, applied in chunks of a few rows (so that state is carried between chunks), and
compared with the row path: the output, the counts, the command's account (state counts,
findings with their locations, the inspect report, replay counts), rejects and errors.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers import read_parquet, write_csv, write_parquet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.core.errors import CdcError
from cdc.core.model import OnError
from cdc.core.specs import MaterializeSpec
from cdc.core.state import Policy
from cdc.engine.inputs import resolve
from cdc.engine.job import Job
from cdc.engine.paths import arrow_state
from cdc.engine.plan import PATHS
from cdc.engine.run import run_job

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NAMES = ["a", "b", "", 'q"x', "é,y"]


@st.composite
def changelogs(
    draw: st.DrawFn, keys: list[Any] | None = None, rows: int = 30, clean: bool | None = None
) -> list[dict[str, Any]]:
    """Changes to a small table, mostly consistent with the state before them (by ``id``);
    ``clean``: all of them (None: half the examples)."""
    keys = keys if keys is not None else [0, 1, 2, 3, None]
    clean = draw(st.booleans()) if clean is None else clean
    live: dict[Any, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []

    def image(key: Any) -> dict[str, Any]:
        return {"id": key, "name": draw(st.sampled_from([*NAMES, None])), "v": draw(st.sampled_from([0, 1, 7, None]))}

    for _ in range(draw(st.integers(0, rows))):
        key = draw(st.sampled_from(keys))
        how = "consistent" if clean else draw(st.sampled_from(["consistent"] * 6 + ["random", "bad"]))
        if how == "bad":
            out.append({"op": draw(st.sampled_from([None, "X", "insert"])), **image(key)})
            continue
        if how == "random":
            out.append({"op": draw(st.sampled_from(["+I", "-U", "+U", "-D", "INSERT", "DELETE"])), **image(key)})
            continue
        stored = live.get(key)
        if stored is None:
            new = image(key)
            live[key] = new
            out.append({"op": draw(st.sampled_from(["+I", "+I", "+U", "INSERT"])), **new})
            continue
        move = draw(st.sampled_from(["update", "update", "upsert", "delete"]))
        if move == "delete":
            del live[key]
            out.append({"op": "-D", **stored})
        elif move == "upsert":
            new = image(key)
            live[key] = new
            out.append({"op": "+U", **new})
        else:
            new = image(key)
            live[key] = new
            out.append({"op": "-U", **stored})
            out.append({"op": "UPDATE_AFTER", **new})
    return out


def _typed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Parquet needs a type per column even when every value is null: give the first row values."""
    return rows


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema([("op", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("v", pa.int64())])
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    elif rows:
        write_csv(path, rows)
    else:
        path.write_text("op,id,name,v\n")


def _account(detail: Any) -> Any:
    """A command's account as plain data, whatever object holds it."""
    if detail is None:
        return None
    if hasattr(detail, "as_dict"):
        return detail.as_dict(["in"])
    if dataclasses.is_dataclass(detail):
        return dataclasses.asdict(detail)  # type: ignore[arg-type]
    out: dict[str, Any] = {}
    for name in ("by_kind", "retract_messages", "upsert_messages", "duplicates", "after"):
        if hasattr(detail, name):
            value = getattr(detail, name)
            out[name] = dict(value) if name == "by_kind" else value
    if hasattr(detail, "__len__"):
        out["len"] = len(detail)
    findings = getattr(detail, "findings", None)
    if findings is not None:
        out["findings"] = (dict(findings.counts), [str(f) for f in findings.examples])
    counts = getattr(detail, "counts", None)
    if counts is not None and hasattr(counts, "summary"):
        out["counts"] = counts.summary()
    return out


def outcome(job: Job, path: str) -> tuple[Any, ...]:
    out = Path(job.output)
    rejects = Path(job.rejects) if job.rejects else None
    for stale in (out, rejects):
        if stale is not None and stale.exists():
            stale.unlink()
    try:
        result = run_job(job, path=path)
    except CdcError as err:
        return ("error", str(err), err.hint)
    if not out.exists():
        rows: Any = None
    elif out.suffix == ".parquet":
        import pyarrow.parquet as pq

        rows = (read_parquet(out), [(f.name, str(f.type)) for f in pq.read_schema(out)])
    else:
        rows = out.read_text(encoding="utf-8")
    skipped = []
    if rejects is not None and rejects.exists():
        skipped = [(r["line"], r["error"], r["raw"]) for r in map(json.loads, rejects.read_text().split("\n")[:-1])]
    counts = result.counts
    return (
        rows,
        dict(counts.by_kind),
        counts.written,
        counts.dropped,
        dict(counts.notes),
        result.read,
        result.skipped,
        skipped,
        _account(result.detail),
    )


def agree(job: Job, chunk: int | None = None) -> str:
    """The Arrow path's outcome is the row path's; returns the path the planner picks."""
    resolved = resolve(job)
    assert PATHS["arrow-state"]().accepts(resolved), "the arrow-state path does not take the job"
    reference = outcome(job, "rows")
    from cdc.engine.paths import arrow_rules

    old = arrow_state.CHUNK_ROWS, arrow_rules.GROUP_BY_ROWS
    if chunk is not None:
        arrow_state.CHUNK_ROWS = chunk
    try:
        assert outcome(job, "arrow-state") == reference
        arrow_rules.GROUP_BY_ROWS = 0  # grouping by several columns as big chunks do
        assert outcome(job, "arrow-state") == reference
    finally:
        arrow_state.CHUNK_ROWS, arrow_rules.GROUP_BY_ROWS = old
    from cdc.engine.plan import choose

    return choose(resolved).name


def _job(tmp: str, rows: list[dict[str, Any]], spec: Any, fmt: str, out_fmt: str, skip: bool) -> Job:
    src = Path(tmp, f"in.{fmt}")
    _write(src, rows)
    return Job(
        spec,
        (str(src),),
        output=str(Path(tmp, f"out.{out_fmt}")),
        on_error=OnError.skip if skip else OnError.fail,
        rejects=str(Path(tmp, "rejects.jsonl")) if skip else None,
    )


formats = st.sampled_from(["parquet", "csv"])
out_formats = st.sampled_from(["parquet", "csv", "jsonl"])
policies = st.sampled_from(list(Policy))
chunks = st.sampled_from([None, 1, 3, 7])


@SETTINGS
@given(rows=changelogs(), fmt=formats, out_fmt=out_formats, skip=st.booleans(), policy=policies, chunk=chunks)
def test_keyed_materialize(
    rows: list[dict[str, Any]], fmt: str, out_fmt: str, skip: bool, policy: Policy, chunk: int | None
) -> None:
    spec = MaterializeSpec(key=("id",), policy=policy)
    with tempfile.TemporaryDirectory() as tmp:
        assert agree(_job(tmp, rows, spec, fmt, out_fmt, skip), chunk) == "arrow-state"


@SETTINGS
@given(rows=changelogs(), fmt=formats, chunk=chunks)
def test_keyed_materialize_sorted_and_two_column_keys(rows: list[dict[str, Any]], fmt: str, chunk: int | None) -> None:
    for spec in (MaterializeSpec(key=("id",), sort=True), MaterializeSpec(key=("name", "id"), sort=True)):
        with tempfile.TemporaryDirectory() as tmp:
            agree(_job(tmp, rows, spec, fmt, "jsonl", False), chunk)


@SETTINGS
@given(rows=changelogs(clean=True), fmt=formats, chunk=chunks)
def test_consistent_changes_never_leave_arrow(rows: list[dict[str, Any]], fmt: str, chunk: int | None) -> None:
    from cdc.core.specs import EncodeSpec, InspectSpec, ReplaySpec

    specs: list[Any] = [
        MaterializeSpec(key=("id",)),
        MaterializeSpec(),
        MaterializeSpec(key=("id",), dedup=True),
        MaterializeSpec(key=("id",), as_of=1, time_column="v"),
        # not MaterializeSpec(as_of=…) without a key: there a -U goes with the +U after it
        # (the table as it stood, issue #25), which the row path pairs — a chunk with a -U is handed over
        InspectSpec(key=("id",), time_column="v"),
        ReplaySpec(("id",)),
        ReplaySpec(("id",), since=0, until=1, time_column="v", net=True),
        EncodeSpec(key=("id",)),
    ]
    old = arrow_state.CHUNK_ROWS
    arrow_state.CHUNK_ROWS = chunk or old
    try:
        for spec in specs:
            with tempfile.TemporaryDirectory() as tmp:
                job = _job(tmp, rows, spec, fmt, "jsonl", False)
                assert run_job(job, path="arrow-state").path == "arrow-state", spec
    finally:
        arrow_state.CHUNK_ROWS = old


def test_the_planner_takes_parquet_changelogs_to_the_arrow_state_path(tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "in.parquet", [{"op": "+I", "id": 1, "name": "a"}])
    job = Job(MaterializeSpec(key=("id",)), (str(src),), output=str(tmp_path / "out.parquet"))
    assert agree(job) == "arrow-state"


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_a_finding_is_reported_at_its_row_by_the_row_path_after_a_hand_over(tmp_path: Path, fmt: str) -> None:
    rows = [{"op": "+I", "id": i, "name": "a", "v": i} for i in range(10)]
    rows += [{"op": "-U", "id": 3, "name": "b", "v": 3}, {"op": "+U", "id": 3, "name": "c", "v": 3}]
    rows += [{"op": "+I", "id": 20 + i, "name": "a", "v": i} for i in range(10)]
    for policy in Policy:
        job = _job(str(tmp_path), rows, MaterializeSpec(key=("id",), policy=policy), fmt, "jsonl", False)
        agree(job, chunk=4)


@SETTINGS
@given(rows=changelogs(), fmt=formats, out_fmt=out_formats, dedup=st.booleans(), policy=policies, chunk=chunks)
def test_multiset_materialize(
    rows: list[dict[str, Any]], fmt: str, out_fmt: str, dedup: bool, policy: Policy, chunk: int | None
) -> None:
    spec = MaterializeSpec(policy=policy, dedup=dedup, sort=dedup and out_fmt == "jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        assert agree(_job(tmp, rows, spec, fmt, out_fmt, False), chunk) == "arrow-state"


@SETTINGS
@given(rows=changelogs(), fmt=formats, out_fmt=out_formats, skip=st.booleans(), chunk=chunks)
def test_keyed_materialize_with_dedup(
    rows: list[dict[str, Any]], fmt: str, out_fmt: str, skip: bool, chunk: int | None
) -> None:
    spec = MaterializeSpec(key=("id",), dedup=True)
    with tempfile.TemporaryDirectory() as tmp:
        assert agree(_job(tmp, rows, spec, fmt, out_fmt, skip), chunk) == "arrow-state"


@SETTINGS
@given(rows=changelogs(rows=12), chunk=chunks)
def test_redelivered_changes_are_duplicates_alike(rows: list[dict[str, Any]], chunk: int | None) -> None:
    doubled = [r for row in rows for r in (row, row)]  # at-least-once: every change twice
    for spec in (MaterializeSpec(key=("id",), dedup=True), MaterializeSpec(dedup=True)):
        with tempfile.TemporaryDirectory() as tmp:
            agree(_job(tmp, doubled, spec, "parquet", "jsonl", False), chunk)


@SETTINGS
@given(
    rows=changelogs(),
    fmt=formats,
    out_fmt=out_formats,
    emit=st.sampled_from(["retract", "upsert"]),
    keep_noop=st.booleans(),
    window=st.sampled_from([None, ("v", 0, None), ("v", None, 1), ("v", 0, 7), ("name", "a", "b")]),
    net=st.booleans(),
    order_by=st.sampled_from([None, "v", "name"]),
    skip=st.booleans(),
    chunk=chunks,
)
def test_replay(
    rows: list[dict[str, Any]],
    fmt: str,
    out_fmt: str,
    emit: str,
    keep_noop: bool,
    window: Any,
    net: bool,
    order_by: str | None,
    skip: bool,
    chunk: int | None,
) -> None:
    from cdc.core.specs import ReplaySpec

    column, since, until = window or (None, None, None)
    spec = ReplaySpec(
        ("id",),
        emit,
        keep_noop,
        order_by=order_by,
        time_column=column,
        since=since,
        until=until,
        net=net and since is not None and until is not None,
    )
    with tempfile.TemporaryDirectory() as tmp:
        assert agree(_job(tmp, rows, spec, fmt, out_fmt, skip), chunk) == "arrow-state"


@SETTINGS
@given(rows=changelogs(), fmt=formats, mode=st.sampled_from(["upsert", "append"]), chunk=chunks)
def test_replay_of_plain_rows(rows: list[dict[str, Any]], fmt: str, mode: str, chunk: int | None) -> None:
    from cdc.core.specs import ReplaySpec

    plain = [{("flag" if k == "op" else k): v for k, v in r.items()} for r in rows]
    for delete_when in [None, ("flag", "-D")] if mode == "upsert" else [None]:
        spec = ReplaySpec(("id",), input_mode=mode, delete_when=delete_when)
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp, f"in.{fmt}")
            if fmt == "parquet":
                import pyarrow as pa
                import pyarrow.parquet as pq

                schema = pa.schema(
                    [("flag", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("v", pa.int64())]
                )
                pq.write_table(pa.Table.from_pylist(plain, schema=schema), src)
            elif plain:
                write_csv(src, plain)
            else:
                src.write_text("flag,id,name,v\n")
            job = Job(spec, (str(src),), output=str(Path(tmp, "out.jsonl")))
            agree(job, chunk)


@SETTINGS
@given(
    rows=changelogs(),
    fmt=formats,
    key=st.sampled_from([(), ("id",), ("id", "name")]),
    time_column=st.sampled_from([None, "v", "name"]),
    skip=st.booleans(),
    chunk=chunks,
)
def test_inspect(
    rows: list[dict[str, Any]], fmt: str, key: tuple[str, ...], time_column: str | None, skip: bool, chunk: int | None
) -> None:
    from cdc.core.specs import InspectSpec

    spec = InspectSpec(key=key, time_column=time_column)
    with tempfile.TemporaryDirectory() as tmp:
        assert agree(_job(tmp, rows, spec, fmt, "jsonl", skip), chunk) == "arrow-state"


@SETTINGS
@given(
    rows=changelogs(),
    fmt=formats,
    split=st.booleans(),
    key=st.sampled_from([(), ("id",)]),
    time_column=st.sampled_from(["v", "when"]),
    source=st.sampled_from([(), (("db", "shop"), ("table", "t"))]),
    skip=st.booleans(),
    chunk=chunks,
)
def test_debezium_encode(
    rows: list[dict[str, Any]],
    fmt: str,
    split: bool,
    key: tuple[str, ...],
    time_column: str,
    source: Any,
    skip: bool,
    chunk: int | None,
) -> None:
    from cdc.core.specs import EncodeSpec

    whens = ["2024-01-02T03:04:05.678Z", "1700000000123", None, "noon", "2024-05-06"]
    rows = [{**r, "when": whens[i % len(whens) if r.get("v") == 7 else 0]} for i, r in enumerate(rows)]
    spec = EncodeSpec(split_updates=split, time_column=time_column, source=source, key=key)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, f"in.{fmt}")
        if fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            schema = pa.schema(
                [
                    ("op", pa.string()),
                    ("id", pa.int64()),
                    ("name", pa.string()),
                    ("v", pa.int64()),
                    ("when", pa.string()),
                ]
            )
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), src)
        elif rows:
            write_csv(src, rows)
        else:
            src.write_text("op,id,name,v,when\n")
        job = Job(
            spec,
            (str(src),),
            output=str(Path(tmp, "out.jsonl")),
            on_error=OnError.skip if skip else OnError.fail,
            rejects=str(Path(tmp, "rejects.jsonl")) if skip else None,
        )
        assert agree(job, chunk) == "arrow-state"


def test_debezium_encode_of_timestamps(tmp_path: Path) -> None:
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    from cdc.core.specs import EncodeSpec

    stamps = [dt.datetime(2024, 1, 2, 3, 4, 5, us) for us in (0, 1, 999_999, 123_456, 678_900)]
    rows = [{"op": "+I", "id": i, "at": s} for i, s in enumerate(stamps)]
    for tz in (None, "UTC", "Europe/Berlin"):
        for unit in ("s", "ms", "us"):
            src = tmp_path / f"in-{unit}.parquet"
            schema = pa.schema([("op", pa.string()), ("id", pa.int64()), ("at", pa.timestamp(unit, tz))])
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), src)
            job = Job(EncodeSpec(time_column="at"), (str(src),), output=str(tmp_path / "out.jsonl"))
            agree(job)


@SETTINGS
@given(
    rows=changelogs(),
    fmt=formats,
    key=st.sampled_from([(), ("id",)]),
    point=st.sampled_from([("v", 1), ("v", "0"), ("v", "x"), ("name", "b"), ("name", 3)]),
    sort=st.booleans(),
    policy=policies,
    chunk=chunks,
)
def test_materialize_as_of(
    rows: list[dict[str, Any]],
    fmt: str,
    key: tuple[str, ...],
    point: Any,
    sort: bool,
    policy: Policy,
    chunk: int | None,
) -> None:
    column, as_of = point
    spec = MaterializeSpec(key=key, as_of=as_of, time_column=column, sort=sort, policy=policy)
    with tempfile.TemporaryDirectory() as tmp:
        assert agree(_job(tmp, rows, spec, fmt, "jsonl", False), chunk) == "arrow-state"


@SETTINGS
@given(
    rows=changelogs(),
    times=st.lists(st.integers(0, 6), min_size=80, max_size=80),
    fmt=formats,
    emit=st.sampled_from(["retract", "upsert"]),
    chunk=chunks,
)
def test_replay_order_by(rows: list[dict[str, Any]], times: list[int], fmt: str, emit: str, chunk: int | None) -> None:
    """Out-of-order rows (a time per row, no nulls): the late ones are left out as the row path does."""
    from cdc.core.specs import ReplaySpec

    timed = [{**r, "v": times[i]} for i, r in enumerate(rows)]
    spec = ReplaySpec(("id",), emit, order_by="v")
    with tempfile.TemporaryDirectory() as tmp:
        agree(_job(tmp, timed, spec, fmt, "jsonl", False), chunk)


@SETTINGS
@given(
    rows=changelogs(),
    fmt=formats,
    out_fmt=out_formats,
    group_by=st.sampled_from([(), ("id",), ("name",), ("id", "name")]),
    aggs=st.sampled_from(
        [
            ["n=COUNT(*)"],
            ["n=COUNT(*)", "s=SUM(v)", "m=AVG(v)"],
            ["c=COUNT(v)", "s=SUM(v)"],
            ["a=AVG(v)", "c=COUNT(name)"],
        ]
    ),
    mode=st.sampled_from(["changelog", "append"]),
    emit=st.sampled_from(["retract", "upsert"]),
    policy=policies,
)
def test_aggregate(
    rows: list[dict[str, Any]],
    fmt: str,
    out_fmt: str,
    group_by: tuple[str, ...],
    aggs: list[str],
    mode: str,
    emit: str,
    policy: Policy,
) -> None:
    from cdc.core.aggregate import AggregateQuery
    from cdc.core.specs import AggregateSpec

    if mode == "append":
        aggs = [*aggs, "hi=MAX(v)", "lo=MIN(name)", "least=MIN(v)", "top=MAX(name)"]
        rows = [{("flag" if k == "op" else k): v for k, v in r.items()} for r in rows]
    query = AggregateQuery.parse(group_by, aggs, emit, retractions=mode != "append")
    spec = AggregateSpec(query, mode, policy=policy)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, f"in.{fmt}")
        names = ["flag" if mode == "append" else "op", "id", "name", "v"]
        if fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            types = [pa.string(), pa.int64(), pa.string(), pa.int64()]
            pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(list(zip(names, types, strict=True)))), src)
        elif rows:
            write_csv(src, rows)
        else:
            src.write_text(",".join(names) + "\n")
        job = Job(spec, (str(src),), output=str(Path(tmp, f"out.{out_fmt}")))
        if fmt == "csv" and any(a.split("=")[1].startswith(("SUM", "AVG")) for a in aggs):
            return  # text operands: the row path's (numbers read from text)
        agree(job)
