"""The bad-input corpus (tests/corpus/cases.json): each case's exit code and FILE:LINE message,
never a traceback; record-level problems are skippable with every record accounted for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import read_jsonl, run_cdc

CORPUS = Path(__file__).parent / "corpus"
CASES: list[dict[str, Any]] = json.loads((CORPUS / "cases.json").read_text())


def case_id(case: dict[str, Any]) -> str:
    return f"{case['file']}-{'-'.join(a for a in case['command'] if not a.startswith('{'))}"


def args_of(case: dict[str, Any], tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in case["command"]]


def test_every_corpus_file_has_a_case() -> None:
    named = {c["file"] for c in CASES}
    assert named == {p.name for p in CORPUS.iterdir() if p.name != "cases.json"}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_corpus_case(case: dict[str, Any], tmp_path: Path) -> None:
    path = CORPUS / case["file"]
    result = run_cdc([*args_of(case, tmp_path)[:1], path, *args_of(case, tmp_path)[1:]])
    err = result.stderr.decode()
    assert result.returncode == case["exit"], err
    assert "Traceback" not in err
    if case["exit"]:
        assert err.startswith(f"cdc: error: {path}"), err
        assert case["message"] in err, err
        assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("case", [c for c in CASES if c.get("skippable")], ids=case_id)
def test_corpus_case_skipped_and_accounted_for(case: dict[str, Any], tmp_path: Path) -> None:
    path = CORPUS / case["file"]
    rejects = tmp_path / "rejects.jsonl"
    args = args_of(case, tmp_path)
    result = run_cdc([args[0], path, *args[1:], "--on-error", "skip", "--rejects", rejects])
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert "Traceback" not in err
    rejected = read_jsonl(rejects)
    assert rejected, "the bad record must be in the rejects file"
    assert case["message"].split(": ", 1)[-1][:20] in rejected[0]["error"] or case["message"] in err
    assert f"skipped {len(rejected)} bad record(s)" in err


def test_a_100_mb_line(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    with big.open("wb") as fh:
        fh.write(b'{"op": "INSERT", "id": 1, "blob": "' + b"x" * (100 << 20) + b'"}\n')
        fh.write(b'{"op": "DELETE", "id": 1, "blob": ""}\n')
    result = run_cdc(["from-changelog", big, "-o", tmp_path / "out.jsonl", "--stats"])
    assert result.returncode == 0, result.stderr.decode()
    assert b"read 2, wrote 2 (+I 1, -D 1)" in result.stderr
    assert (tmp_path / "out.jsonl").stat().st_size > 100 << 20
