"""Scale: the keyed kernel's table written to Parquet a block at a time, and the state spilled to
disk past ``--memory-limit`` (issue #27) — each held to the in-memory row path's answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import invoke, read_parquet

from cdc.engine.paths.native.kernel import available


def _changes(later: dict[str, Any] | None) -> bytes:
    """Twenty keys inserted, some updated and deleted; ``later`` spliced into a late row."""
    out = []
    for i in range(20):
        out.append({"op": "+I", "id": i, "name": f"n{i}", "score": i * 3, "ratio": i / 4, "flag": i % 2 == 0})
    for i in range(0, 20, 3):
        old = {"id": i, "name": f"n{i}", "score": i * 3, "ratio": i / 4, "flag": i % 2 == 0}
        new = {**old, "score": i * 5, **(later if i == 15 and later is not None else {})}
        out += [{"op": "-U", **old}, {"op": "+U", **new}]
    out += [{"op": "-D", "id": 4, "name": "n4", "score": 12, "ratio": 1.0, "flag": True}]
    return "".join(json.dumps(r) + "\n" for r in out).encode()


def _parquet_or_error(tmp_path: Path, data: bytes, env: dict[str, str], monkeypatch: Any) -> Any:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.parquet"
    src.write_bytes(data)
    if out.exists():
        out.unlink()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = invoke(["materialize", "--key", "id", str(src), "-o", str(out)])
    for name in env:
        monkeypatch.delenv(name)
    if result.exit_code != 0:
        return ("error", result.stderr)
    import pyarrow.parquet as pq

    return read_parquet(out), [(f.name, str(f.type)) for f in pq.read_schema(out)]


@pytest.mark.skipif(not available(), reason="the C kernel is not built")
@pytest.mark.parametrize(
    "later",
    [None, {"score": None}, {"score": 1.5}, {"score": "x"}, {"extra": 1}, {"ratio": 7}, {"name": None},
     {"score": 10**20}, {"flag": 1}],
)  # fmt: skip
def test_kernel_table_to_parquet_in_blocks_is_the_row_paths(tmp_path: Path, monkeypatch: Any, later: Any) -> None:
    """The schema fixed by the first 4 rows, the rest read by pyarrow in blocks of 4 — or, where a
    block holds what pyarrow reads otherwise, the row path's way: the same file, or the same error."""
    from cdc.formats.parquet import io as parquet_io

    monkeypatch.setattr(parquet_io, "BATCH_ROWS", 4)
    data = _changes(later)
    fast = _parquet_or_error(tmp_path, data, {}, monkeypatch)
    rows = _parquet_or_error(tmp_path, data, {"CDC_PATH": "rows"}, monkeypatch)
    assert fast == rows
    if later is None:
        assert len(fast[0]) == 19 and fast[0][0]["id"] == 0 and fast[0][-1]["id"] == 19


@pytest.mark.parametrize("chunk", [None, 7, 100])
@pytest.mark.parametrize("compress", [None, "gzip"])
def test_stdin_read_ahead_gives_the_named_files_answer(
    tmp_path: Path, monkeypatch: Any, chunk: int | None, compress: str | None
) -> None:
    """stdin (and a compressed input) is read and decompressed on a thread ahead of the parser,
    in chunks cut at line ends: lines longer than a chunk, a BOM, a last line without a newline
    and a bad line keep their answer and their line numbers."""
    import gzip

    from cdc.formats import jsonl

    if chunk is not None:
        monkeypatch.setattr(jsonl, "CHUNK_BYTES", chunk)
    long = b'{"op":"+I","id":99,"name":"' + b"x" * 300 + b'"}\n'
    data = b"\xef\xbb\xbf" + _changes(None) + long + b'not json\n{"op":"+I","id":7}'
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    named = invoke(["materialize", "--key", "id", "--on-error", "skip", str(src)])
    piped = invoke(
        ["materialize", "--key", "id", "--on-error", "skip"], stdin=gzip.compress(data) if compress else data
    )
    assert named.exit_code == 0, named.stderr
    assert (piped.exit_code, piped.stdout) == (0, named.stdout)
    assert piped.stderr.replace("<stdin>", str(src)) == named.stderr
    assert "x" * 300 in named.stdout and ".jsonl:37:" in named.stderr  # the bad line, by its number
    gz = tmp_path / "in.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    assert invoke(["materialize", "--key", "id", "--on-error", "skip", str(gz)]).stdout == named.stdout
