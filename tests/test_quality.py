"""The code rules a reviewer would check by hand: lint, types, layering, import cost."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, SAMPLES

PACKAGES = ("core", "formats", "flink", "engine", "cli")  # the layers, lowest first
THIRD_PARTY = {"typer", "rich", "orjson", "pyarrow", "click"}


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def package_files(package: str) -> list[Path]:
    # flink/harness/ is the Flink side's test bench (PyFlink, not installed): no part of the package
    return sorted(p for p in (REPO / package).rglob("*.py") if "harness" not in p.relative_to(REPO).parts)


def test_core_has_no_third_party_imports_and_no_upward_imports() -> None:
    for path in package_files("core"):
        for name in imports_of(path):
            top = name.split(".")[0]
            assert top not in THIRD_PARTY, f"{path.name} imports {name}"
            assert not name.startswith(("cdc.formats", "cdc.flink", "cdc.engine", "cdc.cli")), (
                f"{path.name} imports {name}"
            )


def test_formats_does_not_import_the_engine_the_cli_or_its_libraries() -> None:
    # Layers point down: cli → engine → flink → formats → core. Readers and writers know no engine.
    for path in package_files("formats"):
        for name in imports_of(path):
            assert not name.startswith(("cdc.cli", "cdc.engine", "cdc.flink")), f"{path.name} imports {name}"
            assert name.split(".")[0] not in {"typer", "rich", "click"}, f"{path.name} imports {name}"


def test_the_flink_side_sits_between_the_engine_and_the_formats() -> None:
    # The script builders read specs, column types and formats; the engine calls them, handing them
    # its reader of the inputs (``flink.print_sql.Reader``) and writing a cluster's rows itself.
    files = package_files("flink")
    assert len(files) > 10  # the walk found the package
    for path in files:
        for name in imports_of(path):
            assert not name.startswith(("cdc.cli", "cdc.engine")), f"{path.name} imports {name}"
            assert name.split(".")[0] not in {"typer", "rich", "click"}, f"{path.name} imports {name}"


def test_the_cli_is_a_client_of_the_python_api() -> None:
    # A command maps its flags to one call of cdc.engine.api and renders the result: it imports
    # no path, planner, runner or sink (the API runs jobs), and builds no spec (the API does).
    for path in package_files("cli"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = (
                    [f"{node.module}.{a.name}" for a in node.names] if node.module == "cdc.engine" else [node.module]
                )
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name.startswith("cdc.engine"):
                    assert name in ("cdc.engine.api", "cdc.engine.job"), f"{path.name} imports {name}"
                assert name not in ("cdc.core.specs", "cdc.core.convert"), f"{path.name} builds a spec ({name})"


def _modules_after(args: list[str]) -> set[str]:
    code = (
        "import os, sys\n"
        f"sys.argv = ['cdc', *{args!r}]\n"
        "def _exit(code):\n    raise SystemExit(code)\n"
        "os._exit = _exit  # main() leaves with os._exit; the modules it loaded are wanted first\n"
        "from cdc.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.stdout.flush()\n"
        "sys.stderr.write('\\n'.join(sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    return set(result.stderr.decode().split("\n"))


def test_start_up_stays_light() -> None:
    # typer 0.29 coerces options through pydantic (+75 ms); the pin in pyproject keeps it out.
    loaded = _modules_after(["from-changelog", str(SAMPLES / "product-prices.jsonl"), "--op", "update_time"])
    assert "pydantic" not in loaded and "pyarrow" not in loaded


def test_help_and_jsonl_commands_do_not_import_pyarrow() -> None:
    assert not {"pyarrow"} & _modules_after(["--help"])
    jsonl = str(SAMPLES / "product-prices.jsonl")
    assert "pyarrow" not in _modules_after(["to-changelog", jsonl])
    assert "pyarrow" in _modules_after(["from-changelog", str(SAMPLES / "orders-ops.csv")])


def test_a_command_loads_only_what_it_runs(tmp_path: Path) -> None:
    # Each of these costs a Parquet or small-file run tens of milliseconds of start-up.
    loaded = _modules_after(["from-changelog", str(SAMPLES / "orders-ops.csv"), "-o", str(tmp_path / "out.parquet")])
    assert "pyarrow._parquet" in loaded  # the run did happen
    assert "pyarrow.parquet" not in loaded  # its file systems (and ssl): pyarrow._parquet directly
    assert "pyarrow.compute" not in loaded  # wrappers for 300 kernels; formats.arrow_compute calls them by name
    assert not {"cdc.cli.replay", "cdc.cli.materialize", "cdc.cli.debezium_encode"} & loaded
    changelog = _modules_after(["to-changelog", str(tmp_path / "out.parquet"), "-o", str(tmp_path / "ops.parquet")])
    assert (tmp_path / "ops.parquet").exists()
    assert "cdc.formats.debezium" not in changelog  # read only for --input-format debezium


def _tool(name: str) -> str:
    exe = shutil.which(name, path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.fail(f"{name} is not installed: install the project with its test extras (pip install -e '.[test]')")
    return exe


def test_ruff_is_clean() -> None:
    check = subprocess.run([_tool("ruff"), "check", "."], cwd=REPO, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    fmt = subprocess.run([_tool("ruff"), "format", "--check", "."], cwd=REPO, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout


def test_mypy_strict_is_clean(tmp_path: Path) -> None:
    # The package maps cdc → the repository root; a symlink gives mypy that name to follow.
    (tmp_path / "cdc").symlink_to(REPO, target_is_directory=True)
    env = dict(os.environ, MYPYPATH=str(tmp_path))
    packages = [arg for package in PACKAGES for arg in ("-p", f"cdc.{package}")]
    args = [_tool("mypy"), *packages, "-m", "cdc"]
    result = subprocess.run(args, cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout


def test_the_engine_does_not_import_the_cli() -> None:
    for path in package_files("engine"):
        for name in imports_of(path):
            assert not name.startswith("cdc.cli"), f"{path.name} imports {name}"
            assert name.split(".")[0] not in {"typer", "click"}, f"{path.name} imports {name}"


def test_behaviour_is_found_through_tables_not_type_switches() -> None:
    # A command's behaviour on a path is its entry in the path's COMMANDS (engine/commands.py):
    # a switch on the spec's type would be a twelfth place a new command or field must be added.
    sites = [
        f"{path.relative_to(REPO)}:{number}"
        for package in ("flink", "engine", "cli")
        for path in package_files(package)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "isinstance(spec" in line or "isinstance(job.spec" in line or "isinstance(self.spec" in line
    ]
    assert sites == []


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("cdc", *parts))


def _import_graph() -> dict[str, set[str]]:
    """Module → the cdc modules it imports, at module level or inside functions."""
    files = {_module_name(p): p for package in PACKAGES for p in package_files(package)}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def test_no_import_circles() -> None:
    graph = _import_graph()
    assert len(graph) > 50  # the walk found the package
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(name: str, trail: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                circles.append([*trail[trail.index(target) :], target])
            elif target not in state:
                walk(target, [*trail, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])
    assert circles == []
