"""Every option of every command reaches the Python API under the same name.

The commands are clients of ``cdc.engine.api``: a flag the API does not take would be a flag the
library cannot set (or, worse, a spec built a second way). This walks the Typer commands as
click sees them and the API's signatures, and fails on any difference either way. The API's
behaviour (unknown keywords, dict op_mapping, expect=) is held in tests/test_contracts.py.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable
from typing import Any

import pytest
import typer
import typer.main

from cdc.cli.app import COMMANDS, build_app
from cdc.engine import api

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "from-changelog": api.from_changelog,
    "to-changelog": api.to_changelog,
    "decode": api.decode,
    "debezium-decode": api.debezium_decode,
    "debezium-encode": api.debezium_encode,
    "materialize": api.materialize,
    "replay": api.replay,
    "aggregate": api.aggregate,
    "inspect": api.inspect,
}

# Command options that only change how a result is shown, with the reason they have no keyword.
RENDERING = {
    "inputs": "the input files are the API's positional source",
    "stats": "prints the result's counts (result.counts, result.read) as a line on stderr",
    "verbose": "shows a traceback with an error message; the API raises the error itself",
    "as_json": "inspect --json prints result.report as JSON instead of as text",
    "live": "replay --live draws cdc.replay_steps(...) (same keywords) instead of calling cdc.replay",
    "delay": "replay --live: the drawing's pace between steps",
}
# Keywords whose default differs between the flag and the function, with the reason.
DEFAULTS_DIFFER = {
    "output": "the command writes to stdout ('-'); the function collects the rows in result.rows (None)",
}


def _commands() -> dict[str, Any]:
    """The commands as click (vendored by Typer) parses them: their ``params`` are the options."""
    group: Any = typer.main.get_command(build_app())
    return dict(group.commands)


def _keywords(function: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    params = list(inspect.signature(function).parameters.values())
    return {p.name: p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def test_every_command_has_its_function() -> None:
    assert set(FUNCTIONS) == set(COMMANDS) == set(_commands())


def differences(options: set[str], function: Callable[..., Any]) -> list[str]:
    """What keeps a command's options and its function's keywords from matching."""
    keywords = set(_keywords(function))
    missing = [f"no keyword for --{o.replace('_', '-')}" for o in sorted(options - set(RENDERING) - keywords)]
    extra = [f"no option for {k}=" for k in sorted(keywords - options)]
    return missing + extra


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_option_of_a_command_is_a_keyword_of_its_function(name: str) -> None:
    options = {p.name for p in _commands()[name].params if p.name is not None}
    assert differences(options, FUNCTIONS[name]) == [], f"cdc {name} and cdc.{FUNCTIONS[name].__name__} differ"


def test_the_walk_sees_an_option_the_api_lacks() -> None:
    # The check itself, on purpose: a flag added to a command without its keyword must fail it.
    options = {p.name for p in _commands()["materialize"].params if p.name is not None}
    assert differences(options | {"frobnicate_rows"}, api.materialize) == ["no keyword for --frobnicate-rows"]
    assert differences(options - {"dedup"}, api.materialize) == ["no option for dedup="]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_an_option_and_its_keyword_default_to_the_same(name: str) -> None:
    keywords = _keywords(FUNCTIONS[name])
    for param in _commands()[name].params:
        if param.name in keywords and param.name not in DEFAULTS_DIFFER:
            flag, function = _plain(param.default), _plain(keywords[param.name].default)
            if flag is None or flag == () or flag == []:  # a repeatable flag not given: the keyword's empty value
                assert function in (None, (), []), (name, param.name, flag, function)
            else:
                assert flag == function, f"cdc {name} {param.name}: the flag defaults to {flag!r}, the API {function!r}"


@pytest.mark.parametrize("function", [*FUNCTIONS.values(), api.replay_steps, api.read])
def test_every_function_takes_a_source_then_keywords_only(function: Callable[..., Any]) -> None:
    first, *rest = inspect.signature(function).parameters.values()
    assert first.name == "source" and first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert rest and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in rest), function.__name__
    assert function.__doc__, function.__name__


def test_replay_steps_takes_what_replay_reads() -> None:
    # --live draws cdc.replay_steps: every replay keyword that is not about the output reaches it.
    not_read = {"output", "output_format", "columns", "progress", "print_sql", "on_flink"} | {
        "flink_version",
        "sql_source",
        "sql_sink",
        "topic",
        "sink_topic",
        "bootstrap_servers",
        "sink_path",
    }
    assert set(_keywords(api.replay_steps)) == set(_keywords(api.replay)) - not_read


def test_the_rendering_list_names_only_options_that_exist() -> None:
    # A reason kept for an option that is gone would hide the next option of that name.
    options = {p.name for command in _commands().values() for p in command.params}
    assert set(RENDERING) <= options
