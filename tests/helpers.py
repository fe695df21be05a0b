"""Shared helpers: the real ``cdc`` binary, Typer's CliRunner, and format conversions for tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cdc.cli.app import build_app

app = build_app()

REPO = Path(__file__).resolve().parent.parent
# Conformance data vendored from outside the project (each folder has a PROVENANCE.md).
CONFORMANCE = REPO / "tests" / "conformance"
SAMPLES = REPO / "samples"


def cdc_executable() -> list[str]:
    exe = shutil.which("cdc", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "cdc"]


def run_cdc(
    args: Sequence[str], stdin: bytes | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The installed ``cdc`` command in a real subprocess (pipes, exit codes, no test harness);
    ``env`` adds variables (``CDC_PATH`` forces a path)."""
    return subprocess.run(
        [*cdc_executable(), *map(str, args)],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        timeout=120,
        env={**os.environ, **env} if env else None,
    )


def invoke(args: Sequence[str], stdin: bytes | str | None = None) -> Any:
    """``cdc`` in-process through Typer's CliRunner; stdout and stderr kept apart."""
    return CliRunner().invoke(app, [str(a) for a in args], input=stdin, catch_exceptions=False)


def read_jsonl(path: Path | str) -> list[dict[str, Any]]:
    # JSON lines end at "\n" only (str.splitlines would also split at U+2028 inside a string)
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]


def parse_jsonl(data: bytes | str) -> list[dict[str, Any]]:
    text = data.decode() if isinstance(data, bytes) else data
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def csv_text(value: Any) -> str | None:
    """The canonical text of a value as it stands in a CSV file (None = null)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


def write_csv(path: Path, rows: Sequence[dict[str, Any]], delimiter: str = ",") -> Path:
    """Written independently of cdc's writer: null → empty field, '' → quoted, always quote text."""
    columns = list(dict.fromkeys(k for r in rows for k in r))

    def field(v: Any) -> str:
        t = csv_text(v)
        if t is None:
            return ""
        return '"' + t.replace('"', '""') + '"'

    lines = [delimiter.join(columns)] + [delimiter.join(field(r.get(c)) for c in columns) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_csv(path: Path, delimiter: str = ",") -> list[dict[str, Any]]:
    """Read with pyarrow directly: empty unquoted → None, quoted "" → ''."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    header = path.read_text(encoding="utf-8").split("\n", 1)[0]
    names = header.split(delimiter)
    table = pacsv.read_csv(
        path,
        parse_options=pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types={n: pa.string() for n in names},
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
            null_values=[""],
        ),
    )
    return table.to_pylist()  # type: ignore[no-any-return]


def write_parquet(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(list(rows)), path)
    return path


def read_parquet(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()  # type: ignore[no-any-return]
