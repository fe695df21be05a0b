"""The first hour of a new user (issue #9): one test per thing they tripped over, numbered as
the issue numbers them, each through the real command."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

from helpers import (
    REPO,
    SAMPLES,
    cdc_executable,
    invoke,
    parse_jsonl,
    read_parquet,
    run_cdc,
    write_csv,
    write_jsonl,
    write_parquet,
)

BIG = 18446744073709551617


def test_01_the_suite_reads_nothing_beside_the_clone() -> None:
    from helpers import CONFORMANCE

    assert CONFORMANCE.is_relative_to(REPO) and (CONFORMANCE / "flink-oracle").is_dir()
    beside = "/".join(["..", "shared"])  # spelled so that this file does not name it
    for path in (REPO / "tests").glob("*.py"):
        assert beside not in path.read_text(), path.name


def test_02_integers_past_64_bits_print_in_every_format() -> None:
    line = f'{{"op":"+I","id":{BIG}}}\n'.encode()
    for fmt in ("print", "table", "csv", "jsonl"):
        result = run_cdc(["materialize", "-f", fmt], stdin=line)
        assert result.returncode == 0 and str(BIG).encode() in result.stdout, (fmt, result.stderr)


def test_03_a_header_only_csv_expects_an_empty_table(tmp_path: Path) -> None:
    expected = tmp_path / "empty.csv"
    expected.write_text("id,name,amount\n")
    empty = run_cdc(["materialize", "--key", "id", "--expect", expected], stdin=b"")
    assert empty.returncode == 0, empty.stdout + empty.stderr
    one = run_cdc(["materialize", "--key", "id", "--expect", expected], stdin=b'{"op":"+I","id":1}\n')
    assert one.returncode == 1 and b"1 only in result" in one.stdout


def test_04_an_empty_result_is_a_valid_file(tmp_path: Path) -> None:
    args = ["from-changelog", SAMPLES / "orders-ops.csv", "--drop", "INSERT,UPDATE_BEFORE,UPDATE_AFTER,DELETE"]
    assert run_cdc([*args, "-o", tmp_path / "none.parquet"]).returncode == 0
    assert read_parquet(tmp_path / "none.parquet") == []
    assert run_cdc([*args, "-o", tmp_path / "none.csv"]).returncode == 0
    assert (tmp_path / "none.csv").read_text() == "op,order_id,customer,amount,status\n"


def _schema(path: Path) -> list[tuple[str, str]]:
    import pyarrow.parquet as pq

    return [(f.name, str(f.type)) for f in pq.read_schema(path)]


def test_04_an_empty_table_or_aggregate_keeps_its_columns(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "g.jsonl", [{"op": "+I", "id": 1, "v": "a"}, {"op": "-D", "id": 1, "v": "a"}])
    out = tmp_path / "g.parquet"
    assert run_cdc(["materialize", src, "--key", "id", "-o", out]).returncode == 0
    assert read_parquet(out) == [] and _schema(out) == [("id", "int64"), ("v", "string")]
    assert run_cdc(["materialize", src, "--key", "id", "-f", "csv"]).stdout == b"id,v\n"
    args = ["aggregate", src, "--where", "id > 5", "-g", "v", "-a", "c=COUNT(*)"]
    assert run_cdc([*args, "-o", out]).returncode == 0
    assert read_parquet(out) == [] and _schema(out) == [("op", "string"), ("v", "string"), ("c", "int64")]
    assert run_cdc([*args, "-f", "csv"]).stdout == b"op,v,c\n"


def _on_every_path(spec: Any, src: Path, out: Path, **options: Any) -> dict[str, Any]:
    """What each path that takes the job (with these ``Job`` options) writes: the Parquet
    schema, or the CSV text."""
    from cdc.engine.inputs import resolve
    from cdc.engine.job import Job
    from cdc.engine.plan import PATHS
    from cdc.engine.run import run_job

    job = Job(spec, (str(src),), output=str(out), **options)
    written = {}
    for name, make in PATHS.items():
        if make().accepts(resolve(job)):
            assert run_job(job, path=name).counts.written == 0, name
            written[name] = _schema(out) if out.suffix == ".parquet" else out.read_text()
    return written


def test_04_an_empty_result_has_the_columns_and_types_of_a_full_one_on_every_path(tmp_path: Path) -> None:
    from cdc.core.aggregate import AggregateQuery
    from cdc.core.specs import AggregateSpec, MaterializeSpec
    from cdc.engine.paths.native import kernel

    row = {"id": 1, "v": "a", "f": 1.5, "ok": True, "t": 3, "n": None}
    changes = [{"op": "+I", **row}, {"op": "-D", **row}]
    inputs = {
        "jsonl": write_jsonl(tmp_path / "in.jsonl", changes),
        "csv": tmp_path / "in.csv",
        "parquet": tmp_path / "in.parquet",
    }
    write_csv(inputs["csv"], changes)
    write_parquet(inputs["parquet"], changes)
    live = write_jsonl(tmp_path / "live.jsonl", changes[:1])  # the run with a row: its types
    assert run_cdc(["materialize", live, "--key", "id", "-o", tmp_path / "live.parquet"]).returncode == 0
    table = _schema(tmp_path / "live.parquet")
    assert table == [("id", "int64"), ("v", "string"), ("f", "double"), ("ok", "bool"), ("t", "int64"), ("n", "string")]
    count = AggregateQuery.parse(["v"], ["c=COUNT(*)", "s=SUM(f)", "m=MAX(t)"], where="id > 5")
    aggregate = [("op", "string"), ("v", "string"), ("c", "int64"), ("s", "double"), ("m", "int64")]
    specs = {
        "keyed": MaterializeSpec(key=("id",)),
        "multiset": MaterializeSpec(),
        "dedup": MaterializeSpec(key=("id",), dedup=True),
        "as-of": MaterializeSpec(key=("id",), as_of=0, time_column="t"),  # before every change
        "aggregate": AggregateSpec(count),
    }
    expected = {"jsonl": table, "parquet": _schema(inputs["parquet"])[1:]}
    taken: set[tuple[str, str, tuple[str, ...]]] = set()
    for fmt, src in inputs.items():
        for name, spec in specs.items():
            for out in (tmp_path / "out.parquet", tmp_path / "out.csv"):
                written = _on_every_path(spec, src, out)
                assert "rows" in written and len(set(map(str, written.values()))) == 1, (fmt, name, written)
                got = written["rows"]
                if name == "aggregate":
                    if out.suffix == ".csv":
                        assert got == "op,v,c,s,m\n", (fmt, got)
                    elif fmt != "csv":  # CSV values are text: SUM reads 1.5 as a decimal, MAX keeps '3'
                        assert got == aggregate, (fmt, got)
                elif out.suffix == ".csv":
                    assert got == "id,v,f,ok,t,n\n", (fmt, name, got)
                else:
                    assert got == expected.get(fmt, [(c, "string") for c in row]), (fmt, name, got)
                taken.add((fmt, name, tuple(written)))
    takers = {(fmt, name): paths for fmt, name, paths in taken}
    for name in ("keyed", "multiset", "dedup"):  # the other paths took them too
        kernel_path = "keyed-kernel" if name == "keyed" else "state-kernel"
        assert set(takers["jsonl", name]) == {"rows", kernel_path} or not kernel.available()
        assert set(takers["csv", name]) == set(takers["parquet", name]) == {"rows", "arrow-state"}
    assert set(takers["csv", "as-of"]) == {"rows", "arrow-state"}
    import pyarrow as pa
    import pyarrow.parquet as pq

    nothing = tmp_path / "none.parquet"  # no change at all: an aggregate without --where on arrow-state
    pq.write_table(pa.table({"op": pa.array([], pa.string()), "v": pa.array([], pa.string())}), nothing)
    written = _on_every_path(
        AggregateSpec(AggregateQuery.parse(["v"], ["c=COUNT(*)"])), nothing, tmp_path / "o.parquet"
    )
    assert set(written) == {"rows", "arrow-state"}
    assert list(written.values()) == [[("op", "string"), ("v", "string"), ("c", "int64")]] * 2


def test_04_an_empty_replay_or_conversion_has_the_columns_and_types_of_a_full_one_on_every_path(
    tmp_path: Path,
) -> None:
    from cdc.core.convert import from_changelog_spec, to_changelog_spec
    from cdc.core.model import OnError
    from cdc.core.specs import ReplaySpec
    from cdc.engine.job import Job
    from cdc.engine.run import run_job

    row = {"id": 1, "v": "a", "f": 1.5, "ok": True, "t": 3, "n": None}

    def inputs(name: str, rows: list[dict[str, Any]]) -> dict[str, Path]:
        made = {"jsonl": write_jsonl(tmp_path / f"{name}.jsonl", rows)}
        made["csv"] = write_csv(tmp_path / f"{name}.csv", rows)
        made["parquet"] = write_parquet(tmp_path / f"{name}.parquet", rows)
        return made

    changes = [{"op": "+I", **row}, {"op": "-D", **row}]
    plain = [{"op": "c", **row}, {"op": "d", **row}]
    codes = ["c=INSERT", "d=DELETE"]
    skip = {"on_error": OnError.skip}
    # name: (the spec of an empty result, its input, its Job options, the spec of a full run, its input)
    jobs: dict[str, tuple[Any, list[dict[str, Any]], dict[str, Any], Any, list[dict[str, Any]]]] = {
        "replay --until": (ReplaySpec(("id",), time_column="t", until=0), changes, {}, ReplaySpec(("id",)), changes),
        "replay --since": (ReplaySpec(("id",), time_column="t", since=9), changes, {}, ReplaySpec(("id",)), changes),
        "replay --net": (  # the row comes and goes between --since and --until: no net change
            ReplaySpec(("id",), time_column="t", since=0, until=9, net=True),
            changes,
            {},
            ReplaySpec(("id",)),
            changes,
        ),
        "replay append": (
            ReplaySpec(("id",), input_mode="append", time_column="t", until=0),
            [row],
            {},
            ReplaySpec(("id",), input_mode="append"),
            [row],
        ),
        "from-changelog --drop": (
            from_changelog_spec(op_mapping=codes, drop=["INSERT", "DELETE"]),
            plain,
            {},
            from_changelog_spec(op_mapping=codes),
            plain,
        ),
        "from-changelog --drop a kind": (  # every row a delete
            from_changelog_spec(op_mapping=codes, drop=["DELETE"], kind_column="k", keys=["v"]),
            plain[1:],
            {},
            from_changelog_spec(op_mapping=codes, kind_column="k", keys=["v"]),
            plain,
        ),
        "from-changelog --on-error skip": (
            from_changelog_spec(op_mapping=codes),
            changes,  # +I and -D are no codes of the mapping
            skip,
            from_changelog_spec(op_mapping=codes),
            plain,
        ),
        "to-changelog --drop": (
            to_changelog_spec(drop=["INSERT", "DELETE"]),
            changes,
            {},
            to_changelog_spec(),
            changes,
        ),
        "to-changelog --on-error skip": (
            to_changelog_spec(op="code"),
            plain,  # c and d are no kinds
            skip,
            to_changelog_spec(op="code"),
            changes,
        ),
    }
    jsonl_types = [("id", "int64"), ("v", "string"), ("f", "double"), ("ok", "bool"), ("t", "int64"), ("n", "string")]
    for name, (spec, rows, options, full_spec, full_rows) in jobs.items():
        empty, full = inputs(name, rows), inputs(f"{name} full", full_rows)
        for fmt in empty:
            full_out = tmp_path / "full.parquet"  # the types a run with rows writes
            assert run_job(Job(full_spec, (str(full[fmt]),), output=str(full_out)), path="rows").counts.written
            expected = _schema(full_out)
            header = ",".join(name for name, _ in expected) + "\n"
            if fmt == "jsonl":
                kind = expected[0]
                assert kind[1] == "string" and [c for c in expected if c != kind] == (
                    [("v", "string"), *(c for c in jsonl_types if c[0] != "v")]
                    if name.endswith("a kind")
                    else jsonl_types
                ), (name, expected)
            for out in (tmp_path / "out.parquet", tmp_path / "out.csv"):
                written = _on_every_path(spec, empty[fmt], out, **options)
                assert len(set(map(str, written.values()))) == 1, (name, fmt, written)
                assert written["rows"] == (expected if out.suffix == ".parquet" else header), (name, fmt, written)
                takers = set(written)
                if name.startswith("replay"):
                    assert takers == ({"rows"} if fmt == "jsonl" else {"rows", "arrow-state"}), (name, fmt, takers)
                elif fmt != "jsonl":
                    assert takers == {"rows", "arrow"}, (name, fmt, takers)
                else:
                    assert takers == ({"rows", "lines-arrow"} if out.suffix == ".parquet" else {"rows"}), (name, takers)


def test_04_an_input_without_rows_or_columns_gives_an_empty_file_on_every_path(tmp_path: Path) -> None:
    """Nothing is known of the columns: no header, no schema (a header-only CSV or a Parquet
    file without rows declares them)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cdc.core.convert import from_changelog_spec, to_changelog_spec
    from cdc.core.model import OnError
    from cdc.core.specs import ReplaySpec

    specs = {
        "replay": ReplaySpec(("id",), time_column="t", until=0),
        "from-changelog": from_changelog_spec(op_mapping=["c=INSERT"], drop=["INSERT"]),
        "to-changelog": to_changelog_spec(drop=["INSERT"]),
    }
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_bytes(b"")
    no_object = tmp_path / "no-object.jsonl"  # lines, but no row: blank, not JSON, not an object
    no_object.write_bytes(b'\n  \n[1, 2]\n"op"\n{bad\n')
    no_header = tmp_path / "nothing.csv"
    no_header.write_bytes(b"")
    header = tmp_path / "header.csv"
    header.write_text("op,id,t\n")
    for name, spec in specs.items():
        for src in (nothing, no_object, no_header):
            for out in (tmp_path / "out.parquet", tmp_path / "out.csv"):
                written = _on_every_path(spec, src, out, on_error=OnError.skip)
                assert set(map(str, written.values())) == {"[]" if out.suffix == ".parquet" else ""}, (
                    name,
                    src,
                    written,
                )
        written = _on_every_path(spec, header, tmp_path / "out.csv")
        assert set(written.values()) == {"op,id,t\n"}, (name, written)
        parquet = tmp_path / "no-rows.parquet"
        pq.write_table(pa.table({"op": pa.array([], pa.string()), "id": pa.array([], pa.int64())}), parquet)
        typed = [("op", "string"), ("id", "string"), ("t", "string")]  # CSV values are text
        for src, types in ((header, typed), (parquet, [("op", "string"), ("id", "int64")])):
            written = _on_every_path(spec, src, tmp_path / "out.parquet")  # as a run with rows types them
            assert set(map(str, written.values())) == {str(types)}, (name, written)


def test_05_outputs_follow_the_umask_keep_modes_and_symlinks(tmp_path: Path) -> None:
    source = SAMPLES / "orders-ops.csv"
    new = tmp_path / "new.jsonl"
    old_mask = os.umask(0o022)
    try:
        assert run_cdc(["from-changelog", source, "-o", new]).returncode == 0
    finally:
        os.umask(old_mask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o644
    new.chmod(0o664)
    assert run_cdc(["from-changelog", source, "-o", new]).returncode == 0
    assert stat.S_IMODE(new.stat().st_mode) == 0o664
    link = tmp_path / "link.jsonl"
    link.symlink_to(new)
    assert run_cdc(["from-changelog", source, "-o", link, "--drop", "DELETE"]).returncode == 0
    assert link.is_symlink() and b'"-D"' not in new.read_bytes()


def test_06_csv_rejects_keep_the_record_and_its_line(tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("id,op\n1,INSERT\n2,UPSERT\n3,INSERT,extra\n4,DELETE\n")
    rejects = tmp_path / "rejects.jsonl"
    result = run_cdc(["from-changelog", src, "--on-error", "skip", "--rejects", rejects])
    assert result.returncode == 0
    records = sorted((r["line"], r["raw"]) for r in map(json.loads, rejects.read_text().splitlines()))
    assert records == [(3, "2,UPSERT"), (4, "3,INSERT,extra")]
    assert f"first: {src}:".encode() in result.stderr


def test_07_csv_locations_are_physical_lines(tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text('id,note,op\n1,"one\ntwo\nthree",INSERT\n2,x,INSERT\n3,y,NOPE\n')
    result = run_cdc(["from-changelog", src])
    assert result.returncode == 3 and f"{src}:6: invalid op code 'NOPE'".encode() in result.stderr


def test_08_numbers_keep_their_spelling_through_expect_and_o(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"op":"+I","id":1,"price":11.00}\n')
    expected = tmp_path / "expected.csv"
    expected.write_text("id,price\n1,11\n")
    out = tmp_path / "t.jsonl"
    assert run_cdc(["materialize", log, "--key", "id", "--expect", expected, "-o", out]).returncode == 0
    assert out.read_text() == '{"id":1,"price":11.00}\n'
    assert run_cdc(["materialize", log, "--key", "id", "--sort"]).stdout == b'{"id":1,"price":11.00}\n'


def test_09_print_keeps_precision_and_spells_doubles_as_flink() -> None:
    result = run_cdc(["materialize", "-f", "print"], stdin=b'{"op":"+I","a":12345678901234567.89,"b":1e300}\n')
    assert result.stdout == b"+I[12345678901234567.89, 1.0E300]\n"


def test_10_as_of_stats_say_what_was_left_out() -> None:
    args = ["materialize", SAMPLES / "product-prices.jsonl", "--key", "product_id"]
    result = run_cdc([*args, "--as-of", "13:00:00", "--time-column", "update_time", "--stats"])
    assert b"later than --as-of left out" in result.stderr and b"as retract 0" not in result.stderr


def test_11_parquet_output_holds_big_integers_and_names_a_misfit(tmp_path: Path) -> None:
    big = write_jsonl(tmp_path / "big.jsonl", [{"op": "+I", "id": 1}, {"op": "+I", "id": BIG}])
    assert run_cdc(["to-changelog", big, "-o", tmp_path / "big.parquet"]).returncode == 0
    assert [int(r["id"]) for r in read_parquet(tmp_path / "big.parquet")] == [1, BIG]
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [{"op": "+I", "id": 1}, {"op": "+I", "id": "x"}])
    result = run_cdc(["to-changelog", mixed, "-o", tmp_path / "mixed.parquet"])
    assert result.returncode == 3
    assert f"{mixed}:2: column 'id' mixes integer and text \"x\"".encode() in result.stderr
    assert b"-f jsonl" in result.stderr and not (tmp_path / "mixed.parquet").exists()


def test_11_a_misfit_is_named_at_its_input_line_on_every_path(tmp_path: Path) -> None:
    # the writer finds it rows after the record went by: the line is the input's, not the output row
    rows = [{"op": "+I", "id": 1}, {"op": "-U", "id": 1}, {"op": "+U", "id": "x"}]
    mixed = write_jsonl(tmp_path / "mixed.jsonl", rows)
    for path in ("", "rows", "lines-arrow"):
        args = ["to-changelog", mixed, "--drop", "UPDATE_BEFORE", "-o", tmp_path / "mixed.parquet"]
        result = run_cdc(args, env={"CDC_PATH": path})
        assert result.returncode == 3, path
        assert f"{mixed}:3: column 'id' mixes integer and text \"x\"".encode() in result.stderr, (path, result.stderr)
    piped = run_cdc(["to-changelog", "--drop", "UPDATE_BEFORE", "-f", "parquet"], stdin=mixed.read_bytes())
    assert b"<stdin>:3: column 'id' mixes" in piped.stderr  # stdin is not read twice: the places are kept


def test_11_no_parquet_type_holds_an_integer_past_76_digits(tmp_path: Path) -> None:
    huge = int("9" * 80)
    src = tmp_path / "huge.jsonl"
    src.write_text(f'{{"op":"+I","id":1}}\n{{"op":"+I","id":{huge}}}\n')
    for path in ("", "rows", "lines-arrow"):
        result = run_cdc(["to-changelog", src, "-o", tmp_path / "h.parquet"], env={"CDC_PATH": path})
        assert result.returncode == 3, path
        error = result.stderr.decode()
        assert f"{src}:2: column 'id' holds integer {huge} (80 digits)" in error, (path, error)
        assert "no Parquet type holds an integer of more than 76 digits" in error
        assert "hint: write JSON lines (-f jsonl), which keep it exactly" in error and "(fixed by" not in error
    wide = int("9" * 50)  # past decimal128 but within decimal256: it fits
    src.write_text(f'{{"op":"+I","id":1}}\n{{"op":"+I","id":{wide}}}\n')
    assert run_cdc(["to-changelog", src, "-o", tmp_path / "h.parquet"]).returncode == 0
    assert [int(r["id"]) for r in read_parquet(tmp_path / "h.parquet")] == [1, wide]


class _Consumed:
    def __init__(self) -> None:
        self.total: int | None = None
        self.consumed = 0

    def start(self, total: int | None) -> None:
        self.total = total

    def advance(self, consumed: int) -> None:
        self.consumed += consumed


def test_12_progress_counts_input_consumed_on_every_path(tmp_path: Path) -> None:
    from cdc.core.convert import to_changelog_spec
    from cdc.engine.job import Job
    from cdc.engine.run import run_job

    rows = [{"op": "+I", "id": i, "name": "x" * 40} for i in range(60_000)]  # > 2 MB: workers read it
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    for path, out in (("kernel-lines", "o.jsonl"), ("lines", "o.jsonl"), ("rows", "o.parquet")):
        bar = _Consumed()
        job = Job(to_changelog_spec(), (str(src),), output=str(tmp_path / out))
        try:
            run_job(job, bar, path=path)
        except Exception as exc:  # the kernel may not be built here
            assert "does not take this job" in str(exc)
            continue
        assert bar.total == bar.consumed == src.stat().st_size, path


def test_12_only_a_cdc_that_reads_files_draws_a_bar() -> None:
    from cdc.cli.progress import wanted

    assert wanted(True, ["-"]) and not wanted(False, ["a.jsonl"])
    assert not wanted(None, ["-"])  # downstream in a pipe: the first cdc draws the bar


def test_12_no_bar_between_rows_written_to_the_same_terminal() -> None:
    import pty

    master, slave = pty.openpty()
    try:  # stdout and stderr one terminal, as in an interactive shell
        cmd = [*cdc_executable(), "debezium-decode", str(SAMPLES / "mysql-inventory.jsonl")]
        proc = subprocess.run(cmd, stdout=slave, stderr=slave, timeout=60)
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: all read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    assert proc.returncode == 0
    assert b'"op":"+I"' in seen
    assert "━".encode() not in seen and b"\x1b[2K" not in seen, seen[:300]


def test_13_inspect_says_what_a_file_is_when_it_is_not_a_changelog() -> None:
    events = run_cdc(["inspect", SAMPLES / "mysql-inventory.jsonl"])
    assert events.returncode == 3 and b"read it with --input-format debezium" in events.stderr
    plain = run_cdc(["inspect", SAMPLES / "clicks.jsonl"])
    assert b"cdc replay and cdc aggregate read them with --input-mode append" in plain.stderr
    keyed = run_cdc(["inspect", "-i", "debezium", "--key", "id", SAMPLES / "postgres-default-identity.jsonl"])
    assert keyed.returncode == 0, keyed.stderr


def test_14_csv_on_stdin_hints_the_format() -> None:
    result = run_cdc(["from-changelog"], stdin=(SAMPLES / "orders-ops.csv").read_bytes())
    assert result.returncode == 3 and b"hint: this looks like CSV: name the format with -i csv" in result.stderr


def test_15_columns_select_and_order_in_every_format(tmp_path: Path) -> None:
    args = ["from-changelog", SAMPLES / "orders-ops.csv", "--columns", "status,order_id"]
    assert parse_jsonl(run_cdc(args).stdout)[0] == {"status": "placed", "order_id": "1001"}
    assert run_cdc([*args, "-f", "csv"]).stdout.splitlines()[:2] == [b"status,order_id", b"placed,1001"]
    assert run_cdc([*args, "-o", tmp_path / "c.parquet"]).returncode == 0
    assert list(read_parquet(tmp_path / "c.parquet")[0]) == ["status", "order_id"]
    helped = subprocess.run(
        [*cdc_executable(), "from-changelog", "--help"],
        capture_output=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert b"write these columns, in this order, in any format" in helped.stdout


def test_16_unknown_time_columns_fail_and_diffs_print_null(tmp_path: Path) -> None:
    result = run_cdc(["inspect", SAMPLES / "product-prices.jsonl", "--time-column", "nope"])
    assert result.returncode == 3 and b"time column 'nope' does not exist" in result.stderr
    unused = run_cdc(["materialize", SAMPLES / "product-prices.jsonl", "--key", "product_id", "-t", "nope"])
    assert unused.returncode == 2 and b"--time-column goes with --as-of" in unused.stderr
    log = write_jsonl(tmp_path / "log.jsonl", [{"op": "+I", "id": 1, "v": None}])
    expected = tmp_path / "e.csv"
    expected.write_text("id,v\n1,x\n")
    diff = run_cdc(["materialize", log, "--key", "id", "--expect", expected])
    assert b"expected 'x', got null" in diff.stdout and b"None" not in diff.stdout


def test_17_the_readme_shows_ci_pipelines_with_pipefail() -> None:
    readme = (REPO / "README.md").read_text()
    ci = readme.split("--expect", 1)[1]
    assert "set -euo pipefail" in ci


def test_18_help_texts_show_their_brackets() -> None:
    text = run_cdc(["to-changelog", "--help"]).stdout
    assert b"[op, all input columns]" in text


def test_19_csv_is_written_with_minimal_quoting_on_every_path(tmp_path: Path) -> None:
    from helpers import write_parquet

    src = write_parquet(tmp_path / "in.parquet", [{"op": "+I", "a": "x,y", "b": "", "c": None}])
    arrow = run_cdc(["to-changelog", src, "-o", tmp_path / "a.csv"])
    rows = run_cdc(["to-changelog", src, "-f", "csv"])
    assert arrow.returncode == 0
    assert (tmp_path / "a.csv").read_bytes() == rows.stdout == b'op,a,b,c\nINSERT,"x,y","",\n'


def test_20_the_small_things(tmp_path: Path) -> None:
    assert run_cdc(["from-changelog", SAMPLES / "orders-ops.csv", "-f", "CSV"]).returncode == 0
    assert run_cdc(["from-changelog", "-i", "CSV", SAMPLES / "orders-ops.csv"]).returncode == 0
    wrong = run_cdc(["materialize", SAMPLES / "product-prices.jsonl", "--key", "product"])
    assert b"its columns are update_time, product_id" in wrong.stderr
    missing = run_cdc(["materialize", "--key", "id", "--expect", tmp_path / "no.csv"], stdin=b"")
    assert missing.returncode == 2 and b"--expect: the expected table" in missing.stderr
    flink = run_cdc(["from-changelog"], stdin=b'{"op":"+I","id":1}\n')
    assert b"--preset flink-short" in flink.stderr
    bare = run_cdc([])
    assert bare.returncode == 2 and b"Usage: cdc" in bare.stdout + bare.stderr
    with open("/dev/full", "wb") as full:
        stuck = subprocess.run(
            [*cdc_executable(), "from-changelog", SAMPLES / "orders-ops.csv"],
            stdout=full,
            stderr=subprocess.PIPE,
        )
    assert stuck.returncode == 3 and b"output stopped there" in stuck.stderr
    assert invoke(["materialize", "-f", "print"], stdin="").exit_code == 0


def test_11_a_wide_integer_past_the_rows_that_fixed_the_type_is_named() -> None:
    import io

    import pytest

    from cdc.core.errors import InputError
    from cdc.formats.parquet.io import ParquetWriter

    huge = int("9" * 80)
    writer = ParquetWriter(io.BytesIO(), batch_rows=2)  # rows 1-2 fix id as int64
    with pytest.raises(InputError) as caught:
        writer.write_rows([{"id": 1}, {"id": 2}, {"id": 3}, {"id": huge}])
        writer.close()
    assert str(caught.value).startswith(f"<output>: row 4: column 'id' holds integer {huge} (80 digits)")
