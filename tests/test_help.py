"""Every command's --help: an example for each, every example runs as printed, and at 80
columns no example is broken inside an argument (they are copied into terminals)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

from cdc.cli.app import COMMANDS


def help_text(command: str, columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "cdc", command, "--help"], capture_output=True, env=env
    ).stdout.decode()


def examples(command: str) -> list[str]:
    """The examples of a command's --help, continuation lines joined."""
    text = help_text(command, 200)
    block = text.split("Examples", 1)[1].split("╭", 1)[0]
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    joined: list[str] = []
    for line in lines:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1].rstrip() + " " + line
        else:
            joined.append(line)
    return joined


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_has_examples_that_fit_80_columns(command: str) -> None:
    found = examples(command)
    assert found and all(e.startswith("cdc ") for e in found), found
    narrow = help_text(command, 80)
    assert max(len(line) for line in narrow.splitlines()) <= 80
    # At 80 columns each example line is the line itself: none wraps inside an argument.
    wide = help_text(command, 200).split("Examples", 1)[1].split("╭", 1)[0]
    block = narrow.split("Examples", 1)[1].split("╭", 1)[0]
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    assert lines == [line.strip() for line in wide.splitlines() if line.strip()]
    # Copied as printed, a line ending in `\` must end there: padding after it would make the
    # shell read an escaped space and run the next line as a command of its own.
    assert [line for line in narrow.splitlines() if line != line.rstrip()] == []


ALL = [(command, example) for command in COMMANDS for example in examples(command)]


@pytest.mark.parametrize(("command", "example"), ALL, ids=[e for _, e in ALL])
def test_every_example_runs_as_printed(command: str, example: str, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    script = "set -o pipefail; " + re.sub(r"/tmp/", f"{tmp_path}/", example)
    result = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, env=env, timeout=120)
    expected = 1 if "--expect" in example else 0  # the bundled expectation differs, on purpose
    assert result.returncode == expected, result.stderr.decode()
    assert b"Traceback" not in result.stderr
    assert result.stdout or list(tmp_path.iterdir()), "an example that prints nothing and writes nothing"
