"""The contracts a user relies on, each written as the user would meet it.

Read top to bottom, this file is the list of promises: what a notebook gets from ``import cdc``,
what a CI job gets from the ``cdc`` command. Every test names the promise it keeps.
"""

from __future__ import annotations

import inspect
import json
import os
import pydoc
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import SAMPLES, cdc_executable, read_jsonl, run_cdc

import cdc

# ---------------------------------------------------------------------------------------------
# The Python API is a real library
# ---------------------------------------------------------------------------------------------

FUNCTIONS = (
    "from_changelog",
    "to_changelog",
    "decode",
    "debezium_decode",
    "debezium_encode",
    "materialize",
    "replay",
    "replay_steps",
    "aggregate",
    "inspect",
    "read",
)
CHANGES = [
    {"op": "+I", "id": 1, "name": "alice"},
    {"op": "+I", "id": 2, "name": "bob"},
    {"op": "-U", "id": 1, "name": "alice"},
    {"op": "+U", "id": 1, "name": "alicia"},
]
TABLE = [{"id": 1, "name": "alicia"}, {"id": 2, "name": "bob"}]


def test_a_misspelt_keyword_is_a_type_error_not_ignored() -> None:
    with pytest.raises(TypeError, match="kee"):
        cdc.materialize(CHANGES, kee="id")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        cdc.from_changelog([{"op": "INSERT", "id": 1}], preset_name="debezium")  # type: ignore[call-arg]


def test_everything_after_the_source_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        cdc.materialize(CHANGES, "id")  # type: ignore[misc]


def test_the_signatures_show_the_options_an_ide_completes() -> None:
    params = inspect.signature(cdc.materialize).parameters
    assert {"key", "on_inconsistency", "strict", "as_of", "time_column", "expect", "output", "on_error"} <= set(params)
    assert params["on_inconsistency"].default == "warn"
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in params.values())


def test_dir_and_help_list_the_functions() -> None:
    listed = dir(cdc)
    assert set(FUNCTIONS) <= set(listed)
    assert {"Result", "ExpectationFailed", "InputError", "UsageError"} <= set(listed)
    text = pydoc.render_doc(cdc, renderer=pydoc.plaintext)
    for name in FUNCTIONS:
        assert f"{name}(" in text, f"help(cdc) does not document {name}"


def test_key_is_a_comma_list_or_a_list() -> None:
    assert cdc.materialize(CHANGES, key="id").rows == TABLE
    assert cdc.materialize(CHANGES, key=["id"]).rows == TABLE
    two = [{"op": "+I", "a": 1, "b": 1}, {"op": "+I", "a": 1, "b": 2}, {"op": "-D", "a": 1, "b": 1}]
    assert cdc.materialize(two, key="a, b").rows == cdc.materialize(two, key=["a", "b"]).rows == [{"a": 1, "b": 2}]


def test_op_mapping_takes_a_dict() -> None:
    rows = [{"__op": "c", "id": 1}, {"__op": "r", "id": 2}, {"__op": "d", "id": 1}]
    mapping = {"c, r": "INSERT", "d": "DELETE"}
    result = cdc.from_changelog(rows, op="__op", op_mapping=mapping)
    assert result.rows == [{"op": "+I", "id": 1}, {"op": "+I", "id": 2}, {"op": "-D", "id": 1}]
    # the same as the command's text form
    assert cdc.from_changelog(rows, op="__op", op_mapping=["c, r=INSERT", "d=DELETE"]).rows == result.rows
    flags = cdc.to_changelog(result.rows, op="deleted", op_mapping={"INSERT, UPDATE_AFTER": "false", "DELETE": "true"})
    assert [r["deleted"] for r in flags.rows or []] == ["false", "false", "true"]


def test_a_bad_choice_is_a_usage_error_naming_the_choices() -> None:
    with pytest.raises(cdc.UsageError, match="fail, skip"):
        cdc.from_changelog([{"op": "INSERT"}], on_error="skp")
    with pytest.raises(cdc.UsageError, match="retract, upsert"):
        cdc.replay(CHANGES, key="id", emit="upsrt")


def test_expect_with_a_differing_table_gives_ok_false_and_the_differences() -> None:
    expected = [{"id": 1, "name": "alice"}, {"id": 3, "name": "carol"}]
    result = cdc.materialize(CHANGES, key="id", expect=expected)
    assert result.ok is False
    diff = result.differences
    assert [(c.key, c.columns) for c in diff.changed] == [("id=1", ["name"])]
    assert diff.only_in_result == [{"id": 2, "name": "bob"}]
    assert diff.only_in_expected == [{"id": 3, "name": "carol"}]
    assert result.rows == TABLE  # the table itself is still there


def test_check_raises_expectation_failed_with_the_differences() -> None:
    result = cdc.materialize(CHANGES, key="id", expect=[{"id": 1, "name": "alice"}])
    with pytest.raises(cdc.ExpectationFailed, match="differs") as failed:
        result.check()
    assert failed.value.differences is result.differences
    assert isinstance(failed.value, cdc.CdcError) and failed.value.exit_code == 1
    with pytest.raises(cdc.ExpectationFailed):
        result.raise_for_diff()


def test_expect_with_an_equal_table_is_ok(tmp_path: Path) -> None:
    expected = tmp_path / "expected.csv"
    expected.write_text("id,name\n1,alicia\n2,bob\n")
    result = cdc.materialize(CHANGES, key="id", expect=expected)
    assert result.ok and result.differences.equal
    assert result.check() is result
    assert cdc.materialize(CHANGES, key="id").differences is None  # no expectation, nothing compared


def test_expect_names_a_missing_file_as_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(cdc.UsageError, match="does not exist"):
        cdc.materialize(CHANGES, key="id", expect=tmp_path / "nope.csv")


def test_expect_and_output_write_the_table_and_compare_it(tmp_path: Path) -> None:
    out = tmp_path / "table.jsonl"
    result = cdc.materialize(CHANGES, key="id", expect=TABLE, output=out)
    assert result.ok and result.rows is None
    assert read_jsonl(out) == TABLE


def test_results_are_documented_types() -> None:
    doc = cdc.Result.__doc__ or ""
    for field in ("rows", "path", "counts", "skipped", "findings", "differences", "ok", "report", "sql"):
        assert f"``{field}``" in doc, field
    result = cdc.from_changelog([{"op": "INSERT", "id": 1}, {"op": "BAD", "id": 2}], on_error="skip")
    assert isinstance(result, cdc.Result)
    assert result.rows == [{"op": "+I", "id": 1}] and result.skipped == 1 and result.path


def test_inspect_returns_its_report_as_the_command_prints_it() -> None:
    path = SAMPLES / "product-prices.jsonl"
    result = cdc.inspect(path, key="product_id")
    printed = json.loads(run_cdc(["inspect", path, "--key", "product_id", "--json"]).stdout)
    assert result.report == printed
    assert result.findings.total == printed["consistency"]["inconsistent_changes"]


def test_print_sql_returns_the_script_and_runs_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    source = SAMPLES / "flat-cdc.jsonl"
    result = cdc.from_changelog(source, preset="debezium", key="id", flink_version="2.4", print_sql=True, output=out)
    assert result.sql is not None and "FROM_CHANGELOG" in result.sql
    printed = run_cdc(
        ["from-changelog", source, "--preset", "debezium", "--key", "id", "--flink-version", "2.4", "--print-sql"]
    )
    assert result.sql == printed.stdout.decode()
    assert not out.exists()


def test_replay_steps_yields_the_state_after_each_change() -> None:
    # what `cdc replay --live` draws: the change, the rows it emitted, the table after it
    steps = []
    for step in cdc.replay_steps(CHANGES, key="id"):
        steps.append((step.kind, step.key, step.emitted, list(step.rows())))
    assert steps[0] == ("+I", 1, [("+I", {"id": 1, "name": "alice"})], [{"id": 1, "name": "alice"}])
    assert steps[1][:2] == ("+I", 2) and steps[1][3] == [{"id": 1, "name": "alice"}, {"id": 2, "name": "bob"}]
    update = [("-U", {"id": 1, "name": "alice"}), ("+U", {"id": 1, "name": "alicia"})]
    assert steps[2] == ("+U", 1, update, TABLE)
    assert len(steps) == 3


# ---------------------------------------------------------------------------------------------
# Contracts of the command line
# ---------------------------------------------------------------------------------------------

NUMBERS = b'{"op":"+I","id":1,"ts":1700000000000}\n{"op":"+I","id":2,"ts":1700000005000}\n'


def _rows(result: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.decode().splitlines() if line.strip()]


def _ids(args: list[Any], stdin: bytes | None = None) -> list[Any]:
    result = run_cdc(args, stdin=stdin)
    assert result.returncode == 0, result.stderr
    return [row["id"] for row in _rows(result)]


def test_time_bounds_are_read_as_the_time_columns_type() -> None:
    # epoch milliseconds against ISO instants (zoned, naive = UTC, a date), either way round
    base = ["materialize", "--key", "id", "--time-column", "ts", "--as-of"]
    assert _ids([*base, "2023-11-14T22:13:21Z"], NUMBERS) == [1]
    assert _ids([*base, "2023-11-14T22:13:21"], NUMBERS) == [1]
    assert _ids([*base, "2023-11-14T23:13:21+01:00"], NUMBERS) == [1]
    assert _ids([*base, "2023-11-15"], NUMBERS) == [1, 2]
    assert _ids([*base, "1700000000000"], NUMBERS) == [1]
    iso = b'{"op":"+I","id":1,"ts":"2023-11-14T22:13:20Z"}\n{"op":"+I","id":2,"ts":"2023-11-14T22:13:25Z"}\n'
    assert _ids([*base, "1700000001000"], iso) == [1]  # a number against ISO instants: epoch ms
    assert _ids([*base, "1700000001"], iso) == [1]  # below 1e11: seconds


def test_a_time_bound_that_cannot_be_read_as_the_column_is_a_usage_error_naming_both() -> None:
    for option in ("--as-of", "--since", "--until"):
        command = "materialize" if option == "--as-of" else "replay"
        result = run_cdc([command, "--key", "id", "--time-column", "ts", option, "banana"], stdin=NUMBERS)
        assert result.returncode == 2, result.stderr
        err = result.stderr.decode()
        assert option in err and '"banana"' in err and "'ts'" in err and "epoch numbers" in err


def test_a_bound_before_every_change_gives_an_empty_answer() -> None:
    assert _ids(["materialize", "--key", "id", "--time-column", "ts", "--as-of", "2000-01-01"], NUMBERS) == []
    assert _ids(["materialize", "--time-column", "ts", "--as-of", "0"], NUMBERS) == []
    assert _ids(["replay", "--key", "id", "--time-column", "ts", "--until", "1999-12-31T23:59:59Z"], NUMBERS) == []


def test_as_of_over_a_rows_own_time_column_is_the_table_as_it_stood_then(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(run_cdc(["debezium-decode", SAMPLES / "mysql-inventory.jsonl"]).stdout)
    # updated_at: -U and -D carry the old version's time; 101 and 103 changed after 10:10, 102 was deleted last
    for path in ("rows", None):
        env = {"CDC_PATH": path} if path else {}
        at = run_cdc(
            ["materialize", log, "--key", "id", "--as-of", "2024-06-01T10:10:00", "--time-column", "updated_at"],
            env=env,
        )
        table = {row["id"]: row for row in _rows(at)}
        assert sorted(table) == [101, 102, 103, 104], at.stderr
        assert table[101]["stock"] == 12 and table[103]["stock"] == 0  # the versions of 10:00, not the later ones
        end = run_cdc(
            ["materialize", log, "--key", "id", "--as-of", "2024-06-01T23:00:00", "--time-column", "updated_at"],
            env=env,
        )
        assert _rows(end) == _rows(run_cdc(["materialize", log, "--key", "id"]))  # after everything: the final table


def test_aggregate_warns_when_a_changelog_is_an_upsert_stream_and_fails_under_fail() -> None:
    upserts = b'{"op":"+I","id":1,"g":"a","v":1}\n{"op":"+U","id":1,"g":"a","v":2}\n'
    warned = run_cdc(["aggregate", "-g", "g", "-a", "s=SUM(v)"], stdin=upserts)
    assert warned.returncode == 0 and b"--input-mode upsert --key" in warned.stderr and b"<stdin>:2" in warned.stderr
    failed = run_cdc(["aggregate", "-g", "g", "-a", "s=SUM(v)", "--on-inconsistency", "fail"], stdin=upserts)
    assert failed.returncode == 3 and b"--input-mode upsert --key" in failed.stderr
    retract = b'{"op":"+I","id":1,"g":"a","v":1}\n{"op":"-U","id":1,"g":"a","v":1}\n{"op":"+U","id":1,"g":"a","v":2}\n'
    assert b"upsert" not in run_cdc(["aggregate", "-g", "g", "-a", "s=SUM(v)"], stdin=retract).stderr


def test_where_given_twice_keeps_the_rows_where_both_hold() -> None:
    rows = b'{"op":"+I","id":1,"v":5}\n{"op":"+I","id":2,"v":5}\n{"op":"+I","id":3,"v":7}\n'
    result = run_cdc(["aggregate", "-a", "n=COUNT(*)", "--where", "v = 5", "--where", "id > 1"], stdin=rows)
    assert _rows(result) == [{"op": "+I", "n": 1}], result.stderr


def test_an_option_of_one_value_given_twice_is_a_usage_error() -> None:
    result = run_cdc(["materialize", "--key", "id", "--time-column", "ts", "--as-of", "1", "--as-of=2"], stdin=NUMBERS)
    assert result.returncode == 2 and b"--as-of given twice" in result.stderr


def _interrupt(args: list[Any], cwd: Path, delay: float) -> subprocess.CompletedProcess[bytes]:
    process = subprocess.Popen(
        [*cdc_executable(), *map(str, args)], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    return subprocess.CompletedProcess(args, process.returncode, out, err)


@pytest.mark.parametrize("command", [["to-changelog"], ["materialize", "--key", "id"], ["replay", "--key", "id"]])
def test_ctrl_c_ends_with_130_one_line_and_the_old_output_untouched(tmp_path: Path, command: list[str]) -> None:
    big = tmp_path / "big.jsonl"
    big.write_text("".join(f'{{"op":"+I","id":{i},"name":"name {i}","v":{i}.5}}\n' for i in range(400_000)))
    for delay, out_name in ((0.05, "out.jsonl"), (0.6, "out.parquet"), (1.5, "out.csv")):
        out = tmp_path / out_name
        out.write_bytes(b"old\n")
        before = set(tmp_path.iterdir())
        done = _interrupt([*command, big, "-o", out], tmp_path, delay)
        if done.returncode == 0:  # the run ended before the signal came: nothing to interrupt
            continue
        assert done.returncode in (130, -signal.SIGINT), done.stderr
        if b"Traceback" in done.stderr:  # only the interpreter's own start-up, before any cdc code
            assert b"cdc" not in done.stderr.split(b"KeyboardInterrupt")[0].split(b"\n")[-3], done.stderr
            continue
        assert len(done.stderr.splitlines()) <= 1, done.stderr
        assert out.read_bytes() == b"old\n" and set(tmp_path.iterdir()) == before


@pytest.mark.parametrize("fmt", ["table", "print", "jsonl", "csv"])
def test_a_reader_that_goes_away_ends_cdc_quietly_with_0(tmp_path: Path, fmt: str) -> None:
    big = tmp_path / "big.jsonl"
    big.write_text("".join(f'{{"op":"+I","id":{i},"v":"{"x" * 50}"}}\n' for i in range(60_000)))
    shell = f"{' '.join(cdc_executable())} to-changelog {big} -f {fmt} | head -1 > /dev/null; echo ${{PIPESTATUS[0]}}"
    result = subprocess.run(["bash", "-c", shell], capture_output=True, timeout=120)
    assert result.stdout.strip() == b"0" and result.stderr == b"", result.stderr


def _hints_in_code() -> set[str]:
    """Every hint text written in the code (``hint=`` literals), joined across lines."""
    import re

    texts = set()
    for source in Path(cdc.__file__).parent.rglob("*.py"):
        if ".venv" in source.parts or "tests" in source.parts:
            continue
        code = source.read_text(encoding="utf-8")
        for match in re.finditer(r'hint=((?:\s*f?"(?:[^"\\]|\\.)*"\s*)+)', code):
            texts.add("".join(re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(1))))
    return texts


def test_a_hint_names_only_options_of_the_command_at_hand() -> None:
    import re

    from cdc.cli.app import command_options
    from cdc.cli.errors import command_hint

    options = command_options()
    hints = [h for h in _hints_in_code() if "--" in h]
    assert len(hints) > 20
    for hint in hints:
        for name, own in options.items():
            said = command_hint(hint, name, own)
            for option in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", said.split(" (--")[0]):
                assert option in own or f"{option} is " in said, (name, hint)
    # and as people meet it
    truncate = b'{"op":"t","source":{"table":"x"},"ts_ms":1}\n'
    result = run_cdc(["materialize", "-i", "debezium", "--key", "id"], stdin=truncate)
    assert b"--on-truncate is an option of cdc decode, cdc debezium-decode, not of cdc materialize" in result.stderr
    result = run_cdc(["to-changelog", "-i", "debezium", SAMPLES / "postgres-default-identity.jsonl"])
    assert b"not of cdc to-changelog" in result.stderr


def test_o_dev_null_and_a_fifo_take_the_format_of_f_or_the_input(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(NUMBERS)
    assert run_cdc(["to-changelog", log, "-o", "/dev/null"]).returncode == 0
    assert run_cdc(["to-changelog", log, "-o", "/dev/null", "-f", "parquet"]).returncode == 0
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    assert run_cdc(["to-changelog", log, "-o", fifo]).returncode == 0
    assert [json.loads(line)["op"] for line in reader.communicate(timeout=30)[0].splitlines()] == ["INSERT", "INSERT"]


def test_findings_spell_values_as_json_does() -> None:
    log = b'{"op":"+I","id":1,"v":null}\n{"op":"-U","id":1,"v":true}\n{"op":"+U","id":1,"v":"s"}\n'
    err = run_cdc(["materialize", "--key", "id"], stdin=log).stderr.decode()
    assert "stored null, got true" in err and "None" not in err and "True" not in err
    mixed = b'{"op":"+I","id":1,"v":1}\n{"op":"+I","id":2,"v":"x"}\n'
    err = run_cdc(["to-changelog", "-o", "/dev/stdout", "-f", "parquet"], stdin=mixed).stderr.decode()
    assert 'text "x"' in err


def test_random_bytes_are_not_taken_for_csv(tmp_path: Path) -> None:
    noise = bytes(range(256)) * 8 + b",\t,\n" + os.urandom(2000)
    result = run_cdc(["inspect"], stdin=noise)
    assert result.returncode == 3 and b"looks like CSV" not in result.stderr and b"looks like TSV" not in result.stderr
    assert b"not text" in result.stderr


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_a_misfit_row_read_from_stdin_names_stdin_and_its_line(tmp_path: Path, fmt: str) -> None:
    misfit = b'{"op":"+I","id":1,"v":1}\n{"op":"+I","id":2,"v":"x","w":1}\n'
    result = run_cdc(["to-changelog", "-o", tmp_path / f"out.{fmt}"], stdin=misfit)
    if fmt == "jsonl":  # JSON lines hold any row: nothing to refuse
        assert result.returncode == 0
        return
    assert result.returncode == 3 and b"<stdin>:2:" in result.stderr, result.stderr


def test_inspect_strict_exits_3_on_findings_after_the_report() -> None:
    absent = b'{"op":"-D","id":1}\n'
    result = run_cdc(["inspect", "--key", "id", "--strict"], stdin=absent)
    assert result.returncode == 3 and b"findings:" in result.stdout and b"--strict" in result.stderr
    assert run_cdc(["inspect", "--key", "id", "--strict"], stdin=NUMBERS).returncode == 0
    with pytest.raises(cdc.InconsistencyError):
        cdc.inspect([{"op": "-D", "id": 1}], key="id", strict=True)


def test_a_csv_row_that_is_not_utf8_is_named_by_its_line_never_a_traceback(tmp_path: Path) -> None:
    for body in (b"+I,1,\xff\xfe,3\n+I,2,x\n", b"+I,1,\xff\xfe\n+I,2,x\n"):  # ragged, and not
        log = tmp_path / "log.csv"
        log.write_bytes(b"op,id,v\n" + body)
        result = run_cdc(["to-changelog", log, "--on-error", "skip"])
        assert b"Traceback" not in result.stderr and b"Exception ignored" not in result.stderr, result.stderr
        assert f"{log}:2: invalid UTF-8".encode() in result.stderr
