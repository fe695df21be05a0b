"""The contracts a user relies on, each written as the user would meet it.

Read top to bottom, this file is the list of promises: what a notebook gets from ``import cdc``,
what a CI job gets from the ``cdc`` command. Every test names the promise it keeps.
"""

from __future__ import annotations

import inspect
import json
import pydoc
from pathlib import Path

import pytest
from helpers import SAMPLES, read_jsonl, run_cdc

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
