"""Streams and files: stdin/stdout, formats, compression, atomic -o, pipes, skip accounting."""

from __future__ import annotations

import gzip
import json
import os
import shlex
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import (
    SAMPLES,
    cdc_executable,
    invoke,
    parse_jsonl,
    read_csv,
    read_jsonl,
    read_parquet,
    run_cdc,
    write_jsonl,
    write_parquet,
)

ROWS = [
    {"id": 1, "name": "Alice", "note": None, "tag": "", "zip": "007", "ok": True, "n": 1.5},
    {"id": 2, "name": "Bob", "note": "x,y", "tag": 'q"t', "zip": "010", "ok": False, "n": -2},
]


def changelog(rows: list[dict[str, object]], kind: str = "+I") -> list[dict[str, object]]:
    return [{"op": kind, **r} for r in rows]


def test_stdin_to_stdout_and_default_round_trip() -> None:
    data = "".join(json.dumps(r) + "\n" for r in changelog(ROWS))
    to = run_cdc(["to-changelog"], stdin=data.encode())
    assert to.returncode == 0, to.stderr
    assert [r["op"] for r in parse_jsonl(to.stdout)] == ["INSERT", "INSERT"]
    back = run_cdc(["from-changelog", "-"], stdin=to.stdout)
    assert parse_jsonl(back.stdout) == changelog(ROWS)


def test_values_pass_through_jsonl_unchanged(tmp_path: Path) -> None:
    big = {"op": "INSERT", "big": 123456789012345678901234567890, "neg": -98765432109876543210, "f": 0.1, "s": "0042"}
    f = write_jsonl(tmp_path / "in.jsonl", [big])
    out = run_cdc(["from-changelog", f])
    assert (
        out.stdout
        == b'{"op":"+I","big":123456789012345678901234567890,"neg":-98765432109876543210,"f":0.1,"s":"0042"}\n'
    )


def test_null_and_empty_string_survive_a_csv_round_trip(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", changelog(ROWS))
    csv_file = tmp_path / "mid.csv"
    assert run_cdc(["to-changelog", f, "-o", csv_file]).returncode == 0
    text = csv_file.read_text()
    assert 'INSERT,1,Alice,,"",007,true,1.5' in text
    back = run_cdc(["from-changelog", csv_file])
    rows = parse_jsonl(back.stdout)
    assert [(r["note"], r["tag"], r["zip"]) for r in rows] == [(None, "", "007"), ("x,y", 'q"t', "010")]


def test_tsv_output_and_input(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", changelog(ROWS))
    tsv = tmp_path / "out.tsv"
    assert run_cdc(["to-changelog", f, "-o", tsv]).returncode == 0
    assert read_csv(tsv, "\t")[1]["note"] == "x,y"


def test_parquet_keeps_types_and_reads_from_stdin(tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "in.parquet", changelog(ROWS))
    out = tmp_path / "out.parquet"
    assert run_cdc(["to-changelog", src, "-o", out]).returncode == 0
    assert read_parquet(out)[0] == {"op": "INSERT", **ROWS[0]}
    piped = run_cdc(["to-changelog", "--output-format", "parquet"], stdin=src.read_bytes())
    assert piped.returncode == 0, piped.stderr
    (tmp_path / "piped.parquet").write_bytes(piped.stdout)
    assert read_parquet(tmp_path / "piped.parquet") == read_parquet(out)


def test_csv_to_parquet_to_jsonl(tmp_path: Path) -> None:
    out = tmp_path / "orders.parquet"
    assert run_cdc(["from-changelog", SAMPLES / "orders-ops.csv", "-o", out]).returncode == 0
    rows = read_parquet(out)
    assert [r["op"] for r in rows] == ["+I", "+I", "-U", "+U", "+I", "-D", "-U", "+U"]
    assert rows[4]["amount"] is None and rows[7]["status"] == ""


def test_compressed_inputs_and_outputs(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", changelog(ROWS))
    for suffix in ("gz", "zst"):
        out = tmp_path / f"out.jsonl.{suffix}"
        assert run_cdc(["to-changelog", f, "-o", out]).returncode == 0
        raw = out.read_bytes()
        assert raw[:2] == b"\x1f\x8b" if suffix == "gz" else raw[:4] == b"\x28\xb5\x2f\xfd"
        back = run_cdc(["from-changelog", out])
        assert parse_jsonl(back.stdout) == changelog(ROWS)
        piped = run_cdc(["from-changelog"], stdin=raw)  # sniffed on stdin too
        assert parse_jsonl(piped.stdout) == changelog(ROWS)
    assert gzip.decompress((tmp_path / "out.jsonl.gz").read_bytes()).startswith(b'{"op":"INSERT"')


def test_bom_crlf_blank_lines_and_empty_input(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_bytes(b'\xef\xbb\xbf{"op": "INSERT", "id": 1}\r\n\r\n\n{"op": "DELETE", "id": 1}\r\n')
    assert parse_jsonl(run_cdc(["from-changelog", f]).stdout) == [{"op": "+I", "id": 1}, {"op": "-D", "id": 1}]
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    result = run_cdc(["from-changelog", empty])
    assert (result.returncode, result.stdout) == (0, b"")


def test_several_inputs_are_one_stream(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [{"op": "INSERT", "id": 1}])
    b = write_parquet(tmp_path / "b.parquet", [{"op": "DELETE", "id": 1}])
    out = run_cdc(["from-changelog", a, b, "--stats"])
    assert parse_jsonl(out.stdout) == [{"op": "+I", "id": 1}, {"op": "-D", "id": 1}]
    assert b"read 2, wrote 2 (+I 1, -D 1)" in out.stderr


def test_failed_run_leaves_the_old_output_and_no_temp_file(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", [{"op": "INSERT"}] * 3 + [{"op": "BAD"}])
    out = tmp_path / "out.jsonl"
    out.write_text("previous content\n")
    assert run_cdc(["from-changelog", f, "-o", out]).returncode == 3
    assert out.read_text() == "previous content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


BAD_SECOND = [{"op": "INSERT", "id": 1}, {"op": "BAD", "id": 2}, {"op": "DELETE", "id": 1}]
WRITTEN = b'{"op":"+I","id":1}\n{"op":"-D","id":1}\n'


def test_a_fifo_as_output_is_written_into_not_replaced(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", BAD_SECOND)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as reader:
            received.append(reader.read())

    reader = threading.Thread(target=read, daemon=True)  # without a writer it would wait forever
    reader.start()
    out = run_cdc(["from-changelog", f, "-f", "jsonl", "--on-error", "skip", "-o", fifo])
    reader.join(timeout=30)
    assert out.returncode == 0, out.stderr
    assert received == [WRITTEN]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "pipe"]


def test_a_fifo_as_rejects_gets_each_bad_record(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", BAD_SECOND)
    fifo = tmp_path / "rejects"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    out = run_cdc(["from-changelog", f, "--on-error", "skip", "--rejects", fifo])
    reader.join(timeout=30)
    assert out.returncode == 0, out.stderr
    assert [r["line"] for r in parse_jsonl(received[0])] == [2]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_dev_stdout_redirected_to_a_file_keeps_what_the_shell_wrote_around_it(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "in.jsonl", BAD_SECOND)
    log = tmp_path / "log"
    cdc = " ".join(shlex.quote(a) for a in cdc_executable())
    run = f"{cdc} from-changelog in.jsonl -f jsonl --on-error skip -o /dev/stdout"
    script = f"{{ echo before; {run}; echo after; }} > log"
    done = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert log.read_bytes() == b"before\n" + WRITTEN + b"after\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "log"]


def test_dev_stdout_on_a_pipe_and_rejects_to_dev_stderr(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", BAD_SECOND)
    out = run_cdc(
        ["from-changelog", f, "-f", "jsonl", "--on-error", "skip", "-o", "/dev/stdout", "--rejects", "/dev/stderr"]
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == WRITTEN
    rejects = [json.loads(line) for line in out.stderr.splitlines() if line.startswith(b"{")]
    assert [(r["line"], json.loads(r["raw"])["op"]) for r in rejects] == [(2, "BAD")]
    assert b"written to /dev/stderr" in out.stderr
    # Parquet (the lines-arrow path, which may begin a run again) and CSV through /proc/self/fd
    parquet = run_cdc(["from-changelog", f, "-f", "parquet", "--on-error", "skip", "-o", "/proc/self/fd/1"])
    assert parquet.returncode == 0, parquet.stderr
    assert parquet.stdout.startswith(b"PAR1")
    csv_out = run_cdc(["from-changelog", f, "-f", "csv", "--on-error", "skip", "-o", "/dev/fd/1"])
    assert csv_out.stdout == b"op,id\n+I,1\n-D,1\n"


def test_a_character_device_as_output_stays_a_device(tmp_path: Path) -> None:
    # A copy of /dev/null in a scratch folder: a regression must never get to replace the real one.
    device = tmp_path / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device here: {exc}")
    f = write_jsonl(tmp_path / "in.jsonl", BAD_SECOND)
    link = tmp_path / "sink"  # and through a symlink to it: the link and the device are kept
    link.symlink_to(device)
    for target in (device, link):
        out = run_cdc(["from-changelog", f, "-f", "jsonl", "--on-error", "skip", "-o", target])
        assert out.returncode == 0, out.stderr
        assert stat.S_ISCHR(os.stat(device).st_mode)
    assert link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "null", "sink"]


def test_new_column_in_csv_output_is_named(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", [{"op": "INSERT", "a": 1}, {"op": "INSERT", "a": 2, "b": 3}])
    result = run_cdc(["from-changelog", f, "-o", tmp_path / "out.csv"])
    assert result.returncode == 3
    assert f"{f}:2: column 'b' is not in the output schema".encode() in result.stderr
    ok = run_cdc(["from-changelog", f, "-o", tmp_path / "out.csv", "--columns", "op,a,b"])
    assert ok.returncode == 0
    assert read_csv(tmp_path / "out.csv") == [{"op": "+I", "a": "1", "b": None}, {"op": "+I", "a": "2", "b": "3"}]


def test_skip_accounts_for_every_record(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text(
        '{"op": "INSERT", "id": 1}\nnot json\n{"op": null, "id": 3}\n{"op": "UPSERT", "id": 4}\n'
        '[5]\n{"op": "DELETE", "id": 6}\n'
    )
    rejects = tmp_path / "rejects.jsonl"
    result = run_cdc(["from-changelog", f, "--on-error", "skip", "--rejects", rejects, "--stats"])
    assert result.returncode == 0, result.stderr
    assert [r["id"] for r in parse_jsonl(result.stdout)] == [1, 6]
    rejected = read_jsonl(rejects)
    assert [r["line"] for r in rejected] == [2, 3, 4, 5]
    assert rejected[0]["raw"] == "not json" and "invalid JSON" in rejected[0]["error"]
    assert rejected[2]["error"].startswith("invalid op code 'UPSERT'")
    assert b"read 6, wrote 2 (+I 1, -D 1), skipped 4" in result.stderr
    assert b"skipped 4 bad record(s)" in result.stderr


def test_skip_without_rejects_file_still_reports(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", [{"op": "INSERT"}, {"op": "X"}])
    result = run_cdc(["from-changelog", f, "--on-error", "skip"])
    assert result.returncode == 0
    assert b"skipped 1 bad record(s) (first: " in result.stderr and b"in.jsonl:2" in result.stderr


def test_presets_set_the_op_column_and_mapping() -> None:
    result = run_cdc(["from-changelog", SAMPLES / "flat-cdc.jsonl", "--preset", "debezium", "--key", "id"])
    rows = parse_jsonl(result.stdout)
    assert [r["op"] for r in rows] == ["+I", "+I", "+I", "+U", "-D", "+U", "+I"]
    assert list(rows[0])[:2] == ["op", "id"] and "__op" not in rows[0]
    missing_key = run_cdc(["from-changelog", SAMPLES / "flat-cdc.jsonl", "--preset", "debezium"])
    assert missing_key.returncode == 2


def test_delta_cdf_preset_round_trip(tmp_path: Path) -> None:
    changes = changelog(ROWS[:1], "+I") + changelog(ROWS[:1], "-U") + changelog(ROWS[1:], "+U")
    f = write_jsonl(tmp_path / "in.jsonl", changes)
    cdf = run_cdc(["to-changelog", f, "--preset", "delta-cdf"])
    assert [r["_change_type"] for r in parse_jsonl(cdf.stdout)] == ["insert", "update_preimage", "update_postimage"]
    back = run_cdc(["from-changelog", "--preset", "delta-cdf"], stdin=cdf.stdout)
    assert parse_jsonl(back.stdout) == changes


def test_print_output_like_flinks_print_connector(tmp_path: Path) -> None:
    f = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": 1, "op": "INSERT", "name": "Alice", "x": None}, {"id": 1, "op": "DELETE", "name": "Alice", "x": 2.5}],
    )
    assert run_cdc(["from-changelog", f, "-f", "print"]).stdout == b"+I[1, Alice, null]\n-D[1, Alice, 2.5]\n"


def test_table_output_for_people(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", [{"op": "INSERT", "name": "Alice"}])
    result = invoke(["from-changelog", str(f), "-f", "table"])
    assert result.exit_code == 0 and "Alice" in result.stdout and "+I" in result.stdout


def test_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "big.jsonl", [{"op": "INSERT", "id": i, "pad": "x" * 50} for i in range(100_000)])
    cmd = " ".join(cdc_executable()) + f" from-changelog {f} | head -1"
    result = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, timeout=120)
    assert result.stdout.count(b"\n") == 1
    assert result.stderr == b"", result.stderr
    assert result.returncode == 0


def test_interrupt_exits_130_and_leaves_no_partial_output(tmp_path: Path) -> None:
    rows = "".join(json.dumps({"op": "INSERT", "id": i}) + "\n" for i in range(200))
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    proc = subprocess.Popen(
        [*cdc_executable(), "from-changelog", "-", "-o", str(out)], stdin=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None
    proc.stdin.write(rows.encode())
    proc.stdin.flush()
    time.sleep(1.0)  # stdin stays open: cdc is mid-stream, waiting for more input
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_help_lists_every_command_and_examples() -> None:
    top = invoke(["--help"])
    assert "from-changelog" in top.stdout and "to-changelog" in top.stdout
    for command in ("from-changelog", "to-changelog"):
        assert "Examples" in invoke([command, "--help"]).stdout


def test_python_dash_m_works() -> None:
    result = subprocess.run([sys.executable, "-m", "cdc", "--version"], capture_output=True, env=dict(os.environ))
    assert result.stdout.startswith(b"cdc ")


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])  # parquet: written on a writer thread
def test_a_full_disk_leaves_the_old_file_and_no_temp_file(tmp_path: Path, suffix: str) -> None:
    import resource

    def small_disk() -> None:  # writes past 64 KiB fail as they would on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))

    rows = [{"op": "INSERT", "id": i, "pad": os.urandom(60).hex()} for i in range(5000)]
    src = (write_jsonl if suffix == "jsonl" else write_parquet)(tmp_path / f"in.{suffix}", rows)
    out = tmp_path / f"out.{suffix}"
    out.write_text("old\n")
    result = subprocess.run(
        [*cdc_executable(), "from-changelog", str(src), "-o", str(out)],
        capture_output=True,
        preexec_fn=small_disk,
        timeout=60,
    )
    err = result.stderr.decode()
    assert result.returncode == 3, err
    assert err.startswith("cdc: error: ") and "File too large" in err and "Traceback" not in err
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"in.{suffix}", f"out.{suffix}"]


def test_no_input_on_a_terminal_is_a_usage_error_not_a_hang() -> None:
    import pty

    parent, child = pty.openpty()
    try:
        result = subprocess.run([*cdc_executable(), "from-changelog"], stdin=child, capture_output=True, timeout=30)
    finally:
        os.close(parent)
        os.close(child)
    assert result.returncode == 2
    assert b"no input: name a file, or pipe data into cdc" in result.stderr


def test_progress_bar_goes_to_stderr_and_never_into_the_data(tmp_path: Path) -> None:
    rows = [{"op": "INSERT", "id": i} for i in range(2000)]
    f = write_jsonl(tmp_path / "in.jsonl", rows)
    for command in (["from-changelog", str(f)], ["materialize", str(f), "--key", "id", "-f", "jsonl"]):
        data = (
            f
            if command[0] == "from-changelog"
            else write_jsonl(tmp_path / "c.jsonl", [{"op": "+I", "id": i} for i in range(2000)])
        )
        result = run_cdc([command[0], data, *command[2:], "--progress"])
        assert result.returncode == 0, result.stderr
        assert len(parse_jsonl(result.stdout)) == 2000  # stdout is data only


@pytest.mark.parametrize("rejects", ["-", "/dev/stdout", "/dev/fd/1", "OUT"])
def test_rejects_into_the_output_itself_are_refused(tmp_path: Path, rejects: str) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"op":"+I","id":1}\n{"op":"BAD","id":2}\n')
    out = tmp_path / "out.jsonl"
    args = ["materialize", log, "--key", "id", "--on-error", "skip", "--rejects"]
    if rejects == "OUT":  # the same file as -o, named through a symlink
        (tmp_path / "link.jsonl").symlink_to(out)
        args += [tmp_path / "link.jsonl", "-o", out]
    else:
        args += [rejects]
    result = run_cdc(args)
    assert result.returncode == 2 and b"--rejects needs a place of its own" in result.stderr
    assert not result.stdout


def test_a_fifo_whose_reader_goes_away_is_an_incomplete_output_not_a_success(tmp_path: Path) -> None:
    # `| head` on stdout is a reader with all it wanted (exit 0); a named -o that stops reading is not.
    f = write_jsonl(tmp_path / "big.jsonl", [{"op": "+I", "id": i, "pad": "x" * 40} for i in range(200_000)])
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def read_a_little() -> None:
        with open(fifo, "rb") as reader:
            reader.read(10)

    reader = threading.Thread(target=read_a_little, daemon=True)
    reader.start()
    out = run_cdc(["materialize", f, "--key", "id", "-f", "jsonl", "-o", fifo])
    reader.join(timeout=30)
    assert out.returncode == 3
    assert b"its reader went away; the output stopped there and is incomplete" in out.stderr
