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


SPILL_LINES = ("cdc: materialize: past --memory-limit", "cdc: materialize: spilled ", "cdc: materialize: partition ")


def _log() -> bytes:
    """Changes over 300 keys: updates, deletes, re-inserts (a key's new place), inconsistencies
    (an insert of a live key, a -U unlike the row, a -D of an absent key), a bad line, a bad kind,
    a change without its key, a blank line."""
    rows: list[Any] = [{"op": "+I", "id": i, "v": i, "s": f"é{i}"} for i in range(300)]
    for i in range(0, 300, 3):
        rows += [{"op": "-U", "id": i, "v": i, "s": f"é{i}"}, {"op": "+U", "id": i, "v": i + 1000, "s": "u"}]
    rows += [{"op": "-D", "id": i, "v": i + 1000 if i % 3 == 0 else i, "s": "u" if i % 3 == 0 else f"é{i}"}
             for i in range(0, 300, 7)]  # fmt: skip
    rows += [{"op": "+I", "id": i, "v": -i, "s": "again"} for i in range(0, 300, 14)]
    rows += [{"op": "+I", "id": 5, "v": 55, "s": "dup"}, {"op": "-U", "id": 8, "v": 0, "s": "x"}]
    rows += [{"op": "-D", "id": 9999, "v": 0}, {"op": "-U", "id": 10, "v": 10, "s": "é10"}, {"op": "+I", "id": "10"}]
    text = [json.dumps(r, ensure_ascii=False) for r in rows]
    text[40:40] = ["not json", '{"op": "??", "id": 1}', '{"op": "+I", "v": 1}', ""]
    return ("\n".join(text) + "\n").encode()


def _cli(args: list[str], stdin: bytes | None = None) -> tuple[int, str, str]:
    result = invoke(args, stdin=stdin)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "csv"])
@pytest.mark.parametrize("policy", [[], ["--on-error", "skip"], ["--strict"], ["--on-inconsistency", "ignore"]])
def test_a_spilled_materialize_is_the_in_memory_one(tmp_path: Path, fmt: str, policy: list[str]) -> None:
    """A tiny --memory-limit forces the spill: the same table in the same order, the same
    findings at the input's lines, the same rejects, counts and exit status."""
    src = tmp_path / "log.jsonl"
    src.write_bytes(_log())
    outcomes = []
    for limit in ("64GB", "4KB"):
        out, rejects = tmp_path / f"out.{fmt}", tmp_path / "rejects.jsonl"
        for old in (out, rejects):
            old.unlink(missing_ok=True)
        extra = ["--rejects", str(rejects)] if "skip" in policy else []
        code, _, err = _cli(["materialize", "--key", "id", str(src), "-o", str(out), "--stats", "--memory-limit", limit,
                             "--temp-dir", str(tmp_path), *policy, *extra])  # fmt: skip
        spilled = "past --memory-limit" in err
        err = "\n".join(line for line in err.splitlines() if not line.startswith(SPILL_LINES))
        table = (read_parquet(out) if fmt == "parquet" else out.read_text()) if out.exists() else None
        outcomes.append((code, err, table, rejects.read_text() if rejects.exists() else None, spilled))
    (memory, spill) = outcomes
    assert not memory[-1] and spill[-1]
    assert memory[:-1] == spill[:-1]
    assert fmt != "jsonl" or memory[0] == (0 if "skip" in policy else 3)  # a bad line fails without skip
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("cdc-spill")] == []  # removed


def test_spill_keeps_first_insertion_order_and_reports_progress(tmp_path: Path) -> None:
    src = tmp_path / "log.jsonl"
    src.write_bytes(_log())
    code, out, err = _cli(["materialize", "--key", "id", "--on-error", "skip", str(src), "--memory-limit", "4KB"])
    rows = [json.loads(line) for line in out.splitlines()]
    ids = [r["id"] for r in rows]
    assert code == 0 and ids[:4] == [1, 2, 3, 4] and 0 not in ids[:150]  # 0 was deleted, then inserted again
    assert ids.index(14) > ids.index(299)  # re-inserted after the others: its new place is at the end
    assert "past --memory-limit" in err and "keys held" in err


@pytest.mark.parametrize("compress", [False, True])
def test_a_spill_on_stdin_is_the_named_files_answer(tmp_path: Path, compress: bool) -> None:
    import gzip

    src = tmp_path / "log.jsonl"
    src.write_bytes(_log())
    args = ["materialize", "--key", "id", "--on-error", "skip", "--memory-limit", "4KB"]
    named = _cli([*args, str(src)])
    piped = _cli(args, stdin=gzip.compress(_log()) if compress else _log())
    assert "past --memory-limit" in piped[2]
    assert piped[:2] == named[:2]
    small = _cli(["materialize", "--key", "id", "--on-error", "skip", "--memory-limit", "1GB"], stdin=_log())
    assert small[:2] == named[:2] and "past --memory-limit" not in small[2]  # under the limit: in memory


def test_memory_limit_is_checked(tmp_path: Path) -> None:
    src = tmp_path / "log.jsonl"
    src.write_bytes(_log())
    code, _, err = _cli(["materialize", "--key", "id", str(src), "--memory-limit", "lots"])
    assert code == 2 and "--memory-limit" in err
    code, _, err = _cli(["materialize", "--key", "id", str(src), "--temp-dir", str(tmp_path / "nope")])
    assert code == 2 and "--temp-dir" in err


@pytest.mark.parametrize("key", ["id", "s", "id,s"])
@pytest.mark.parametrize("chunk", [300, 4000])
def test_spill_partitions_clean_chunks_like_the_rest(tmp_path: Path, monkeypatch: Any, key: str, chunk: int) -> None:
    """Chunks without a bad line are partitioned from pyarrow's reading of them, the others line
    by line: a key whose changes fall in both kinds of chunk (1 and 1.0, "a" with and without an
    escape) still meets all its changes in one partition — the table is the in-memory one."""
    from cdc.formats import jsonl

    monkeypatch.setattr(jsonl, "CHUNK_BYTES", chunk)
    rows: list[str] = []
    for i in range(200):
        rows.append(json.dumps({"op": "+I", "id": i, "s": f"k{i % 50}", "v": i}))
    for i in range(0, 200, 2):
        rows.append(json.dumps({"op": "-U", "id": i, "s": f"k{i % 50}", "v": i}))
        rows.append(json.dumps({"op": "+U", "id": float(i) if i % 4 == 0 else i, "s": f"k{i % 50}", "v": -i}))
    for i in range(0, 200, 5):
        rows.append(json.dumps({"op": "-D", "id": i, "s": f"k{i % 50}", "v": -i if i % 2 == 0 else i}))
    rows.append(json.dumps({"op": "+U", "id": 7, "s": "\\u006b7", "v": 700}))  # k7, escaped
    rows.insert(150, "{bad")
    src = tmp_path / "log.jsonl"
    src.write_text("\n".join(rows) + "\n")
    args = ["materialize", "--key", key, "--on-error", "skip", "--on-inconsistency", "ignore", str(src)]
    memory = _cli(args)
    spilled = _cli([*args, "--memory-limit", "2KB", "--temp-dir", str(tmp_path)])
    assert "past --memory-limit" in spilled[2]
    assert spilled[:2] == memory[:2] and memory[0] == 0


def test_an_interrupted_spill_leaves_no_temporary_files(tmp_path: Path) -> None:
    """Ctrl-C while the changes are being spilled (stdin still open): exit 130, the output not
    written, the spill folder gone."""
    import signal
    import subprocess
    import time

    from helpers import cdc_executable

    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [*cdc_executable(), "materialize", "--key", "id", "--on-error", "skip", "--memory-limit", "4KB",
         "--temp-dir", str(tmp_path), "-o", str(out)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(_log())
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not [p for p in tmp_path.iterdir() if p.name.startswith("cdc-spill")]:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
