"""debezium-decode and debezium-encode behaviours beyond the conformance data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import REPO, SAMPLES, invoke, parse_jsonl, read_jsonl, run_cdc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdc
from cdc.core.specs import DecodeSpec, EncodeSpec
from cdc.core.stats import Counts
from cdc.formats.debezium import DebeziumDecoder, DebeziumEncoder


def lines(*events: Any) -> bytes:
    return b"".join((b"" if e is None else json.dumps(e).encode()) + b"\n" if e != "" else b"\n" for e in events)


def ev(op: str, before: Any = None, after: Any = None, **extra: Any) -> dict[str, Any]:
    return {"before": before, "after": after, "op": op, **extra}


A1 = {"id": 1, "v": "a"}
A2 = {"id": 1, "v": "b"}
B1 = {"id": 2, "v": "x"}


def decode(data: bytes, *flags: str) -> tuple[int, list[dict[str, Any]], str]:
    result = run_cdc(["debezium-decode", *flags], stdin=data)
    return result.returncode, parse_jsonl(result.stdout), result.stderr.decode()


def test_all_tombstone_forms_are_skipped_and_counted() -> None:
    data = lines(ev("c", after=A1), None, "", {"schema": None, "payload": None}, ev("d", before=A1))
    code, rows, err = decode(data, "--stats")
    assert code == 0 and [r["op"] for r in rows] == ["+I", "-D"]
    assert "tombstones 3" in err


def test_schema_include_true_requires_the_envelope() -> None:
    code, _, err = decode(lines(ev("c", after=A1)), "--schema-include", "true")
    assert code == 3 and "<stdin>:1:" in err and "envelope" in err


def test_events_without_op_are_not_change_events() -> None:
    # A schema-change record is recognised and counted (tests/test_debezium_forms.py has them all);
    # a record that is nothing Debezium writes is an error that says what it lacks.
    code, rows, err = decode(
        lines({"ts_ms": 1, "databaseName": "inventory", "ddl": "CREATE TABLE t (id INT)"}), "--stats"
    )
    assert code == 0 and rows == [] and "schema changes 1" in err
    code, _, err = decode(lines({"id": 1, "name": "x"}))
    assert code == 3 and "no 'op' field" in err


def test_unknown_op_and_missing_after() -> None:
    assert "unknown Debezium op 'x'" in decode(lines(ev("x", after=A1)))[2]
    assert "the 'after' field of a 'c' event is null" in decode(lines(ev("c")))[2]


def test_truncate_delete_retracts_every_live_row() -> None:
    data = lines(ev("c", after=A1), ev("c", after=B1), ev("u", A1, A2), ev("t"), ev("c", after=A1))
    # keyed state keeps first-insertion order of keys; the keyless multiset re-appends an updated row
    for flags, order in (([], [2, 1]), (["--key", "id"], [1, 2])):
        code, rows, _ = decode(data, "--on-truncate", "delete", *flags)
        assert code == 0
        deletes = {1: ("-D", 1, "b"), 2: ("-D", 2, "x")}
        assert [(r["op"], r["id"], r["v"]) for r in rows][-3:] == [deletes[k] for k in order] + [("+I", 1, "a")]


def test_toast_placeholder_is_never_written() -> None:
    data = lines(
        ev("c", after={"id": 1, "doc": "big text", "n": 1}),
        ev("u", {"id": 1, "doc": "big text", "n": 1}, {"id": 1, "doc": "__debezium_unavailable_value", "n": 2}),
    )
    code, rows, err = decode(data)  # the update's whole before image holds the unchanged value
    assert code == 0 and rows[-1] == {"op": "+U", "id": 1, "doc": "big text", "n": 2} and err == ""
    data = lines(
        ev("c", after={"id": 1, "doc": "big text", "n": 1}),
        ev("u", {"id": 1, "doc": "big text", "n": None}, {"id": 1, "doc": "__debezium_unavailable_value", "n": 2}),
        ev(
            "u",
            {"id": 1, "doc": "__debezium_unavailable_value", "n": 2},
            {"id": 1, "doc": "__debezium_unavailable_value", "n": 3},
        ),
    )
    code, rows, err = decode(data)  # without a key, and no image that holds it: a warning per column, counted
    assert code == 0 and "unavailable value kept (no --key) 2" in err and "warning" in err
    code, _, err = decode(data, "--strict")
    assert code == 3 and "'doc'" in err and "__debezium_unavailable_value" in err and "--key" in err
    code, rows, _ = decode(data, "--key", "id")
    assert code == 0 and rows[-1] == {"op": "+U", "id": 1, "doc": "big text", "n": 3}


def test_postgres_sample_with_key_rebuilds_updates_and_deletes() -> None:
    result = run_cdc(["debezium-decode", SAMPLES / "postgres-default-identity.jsonl", "--key", "id"])
    rows = parse_jsonl(result.stdout)
    assert [(r["op"], r["id"]) for r in rows] == [
        ("+I", 1),
        ("+I", 2),
        ("+I", 3),
        ("-U", 1),
        ("+U", 1),
        ("-U", 2),
        ("+U", 2),
        ("-D", 3),
    ]
    assert rows[4]["bio"] == "Rides a scooter."  # TOAST value taken from state
    assert rows[-1] == {"op": "-D", "id": 3, "email": "carol@example.com", "tier": "free", "bio": "New here."}


def test_metadata_columns_with_flink_names() -> None:
    result = run_cdc(
        [
            "debezium-decode",
            SAMPLES / "mysql-inventory.jsonl",
            "--metadata",
            "source.table=tbl",
            "--metadata",
            "ingestion-timestamp",
            "--metadata",
            "source.database",
        ]
    )
    first = parse_jsonl(result.stdout)[0]
    assert list(first)[-3:] == ["tbl", "ingestion_timestamp", "source_database"]
    assert first["tbl"] == "products" and first["source_database"] == "inventory"
    assert first["ingestion_timestamp"].startswith("2024-06-01T10:00:00.120")
    assert "has no metadata 'nope'" in run_cdc(["debezium-decode", "--metadata", "nope"], stdin=b"").stderr.decode()


def test_mysql_sample_to_parquet_has_typed_columns(tmp_path: Path) -> None:
    out = tmp_path / "changes.parquet"
    assert run_cdc(["debezium-decode", SAMPLES / "mysql-inventory.jsonl", "-o", out]).returncode == 0
    import pyarrow.parquet as pq

    types = {f.name: str(f.type) for f in pq.read_schema(out)}
    assert (types["price"], types["updated_at"], types["launched"]) == (
        "decimal128(10, 2)",
        "timestamp[us]",
        "date32[day]",
    )


def test_to_changelog_reads_debezium_directly() -> None:
    result = run_cdc(["to-changelog", "--input-format", "debezium", SAMPLES / "mysql-inventory.jsonl"])
    assert [r["op"] for r in parse_jsonl(result.stdout)] == ["INSERT"] * 4 + ["UPDATE_BEFORE", "UPDATE_AFTER"] * 2 + [
        "DELETE"
    ]


def test_encode_merges_an_update_pair_into_one_u_event(tmp_path: Path) -> None:
    changes = [{"op": "+I", **A1}, {"op": "-U", **A1}, {"op": "+U", **A2}, {"op": "-D", **A2}]
    data = "".join(json.dumps(c) + "\n" for c in changes).encode()
    events = parse_jsonl(run_cdc(["debezium-encode", "--source", "table=t"], stdin=data).stdout)
    assert [(e["op"], e["before"], e["after"]) for e in events] == [("c", None, A1), ("u", A1, A2), ("d", A2, None)]
    assert events[0]["source"] == {"table": "t"} and isinstance(events[0]["ts_ms"], int)
    split = parse_jsonl(run_cdc(["debezium-encode", "--split-updates"], stdin=data).stdout)
    assert [e["op"] for e in split] == ["c", "d", "c", "d"]  # Flink's form


def test_encode_time_column_and_lone_kinds(tmp_path: Path) -> None:
    changes = [
        {"op": "+U", "id": 1, "t": "2024-01-01T00:00:01Z"},
        {"op": "-U", "id": 1, "t": 5},
        {"op": "+I", "id": 2, "t": 7},
    ]
    data = "".join(json.dumps(c) + "\n" for c in changes).encode()
    events = parse_jsonl(run_cdc(["debezium-encode", "--time-column", "t"], stdin=data).stdout)
    assert [(e["op"], e["ts_ms"]) for e in events] == [("u", 1704067201000), ("d", 5), ("c", 7)]
    assert events[0]["before"] is None  # an upsert: the before image is unknown


def test_encode_help_has_an_example() -> None:
    assert "Examples" in invoke(["debezium-encode", "--help"]).stdout
    assert "Examples" in invoke(["debezium-decode", "--help"]).stdout


# -- property: debezium-encode then debezium-decode returns the same changelog -------------------

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.text(max_size=8),
    st.floats(allow_nan=False, allow_infinity=False),
)


@st.composite
def full_image_changelogs(draw: Any) -> list[dict[str, Any]]:
    """Changelogs whose updates are full -U/+U pairs, as a retract stream carries them."""
    columns = draw(st.lists(st.sampled_from(["a", "b", "c", "name"]), unique=True, max_size=3))
    live: dict[int, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 12))):
        key = draw(st.integers(0, 4))
        image = {"id": key, **{c: draw(values) for c in columns}}
        if key not in live:
            out.append({"op": "+I", **image})
            live[key] = image
        elif draw(st.booleans()):
            out += [{"op": "-U", **live[key]}, {"op": "+U", **image}]
            live[key] = image
        else:
            out.append({"op": "-D", **live.pop(key)})
    return out


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(full_image_changelogs())
def test_encode_then_decode_is_identity(changelog: list[dict[str, Any]]) -> None:
    encoder = DebeziumEncoder(EncodeSpec(key=("id",)), Counts())
    events = [event for row in changelog for event in encoder.step(row)] + encoder.finish()
    assert all(e["op"] in "cud" for e in events)
    assert sum(e["op"] == "u" for e in events) == sum(r["op"] == "-U" for r in changelog)
    decoded = cdc.decode([*events]).rows if events else []
    assert decoded == changelog


def test_encode_decode_round_trip_through_the_cli(tmp_path: Path) -> None:
    changes = read_jsonl(SAMPLES / "product-prices.jsonl")
    src = tmp_path / "changes.jsonl"
    src.write_text("".join(json.dumps(c) + "\n" for c in changes))
    encoded = run_cdc(["debezium-encode", src])
    back = run_cdc(["debezium-decode"], stdin=encoded.stdout)
    assert parse_jsonl(back.stdout) == changes


images = st.one_of(
    st.none(),
    st.text(max_size=3),
    st.dictionaries(
        st.sampled_from(["id", "v", "op", "w"]),
        st.one_of(st.integers(0, 3), st.just("__debezium_unavailable_value"), st.none()),
        max_size=3,
    ),
)
events = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"op": st.sampled_from(["c", "r", "u", "d", "t", "m", "x"]), "before": images, "after": images}
    ),
    st.fixed_dictionaries({"payload": st.none()}),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(events, max_size=8))
def test_fast_decode_says_exactly_what_decode_says(batch: list[Any]) -> None:
    from cdc.core.errors import InputError

    def run(use_fast: bool) -> list[Any]:
        counts = Counts()
        decoder = DebeziumDecoder(DecodeSpec(on_truncate="skip"), counts)
        convert = decoder.fast_decode() if use_fast else decoder.decode
        out: list[Any] = []
        for event in batch:
            try:
                out.append(list(convert(event, b"")))
            except InputError as err:
                out.append(("error", err.message))
        return [out, dict(counts.by_kind), dict(counts.notes)]

    assert run(True) == run(False)


def test_encode_refuses_a_non_json_output_name(tmp_path: Path) -> None:
    result = run_cdc(["debezium-encode", "-o", tmp_path / "events.parquet"], stdin=b'{"op": "+I", "id": 1}\n')
    assert result.returncode == 2 and b"writes Debezium JSON lines" in result.stderr
    assert not (tmp_path / "events.parquet").exists()


# -- bugs the e2e harness found on real PostgreSQL/MariaDB events (e2e/findings/NN-*) -----------

FINDINGS = REPO / "e2e" / "findings"


def _finding(number: str) -> Path:
    return next(FINDINGS.glob(f"{number}-*")) / "events.jsonl"


def test_a_time_keeps_the_leading_zero_of_its_fraction() -> None:  # finding 01
    out = parse_jsonl(run_cdc(["debezium-decode", _finding("01")]).stdout)
    assert out[0]["t3"] == "04:43:20.054000"


def test_decimals_keep_every_digit_past_28() -> None:  # finding 02
    result = run_cdc(["debezium-decode", _finding("02")])
    assert b'"bignum":303746846377041790347540.392726032984372169786080621113' in result.stdout
    assert b'"amount":0.0000000000' in result.stdout  # numeric(38,10) zero, as the database shows it


def test_a_default_identity_delete_retracts_the_stored_row() -> None:  # finding 04
    rows = parse_jsonl(run_cdc(["debezium-decode", _finding("04"), "--key", "id"]).stdout)
    inserted, deleted = rows
    assert deleted == {**inserted, "op": "-D"}  # not Debezium's stand-ins (qty 0, price AA==)


def test_a_key_change_fills_toast_placeholders_from_the_deleted_row() -> None:  # finding 05
    result = run_cdc(["debezium-decode", _finding("05"), "--key", "id"])
    assert result.returncode == 0, result.stderr
    rows = parse_jsonl(result.stdout)
    assert rows[-1]["op"] == "+I" and rows[-1]["id"] == 30
    assert rows[-1]["doc"] == rows[-2]["doc"] != "__debezium_unavailable_value"


def test_one_instant_is_one_spelling_of_a_zoned_timestamp() -> None:  # finding 06
    decoded = run_cdc(["debezium-decode", _finding("06")])
    assert {r["ts"] for r in parse_jsonl(decoded.stdout)} == {"1988-07-29T14:03:01.13518Z"}
    assert run_cdc(["materialize", "--key", "id", "--strict"], stdin=decoded.stdout).returncode == 0


def test_a_truncate_deletes_only_rows_still_live() -> None:  # finding 07
    rows = parse_jsonl(run_cdc(["debezium-decode", _finding("07"), "--on-truncate", "delete"]).stdout)
    assert [r["op"] for r in rows][-2:] == ["+U", "-D"]  # the row was deleted before the truncate
    assert run_cdc(["debezium-decode", _finding("07"), "--on-truncate", "delete", "--key", "id"]).stdout == (
        run_cdc(["debezium-decode", _finding("07"), "--on-truncate", "delete"]).stdout
    )


def test_dates_and_times_past_pythons_range_are_written_as_the_database_shows_them(tmp_path: Path) -> None:
    # PostgreSQL dates before year 1 arrive as day counts Python's date cannot hold: they are
    # written as the database shows them (ISO 8601 expanded years), a time past a day as a duration.
    schema = {
        "type": "struct",
        "fields": [
            {"type": "struct", "field": "before", "fields": []},
            {
                "type": "struct",
                "field": "after",
                "fields": [
                    {"type": "int32", "field": "id"},
                    {"type": "int32", "name": "io.debezium.time.Date", "field": "d"},
                    {"type": "int64", "name": "io.debezium.time.MicroTime", "field": "t"},
                ],
            },
        ],
    }
    events = [
        {"id": 1, "d": -719163, "t": 10**20},  # year 0; past a timedelta
        {"id": 2, "d": 0, "t": 0},
    ]
    f = tmp_path / "dates.jsonl"
    f.write_text(
        "".join(
            json.dumps({"schema": schema, "payload": {"before": None, "after": e, "op": "c"}}) + "\n" for e in events
        )
    )
    result = run_cdc(["debezium-decode", f])
    assert result.returncode == 0, result.stderr
    assert parse_jsonl(result.stdout) == [
        {"op": "+I", "id": 1, "d": "0000-12-31", "t": "27777777777:46:40"},
        {"op": "+I", "id": 2, "d": "1970-01-01", "t": "00:00:00"},
    ]
