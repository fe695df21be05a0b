"""Fuzzing every reader and command with random bytes and random JSON: the exit code is 0 or 3,
there is never a traceback, and with --on-error skip every record is accounted for."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cdc.cli.app import build_app

app = build_app()

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KIND_WORDS = ["+I", "-U", "+U", "-D", "INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE", "c", "u", "d", "r", "t", "m"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=6),
    st.sampled_from(KIND_WORDS),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=6,
)
rows = st.dictionaries(
    st.sampled_from(["op", "id", "name", "v", "before", "after", "payload", "schema"]), values, max_size=5
)
lines = st.lists(
    st.one_of(
        rows.map(json.dumps), st.binary(max_size=20).map(lambda b: b.decode("latin-1")), st.just(""), st.just("null")
    ),
    max_size=12,
)

COMMANDS = [
    ["from-changelog"],
    ["to-changelog"],
    ["debezium-decode"],
    ["debezium-decode", "--key", "id"],
    ["materialize", "--key", "id"],
    ["materialize"],
    ["replay", "--key", "id"],
    ["inspect", "--key", "id"],
    ["debezium-encode"],
    ["to-changelog", "--input-format", "debezium"],
]


def invoke(args: list[str], data: bytes) -> Any:
    return CliRunner().invoke(app, args, input=data, catch_exceptions=False)


def assert_clean(result: Any) -> None:
    assert result.exit_code in (0, 3), (result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr


@SETTINGS
@given(st.binary(max_size=300), st.sampled_from(COMMANDS))
def test_random_bytes_never_crash(data: bytes, command: list[str]) -> None:
    assert_clean(invoke(command, data))


@SETTINGS
@given(lines, st.sampled_from(COMMANDS), st.booleans())
def test_random_json_lines_never_crash(text: list[str], command: list[str], as_file: bool) -> None:
    data = ("\n".join(text) + "\n").encode("utf-8", "surrogatepass")
    if as_file:  # a file takes the chunked fast path for stateless commands
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "in.jsonl"
            path.write_bytes(data)
            assert_clean(CliRunner().invoke(app, [command[0], str(path), *command[1:]], catch_exceptions=False))
    else:
        assert_clean(invoke(command, data))


STATS = re.compile(r"read (\d+), wrote (\d+)(?: \([^)]*\))?(?:, dropped (\d+))?(?:, skipped (\d+))?")


@SETTINGS
@given(lines, st.sampled_from(["from-changelog", "to-changelog"]), st.booleans())
def test_skip_accounts_for_every_record(text: list[str], command: str, as_file: bool) -> None:
    data = ("\n".join(text) + "\n").encode("utf-8", "surrogatepass")
    with tempfile.TemporaryDirectory() as tmp:
        rejects = Path(tmp) / "rejects.jsonl"
        args = [command, "--on-error", "skip", "--rejects", str(rejects), "--stats"]
        if as_file:
            path = Path(tmp) / "in.jsonl"
            path.write_bytes(data)
            result = CliRunner().invoke(app, [command, str(path), *args[1:]], catch_exceptions=False)
        else:
            result = invoke(args, data)
        if command == "from-changelog" and "not a flattened row" in result.stderr:
            # A change event where flattened rows belong: the input is refused as a whole.
            assert result.exit_code == 3 and result.stdout == "", result.stderr
            return
        assert result.exit_code == 0, result.stderr
        match = STATS.search(result.stderr)
        assert match, result.stderr
        read, written, dropped, skipped = (int(g or 0) for g in match.groups())
        nonblank = sum(1 for line in data.split(b"\n") if line.strip())
        assert read == nonblank
        assert written + dropped + skipped == read
        assert written == sum(1 for line in result.stdout.split("\n") if line.strip())
        rejected = [json.loads(line) for line in rejects.read_text().split("\n") if line] if rejects.exists() else []
        assert len(rejected) == skipped
