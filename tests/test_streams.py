"""Streams as real databases and Kafka write them (issue #24): a schema change mid-stream, several
tables in one file, table filters — through the real CLI, on every path."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFORMANCE, parse_jsonl, read_csv, run_cdc

from cdc.engine.paths.native import kernel

REAL = CONFORMANCE / "debezium-real"


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# -- ALTER TABLE … ADD COLUMN: an absent column and a null are the same value ---------------------

ADD_COLUMN = [
    {"op": "+I", "id": 1, "name": "a"},
    {"op": "+I", "id": 2, "name": "b"},
    {"op": "+I", "id": 3, "name": "c", "note": None},  # written after ALTER TABLE … ADD COLUMN note
    {"op": "-U", "id": 1, "name": "a", "note": None},
    {"op": "+U", "id": 1, "name": "a2", "note": "x"},
    {"op": "-D", "id": 2, "name": "b", "note": None},
]


@pytest.mark.parametrize(
    ("key", "path"),
    [([], "rows"), ([], "state-kernel"), (["--key", "id"], "rows"), (["--key", "id"], "keyed-kernel")][
        : None if kernel.available() else 0
    ]
    or [([], "rows"), (["--key", "id"], "rows")],
)
def test_add_column_mid_stream_is_consistent_on_every_path(tmp_path: Path, key: list[str], path: str) -> None:
    src = write(tmp_path / "c.jsonl", ADD_COLUMN)
    done = run_cdc(["materialize", src, *key, "--strict", "--sort" if key else "--stats"], env={"CDC_PATH": path})
    assert done.returncode == 0, done.stderr.decode()
    rows = sorted(parse_jsonl(done.stdout), key=lambda r: r["id"])
    assert [(r["id"], r["name"], r.get("note")) for r in rows] == [(1, "a2", "x"), (3, "c", None)]


@pytest.mark.parametrize("path", ["rows", *(["state-kernel"] if kernel.available() else [])])
def test_add_column_inspect_and_replay_see_no_finding(tmp_path: Path, path: str) -> None:
    src = write(tmp_path / "c.jsonl", ADD_COLUMN)
    done = run_cdc(["inspect", src, "--json"], env={"CDC_PATH": path})
    report = json.loads(done.stdout)
    assert report["consistency"]["inconsistent_changes"] == 0
    assert report["live_rows"] == 2


def test_replay_update_that_only_adds_a_null_column_is_a_noop(tmp_path: Path) -> None:
    src = write(
        tmp_path / "c.jsonl",
        [{"op": "+I", "id": 1, "name": "a"}, {"op": "+U", "id": 1, "name": "a", "note": None}],
    )
    done = run_cdc(["replay", src, "--key", "id"], env={"CDC_PATH": "rows"})
    assert [r["op"] for r in parse_jsonl(done.stdout)] == ["+I"]


def test_strict_finding_names_the_differing_column_with_both_values(tmp_path: Path) -> None:
    rows = [*ADD_COLUMN[:3], {"op": "-U", "id": 1, "name": "a", "note": "oops"}]
    src = write(tmp_path / "c.jsonl", rows)
    for path in ("rows", *(("keyed-kernel",) if kernel.available() else ())):
        done = run_cdc(["materialize", src, "--key", "id", "--strict"], env={"CDC_PATH": path})
        assert done.returncode == 3
        err = done.stderr.decode()
        assert "c.jsonl:4" in err and 'note: stored null, got "oops"' in err
        assert "name" not in err.split("id=1:")[1]  # only the column that differs


def test_table_output_has_the_union_of_columns_earlier_rows_null(tmp_path: Path) -> None:
    src = write(tmp_path / "c.jsonl", [{"op": "+I", "id": 1, "name": "a"}, {"op": "+I", "id": 2, "name": "b", "n": 7}])
    out = tmp_path / "t.csv"
    done = run_cdc(["materialize", src, "--key", "id", "-o", out])
    assert done.returncode == 0, done.stderr.decode()
    assert read_csv(out) == [{"id": "1", "name": "a", "n": None}, {"id": "2", "name": "b", "n": "7"}]


# -- several tables in one file ---------------------------------------------------------------------


def two_tables(tmp_path: Path) -> Path:
    """Two real Debezium streams of one PostgreSQL capture, interleaved event by event, as a
    single-topic router (or an S3 sink of several topics) writes them into one file."""
    full = gzip.decompress((REAL / "postgres-full-identity" / "events.jsonl.gz").read_bytes()).splitlines()
    default = gzip.decompress((REAL / "postgres-default-identity" / "events.jsonl.gz").read_bytes()).splitlines()
    mixed = [line for pair in itertools.zip_longest(full, default) for line in pair if line is not None]
    path = tmp_path / "two.jsonl"
    path.write_bytes(b"\n".join(mixed) + b"\n")
    return path


def decoded_table(src: Path, *args: Any) -> list[dict[str, Any]]:
    done = run_cdc(["debezium-decode", src, "--on-truncate", "delete", *args])
    assert done.returncode == 0, done.stderr.decode()
    table = run_cdc(["materialize", "--key", "id", "--sort", "--strict"], stdin=done.stdout)
    assert table.returncode == 0, table.stderr.decode()
    return parse_jsonl(table.stdout)


@pytest.mark.parametrize(
    ("case", "pattern", "extra"),
    [
        ("postgres-full-identity", "items_full", []),
        ("postgres-full-identity", r"postgres\.public\.items_full", []),
        ("postgres-default-identity", "public.items_default", ["--key", "id"]),
    ],
)
def test_table_include_picks_one_table_of_a_mixed_file(
    tmp_path: Path, case: str, pattern: str, extra: list[str]
) -> None:
    own = tmp_path / "own.jsonl"
    own.write_bytes(gzip.decompress((REAL / case / "events.jsonl.gz").read_bytes()))
    assert decoded_table(two_tables(tmp_path), "--table-include", pattern, *extra) == decoded_table(own, *extra)


def test_database_include_that_matches_no_table_leaves_everything_out(tmp_path: Path) -> None:
    done = run_cdc(["debezium-decode", two_tables(tmp_path), "--database-include", "other", "--stats"])
    assert done.returncode == 0 and done.stdout == b""
    assert "filtered messages 419" in done.stderr.decode()  # every event; the 72 tombstones counted apart


@pytest.mark.parametrize(
    "args",
    [
        ["materialize", "-i", "debezium", "--key", "id"],
        ["replay", "-i", "debezium", "--key", "id"],
        ["aggregate", "-i", "debezium", "--agg", "n=COUNT(*)"],
        ["debezium-decode", "--key", "id"],
        ["decode", "--key", "id"],
    ],
)
def test_a_stateful_command_refuses_several_tables_and_names_them(tmp_path: Path, args: list[str]) -> None:
    done = run_cdc([*args, two_tables(tmp_path)])
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "postgres.public.items_full" in err and "postgres.public.items_default" in err
    assert "two.jsonl:2" in err and "--table-include" in err


def test_materialize_of_envelopes_takes_the_table_filter(tmp_path: Path) -> None:
    src = two_tables(tmp_path)
    done = run_cdc(["materialize", "-i", "debezium", src, "--table-include", "items_full", "--key", "id"])
    # the file holds a TRUNCATE: materialize -i debezium stops there (decode --on-truncate says what to do)
    assert done.returncode == 3 and "truncate" in done.stderr.decode()
    assert "more than one table" not in done.stderr.decode()


def test_table_filter_on_plain_rows_is_refused(tmp_path: Path) -> None:
    src = write(tmp_path / "c.jsonl", ADD_COLUMN)
    done = run_cdc(["materialize", src, "--table-include", "x"])
    assert done.returncode == 2 and "-i debezium" in done.stderr.decode()


def test_inspect_lists_the_tables_of_a_stream(tmp_path: Path) -> None:
    src = two_tables(tmp_path)
    done = run_cdc(["inspect", "-i", "debezium", src, "--json", "--on-error", "skip"])
    report = json.loads(done.stdout)
    assert [(t["name"], t["first"]) for t in report["tables"]] == [
        ("postgres.public.items_full", f"{src}:1"),
        ("postgres.public.items_default", f"{src}:2"),
    ]
    assert sum(t["events"] for t in report["tables"]) == 419  # every event but the 72 tombstones
    text = run_cdc(["inspect", "-i", "debezium", src, "--on-error", "skip"]).stdout.decode()
    assert "postgres.public.items_full  (" in text and "several tables" in text


def test_canal_tables_in_one_stream(tmp_path: Path) -> None:
    def canal(db: str, table: str, row: dict[str, Any], kind: str = "INSERT") -> dict[str, Any]:
        return {"data": [row], "database": db, "table": table, "type": kind, "isDdl": False, "old": None}

    src = write(
        tmp_path / "c.jsonl",
        [canal("shop", "orders", {"id": "1"}), canal("shop", "users", {"id": "1", "n": "x"})],
    )
    done = run_cdc(["materialize", "-i", "canal", src, "--key", "id"])
    assert done.returncode == 2 and "shop.orders" in done.stderr.decode() and "shop.users" in done.stderr.decode()
    done = run_cdc(["materialize", "-i", "canal", src, "--key", "id", "--table-include", "users"])
    assert done.returncode == 0 and parse_jsonl(done.stdout) == [{"id": "1", "n": "x"}]


# -- types and metadata through the documented pipe (a schema line) -----------------------------------


def shell(command: str, tmp_path: Path) -> Any:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    env.pop("CDC_SCHEMA_LINE", None)
    return subprocess.run(["sh", "-c", command], capture_output=True, cwd=tmp_path, env=env, timeout=120)


def test_decimal_timestamp_date_survive_the_pipe_into_parquet(tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    from helpers import SAMPLES

    src = SAMPLES / "mysql-inventory.jsonl"
    done = shell(f"cdc debezium-decode {src} | cdc materialize --key id -o piped.parquet", tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    one = run_cdc(["debezium-decode", src, "-o", tmp_path / "changes.parquet"])
    assert one.returncode == 0
    direct = run_cdc(["materialize", tmp_path / "changes.parquet", "--key", "id", "-o", tmp_path / "direct.parquet"])
    assert direct.returncode == 0, direct.stderr.decode()
    piped = pq.read_schema(tmp_path / "piped.parquet")
    assert str(piped.field("price").type) == "decimal128(10, 2)"
    assert str(piped.field("updated_at").type).startswith("timestamp")
    assert str(piped.field("launched").type) == "date32[day]"
    assert pq.read_table(tmp_path / "piped.parquet").equals(pq.read_table(tmp_path / "direct.parquet"))


def test_readme_recipe_metadata_column_is_not_row_identity(tmp_path: Path) -> None:
    from helpers import SAMPLES

    src = SAMPLES / "mysql-inventory.jsonl"
    recipe = f"cdc debezium-decode {src} --metadata source.timestamp=ts | cdc materialize --key id --strict"
    done = shell(recipe, tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    rows = parse_jsonl(done.stdout)
    assert [r["id"] for r in rows] == [101, 103, 104] and all("ts" in r for r in rows)  # kept, not compared


def test_head_and_files_see_no_schema_line(tmp_path: Path) -> None:
    from helpers import SAMPLES

    src = SAMPLES / "mysql-inventory.jsonl"
    done = shell(f"cdc debezium-decode {src} | head -1", tmp_path)
    assert json.loads(done.stdout)["op"] == "+I"
    run_cdc(["debezium-decode", src, "-o", tmp_path / "x.jsonl"])
    assert "__cdc_schema" not in (tmp_path / "x.jsonl").read_text()


def test_a_schema_line_is_read_by_every_changelog_reader(tmp_path: Path) -> None:
    from helpers import SAMPLES

    src = SAMPLES / "mysql-inventory.jsonl"
    done = run_cdc(["debezium-decode", src, "--metadata", "source.timestamp=ts"], env={"CDC_SCHEMA_LINE": "always"})
    first = json.loads(done.stdout.split(b"\n")[0])
    assert first["__cdc_schema"]["metadata"] == ["ts"]
    assert first["__cdc_schema"]["columns"]["price"] == "decimal(10,2)"
    piped = tmp_path / "piped.jsonl"
    piped.write_bytes(done.stdout)
    for args in (["inspect", "--key", "id", "--json"], ["replay", "--key", "id"], ["to-changelog"]):
        out = run_cdc([*args, piped], env={"CDC_SCHEMA_LINE": "never"})
        assert out.returncode == 0, (args, out.stderr.decode())
        assert b"__cdc_schema" not in out.stdout
    report = json.loads(run_cdc(["inspect", piped, "--key", "id", "--json"]).stdout)
    assert report["changes"] == 9 and report["consistency"]["inconsistent_changes"] == 0


def test_ignore_columns_for_streams_without_the_schema_line(tmp_path: Path) -> None:
    rows = [
        {"op": "+I", "id": 1, "v": "a", "ts": 1},
        {"op": "-U", "id": 1, "v": "a", "ts": 2},  # the -U carries the time of the change that removed it
        {"op": "+U", "id": 1, "v": "b", "ts": 2},
        {"op": "-D", "id": 1, "v": "b", "ts": 3},
    ]
    src = write(tmp_path / "m.jsonl", rows)
    for key in ([], ["--key", "id"]):
        assert run_cdc(["materialize", src, *key, "--strict"]).returncode == 3
        done = run_cdc(["materialize", src, *key, "--strict", "--ignore-columns", "ts"])
        assert done.returncode == 0, done.stderr.decode()
    report = json.loads(run_cdc(["inspect", src, "--ignore-columns", "ts", "--json"]).stdout)
    assert report["consistency"]["inconsistent_changes"] == 0 and report["live_rows"] == 0


# -- Kafka dumps: kcat -J and kafka-console-consumer ------------------------------------------------

DUMPS = CONFORMANCE / "kafka-dumps"


def mariadb_events(tmp_path: Path) -> Path:
    lines = gzip.decompress((REAL / "mariadb" / "events.jsonl.gz").read_bytes()).split(b"\n")
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join([line for line in lines if line.strip()][:43]) + b"\n")
    return path


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("mariadb-items.kcat.jsonl.gz", []),
        ("mariadb-items.kcat.jsonl.gz", ["-i", "kcat"]),
        ("mariadb-items.console.txt.gz", []),
        ("mariadb-items.console.txt.gz", ["-i", "kafka-console"]),
        ("mariadb-items.console-timestamps.txt.gz", []),
    ],
)
def test_a_kafka_dump_decodes_as_the_events_it_holds(tmp_path: Path, name: str, named: list[str]) -> None:
    want = run_cdc(["decode", mariadb_events(tmp_path), "--on-truncate", "delete", "--stats"])
    got = run_cdc(["decode", *named, DUMPS / name, "--on-truncate", "delete", "--stats"])
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout == want.stdout
    assert "tombstones 3" in got.stderr.decode() and "kafka messages 43" in got.stderr.decode()


def test_kafka_fields_are_metadata_columns(tmp_path: Path) -> None:
    done = run_cdc(
        [
            "debezium-decode",
            DUMPS / "mariadb-items.kcat.jsonl.gz",
            "--on-truncate",
            "delete",
            "--metadata",
            "kafka.topic=topic",
            "--metadata",
            "kafka.offset=off",
            "--metadata",
            "kafka.partition",
            "--metadata",
            "kafka.timestamp=kts",
            "--metadata",
            "kafka.key=k",
        ]
    )
    assert done.returncode == 0, done.stderr.decode()
    rows = parse_jsonl(done.stdout)
    assert {r["topic"] for r in rows} == {"e2e_main.e2e.items"} and {r["kafka_partition"] for r in rows} == {0}
    assert rows[0]["off"] == 0 and rows[0]["k"] == {"id": rows[0]["id"]}
    assert rows[0]["kts"].endswith("+00:00")
    timed = run_cdc(
        ["decode", DUMPS / "mariadb-items.console-timestamps.txt.gz", "--on-truncate", "delete",
         "--metadata", "kafka.offset=off", "--metadata", "kafka.timestamp=kts"]
    )  # fmt: skip
    assert [(r["off"], r["kts"]) for r in parse_jsonl(timed.stdout)] == [(r["off"], r["kts"]) for r in rows]


def test_a_kafka_dump_is_read_wherever_envelopes_are(tmp_path: Path) -> None:
    dump = tmp_path / "dump.jsonl"
    dump.write_bytes(gzip.decompress((DUMPS / "mariadb-items.kcat.jsonl.gz").read_bytes()))
    mixed = run_cdc(["inspect", "-i", "debezium", dump, "--json", "--on-error", "skip"])
    report = json.loads(mixed.stdout)
    assert [t["name"] for t in report["tables"]] == ["e2e.items"]


def test_kafka_metadata_of_plain_events_is_refused(tmp_path: Path) -> None:
    done = run_cdc(["decode", mariadb_events(tmp_path), "--metadata", "kafka.topic", "--on-truncate", "skip"])
    assert done.returncode == 3 and "not a Kafka message" in done.stderr.decode()


# -- CSV as people have it ----------------------------------------------------------------------------

FEED = CONFORMANCE / "change-feeds" / "delta-cdf" / "feed.csv"


def feed_as(tmp_path: Path, delimiter: str, quote: str, header: bool) -> Path:
    """The Delta change feed written again with another delimiter and quote, perhaps headerless;
    a value holding the delimiter is quoted."""
    import csv

    with FEED.open(newline="") as fh:
        rows = list(csv.reader(fh))
    rows[1][1] = "a;b|c,d"  # a value that needs its quotes, whatever the delimiter
    out = tmp_path / "feed.txt"
    with out.open("w", newline="") as fh:
        writer = csv.writer(fh, delimiter=delimiter, quotechar=quote, lineterminator="\n")
        writer.writerows(rows if header else rows[1:])
    return out


@pytest.mark.parametrize(
    ("delimiter", "quote", "header", "flag"),
    [(";", '"', True, ";"), ("|", "'", False, "|"), ("\t", '"', False, "tab")],
)
@pytest.mark.parametrize("output", ["jsonl", "parquet"])
def test_csv_dialects_read_as_the_same_rows(
    tmp_path: Path, delimiter: str, quote: str, header: bool, flag: str, output: str
) -> None:
    import csv

    with FEED.open(newline="") as fh:
        names = next(csv.reader(fh))
    plain = feed_as(tmp_path, ",", '"', True)
    plain = plain.rename(tmp_path / "plain.csv")
    odd = feed_as(tmp_path, delimiter, quote, header)
    args = ["-i", "csv", "--delimiter", flag, "--quote-char", quote]
    if not header:
        args += ["--no-header", "--header-names", ",".join(names)]
    want = run_cdc(["from-changelog", plain, "--preset", "delta-cdf", "-o", tmp_path / f"want.{output}"])
    got = run_cdc(["from-changelog", odd, *args, "--preset", "delta-cdf", "-o", tmp_path / f"got.{output}"])
    assert want.returncode == 0 and got.returncode == 0, got.stderr.decode()
    assert (tmp_path / f"got.{output}").read_bytes() == (tmp_path / f"want.{output}").read_bytes()
    table = run_cdc(["materialize", odd, *args, "--key", "c1", "--sort"], stdin=None)
    assert table.returncode == 3  # a changelog needs its op column: the feed is plain rows
    assert "kind column" in table.stderr.decode()


def test_csv_options_on_stdin_keep_line_numbers(tmp_path: Path) -> None:
    data = b"+I|1|'x|y'\n+I|2|z|9\n-D|1|'x|y'\n"
    done = run_cdc(
        ["materialize", "-i", "csv", "--no-header", "--header-names", "op,id,v", "--delimiter", "|",
         "--quote-char", "'", "--on-error", "skip", "--strict"],
        stdin=data,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""  # 1 inserted, then deleted; the ragged line set aside
    assert "<stdin>:2: ragged CSV row" in done.stderr.decode()


def test_csv_options_need_csv_input_and_one_character(tmp_path: Path) -> None:
    src = write(tmp_path / "c.jsonl", ADD_COLUMN)
    done = run_cdc(["materialize", src, "--delimiter", ";"])
    assert done.returncode == 2 and "-i csv" in done.stderr.decode()
    done = run_cdc(["materialize", "-i", "csv", src, "--delimiter", ";;"])
    assert done.returncode == 2 and "one character" in done.stderr.decode()
    done = run_cdc(["materialize", "-i", "csv", src, "--no-header"])
    assert done.returncode == 2 and "--header-names" in done.stderr.decode()


def test_header_names_rename_a_header(tmp_path: Path) -> None:
    src = tmp_path / "c.csv"
    src.write_text("kind,key,val\n+I,1,a\n")
    done = run_cdc(["materialize", src, "--header-names", "op,id,v", "--key", "id"])
    assert parse_jsonl(done.stdout) == [{"id": "1", "v": "a"}]
    done = run_cdc(["materialize", src, "--header-names", "op,id"])
    assert done.returncode == 3 and "the header has 3 columns" in done.stderr.decode()


# -- JSON array files ---------------------------------------------------------------------------------


def test_a_json_array_of_real_events_decodes_as_their_json_lines(tmp_path: Path) -> None:
    events = [
        json.loads(line)
        for line in gzip.decompress((REAL / "mariadb" / "events.jsonl.gz").read_bytes()).split(b"\n")
        if line.strip()
    ]
    lines = tmp_path / "events.jsonl"
    lines.write_text("".join(json.dumps(e) + "\n" for e in events))
    pretty = tmp_path / "events.json"
    pretty.write_text(json.dumps(events, indent=2))
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(events))
    want = run_cdc(["decode", lines, "--on-truncate", "delete", "--stats"])
    for path in (pretty, compact):
        got = run_cdc(["decode", path, "--on-truncate", "delete", "--stats"])
        assert got.returncode == 0, got.stderr.decode()
        assert got.stdout == want.stdout
        assert got.stderr.decode().replace(str(path), "") == want.stderr.decode().replace(str(lines), "")
    piped = run_cdc(["decode", "--on-truncate", "delete"], stdin=pretty.read_bytes())
    assert piped.stdout == want.stdout


def test_json_array_records_are_placed_at_their_lines(tmp_path: Path) -> None:
    src = tmp_path / "c.json"
    src.write_text('[\n  {"op": "+I", "id": 1},\n  {"op": "+I",\n   "id": 2},\n  7,\n  {"op": "-D", "id": 9}\n]\n')
    done = run_cdc(["materialize", src, "--key", "id", "--on-error", "skip", "--rejects", tmp_path / "r.jsonl"])
    assert done.returncode == 0, done.stderr.decode()
    assert parse_jsonl(done.stdout) == [{"id": 1}, {"id": 2}]
    assert [(r["line"], r["raw"]) for r in parse_jsonl((tmp_path / "r.jsonl").read_bytes())] == [(5, "7")]
    strict = run_cdc(
        ["materialize", src, "--key", "id", "--strict", "--on-error", "skip", "--rejects", tmp_path / "s.jsonl"]
    )
    assert strict.returncode == 0, strict.stderr.decode()
    rejected = parse_jsonl((tmp_path / "s.jsonl").read_bytes())
    assert [(r["line"], r["error"].split(" (")[0]) for r in rejected] == [
        (5, "expected a JSON object, found int: 7"),
        (6, "-D of a key that does not exist"),
    ]


def test_a_large_json_array_streams_across_chunks(tmp_path: Path) -> None:
    rows = [
        {"op": "+I", "id": i, "text": 'br[ack]{e}ts, "quotes" and \\ back\\\\slashes ' + "x" * (i % 300)}
        for i in range(20000)
    ]
    lines = tmp_path / "c.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows))
    array = tmp_path / "c.json"
    array.write_text(json.dumps(rows, indent=1))
    assert array.stat().st_size > 3 << 20  # several of the reader's 1 MB chunks
    want = run_cdc(["to-changelog", lines])
    got = run_cdc(["to-changelog", array])
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout == want.stdout


def test_a_truncated_json_array_is_an_error_at_its_end(tmp_path: Path) -> None:
    src = tmp_path / "c.json"
    src.write_text('[\n {"op": "+I", "id": 1},\n {"op": "+I", "id": 2}\n')
    done = run_cdc(["materialize", src])
    assert done.returncode == 3 and "never closed" in done.stderr.decode()


@pytest.mark.parametrize("path", ["rows", None])
def test_a_stream_that_gains_a_column_writes_parquet_with_it(tmp_path: Path, path: str | None) -> None:
    import pyarrow.parquet as pq

    src = write(tmp_path / "c.jsonl", [{"op": "+I", "id": 1, "name": "a"}, {"op": "+I", "id": 3, "name": "c", "n": 7}])
    out = tmp_path / "x.parquet"
    done = run_cdc(["to-changelog", src, "-o", out], env={"CDC_PATH": path} if path else None)
    assert done.returncode == 0, done.stderr.decode()
    assert pq.read_table(out).to_pylist() == [
        {"op": "INSERT", "id": 1, "name": "a", "n": None},
        {"op": "INSERT", "id": 3, "name": "c", "n": 7},
    ]


@pytest.mark.parametrize(
    ("case", "decode"),
    [
        ("postgres-full-identity", []),
        ("postgres-default-identity", ["--key", "id"]),
        ("mariadb", []),
        ("mariadb-numeric", []),
    ],
)
def test_real_streams_through_the_pipe_give_the_parquet_one_command_gives(
    tmp_path: Path, case: str, decode: list[str]
) -> None:
    import pyarrow.parquet as pq

    events = tmp_path / "events.jsonl"
    events.write_bytes(gzip.decompress((REAL / case / "events.jsonl.gz").read_bytes()))
    options = " ".join(["--on-truncate", "delete", *decode])
    pipe = f"cdc debezium-decode events.jsonl {options} | cdc materialize --key id --sort -o piped.parquet"
    done = shell(pipe, tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    one = run_cdc(["debezium-decode", events, "--on-truncate", "delete", *decode, "-o", tmp_path / "changes.parquet"])
    assert one.returncode == 0, one.stderr.decode()
    direct = run_cdc(
        ["materialize", tmp_path / "changes.parquet", "--key", "id", "--sort", "-o", tmp_path / "direct.parquet"]
    )
    assert direct.returncode == 0, direct.stderr.decode()
    piped, want = pq.read_table(tmp_path / "piped.parquet"), pq.read_table(tmp_path / "direct.parquet")
    assert piped.schema.names == want.schema.names
    for got, wanted in zip(piped.schema, want.schema, strict=True):
        if got.type != wanted.type:  # a NUMERIC without precision: each writer fits its own values
            assert str(got.type).startswith("decimal") and got.type.scale == wanted.type.scale, (got, wanted)
    assert piped.cast(want.schema).equals(want)


def test_real_events_with_add_column_mid_stream_materialize_strictly(tmp_path: Path) -> None:
    """Real MariaDB events made into the stream ``ALTER TABLE items ADD COLUMN u`` gives: before the
    cut, neither images nor schema have ``u``; after it, a row written before the ALTER has ``u``
    null in its before image (the column's value once added), rows written after carry theirs."""
    lines = [line for line in gzip.decompress((REAL / "mariadb" / "events.jsonl.gz").read_bytes()).split(b"\n") if line]
    truncate = max((i for i, line in enumerate(lines) if b'"op":"t"' in line), default=0)
    cut = truncate + (len(lines) - truncate) // 2  # after the TRUNCATE: rows of both kinds live at the end
    old: set[Any] = set()  # keys whose row was last written before the ALTER
    out = []
    for n, line in enumerate(lines):
        event = json.loads(line)
        if event is None:
            out.append("null")
            continue
        payload, schema = event["payload"], event["schema"]
        if payload["op"] == "t":
            old.clear()
        before, after = payload.get("before"), payload.get("after")
        if n < cut:
            for image in (before, after):
                if image is not None:
                    image.pop("u", None)
            for part in schema["fields"][:2]:
                part["fields"] = [f for f in part["fields"] if f["field"] != "u"]
        elif before is not None and before["id"] in old:
            before["u"] = None
        if payload["op"] == "d":
            old.discard(before["id"])
        elif after is not None:
            (old.add if n < cut else old.discard)(after["id"])
            if before is not None and before["id"] != after["id"]:
                old.discard(before["id"])
        out.append(json.dumps(event))
    altered = tmp_path / "altered.jsonl"
    altered.write_text("\n".join(out) + "\n")
    original = tmp_path / "original.jsonl"
    original.write_bytes(b"\n".join(lines) + b"\n")
    got = decoded_table(altered)  # --strict: every -U and -D finds its row
    want = decoded_table(original)
    assert [r["id"] for r in got] == [r["id"] for r in want]
    assert any("u" not in r for r in got)  # JSON lines: each row as its last change wrote it
    got = [{c: r.get(c) for c in want[0]} for r in got]  # a missing column reads as null
    for row, full in zip(got, want, strict=True):
        assert row == ({**full, "u": None} if row["id"] in old else full)
    assert any(row["id"] in old for row in got) and any(row["id"] not in old for row in got)
