"""Bad input: exact message shape (cdc: error: FILE:LINE: …), exit codes, never a traceback."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from helpers import invoke, run_cdc, write_jsonl


def fail(args: list[str], code: int) -> str:
    result = run_cdc(args)
    err = result.stderr.decode()
    assert result.returncode == code, err
    assert "Traceback" not in err
    assert err.startswith("cdc: error: "), err
    return err


def test_unknown_op_code_names_the_line_and_the_defined_codes(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", [{"op": "INSERT", "id": 1}, {"op": "UPSERT", "id": 2}])
    err = fail(["from-changelog", f], 3)
    assert (
        f"{f}:2: invalid op code 'UPSERT' in column 'op'; defined op codes are "
        "[INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]" in err
    )
    assert "hint:" in err


def test_null_op_code(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", [{"op": None}])
    assert f"{f}:1: NULL op code in column 'op'" in fail(["from-changelog", f], 3)


def test_op_column_missing_and_not_a_string(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", [{"id": 1}])
    assert f"{f}:1: op column 'op' does not exist" in fail(["from-changelog", f], 3)
    g = write_jsonl(tmp_path / "num.jsonl", [{"op": 7}])
    assert f"{g}:1: op column 'op' must be of STRING type, but was number (7)" in fail(["from-changelog", g], 3)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"op": "INSERT"}\n{"op": "INSERT", "id": \n', "invalid JSON (truncated line?)"),
        (b'{"op": "INSERT"}\n{bad json\n', "invalid JSON: Expecting property name"),  # bad, not cut off
        (b'{"op": "INSERT"}\n[1, 2]\n', "expected a JSON object, found list"),
        (b'{"op": "INSERT"}\n"text"\n', "expected a JSON object, found str"),
        (b'{"op": "INSERT"}\n{"op": "INSERT", "name": "\xff\xfe"}\n', "invalid UTF-8"),
    ],
)
def test_bad_json_lines(tmp_path: Path, content: bytes, message: str) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_bytes(content)
    assert f"{f}:2: {message}" in fail(["from-changelog", str(f)], 3)


def test_ragged_csv_row_names_its_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.csv"
    f.write_text("id,op\n1,INSERT\n2,INSERT,extra\n3,DELETE\n")
    assert f"{f}:3: ragged CSV row: expected 2 fields" in fail(["from-changelog", str(f)], 3)


def test_ragged_csv_row_on_stdin_names_its_line() -> None:
    data = b"op,id\nINSERT,1\nINSERT,2,3\n"
    out = run_cdc(["from-changelog", "-i", "csv"], stdin=data)
    assert out.returncode == 3
    assert out.stderr.decode().startswith("cdc: error: <stdin>:3: ragged CSV row: expected 2 fields"), out.stderr


# a bad op code on line 3, ragged rows on lines 5 and 6 (and 8-9: a value spans two lines)
MIXED_CSV = b'op,id\nINSERT,1\nBOGUS,2\nINSERT,3\nINSERT,4,5\nINSERT,6,7\nINSERT,8\n"INSERT","9\n",x\nINSERT,10\n'


@pytest.mark.parametrize("path", ["", "rows"])
@pytest.mark.parametrize("source", ["stdin", "file", "gzip"])
def test_bad_csv_records_are_named_and_rejected_in_input_order(tmp_path: Path, source: str, path: str) -> None:
    if source == "stdin":
        name, args, stdin = "<stdin>", ["-i", "csv"], MIXED_CSV
    else:
        f = tmp_path / ("in.csv.gz" if source == "gzip" else "in.csv")
        f.write_bytes(gzip.compress(MIXED_CSV) if source == "gzip" else MIXED_CSV)
        name, args, stdin = str(f), [str(f)], None
    env = {"CDC_PATH": path} if path else None
    out = tmp_path / "out.csv"  # CSV out: for files, the Arrow path when not forced to rows
    failed = run_cdc(["from-changelog", *args, "-o", out], stdin=stdin, env=env)
    assert failed.returncode == 3
    assert failed.stderr.decode().startswith(f"cdc: error: {name}:3: invalid op code 'BOGUS'"), failed.stderr
    rejects = tmp_path / "rejects.jsonl"
    skipped = run_cdc(
        ["from-changelog", *args, "-o", out, "--on-error", "skip", "--rejects", rejects], stdin=stdin, env=env
    )
    assert skipped.returncode == 0, skipped.stderr
    assert f"skipped 4 bad record(s) (first: {name}:3: invalid op code 'BOGUS'" in skipped.stderr.decode()
    records = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [(r["file"], r["line"]) for r in records] == [(name, 3), (name, 5), (name, 6), (name, 8)]
    assert [r["raw"] for r in records[1:]] == ["INSERT,4,5", "INSERT,6,7", '"INSERT","9\n",x']
    assert out.read_text() == "op,id\n+I,1\n+I,3\n+I,8\n+I,10\n"


def test_ragged_csv_rows_on_stdin_far_apart_keep_their_lines(tmp_path: Path) -> None:
    """More of stdin between ragged rows than the reader keeps, values across lines among them."""
    lines = [b"op,id,note"]
    expected = []
    for i in range(300_000):
        if i % 70_000 == 7:
            lines.append(b"INSERT,%d,x,extra" % i)
            expected.append(len(lines))
        elif i % 10 == 0:
            lines.extend([b'INSERT,%d,"a' % i, b'b"'])
        else:
            lines.append(b"INSERT,%d,%s" % (i, b"n" * 40))
    rejects = tmp_path / "rejects.jsonl"
    args = ["from-changelog", "-i", "csv", "-o", tmp_path / "out.csv", "--on-error", "skip", "--rejects", rejects]
    out = run_cdc(args, stdin=b"\n".join(lines) + b"\n")
    assert out.returncode == 0, out.stderr
    assert [json.loads(line)["line"] for line in rejects.read_text().splitlines()] == expected


def test_corrupt_and_truncated_parquet(tmp_path: Path) -> None:
    from helpers import write_parquet

    good = write_parquet(tmp_path / "good.parquet", [{"op": "INSERT", "id": i} for i in range(100)])
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(good.read_bytes()[:-30])
    assert f"{bad}: not a valid Parquet file" in fail(["from-changelog", str(bad)], 3)
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"hello world, not parquet at all")
    assert "not a valid Parquet file" in fail(["from-changelog", str(junk)], 3)


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", [{"op": "c"}])
    err = fail(["from-changelog", f, "-m", "c=INSERT", "-m", "r=INSERT"], 2)
    assert "duplicate change operation 'INSERT'" in err and "'c, r=INSERT'" in err
    assert "unknown change operation 'UPSERT'" in fail(["from-changelog", f, "-m", "c=UPSERT"], 2)
    assert "input file" in fail(["from-changelog", str(tmp_path / "missing.jsonl")], 2)
    assert "cannot tell the output format" in fail(["from-changelog", str(tmp_path / "in.jsonl"), "-o", "x.weird"], 2)
    assert "unknown preset" in fail(["from-changelog", f, "--preset", "nope"], 2)
    assert "--rejects needs --on-error skip" in fail(["from-changelog", f, "--rejects", str(tmp_path / "r.jsonl")], 2)
    assert "stdout carries the data" in fail(["from-changelog", f, "--on-error", "skip", "--rejects", "-"], 2)


def test_upsert_mapping_without_key_is_a_usage_error(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", [{"op": "c"}])
    err = fail(["from-changelog", f, "-m", "c=INSERT", "-m", "u=UPDATE_AFTER"], 2)
    assert "requires a key" in err and "--key" in err


def test_bad_flag_values_are_usage_errors() -> None:
    result = invoke(["from-changelog", "--on-error", "SKIP"])
    assert result.exit_code == 2


def test_verbose_shows_the_traceback(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", [{"op": None}])
    result = run_cdc(["from-changelog", f, "--verbose"])
    assert result.returncode == 3
    assert b"Traceback" in result.stderr


def test_gzip_input_errors_still_name_the_line(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl.gz"
    f.write_bytes(gzip.compress(b'{"op": "INSERT"}\n{"op": "NOPE"}\n'))
    assert f"{f}:2: invalid op code 'NOPE'" in fail(["from-changelog", str(f)], 3)


def test_both_jsonl_paths_word_a_bad_line_alike(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_bytes(b'{"op": "+I", "id": 1}\n{"op": "+I",, "id": 2}\n{"op": "+I", "id": \n')
    chunk_path = fail(["to-changelog", str(f)], 3)  # a file: the chunked fast path
    row_path = run_cdc(["materialize", "--key", "id"], stdin=f.read_bytes()).stderr.decode()  # the row reader
    message = "invalid JSON: Expecting property name enclosed in double quotes"
    assert f"{f}:2: {message}" in chunk_path and f"<stdin>:2: {message}" in row_path
    assert "truncated" not in chunk_path and "truncated" not in row_path  # the line is complete
    rejects = tmp_path / "rejects.jsonl"
    run_cdc(["materialize", "--key", "id", "--on-error", "skip", "--rejects", rejects], stdin=f.read_bytes())
    errors = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [(e["line"], e["error"].split(":")[0]) for e in errors] == [
        (2, "invalid JSON"),
        (3, "invalid JSON (truncated line?)"),
    ]


@pytest.mark.parametrize("command", [["from-changelog"], ["materialize", "--key", "id"], ["replay", "--key", "id"]])
def test_a_csv_with_bare_cr_line_ends_is_bad_input_not_a_crash(tmp_path: Path, command: list[str]) -> None:
    f = tmp_path / "cr.csv"
    f.write_bytes(b"op,id\rINSERT,1\rINSERT,2\r")
    message = fail([command[0], str(f), *command[1:], "-o", str(tmp_path / "out.parquet")], 3)
    assert f"{f}:1: cannot read the CSV header" in message and "LF or CRLF" in message


def test_an_error_no_check_foresaw_is_a_message_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import cdc.engine.api

    def broken(*_: object, **__: object) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cdc.engine.api, "run_job", broken)
    result = invoke(["from-changelog", "--preset", "flink-short"], stdin='{"op":"+I","id":1}\n')
    assert result.exit_code == 3
    assert result.stderr.startswith("cdc: error: unexpected ZeroDivisionError: division by zero\nhint: ")
    assert "Traceback" not in result.stderr


def test_a_misfit_in_piped_json_lines_to_parquet_fails_instead_of_writing_nothing(tmp_path: Path) -> None:
    # The JSON-lines → Parquet path restarts on the row path to name a misfit's line; stdin
    # cannot be read twice: the run must fail with the misfit, not write an empty file and exit 0.
    rows = "".join(json.dumps({"op": "INSERT", "id": i, "v": i}) + "\n" for i in range(70_000))
    data = (rows + json.dumps({"op": "INSERT", "id": 1, "v": "str"}) + "\n").encode()
    out = tmp_path / "out.parquet"
    result = run_cdc(["from-changelog", "-i", "jsonl", "-o", out], stdin=data)
    assert result.returncode == 3, result.stderr
    assert b'cannot hold text "str"' in result.stderr
    assert not out.exists()
