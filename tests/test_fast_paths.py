"""The parallel JSONL path and the vectorized Parquet/CSV path must say exactly what the row
path says: same output bytes, same errors with the same lines, same rejects, same counts."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from helpers import invoke, parse_jsonl, read_jsonl, read_parquet, run_cdc, write_csv, write_jsonl, write_parquet

from cdc.engine import workers
from cdc.formats.jsonl import read_chunks

KINDS = ["INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"]


def big_changelog(n: int, bad_every: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(5)
    rows = []
    for i in range(n):
        row = {"id": i, "name": rng.choice(["alice", "名前", "x,y", ""]), "n": rng.random(), "op": rng.choice(KINDS)}
        if bad_every and i % bad_every == bad_every - 1:
            row["op"] = rng.choice(["UPSERT", None])
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    write_jsonl(path, big_changelog(60_000, bad_every=7919))  # ~4 MB: more than two chunks → workers
    return path


def test_big_file_takes_the_parallel_path(big_file: Path) -> None:
    with big_file.open("rb") as fh:
        assert len(list(read_chunks(fh))) > 2  # two chunks or more start the worker pool
    assert workers.parallel_ok()


def test_parallel_output_equals_the_row_path(big_file: Path, tmp_path: Path) -> None:
    rejects = tmp_path / "rejects.jsonl"
    fast = run_cdc(["from-changelog", big_file, "--on-error", "skip", "--rejects", rejects, "--stats"])
    piped = run_cdc(["from-changelog", "--on-error", "skip"], stdin=big_file.read_bytes())
    slow = invoke(["from-changelog", "--on-error", "skip", "--stats"], stdin=big_file.read_bytes())
    assert fast.returncode == 0 and piped.returncode == 0 and slow.exit_code == 0
    assert fast.stdout == piped.stdout  # the same bytes however the input is cut into chunks
    # The row path writes numbers from their parsed value (4.67e-06 becomes 4.67e-6), the chunk
    # path as they were read: the same rows either way.
    assert parse_jsonl(fast.stdout) == parse_jsonl(slow.stdout.encode())
    assert [r["line"] for r in read_jsonl(rejects)] == [i + 1 for i in range(7918, 60_000, 7919)]
    assert fast.stderr.decode().splitlines()[0] == slow.stderr.splitlines()[0]  # the same --stats line


def test_parallel_fail_names_the_same_line(big_file: Path) -> None:
    fast = run_cdc(["from-changelog", big_file])
    assert fast.returncode == 3
    assert f"{big_file}:7919: ".encode() in fast.stderr
    assert len(parse_jsonl(fast.stdout)) <= 7918  # nothing past the bad row


def test_parallel_to_changelog_round_trip(tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", big_changelog(60_000))
    changes = tmp_path / "changes.jsonl"
    assert run_cdc(["from-changelog", good, "-o", changes]).returncode == 0
    back = run_cdc(["to-changelog", changes])
    assert parse_jsonl(back.stdout) == [
        {"op": r["op"], **{k: v for k, v in r.items() if k != "op"}} for r in read_jsonl(good)
    ]


def test_parallel_debezium_equals_the_row_path(tmp_path: Path) -> None:
    rng = random.Random(3)
    events = []
    for i in range(20_000):
        row = {"id": i % 500, "v": rng.randint(0, 9), "s": "x" * rng.randint(0, 80)}
        op = rng.choice("cud")
        events.append({"before": row if op in "ud" else None, "after": row if op in "cu" else None, "op": op})
        if i % 5000 == 0:
            events.append(None)  # a tombstone
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    fast = run_cdc(["debezium-decode", path, "--stats"])
    slow = invoke(["debezium-decode", "--stats"], stdin=path.read_bytes())
    assert fast.stdout == slow.stdout.encode()
    assert "tombstones 4" in fast.stderr.decode() and "tombstones 4" in slow.stderr


def test_parquet_output_past_one_batch_keeps_every_row_once(tmp_path: Path) -> None:
    rows = [{"op": "+I", "id": i} for i in range(70_000)]  # more than one 65,536-row batch
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.parquet"
    assert run_cdc(["to-changelog", src, "-o", out]).returncode == 0
    assert [r["id"] for r in read_parquet(out)] == list(range(70_000))


def test_vectorized_parquet_equals_the_row_path(tmp_path: Path) -> None:
    rows = big_changelog(3000, bad_every=997)
    src = write_parquet(tmp_path / "in.parquet", rows)
    rejects = tmp_path / "rejects.jsonl"
    out = tmp_path / "out.parquet"
    vector = run_cdc(
        [
            "from-changelog",
            src,
            "-o",
            out,
            "--on-error",
            "skip",
            "--rejects",
            rejects,
            "--drop",
            "UPDATE_BEFORE",
            "--stats",
        ]
    )
    row_path = run_cdc(["from-changelog", src, "--on-error", "skip", "--drop", "UPDATE_BEFORE", "--stats"])
    assert vector.returncode == 0, vector.stderr
    assert read_parquet(out) == parse_jsonl(row_path.stdout)
    assert [r["line"] for r in read_jsonl(rejects)] == [997, 1994, 2991]  # Parquet: row numbers, from 1
    assert vector.stderr.splitlines()[0] == row_path.stderr.splitlines()[0]


def test_vectorized_csv_to_csv_keeps_null_and_empty(tmp_path: Path) -> None:
    rows = [{"op": "+I", "a": None, "b": ""}, {"op": "-D", "a": "x", "b": "y"}]
    src = write_csv(tmp_path / "in.csv", rows)
    out = tmp_path / "out.csv"
    assert run_cdc(["to-changelog", src, "-o", out]).returncode == 0
    back = run_cdc(["from-changelog", out])
    assert parse_jsonl(back.stdout) == rows


def test_vectorized_errors_name_the_row(tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "in.parquet", [{"op": "INSERT", "id": 1}, {"op": "NOPE", "id": 2}])
    result = run_cdc(["from-changelog", src, "-o", tmp_path / "out.parquet"])
    assert result.returncode == 3 and f"{src}: row 2: invalid op code 'NOPE'".encode() in result.stderr
    missing = run_cdc(["from-changelog", src, "--op", "nope", "-o", tmp_path / "out.parquet"])
    assert missing.returncode == 3 and b"op column 'nope' does not exist" in missing.stderr
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"a\n",
        b"no newline at the end",
        b"x" * 300 + b"\n" + b"y" * 10 + b"\n" + b"z" * 5,
        b"\n\n\n",
        b"".join(b"%d\n" % i for i in range(1000)),
    ],
)
def test_line_ranges_cover_the_file_at_line_ends(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "f"
    path.write_bytes(content)
    ranges = list(workers.line_ranges(str(path), size=64, window=16))  # lines longer than the window
    assert b"".join(content[a:b] for a, b in ranges) == content
    assert all(content[b - 1 : b] == b"\n" for _, b in ranges[:-1])
    assert all(a < b for a, b in ranges)


def test_stdin_and_gzip_take_the_chunk_pool_and_agree_with_the_file(big_file: Path, tmp_path: Path) -> None:
    import gzip

    by_file = run_cdc(["from-changelog", big_file, "--on-error", "skip"])  # workers read byte ranges
    by_stdin = run_cdc(["from-changelog", "--on-error", "skip"], stdin=big_file.read_bytes())  # chunks piped
    packed = tmp_path / "big.jsonl.gz"
    packed.write_bytes(gzip.compress(big_file.read_bytes(), compresslevel=1))
    by_gzip = run_cdc(["from-changelog", packed, "--on-error", "skip"])
    assert by_file.returncode == by_stdin.returncode == by_gzip.returncode == 0
    assert by_file.stdout == by_stdin.stdout == by_gzip.stdout
    first_line = by_file.stderr.decode().split(str(big_file))[-1]
    assert first_line.startswith(":7919: ")  # the same line numbers on every path
    assert by_stdin.stderr.decode().split("<stdin>")[-1].startswith(":7919: ")


@pytest.mark.parametrize(
    "bad_value",
    [rb'"\ud800"', rb'"\udc00 alone"', rb'"\ud800", "v": 1', b"1e400", b"-2E999", b'"\xed\xa0\x80"'],
    ids=[
        "high surrogate",
        "low surrogate",
        "surrogate under a repeated key",
        "infinite",
        "-infinite",
        "UTF-8 surrogate",
    ],
)
def test_a_bad_line_is_bad_whichever_parser_its_chunk_gets(tmp_path: Path, bad_value: bytes) -> None:
    # A 25-digit integer anywhere in a chunk sends every line of it to the exact
    # (standard-library) parser instead of orjson; the two must agree on what is JSON.
    # (materialize without --key reads rows on the general path, a chunk at a time.)
    path = tmp_path / "in.jsonl"
    for first in (b'{"op":"+I","id":1}', b'{"op":"+I","id":1234567890123456789012345}'):
        path.write_bytes(first + b'\n{"op":"+I","id":2,"v":' + bad_value + b"}\n")
        result = invoke(["materialize", path])
        assert result.exit_code == 3, (first, result.stderr)
        assert f"{path}:2: invalid".encode() in result.stderr_bytes
