"""Every path the planner can choose says what the row path says, on any input.

A job runs on each path that accepts it (``run_job(job, path=…)``): the output (numbers compared
by their spelling), the counts, the rejects with their lines, and the error of a failing run must
be the row path's. Number spellings and error words must also not depend on the output format.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from helpers import invoke, read_parquet, write_csv, write_parquet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_kernel_paths import events, lines

from cdc.core.errors import CdcError
from cdc.core.mapping import DEFAULT_FROM_MAPPING, parse_from_mapping
from cdc.core.model import OnError
from cdc.core.specs import DecodeSpec, FromChangelogSpec, ToChangelogSpec
from cdc.engine.inputs import resolve
from cdc.engine.job import Job
from cdc.engine.plan import PATHS
from cdc.engine.run import run_job

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _literal_json(text: str) -> Any:
    """A JSON value with every number kept as its spelling (so ``1.10`` ≠ ``1.1``)."""
    return json.loads(text, parse_float=lambda t: ("number", t), parse_int=lambda t: ("number", t))


def _paths_for(job: Job) -> list[str]:
    resolved = resolve(job)
    return [name for name, make in PATHS.items() if make().accepts(resolved)]


def _outcome(job: Job, path: str, out: Path, rejects: Path | None, raw: bool = False) -> tuple[Any, ...]:
    if out.exists():
        out.unlink()
    try:
        result = run_job(job, path=path)
    except CdcError as err:
        return ("error", str(err), err.hint)
    if not out.exists():  # inspect: a report, no output file
        rows: Any = None
    elif out.suffix == ".parquet":
        import pyarrow.parquet as pq

        rows = (read_parquet(out), [(f.name, str(f.type)) for f in pq.read_schema(out)])
    elif out.suffix == ".csv":
        rows = out.read_text(encoding="utf-8")
    else:
        rows = [list(_literal_json(line).items()) for line in out.read_text(encoding="utf-8").split("\n") if line]
    skipped = []
    if rejects is not None and rejects.exists():
        records = map(json.loads, rejects.read_text().split("\n")[:-1])
        skipped = [(r["line"], r["error"], r["raw"] if raw else None) for r in records]
    counts = result.counts
    detail = _detail(result)
    return rows, dict(counts.by_kind), counts.dropped, dict(counts.notes), result.read, result.skipped, skipped, detail


def _detail(result: Any) -> Any:
    """What a stateful command reports besides its rows, as the CLI shows it: materialize's
    --stats line and findings, inspect's report (numbers by spelling), replay's counts."""
    import dataclasses

    import orjson

    from cdc.cli.report import state_stats
    from cdc.core.aggregate import GroupAggregate
    from cdc.core.profile import Profile
    from cdc.core.replay import ReplayCounts
    from cdc.core.state import TableState
    from cdc.formats.jsonl import encode_default

    detail = result.detail
    if isinstance(detail, Profile):
        return orjson.dumps(detail.as_dict(["input"]), default=encode_default)
    if isinstance(detail, TableState):
        findings = detail.findings
        stats = state_stats(detail, result.read, result.counts.written)
        return stats, findings.total, dict(findings.counts), [str(f) for f in findings.examples]
    if isinstance(detail, ReplayCounts):
        return dataclasses.asdict(detail)
    if isinstance(detail, GroupAggregate) or hasattr(detail, "counts"):  # aggregate: the CLI's summary
        findings = detail.findings
        return detail.counts.summary(), findings.total, dict(findings.counts), [str(f) for f in findings.examples]
    return None


def _all_paths_agree(job: Job, out: Path, rejects: Path | None, expect_paths: int, raw: bool = False) -> None:
    """``raw``: the rejected records' text too (the JSON-lines paths keep the line as it was)."""
    names = _paths_for(job)
    assert "rows" in names and len(names) >= expect_paths, names
    reference = _outcome(job, "rows", out, rejects, raw)
    for name in names:
        if name != "rows":
            assert _outcome(job, name, out, rejects, raw) == reference, name


def _lines_paths() -> int:
    from cdc.engine.paths.native import kernel

    return 3 if kernel.available() else 2  # rows, lines, and kernel-lines where it was built


@SETTINGS
@given(data=lines("op", list(DEFAULT_FROM_MAPPING)), skip=st.booleans(), drop=st.booleans())
def test_from_changelog_on_json_lines_agrees_on_every_path(data: bytes, skip: bool, drop: bool) -> None:
    spec = FromChangelogSpec(
        "op", DEFAULT_FROM_MAPPING, drop=frozenset(parse_from_mapping([]).values()) if drop else frozenset()
    )
    with tempfile.TemporaryDirectory() as tmp:
        src, out, rejects = Path(tmp, "in.jsonl"), Path(tmp, "out.jsonl"), Path(tmp, "rejects.jsonl")
        src.write_bytes(data)
        on_error = OnError.skip if skip else OnError.fail
        job = Job(spec, (str(src),), output=str(out), on_error=on_error, rejects=str(rejects) if skip else None)
        _all_paths_agree(job, out, rejects if skip else None, _lines_paths())


@SETTINGS
@given(data=lines("kind", ["+I", "-U", "+U", "-D", "INSERT", "DELETE"]), skip=st.booleans())
def test_to_changelog_on_json_lines_agrees_on_every_path(data: bytes, skip: bool) -> None:
    spec = ToChangelogSpec({k: k.name for k in DEFAULT_FROM_MAPPING.values()}, "op", "kind")
    with tempfile.TemporaryDirectory() as tmp:
        src, out, rejects = Path(tmp, "in.jsonl"), Path(tmp, "out.jsonl"), Path(tmp, "rejects.jsonl")
        src.write_bytes(data)
        on_error = OnError.skip if skip else OnError.fail
        job = Job(spec, (str(src),), output=str(out), on_error=on_error, rejects=str(rejects) if skip else None)
        _all_paths_agree(job, out, rejects if skip else None, _lines_paths())


@SETTINGS
@given(data=events(), skip=st.booleans())
def test_decode_agrees_on_every_path(data: bytes, skip: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src, out, rejects = Path(tmp, "in.jsonl"), Path(tmp, "out.jsonl"), Path(tmp, "rejects.jsonl")
        src.write_bytes(data)
        on_error = OnError.skip if skip else OnError.fail
        job = Job(DecodeSpec(), (str(src),), output=str(out), on_error=on_error, rejects=str(rejects) if skip else None)
        _all_paths_agree(job, out, rejects if skip else None, _lines_paths())


cells = st.one_of(st.none(), st.integers(-5, 5), st.text('ab,"\n é', max_size=4))
codes = st.sampled_from(["INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE", "NOPE", None])


@st.composite
def tables(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Rows of one shape: an op column (bad codes too) among a few typed columns."""
    names = draw(st.lists(st.sampled_from(["id", "name", "n", "x y"]), min_size=1, max_size=3, unique=True))
    kinds = {name: draw(st.sampled_from(["int", "text"])) for name in names}
    rows = []
    for _ in range(draw(st.integers(1, 30))):
        row: dict[str, Any] = {}
        for name in names:
            value = draw(cells)
            row[name] = value if value is None or kinds[name] == ("int" if isinstance(value, int) else "text") else None
        row["op"] = draw(codes)
        rows.append(row)
    return rows


@SETTINGS
@given(
    rows=tables(),
    fmt=st.sampled_from(["parquet", "csv"]),
    out_fmt=st.sampled_from(["parquet", "csv"]),
    skip=st.booleans(),
    drop=st.booleans(),
    direction=st.sampled_from(["from", "to"]),
)
def test_tables_agree_on_the_arrow_path_and_the_row_path(
    rows: list[dict[str, Any]], fmt: str, out_fmt: str, skip: bool, drop: bool, direction: str
) -> None:
    dropped = frozenset(k for k in DEFAULT_FROM_MAPPING.values() if k.value == "-U") if drop else frozenset()
    if direction == "from":
        spec: Any = FromChangelogSpec("op", DEFAULT_FROM_MAPPING, drop=dropped)
    else:
        short = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}
        rows = [{**r, "op": short.get(r["op"], r["op"])} for r in rows]
        spec = ToChangelogSpec({k: k.name for k in DEFAULT_FROM_MAPPING.values()}, "code", drop=dropped)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, f"in.{fmt}")
        (write_parquet if fmt == "parquet" else write_csv)(src, rows)
        out, rejects = Path(tmp, f"out.{out_fmt}"), Path(tmp, "rejects.jsonl")
        on_error = OnError.skip if skip else OnError.fail
        job = Job(spec, (str(src),), output=str(out), on_error=on_error, rejects=str(rejects) if skip else None)
        _all_paths_agree(job, out, rejects if skip else None, 2)


# -- one spelling per number, one wording per error, whatever the command and the format ------

LITERALS = ["12.00", "1E+2", "1e300", "0.0000001", "12345678901234567.89", "123456789012345678901234567890",
            "-9223372036854775809", "3.14", "-0.0"]  # fmt: skip
PRINTED = ["12.00", "100.0", "1.0E300", "0.0000001", "12345678901234567.89", "123456789012345678901234567890",
           "-9223372036854775809", "3.14", "-0.0"]  # fmt: skip


def _changelog(tmp_path: Path) -> Path:
    lines_ = [f'{{"op":"+I","id":{i},"v":{lit}}}' for i, lit in enumerate(LITERALS)]
    lines_ += [f'{{"op":"-U","id":0,"v":{LITERALS[0]}}}', f'{{"op":"+U","id":0,"v":{LITERALS[0]}}}']
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines_) + "\n")
    return path


COMMANDS = [
    ["to-changelog"],
    ["materialize", "--key", "id"],
    ["materialize", "--key", "id", "--sort"],
    ["materialize"],
    ["replay", "--key", "id", "--keep-noop"],
]


@pytest.mark.parametrize(
    ("command", "fmt"),
    [(c, f) for c in COMMANDS for f in ("jsonl", "csv", "print")] + [(["debezium-encode"], "jsonl")],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_numbers_keep_their_spelling_in_every_command_and_format(tmp_path: Path, command: list[str], fmt: str) -> None:
    result = invoke([*command, _changelog(tmp_path), "-f", fmt])
    assert result.exit_code == 0, result.stderr
    spelled = PRINTED if fmt == "print" else LITERALS
    text = result.stdout
    for literal in spelled:
        assert literal in text, (literal, text)
    if fmt != "print":
        assert "1e+300" not in text and "12.0," not in text and "100.0" not in text


def test_numbers_survive_decode_encode_decode(tmp_path: Path) -> None:
    log = _changelog(tmp_path)
    encoded = invoke(["debezium-encode", log]).stdout
    decoded = invoke(["debezium-decode"], stdin=encoded).stdout
    assert decoded == invoke(["to-changelog", log, "--op", "op", "-m", "+I=+I", "-m", "-U=-U", "-m", "+U=+U"]).stdout


@pytest.mark.parametrize("out_fmt", ["jsonl", "csv", "parquet", "print"])
@pytest.mark.parametrize("in_fmt", ["jsonl", "csv", "parquet"])
def test_a_bad_code_is_worded_alike_whatever_the_formats(tmp_path: Path, in_fmt: str, out_fmt: str) -> None:
    rows = [{"op": "INSERT", "id": 1}, {"op": "UPSERT", "id": 2}]
    src = tmp_path / f"in.{in_fmt}"
    {"jsonl": lambda p, r: p.write_text("".join(json.dumps(x) + "\n" for x in r)), "csv": write_csv,
     "parquet": write_parquet}[in_fmt](src, rows)  # fmt: skip
    out = tmp_path / f"out.{'jsonl' if out_fmt == 'print' else out_fmt}"
    result = invoke(["from-changelog", src, "-o", out, "-f", out_fmt])
    where = {"jsonl": f"{src}:2", "csv": f"{src}:3", "parquet": f"{src}: row 2"}[in_fmt]
    assert result.exit_code == 3
    assert result.stderr.splitlines()[0] == (
        f"cdc: error: {where}: invalid op code 'UPSERT' in column 'op'; "
        "defined op codes are [INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]"
    )


def test_a_non_text_op_column_is_worded_alike_on_every_path(tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "in.parquet", [{"op": 1, "id": 1}])
    said = set()
    for out in ("out.parquet", "out.jsonl", "out.csv"):
        result = invoke(["from-changelog", src, "-o", tmp_path / out])
        said.add(result.stderr.splitlines()[0])
    assert said == {f"cdc: error: {src}: row 1: op column 'op' must be of STRING type, but was number (1)"}


def test_the_planner_is_the_only_place_that_chooses() -> None:
    from helpers import REPO
    from test_quality import imports_of

    engine_paths = {"lines", "arrow", "rows", "workers", "native", "plan"}
    for path in sorted((REPO / "cli").glob("*.py")):
        for name in imports_of(path):
            parts = name.split(".")
            assert not (parts[:3] == ["cdc", "formats", "engine"] and len(parts) > 3 and parts[3] in engine_paths), (
                f"{path.name} imports {name}"
            )
    assert os.environ.get("CDC_PATH") is None


# -- inputs on which the paths once disagreed (issue #8, item 10): one answer on every path ----


def _on_every_path(args: list[str], stdin: bytes | None = None) -> set[tuple[int, str, str]]:
    """What cdc says for ``args`` on each path the planner may take (``CDC_PATH``)."""
    from helpers import run_cdc

    said = set()
    for path in ("rows", "lines", "kernel-lines", "keyed-kernel", None):
        env = {"CDC_PATH": path} if path else {}
        result = run_cdc(args, stdin=stdin, env=env)
        if b"does not take this job" in result.stderr:
            continue
        said.add((result.returncode, result.stdout.decode(), result.stderr.decode()))
    return said


def test_negative_integers_past_64_bits_stay_integers(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"op":"+I","id":-9223372036854775809}\n{"op":"+I","id":-9223372036854775808}\n')
    said = _on_every_path(["materialize", log, "--key", "id", "--stats"])
    assert len(said) == 1
    code, out, err = said.pop()
    assert code == 0 and out == '{"id":-9223372036854775809}\n{"id":-9223372036854775808}\n'
    assert "2 live rows" in err and "inconsistent" not in err
    assert invoke(["materialize", log, "--key", "id", "--sort"]).stdout.splitlines()[0] == (
        '{"id":-9223372036854775809}'
    )


def test_integers_of_any_length_are_numbers_on_every_path(tmp_path: Path) -> None:
    big = "9" * 5000
    log = tmp_path / "log.jsonl"
    log.write_text(f'{{"op":"+I","id":{big}}}\n{{"op":"+I","id":1}}\n')
    for args in (["materialize", log, "--key", "id", "--sort"], ["to-changelog", log], ["materialize", log]):
        said = _on_every_path(args)
        assert len(said) == 1, args
        code, out, err = said.pop()
        assert code == 0 and big in out, err


def test_a_line_nested_5000_deep_is_bad_input_not_a_crash(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"op":"+I","id":1}\n{"op":"+I","id":2,"v":' + "[" * 5000 + "]" * 5000 + "}\n")
    for command in (["from-changelog", "-m", "+I=INSERT"], ["materialize"], ["materialize", "--key", "id"]):
        for code, _, err in _on_every_path([*command, log]):
            assert code == 3 and "Traceback" not in err and f"{log}:2: invalid JSON" in err, err
        skipped = _on_every_path([*command, log, "--on-error", "skip"])
        assert all(code == 0 and "skipped 1 bad record" in err for code, _, err in skipped), skipped


def test_decode_stats_count_every_chunk(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    line = '{"before":null,"after":{"id":%d,"name":"%s"},"op":"c"}\n'
    events.write_text("".join(line % (i, "x" * 80) for i in range(20_000)))  # ~2 MB: several chunks
    said = _on_every_path(["debezium-decode", events, "--stats"])
    assert {err.splitlines()[-1] for _, _, err in said} == {"cdc: debezium-decode: read 20000, wrote 20000 (+I 20000)"}


def test_a_repeated_member_name_keeps_the_last_value_at_any_depth(tmp_path: Path) -> None:
    # Flink's Jackson keeps the last of repeated names; so does every path here.
    log = tmp_path / "log.jsonl"
    log.write_text('{"op":"+I","id":1,"v":{"x":1,"x":2},"w":[{"a":1,"a":3}]}\n')
    said = _on_every_path(["to-changelog", log])
    assert {out for _, out, _ in said} == {'{"op":"INSERT","id":1,"v":{"x":2},"w":[{"a":3}]}\n'}


# -- the state engine (materialize without a key or --dedup, inspect, replay, debezium-encode) ----

# Values spelled in every way a changelog may: equal under Python's == though written otherwise
# (1, 1.0, 1.50, 15e-1, true; "x" and "\u0078"), nested ones (member order differs), floats past
# 15 digits, big integers, -0; keys the kernel takes and keys it hands over (objects).
KEY_TEXTS = ["0", "1", "2", "3", '"a"', '"b"', '"\\u0061"', '"é"', "1.0", "true", "null", "2.5", "-0"]
ODD_KEYS = ['{"x":1}', "[1]", "1e0", "0.30000000000000004"]
VALUE_TEXTS = ["1", "1.50", "1.5", "15e-1", "2", '"x"', '"\\u0078"', "true", "false", "null", '{"a":1,"b":2}',
               '{"b":2,"a":1}', "[1,2]", "0.30000000000000004", "0.3000000000000000444", "12345678901234567890",
               "-0", "-0.0", "0", '"caf\\u00e9"', '"café"', "1e300"]  # fmt: skip
TIME_TEXTS = ["1", "2", "3", "10", "2.5", '"5"', '"2024-01-01"', '"2024-01-01T00:00:00"', "null", '"x"']


@st.composite
def changelogs(draw: st.DrawFn) -> bytes:
    """Changelog lines: runs of changes a table could have made (what the kernel applies), with
    contradicting changes, odd spellings, bad lines, blank lines, repeated and escaped names and
    keys the kernel hands over mixed in."""
    live: dict[str, str] = {}
    out = []
    two_keys = draw(st.booleans())
    clean = draw(st.booleans())  # half the logs hold nothing that hands the kernel's state over
    shapes = ["change"] * 14 + ["blank", "garbage", "badkind", "array"] + ([] if clean else ["odd", "nokey"])
    values = [v for v in VALUE_TEXTS if not clean or v[0] not in "{[" and len(v) < 17 and v != "1e300"]
    for _ in range(draw(st.integers(1, 40))):
        shape = draw(st.sampled_from(shapes))
        if shape in ("blank", "garbage", "badkind", "array"):
            bad = {"blank": "", "garbage": '{"op":"+I",', "badkind": '{"op":"UPSERT","id":1}', "array": "[1]"}
            out.append(bad[shape])
            continue
        key = draw(st.sampled_from(KEY_TEXTS + (ODD_KEYS if shape == "odd" else [])))
        consistent = shape == "change" and draw(st.integers(0, 4)) > 0
        members = {"id": key}
        if two_keys:
            members["w"] = draw(st.sampled_from(["1", '"w"']))
        if draw(st.booleans()):
            members["v"] = draw(st.sampled_from(values))
        if draw(st.integers(0, 5)):
            members["t"] = draw(st.sampled_from(TIME_TEXTS))
        row = ",".join(f'"{k}":{v}' for k, v in members.items())
        identity = key + "|" + members.get("w", "")
        if consistent:
            if identity not in live:
                changes = [("+I", row)]
                live[identity] = row
            elif draw(st.booleans()):
                changes = [("-U", live[identity]), ("+U", row)]
                live[identity] = row
            else:
                changes = [("-D", live.pop(identity))]
        else:
            kinds = ["+I", "-U", "+U", "-D", "INSERT", "UPDATE_AFTER", "DELETE"]
            changes = [(draw(st.sampled_from(kinds)), row)]
        for kind, image in changes:
            text = f'"op":"{kind}",' + image
            if shape == "nokey":
                text = text.replace('"id":', '"idx":')
            elif shape == "odd":
                text = draw(st.sampled_from([text, text.replace('"v":', '"\\u0076":'), text + ',"id":9']))
            if draw(st.integers(0, 6)) == 0:
                text = text.replace(",", ", ").replace('":', '": ')
            out.append("{" + text + "}")
    return ("\n".join(out) + "\n").encode()


def _state_job(tmp: str, data: bytes, spec: Any, skip: bool, out_name: str = "out.jsonl") -> tuple[Job, Path, Path]:
    src, out, rejects = Path(tmp, "in.jsonl"), Path(tmp, out_name), Path(tmp, "rejects.jsonl")
    src.write_bytes(data)
    on_error = OnError.skip if skip else OnError.fail
    job = Job(spec, (str(src),), output=str(out), on_error=on_error, rejects=str(rejects) if skip else None)
    return job, out, rejects


def _state_paths() -> int:
    from cdc.engine.paths.native import kernel

    return 2 if kernel.available() else 1  # rows, and state-kernel where the kernel was built


@contextmanager
def _chunks(small: bool) -> Iterator[None]:
    """The state paths read their input in chunks of 64 bytes too, each parsed in two halves:
    pairs cut, state carried on."""
    from cdc.engine.paths.native import state

    size, split = state.CHUNK, state.SPLIT
    state.CHUNK, state.SPLIT = (64, 32) if small else (size, split)
    try:
        yield
    finally:
        state.CHUNK, state.SPLIT = size, split


policies = st.sampled_from(["warn", "fail", "ignore"])


@SETTINGS
@given(
    data=changelogs(),
    small=st.booleans(),
    keyed=st.booleans(),
    dedup=st.booleans(),
    policy=policies,
    skip=st.booleans(),
    sort=st.booleans(),
    out=st.sampled_from(["out.jsonl", "out.csv"]),
)
def test_materialize_without_a_key_or_dedup_agrees_on_every_path(
    data: bytes, small: bool, keyed: bool, dedup: bool, policy: str, skip: bool, sort: bool, out: str
) -> None:
    from cdc.core.specs import MaterializeSpec
    from cdc.core.state import Policy

    key = ("id",) if keyed else ()
    spec = MaterializeSpec(key=key, policy=Policy(policy), dedup=dedup or keyed, sort=sort)
    with tempfile.TemporaryDirectory() as tmp, _chunks(small):
        job, out_path, rejects = _state_job(tmp, data, spec, skip, out)
        _all_paths_agree(job, out_path, rejects if skip else None, _state_paths(), raw=True)


@SETTINGS
@given(data=changelogs(), policy=policies, skip=st.booleans(), out=st.sampled_from(["out.jsonl", "out.csv"]))
def test_materialize_by_key_agrees_on_every_path(data: bytes, policy: str, skip: bool, out: str) -> None:
    # keyed-kernel: --strict under --on-error skip sets the contradicting line aside, as the row path does
    from cdc.core.specs import MaterializeSpec
    from cdc.core.state import Policy

    spec = MaterializeSpec(key=("id",), policy=Policy(policy))
    with tempfile.TemporaryDirectory() as tmp:
        job, out_path, rejects = _state_job(tmp, data, spec, skip, out)
        _all_paths_agree(job, out_path, rejects if skip else None, 1, raw=True)  # keyed-kernel: a first row read


@SETTINGS
@given(
    data=changelogs(),
    small=st.booleans(),
    key=st.sampled_from([(), ("id",), ("id", "w")]),
    timed=st.booleans(),
    skip=st.booleans(),
)
def test_inspect_agrees_on_every_path(data: bytes, small: bool, key: tuple[str, ...], timed: bool, skip: bool) -> None:
    from cdc.core.specs import InspectSpec

    spec = InspectSpec(key=key, time_column="t" if timed else None)
    with tempfile.TemporaryDirectory() as tmp, _chunks(small):
        job, out, rejects = _state_job(tmp, data, spec, skip)
        _all_paths_agree(job, out, rejects if skip else None, _state_paths(), raw=True)


bounds = st.sampled_from([None, "2", "3", "2.5", "2024-01-01", "0"])


@SETTINGS
@given(
    data=changelogs(),
    small=st.booleans(),
    key=st.sampled_from([("id",), ("id", "w")]),
    emit=st.sampled_from(["retract", "upsert"]),
    keep_noop=st.booleans(),
    order_by=st.sampled_from([None, "t"]),
    timed=st.booleans(),
    since=bounds,
    until=bounds,
    net=st.booleans(),
    skip=st.booleans(),
)
def test_replay_agrees_on_every_path(
    data: bytes,
    small: bool,
    key: tuple[str, ...],
    emit: str,
    keep_noop: bool,
    order_by: str | None,
    timed: bool,
    since: str | None,
    until: str | None,
    net: bool,
    skip: bool,
) -> None:
    from cdc.core.specs import ReplaySpec

    if not timed:
        since = until = None
    net = net and since is not None and until is not None
    spec = ReplaySpec(key, emit, keep_noop, order_by, "t" if timed else None, since, until, net)
    with tempfile.TemporaryDirectory() as tmp, _chunks(small):
        job, out, rejects = _state_job(tmp, data, spec, skip)
        _all_paths_agree(job, out, rejects if skip else None, _state_paths(), raw=True)


@SETTINGS
@given(
    data=changelogs(),
    small=st.booleans(),
    key=st.sampled_from([(), ("id",), ("id", "w")]),
    split=st.booleans(),
    timed=st.booleans(),
    source=st.booleans(),
    skip=st.booleans(),
)
def test_debezium_encode_agrees_on_every_path(
    data: bytes, small: bool, key: tuple[str, ...], split: bool, timed: bool, source: bool, skip: bool
) -> None:
    import datetime as dt

    from cdc.core.specs import EncodeSpec

    class Frozen(dt.datetime):  # ts_ms without a time column is the time of the run: one time for all
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=tz)

    spec = EncodeSpec(
        split_updates=split,
        time_column="t" if timed else None,
        source=(("db", "inventory"), ("n", 1)) if source else (),
        key=key,
    )
    with tempfile.TemporaryDirectory() as tmp, _chunks(small), mock.patch("cdc.formats.debezium.dt.datetime", Frozen):
        job, out, rejects = _state_job(tmp, data, spec, skip)
        _all_paths_agree(job, out, rejects if skip else None, _state_paths(), raw=True)


# -- Canal, Maxwell and OGG events: the kernel against the general decoder ----------------------

NAMES = ['"id"', '"name"', '"v"', '"w"', '"b"', '"é"']
TYPED = {  # Canal text values of a column by its sqlType (java.sql.Types), and values of no type
    4: ['"5"', '"-3"', '"0"', '"007"', '"-0"', '"+5"', '" 5"', '"12345678901234567890123"', '""', "null", "5", '"1.5"'],
    8: ['"1.5"', '"1.50"', '"12"', '"0"', '"0.0"', '"-0.0"', '"0.00001"', '"0.0001"', '"1e5"', '"3.14159"',
        '"123456789012345678"', '"abc"', '"-2.25"', "2.5"],
    3: ['"12.50"', '"0.0000001"', '"0.000001"', '"-0"', '"100"', '"1E+2"', '"abc"', '"00.5"', '"-1.000"'],
    16: ['"1"', '"0"', '"true"', '"false"', '"TRUE"', '" 1"', '"yes"'],
    12: ['"x"', '"caf\\u00e9"', '"é"', '""', "null", "7", '{"a":1}', "[1,2]", '"1.50"'],
}  # fmt: skip
PLAIN = ["1", "1.50", "-0", '"x"', '"\\u0078"', "true", "null", '{"a":1,"b":[2]}', "[]", "12345678901234567890"]


@st.composite
def image(
    draw: st.DrawFn, types: dict[str, int] | None = None, names: list[str] | None = None, clean: bool = False
) -> str:
    """A row object as written: typed text values (Canal) or plain JSON values; now and then a
    repeated or escaped name, the kind column, odd spacing."""
    chosen = names if names is not None else draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    members = []
    for name in chosen:
        code = (types or {}).get(name, 12)
        value = draw(st.sampled_from(TYPED[code] if types is not None else PLAIN))
        members.append(f"{name}:{value}")
    odd = 9 if clean else draw(st.integers(0, 12))
    if odd == 0 and members:
        members.append(members[0])  # a repeated name
    elif odd == 1:
        members.append('"\\u0076":1')  # an escaped name
    elif odd == 2:
        members.append('"op":"x"')  # the kind column
    sep = draw(st.sampled_from([",", ", "]))
    return "{" + sep.join(members) + "}"


def _message(draw: st.DrawFn, members: dict[str, str | None]) -> str:
    items = [(k, v) for k, v in members.items() if v is not None]
    if draw(st.booleans()):
        items = draw(st.permutations(items))
    return "{" + ",".join(f'"{k}":{v}' for k, v in items) + "}"


@st.composite
def canal_events(draw: st.DrawFn) -> bytes:
    out = []
    clean = draw(st.booleans())  # half the streams: only messages the kernel may take (values aside)
    for _ in range(draw(st.integers(1, 8))):
        names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
        codes = {n: draw(st.sampled_from([4, 8, 3, 16, 12])) for n in names}
        types = "{" + ",".join(f"{n}:{c}" for n, c in codes.items()) + "}"
        odd_types = [] if clean else ["null", '{"id":"4"}', '{"id":4.0}']
        types = draw(st.sampled_from([types] * 6 + odd_types))
        kinds = ["INSERT", "UPDATE", "DELETE"] + (
            [] if clean else ["INSERT", "UPDATE", "DELETE"] * 3 + ["CREATE", "XYZ"]
        )
        kind = draw(st.sampled_from(kinds))
        rows = [draw(image(codes, names, clean)) for _ in range(draw(st.integers(0, 3)))]
        old: str | None = None
        if kind == "UPDATE" and draw(st.booleans()):
            olds = [
                draw(image(codes, draw(st.lists(st.sampled_from(names), max_size=2, unique=True)), clean)) for _ in rows
            ]
            if not clean and draw(st.integers(0, 5)) == 0:
                olds = olds[:-1] or ['{"zz":"1"}']
            old = "[" + ",".join(olds) + "]"
        elif draw(st.integers(0, 4)) == 0:
            old = "null"
        data = draw(st.sampled_from(["[" + ",".join(rows) + "]"] * 8 + ([] if clean else ["null", "{}", "[1]"])))
        line = _message(draw, {"data": data, "database": '"db"', "isDdl": "false", "old": old, "sqlType": types,
                               "table": '"t"', "ts": "1", "type": f'"{kind}"'})  # fmt: skip
        out.append(draw(st.sampled_from([line] * 12 + ([] if clean else ["", "null", "{"]))))
    return ("\n".join(out) + "\n").encode()


@st.composite
def maxwell_events(draw: st.DrawFn) -> bytes:
    out = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["insert", "update", "delete"] * 4 + ["bootstrap-insert", "bootstrap-start",
                                                                           "table-create", "weird"]))  # fmt: skip
        names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
        data = draw(image(None, names))
        old = None
        if kind == "update":
            partial = draw(image(None, draw(st.lists(st.sampled_from(names), max_size=2, unique=True))))
            old = draw(st.sampled_from(["null", "{}", "[]", partial, partial, draw(image(None))]))
        data = draw(st.sampled_from([data] * 8 + ["null", "[1]"]))
        line = _message(draw, {"database": '"db"', "table": '"t"', "type": f'"{kind}"', "ts": "1", "data": data,
                               "old": old})  # fmt: skip
        out.append(draw(st.sampled_from([line] * 12 + ["", "null", "{"])))
    return ("\n".join(out) + "\n").encode()


@st.composite
def ogg_events(draw: st.DrawFn) -> bytes:
    out = []
    tables = ['"S.T"', '"S.U"', "null", '"\\u0053.T"', "1"]
    for _ in range(draw(st.integers(1, 10))):
        op = draw(st.sampled_from(["I", "U", "D"] * 4 + ["T", "X"]))
        names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
        after = draw(image(None, names))
        before = draw(image(None, draw(st.sampled_from([names, names[:-1] or names, [*names, '"zz"']]))))
        members = {"table": draw(st.sampled_from(tables)), "op_type": f'"{op}"', "op_ts": '"2024-01-01 00:00:00"'}
        if op in ("U", "D") or draw(st.integers(0, 5)) == 0:
            members["before"] = draw(st.sampled_from([before] * 6 + ["null", "{}"]))
        if op in ("I", "U"):
            members["after"] = draw(st.sampled_from([after] * 6 + [before, "null"]))
        if draw(st.integers(0, 8)) == 0:
            del members["table"]
        line = _message(draw, members)
        out.append(draw(st.sampled_from([line] * 12 + ["", "null", "{"])))
    return ("\n".join(out) + "\n").encode()


@SETTINGS
@given(
    envelope=st.sampled_from(["canal", "maxwell", "ogg"]),
    data=st.data(),
    skip=st.booleans(),
    raw=st.booleans(),
    bootstrap=st.sampled_from(["insert", "skip"]),
    truncate=st.sampled_from(["fail", "skip"]),
)
def test_canal_maxwell_and_ogg_decode_agree_on_every_path(
    envelope: str, data: st.DataObject, skip: bool, raw: bool, bootstrap: str, truncate: str
) -> None:
    events = data.draw({"canal": canal_events(), "maxwell": maxwell_events(), "ogg": ogg_events()}[envelope])
    spec = DecodeSpec(envelope, raw_values=raw, on_truncate=truncate, bootstrap=bootstrap)
    with tempfile.TemporaryDirectory() as tmp:
        src, out, rejects = Path(tmp, "in.jsonl"), Path(tmp, "out.jsonl"), Path(tmp, "rejects.jsonl")
        src.write_bytes(events)
        on_error = OnError.skip if skip else OnError.fail
        job = Job(spec, (str(src),), output=str(out), on_error=on_error, rejects=str(rejects) if skip else None)
        _all_paths_agree(job, out, rejects if skip else None, _lines_paths(), raw=True)


AGGREGATES = ["n=COUNT(*)", "c=COUNT(v)", "s=SUM(v)", "a=AVG(v)", "lo=MIN(v)", "hi=MAX(v)", "st=SUM(t)", "ht=MAX(t)"]


@SETTINGS
@given(
    data=changelogs(),
    small=st.booleans(),
    group_by=st.sampled_from([(), ("id",), ("id", "w"), ("t",)]),
    aggs=st.lists(st.sampled_from(AGGREGATES), max_size=4, unique=True),
    emit=st.sampled_from(["retract", "upsert"]),
    mode=st.sampled_from(["changelog", "changelog", "append"]),
    policy=policies,
    skip=st.booleans(),
)
def test_aggregate_agrees_on_every_path(
    data: bytes,
    small: bool,
    group_by: tuple[str, ...],
    aggs: list[str],
    emit: str,
    mode: str,
    policy: str,
    skip: bool,
) -> None:
    from hypothesis import assume

    from cdc.core.aggregate import AggregateQuery
    from cdc.core.specs import AggregateSpec
    from cdc.core.state import Policy

    # core.aggregate: MIN/MAX of a nested value fails after its group is made, and the row path
    # then crashes on the group's -D (a core matter, not a path's): such values are left out here
    assume(not any(f"{c}:{sp}{v}".encode() in data for c in ('"v"', '"t"') for sp in ("", " ") for v in "{["))
    if not group_by and not aggs:
        aggs = ["n=COUNT(*)"]
    query = AggregateQuery.parse(group_by, aggs, emit, retractions=mode != "append")
    spec = AggregateSpec(query, mode, policy=Policy(policy))
    with tempfile.TemporaryDirectory() as tmp, _chunks(small):
        job, out, rejects = _state_job(tmp, data, spec, skip)
        expect = _state_paths() if not (len({a.split("(")[1] for a in aggs if "*" not in a}) > 1 and policy != "ignore"
                                       and mode != "append") else 1  # fmt: skip
        _all_paths_agree(job, out, rejects if skip else None, expect, raw=True)


@SETTINGS
@given(data=changelogs(), cut=st.integers(0, 40), command=st.sampled_from(["multiset", "inspect", "replay", "encode"]))
def test_the_state_paths_read_several_inputs_as_one_stream(data: bytes, cut: int, command: str) -> None:
    from cdc.core.specs import EncodeSpec, InspectSpec, MaterializeSpec, ReplaySpec

    spec: Any = {
        "multiset": MaterializeSpec(),
        "inspect": InspectSpec(key=("id",), time_column="t"),
        "replay": ReplaySpec(("id",), emit="upsert", order_by="t"),
        "encode": EncodeSpec(time_column="t"),
    }[command]
    lines_ = data.split(b"\n")
    cut %= len(lines_)
    with tempfile.TemporaryDirectory() as tmp:
        first, second, out = Path(tmp, "a.jsonl"), Path(tmp, "b.jsonl.gz"), Path(tmp, "out.jsonl")
        first.write_bytes(b"\n".join(lines_[:cut]) + b"\n")
        import gzip

        second.write_bytes(gzip.compress(b"\n".join(lines_[cut:])))
        job = Job(spec, (str(first), str(second)), output=str(out))
        _all_paths_agree(job, out, None, 1)


# -- JSON lines → Parquet (lines-arrow) and the stateful commands on Arrow (arrow-state) -------

json_cells = st.one_of(
    st.none(),
    st.integers(-5, 5),
    st.sampled_from([1.5, 2.0, -0.0, 12345678901234567890, 0.1]),
    st.booleans(),
    st.text('ab"\\é\n', max_size=3),
)


@st.composite
def json_tables(draw: st.DrawFn) -> bytes:
    """JSON lines of one shape mostly (the first rows fix a Parquet schema), odd lines among them."""
    names = draw(st.lists(st.sampled_from(["id", "name", "n", "x y"]), min_size=1, max_size=3, unique=True))
    kinds = {name: draw(st.sampled_from(["int", "text", "float", "bool", "any"])) for name in names}
    pick = {
        "int": st.one_of(st.none(), st.integers(-5, 5)),
        "text": st.one_of(st.none(), st.text('ab"\\é', max_size=3)),
        "float": st.one_of(st.none(), st.sampled_from([1.5, 2.0, 0.25])),
        "bool": st.one_of(st.none(), st.booleans()),
        "any": json_cells,
    }
    out = []
    for _ in range(draw(st.integers(0, 40))):
        shape = draw(st.sampled_from(["row"] * 12 + ["blank", "garbage", "extra", "missing", "badkind"]))
        if shape in ("blank", "garbage"):
            out.append({"blank": "", "garbage": "{oops"}[shape])
            continue
        row: dict[str, Any] = {"op": draw(st.sampled_from(["+I", "-U", "+U", "-D"]))}
        for name in names:
            if shape != "missing" or draw(st.booleans()):
                row[name] = draw(pick[kinds[name]])
        if shape == "extra":
            row["new"] = 1
        if shape == "badkind":
            row["op"] = "?"
        out.append(json.dumps(row))
    return ("\n".join(out) + "\n").encode()


@SETTINGS
@given(data=json_tables(), skip=st.booleans(), head=st.sampled_from([None, 1, 3]))
def test_json_lines_to_parquet_agrees_on_every_path(data: bytes, skip: bool, head: int | None) -> None:
    from cdc.formats.parquet import io as parquet_io

    spec = ToChangelogSpec({k: k.name for k in DEFAULT_FROM_MAPPING.values()})
    old = parquet_io.BATCH_ROWS
    with tempfile.TemporaryDirectory() as tmp:
        src, out, rejects = Path(tmp, "in.jsonl"), Path(tmp, "out.parquet"), Path(tmp, "rejects.jsonl")
        src.write_bytes(data)
        on_error = OnError.skip if skip else OnError.fail
        job = Job(spec, (str(src),), output=str(out), on_error=on_error, rejects=str(rejects) if skip else None)
        try:
            parquet_io.BATCH_ROWS = head or old  # the schema fixed by fewer rows: more blocks read by pyarrow
            _all_paths_agree(job, out, rejects if skip else None, 2)
        finally:
            parquet_io.BATCH_ROWS = old


@SETTINGS
@given(rows=tables(), fmt=st.sampled_from(["parquet", "csv"]), out_fmt=st.sampled_from(["parquet", "csv", "jsonl"]))
def test_stateful_commands_on_tables_agree_on_every_path(rows: list[dict[str, Any]], fmt: str, out_fmt: str) -> None:
    """The arrow-state path against the row path on tables with bad kinds among good ones (the
    full comparison, findings and accounts included, is tests/test_arrow_state.py's)."""
    from cdc.core.specs import InspectSpec, MaterializeSpec, ReplaySpec

    short = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}
    rows = [{**r, "op": short.get(r["op"], r["op"])} for r in rows]
    key = tuple(n for n in ("id", "name") if n in rows[0])[:1]
    specs: list[Any] = [MaterializeSpec(key=key), MaterializeSpec(), InspectSpec(key=key)]
    if key:
        specs.append(ReplaySpec(key))
    for spec in specs:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp, f"in.{fmt}")
            (write_parquet if fmt == "parquet" else write_csv)(src, rows)
            out = Path(tmp, f"out.{out_fmt}")
            typed = fmt == "csv" or any(r["op"] is not None for r in rows)  # else a kind column of type null
            _all_paths_agree(Job(spec, (str(src),), output=str(out)), out, None, 2 if typed else 1)


FORMS = sorted(
    p.name
    for p in (Path(__file__).parent / "conformance" / "debezium-forms").glob("*.jsonl")
    if ".expected" not in p.name
)


@pytest.mark.parametrize("name", FORMS)
@pytest.mark.parametrize("skip", [False, True])
def test_debezium_special_forms_decode_alike_on_every_path(tmp_path: Path, name: str, skip: bool) -> None:
    # Placeholders of every type, logical-type arrays, calendar edges, flattened rows, records that
    # are not changes: a line the kernel cannot be sure of goes the general way, never as data.
    src = Path(__file__).parent / "conformance" / "debezium-forms" / name
    out, rejects = tmp_path / "out.jsonl", tmp_path / "rejects.jsonl"
    on_error = OnError.skip if skip else OnError.fail
    job = Job(DecodeSpec(), (str(src),), output=str(out), on_error=on_error, rejects=str(rejects) if skip else None)
    _all_paths_agree(job, out, rejects if skip else None, _lines_paths())


def test_a_placeholder_form_the_kernel_does_not_know_goes_the_general_way(tmp_path: Path) -> None:
    # bytea's base64 bytes, an int array of its bytes, hstore as JSON text: in an update's after
    # image the value of its before image, in an insert the value — the same on every path.
    import base64

    p = "__debezium_unavailable_value"
    forms = [
        base64.b64encode(p.encode()).decode(),
        list(p.encode()),
        json.dumps({p: p}, separators=(",", ":")),
        [p],
        {p: p},
    ]
    events = []
    for i, form in enumerate(forms * 3):
        events.append({"before": None, "after": {"id": i, "v": form}, "op": "c"})
        events.append({"before": {"id": i, "v": "x"}, "after": {"id": i, "v": form}, "op": "u"})
        events.append({"before": {"id": i, "v": None}, "after": {"id": i, "v": 1}, "op": "u"})
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(e) + "\n" for e in events))
    job = Job(DecodeSpec(), (str(src),), output=str(out))
    _all_paths_agree(job, out, None, _lines_paths())


# -- issue #25: the fast paths equal the row path -----------------------------------------------


def _invoke_on(path: str | None, args: list[Any]) -> Any:
    with mock.patch.dict(os.environ, {"CDC_PATH": path} if path else {}):
        return invoke(args)


def _on_stateful_paths(args: list[str]) -> set[tuple[int, str, str]]:
    """``_on_every_path`` with the state kernel and the Arrow paths too."""
    from helpers import run_cdc

    said = set()
    for path in ("rows", "lines", "kernel-lines", "keyed-kernel", "state-kernel", "arrow", "arrow-state", None):
        result = run_cdc(args, env={"CDC_PATH": path} if path else {})
        if b"does not take this job" in result.stderr:
            continue
        said.add((result.returncode, result.stdout.decode(), result.stderr.decode()))
    return said


@pytest.mark.parametrize("encoding", ["dictionary", "large_string", "string_view"])
def test_an_op_column_stored_dictionary_encoded_or_large_reads_alike_on_every_path(
    tmp_path: Path, encoding: str
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    kinds = pa.array(["+I", "+I", "-U", "+U", "-D"])
    column = {
        "dictionary": kinds.dictionary_encode(),
        "large_string": kinds.cast(pa.large_string()),
        "string_view": kinds.cast(pa.string_view()),
    }[encoding]
    log = tmp_path / "log.parquet"
    pq.write_table(pa.table({"op": column, "id": [1, 2, 1, 1, 2], "v": ["a", "b", "a", "c", "b"]}), log)
    for args in (["to-changelog", log, "--stats"], ["materialize", log, "--key", "id"], ["replay", log, "--key", "id"]):
        said = _on_stateful_paths(args)
        assert len(said) == 1, (args, said)
        code, out, err = said.pop()
        assert code == 0 and out, err
    out_file = tmp_path / "out.parquet"
    for path in ("rows", None):
        result = _invoke_on(path, ["to-changelog", log, "-o", out_file])
        assert result.exit_code == 0, result.output
        assert read_parquet(out_file)[0]["op"] == "INSERT"


def test_to_changelog_of_debezium_counts_each_change_and_the_tombstone_once_on_every_path() -> None:
    from helpers import SAMPLES

    said = _on_every_path(["to-changelog", "-i", "debezium", SAMPLES / "mysql-inventory.jsonl", "--stats"])
    assert len(said) == 1, said
    code, _, err = said.pop()
    assert code == 0
    assert "wrote 9 (+I 4, -U 2, +U 2, -D 1), tombstones 1" in err  # 7 events: 4 c, 2 u (two rows each), 1 d


ESCAPED = (
    '{"op":"+I","id":1,"v":"\\u0078\\/\\ud83d\\ude00","w":"a\\\\u0078"}\n'
    '{"op":"+I","id":2,"v":"plain","w":"\\u00e9\\"\\n"}\n'
    '{"op":"-D","id":1,"v":"x/\U0001f600","w":"a\\\\u0078"}\n'
)


@pytest.mark.parametrize(
    "command",
    [
        ["to-changelog"],
        ["from-changelog", "--preset", "flink-short"],
        ["materialize", "--key", "id"],
        ["materialize"],
        ["replay", "--key", "id"],
        ["aggregate", "-g", "v", "-a", "n=COUNT(*)"],
    ],
)
def test_json_string_escapes_have_one_spelling_on_every_path(tmp_path: Path, command: list[str]) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(ESCAPED, encoding="utf-8")
    said = _on_stateful_paths([*command, log])
    assert len(said) == 1, said
    code, out, err = said.pop()
    assert code == 0, err
    assert "\\u0078" not in out.replace("\\\\u0078", "") and "\\/" not in out  # written in UTF-8, as the row path does
    if command[0] in ("to-changelog", "from-changelog", "replay"):  # row 1 is in the output
        assert "a\\\\u0078" in out  # an escaped backslash before "u0078" is text, kept


@pytest.mark.parametrize("depth", [254, 600, 1023])
def test_values_nested_up_to_the_parsers_limit_pass_on_every_path(tmp_path: Path, depth: int) -> None:
    log = tmp_path / "log.jsonl"
    value = "[" * depth + "]" * depth
    log.write_text(f'{{"op":"+I","id":1,"v":{value}}}\n{{"op":"+I","id":2,"v":1}}\n')
    for command in (["to-changelog"], ["materialize", "--key", "id"], ["materialize"], ["inspect"]):
        said = _on_stateful_paths([*command, log, "--on-error", "skip"])
        assert len(said) == 1, (command, {s[2][:200] for s in said})
        code, out, err = said.pop()
        assert code == 0 and "Traceback" not in err and "skipped" not in err, err
        if command[0] != "inspect":
            assert value in out


def test_a_value_too_deep_for_parquet_is_refused_before_a_byte_is_written(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"op":"+I","id":1,"v":' + "[" * 60 + "1" + "]" * 60 + "}\n")
    out = tmp_path / "out.parquet"
    out.write_bytes(b"old")
    for path in ("rows", None):
        result = _invoke_on(path, ["to-changelog", log, "-o", out])
        assert result.exit_code == 3 and "nested too deeply for Parquet" in result.output, result.output
        assert out.read_bytes() == b"old"
    shallow = tmp_path / "shallow.jsonl"
    shallow.write_text('{"op":"+I","id":1,"v":' + "[" * 40 + "1" + "]" * 40 + "}\n")
    assert invoke(["to-changelog", shallow, "-o", out]).exit_code == 0
    assert read_parquet(out)[0]["id"] == 1  # pyarrow reads back what was written
