"""The README and the reference in docs/ are part of the product: the README's set-up commands
are what CI runs, and every `$ cdc` example of the README and of docs/*.md prints exactly what the
page shows."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

README = (REPO / "README.md").read_text()
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def console_examples() -> list[tuple[str, str, str]]:
    """(page, command, expected output) of every `$ ` line of every console block of the pages;
    an example the README shows again in docs/ runs once."""
    examples: list[tuple[str, str, str]] = []
    for page in PAGES:
        name = page.relative_to(REPO).as_posix()
        for block in re.findall(r"```console\n(.*?)```", page.read_text(), re.S):
            command, output = None, []
            for line in block.splitlines():
                if line.startswith("$ "):
                    if command is not None:
                        examples.append((name, command, "\n".join(output)))
                    command, output = line[2:], []
                else:
                    output.append(line)
            if command is not None:
                examples.append((name, command, "\n".join(output)))
    unique, seen = [], set()
    for example in examples:
        if example[1:] not in seen:
            seen.add(example[1:])
            unique.append(example)
    return unique


def test_the_docs_are_linked_from_their_index() -> None:
    index = (REPO / "docs" / "README.md").read_text()
    assert "docs/README.md" in README
    for page in PAGES[1:]:
        if page.name != "README.md":
            assert f"({page.name})" in index, f"docs/README.md does not link {page.name}"


def test_readme_opens_with_the_two_commands_ci_runs() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first_block and README.index("```bash") < README.index("##")
    install, test = first_block.group(1).strip().splitlines()
    ci = (REPO / ".ci" / "run").read_text()
    assert "python3 -m venv .venv" in install and "samples/" in install
    assert install in ci and test in ci


@pytest.mark.parametrize(("page", "command", "expected"), console_examples(), ids=lambda v: v[:60])
def test_readme_example(page: str, command: str, expected: str, tmp_path: Path) -> None:
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", COLUMNS="100")
    if command.startswith("cat "):  # reads what the previous example wrote
        subprocess.run(
            "cdc from-changelog samples/orders-bad-op.jsonl --on-error skip --rejects rejects.jsonl -o kept.jsonl",
            shell=True,
            cwd=tmp_path,
            env=env,
            capture_output=True,
        )
    # one pipe for both streams, as a terminal shows them
    result = subprocess.run(
        ["bash", "-c", command], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60
    )
    output = result.stdout.decode().replace(f"file://{tmp_path}", "file:///home/me/cdc")
    assert output.rstrip("\n") == expected.rstrip("\n"), f"{page}: {command}"


def test_readme_python_examples_run(tmp_path: Path) -> None:
    assert re.findall(r"```python\n(.*?)```", README, re.S), "the README shows the Python API"
    blocks = [block for page in PAGES for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)]
    for block in blocks:
        code = block.replace("/tmp/", f"{tmp_path}/")
        result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60)
        assert result.returncode == 0, result.stderr.decode()
