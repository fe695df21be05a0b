"""Canal, Maxwell and OGG envelopes (core/envelopes) against Flink's own test data and the
formats' documented examples (tests/conformance/flink-canal|flink-maxwell|flink-ogg)."""

from __future__ import annotations

import datetime as dt
import json
import struct
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFORMANCE, SAMPLES, run_cdc

from cdc.core.envelopes import (
    DECODERS,
    FLINK_FORMATS,
    CanalDecoder,
    EnvelopeOptions,
    LiveRows,
    MaxwellDecoder,
    OggDecoder,
    check_envelope,
    choose_envelope,
    decoder_for,
    envelope_message,
    looks_like_envelope,
    parse_metadata,
    recognise,
)
from cdc.core.envelopes.images import ImageTexts
from cdc.core.errors import InputError, UsageError
from cdc.core.presets import PRESETS

CANAL = CONFORMANCE / "flink-canal"
MAXWELL = CONFORMANCE / "flink-maxwell"
OGG = CONFORMANCE / "flink-ogg"
FOLDERS = {"canal": CANAL, "maxwell": MAXWELL, "ogg": OGG}


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def decode_all(decoder: Any, records: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for record in records:
        out.extend(decoder.decode(record))
    return out


def as_float32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def flink_rows(folder: Path) -> list[tuple[str, int, str, str | None, float]]:
    """The changes a Flink serde test asserts, from their ``RowData.toString()`` form."""
    rows = []
    for line in (folder / "expected.txt").read_text(encoding="utf-8").splitlines():
        kind, fields = line[:2], line[3:-1].split(",")
        description = ",".join(fields[2:-1])
        rows.append(
            (kind, int(fields[0]), fields[1], None if description == "null" else description, float(fields[-1]))
        )
    return rows


def comparable(changes: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, int, str, str | None, float]]:
    return [(kind, r["id"], r["name"], r["description"], as_float32(float(r["weight"]))) for kind, r in changes]


# -- Flink's test files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("envelope", "filename", "options"),
    [
        ("canal", "canal-data.txt", EnvelopeOptions()),
        ("canal", "canal-data-filter-table.txt", EnvelopeOptions(database_include="^my.*", table_include="^prod.*")),
        ("canal", "canal-data-filter-table.txt", EnvelopeOptions(database_include="mydb", table_include="product")),
        ("maxwell", "maxwell-data.txt", EnvelopeOptions()),
        ("ogg", "ogg-data.txt", EnvelopeOptions()),
    ],
)
def test_flink_test_files_give_the_asserted_changelog(envelope: str, filename: str, options: EnvelopeOptions) -> None:
    folder = FOLDERS[envelope]
    expected = [(k, i, n, d, as_float32(w)) for k, i, n, d, w in flink_rows(folder)]
    decoder = DECODERS[envelope](options)
    got = decode_all(decoder, events(folder / filename))
    assert comparable(got) == expected


def test_every_canal_message_is_written_or_counted() -> None:
    notes: Counter[str] = Counter()
    decoder = CanalDecoder(notes=notes)
    records = events(CANAL / "canal-data.txt")
    written = [r for r in records if decoder.decode(r)]
    assert len(written) + notes["DDL messages"] == len(records) == 11
    filtered: Counter[str] = Counter()
    decoder = CanalDecoder(EnvelopeOptions(database_include="^my.*", table_include="^prod.*"), filtered)
    records = events(CANAL / "canal-data-filter-table.txt")
    written = [r for r in records if decoder.decode(r)]
    assert filtered == {"filtered messages": 6} and len(written) + 6 == len(records)


def test_canal_values_are_typed_by_sqltype() -> None:
    first = CanalDecoder().decode(events(CANAL / "canal-data.txt")[0])[0][1]
    assert first == {"id": 101, "name": "scooter", "description": "Small 2-wheel scooter", "weight": 3.14}
    raw = CanalDecoder(EnvelopeOptions(raw_values=True)).decode(events(CANAL / "canal-data.txt")[0])[0][1]
    assert raw["id"] == "101" and raw["weight"] == "3.14"


def utc_ms(value: Any) -> int:
    assert isinstance(value, dt.datetime) and value.tzinfo is not None
    return round(value.timestamp() * 1000)


@pytest.mark.parametrize(
    ("filename", "options", "database", "table", "ingested", "event"),
    [
        ("canal-data.txt", EnvelopeOptions(), "inventory", "products2", 1589373515477, 1589373515000),
        (
            "canal-data-filter-table.txt",
            EnvelopeOptions(database_include="mydb", table_include="product"),
            "mydb",
            "product",
            1598944146308,
            1598944132000,
        ),
    ],
)
def test_canal_metadata_as_flink_test_reads_it(
    filename: str, options: EnvelopeOptions, database: str, table: str, ingested: int, event: int
) -> None:
    keys = list(CanalDecoder.METADATA)
    options.metadata = parse_metadata("canal", keys)
    rows = CanalDecoder(options).decode(events(CANAL / filename)[0])
    assert len(rows) == 9
    row = rows[0][1]
    assert list(row) == ["id", "name", "description", "weight", *(k.replace("-", "_") for k in keys)]
    assert (row["database"], row["table"]) == (database, table)
    assert len(row["sql_type"]) == 4 and row["pk_names"][0] == "id"
    assert utc_ms(row["ingestion_timestamp"]) == ingested and utc_ms(row["event_timestamp"]) == event


def test_maxwell_metadata_as_flink_test_reads_it() -> None:
    options = EnvelopeOptions(metadata=parse_metadata("maxwell", list(MaxwellDecoder.METADATA)))
    ((kind, row),) = MaxwellDecoder(options).decode(events(MAXWELL / "maxwell-data.txt")[0])
    assert kind == "+I" and (row["database"], row["table"], row["primary_key_columns"]) == ("test", "product", ["id"])
    assert utc_ms(row["ingestion_timestamp"]) == 1596684883000  # Maxwell's ts is in seconds


def test_ogg_metadata_as_flink_test_reads_it() -> None:
    options = EnvelopeOptions(metadata=parse_metadata("ogg", list(OggDecoder.METADATA)))
    ((kind, row),) = OggDecoder(options).decode(events(OGG / "ogg-data.txt")[0])
    assert kind == "+I" and row["table"] == "OGG.TBL_TEST" and row["primary_keys"] == ["id"]
    assert utc_ms(row["ingestion_timestamp"]) == 1589377175766
    assert utc_ms(row["event_timestamp"]) == 1589384406000
    raw = OggDecoder(EnvelopeOptions(metadata=[("event-timestamp", "ts")], raw_values=True))
    assert raw.decode(events(OGG / "ogg-data.txt")[0])[0][1]["ts"] == "2020-05-13 15:40:06.000000"


def test_metadata_columns_are_named_and_checked() -> None:
    assert parse_metadata("canal", ["table=src_table", "pk-names"]) == [
        ("table", "src_table"),
        ("pk-names", "pk_names"),
    ]
    with pytest.raises(UsageError, match="Maxwell has no metadata 'sql-type'"):
        parse_metadata("maxwell", ["sql-type"])
    with pytest.raises(UsageError, match="no metadata"):
        OggDecoder(EnvelopeOptions(metadata=[("database", "db")]))
    clash = MaxwellDecoder(EnvelopeOptions(metadata=[("table", "name")]))
    with pytest.raises(InputError, match="collide") as err:
        clash.decode({"database": "d", "table": "t", "type": "insert", "data": {"id": 1, "name": "x"}})
    assert err.value.hint is not None and "--metadata KEY=COLUMN" in err.value.hint


# -- the formats' documented examples -----------------------------------------------------------


def doc_cases() -> list[Any]:
    cases = []
    for envelope, folder in FOLDERS.items():
        for case in events(folder / "doc-cases.jsonl"):
            cases.append(pytest.param(envelope, case, id=f"{envelope}-{case['case']}"))
    return cases


def plain(value: Any) -> Any:
    return {"decimal": str(value)} if isinstance(value, Decimal) else value


@pytest.mark.parametrize(("envelope", "case"), doc_cases())
def test_documented_example(envelope: str, case: dict[str, Any]) -> None:
    options = dict(case.get("options", {}))
    if "key" in options:
        options["key"] = tuple(options["key"])
    notes: Counter[str] = Counter()
    decoder = decoder_for(envelope, EnvelopeOptions(**options), notes)
    if "error" in case:
        with pytest.raises(InputError) as err:
            decode_all(decoder, case["events"])
        assert case["error"] in str(err.value)
        return
    got = [[kind, {c: plain(v) for c, v in image.items()}] for kind, image in decode_all(decoder, case["events"])]
    assert got == case["expected"]
    assert {k: notes[k] for k in case.get("notes", {})} == case.get("notes", {})


# -- what is skipped is counted --------------------------------------------------------------------


@pytest.mark.parametrize("envelope", sorted(DECODERS))
def test_tombstones_are_counted(envelope: str) -> None:
    decoder = decoder_for(envelope)
    assert decoder.decode(None) == [] and decoder.notes == {"tombstones": 1}


def test_canal_markers_and_ddl_types_are_counted_not_failed() -> None:
    decoder = CanalDecoder()
    for kind in ("GTID", "XACOMMIT", "MHEARTBEAT"):
        assert decoder.decode({"type": kind, "data": None, "database": "d", "table": "t"}) == []
    for kind in ("RENAME", "CINDEX", "DINDEX", "ERASE"):
        assert decoder.decode({"type": kind, "isDdl": True, "data": None}) == []
    assert decoder.notes == {"transaction and heartbeat markers": 3, "DDL messages": 4}


def test_truncate_modes_are_the_same_for_every_envelope() -> None:
    for name, truncate in (
        ("canal", {"type": "TRUNCATE", "isDdl": True, "data": None, "database": "d", "table": "t"}),
        ("ogg", {"table": "S.T", "op_type": "T", "before": None, "after": None}),
    ):
        with pytest.raises(InputError, match="truncate") as err:
            decoder_for(name).decode(truncate)
        assert err.value.hint is not None and "--on-truncate" in err.value.hint
        skip = decoder_for(name, EnvelopeOptions(on_truncate="skip"))
        assert skip.decode(truncate) == [] and skip.notes == {"truncates": 1}
    with pytest.raises(UsageError):
        decoder_for("ogg", EnvelopeOptions(on_truncate="ignore"))


def test_truncate_deletes_only_the_rows_of_its_table() -> None:
    decoder = OggDecoder(EnvelopeOptions(key=("id",), on_truncate="delete"))
    decoder.decode({"table": "S.A", "op_type": "I", "after": {"id": 1}})
    decoder.decode({"table": "S.B", "op_type": "I", "after": {"id": 1}})
    assert decoder.decode({"table": "S.A", "op_type": "T"}) == [("-D", {"id": 1})]
    assert decoder.decode({"table": "S.A", "op_type": "T"}) == []
    assert decoder.decode({"table": "S.B", "op_type": "T"}) == [("-D", {"id": 1})]


# -- bad envelopes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("envelope", "record", "message"),
    [
        ("canal", [1, 2], "a Canal message is a JSON object"),
        ("canal", {"data": [{"id": "1"}], "database": "d"}, "no 'type' field"),
        (
            "canal",
            {"type": "UPDATE", "data": [{"id": "1"}], "old": "x"},
            "'old' field of an UPDATE message is a string",
        ),
        ("canal", {"type": "DELETE", "data": [1]}, "an array of a number"),
        ("maxwell", {"type": "update", "data": {"id": 1}, "old": [1]}, "'old' field of an update message is an array"),
        ("maxwell", {"database": "d", "table": "t", "data": {"id": 1}}, "no 'type' field"),
        ("ogg", {"table": "S.T", "op_type": "I", "after": None}, "'after' image of an insert (I) is null"),
        ("ogg", {"table": "S.T", "op_type": "D", "before": None}, '"before" image of a delete (D) is null'),
        ("ogg", {"table": "S.T", "op_type": "D", "before": {}}, '"before" image of a delete (D) is empty'),
        ("ogg", {"table": "S.T", "after": {"id": 1}}, "no 'op_type' field"),
    ],
)
def test_bad_envelopes_raise_input_errors(envelope: str, record: Any, message: str) -> None:
    with pytest.raises(InputError) as err:
        decoder_for(envelope).decode(record)
    assert message in str(err.value)
    assert err.value.where is None  # the engine adds FILE:LINE


def test_ogg_before_image_errors_name_the_fix() -> None:
    with pytest.raises(InputError) as err:
        OggDecoder().decode({"table": "S.T", "op_type": "U", "before": {"id": 1}, "after": {"id": 1, "x": 2}})
    assert "missing x" in str(err.value) and "GETUPDATEBEFORES" in str(err.value)
    assert err.value.hint is not None and "--key" in err.value.hint


def test_a_column_named_like_the_kind_column_is_an_error() -> None:
    with pytest.raises(InputError, match="collides with the kind column") as err:
        MaxwellDecoder().decode({"type": "insert", "data": {"op": "x"}})
    assert err.value.hint is not None and "--kind-column" in err.value.hint
    renamed = MaxwellDecoder(EnvelopeOptions(kind_column="kind"))
    assert renamed.decode({"type": "insert", "data": {"op": "x"}}) == [("+I", {"op": "x"})]


def test_include_patterns_must_be_regular_expressions() -> None:
    with pytest.raises(UsageError, match="table.include"):
        CanalDecoder(EnvelopeOptions(table_include="(unclosed"))


def test_include_patterns_match_the_whole_name_as_java_does() -> None:
    decoder = CanalDecoder(EnvelopeOptions(table_include="prod"))
    message = {"type": "INSERT", "data": [{"id": "1"}], "database": "d", "table": "product"}
    assert decoder.decode(message) == [] and decoder.notes["filtered messages"] == 1


def test_maxwell_bootstrap_option_is_checked() -> None:
    with pytest.raises(UsageError, match="bootstrap"):
        MaxwellDecoder(EnvelopeOptions(bootstrap="later"))


# -- recognising an envelope ------------------------------------------------------------------------


def first_record(name: str) -> Any:
    if name == "debezium":
        return json.loads(
            (CONFORMANCE / "flink-debezium" / "debezium-data-schema-exclude.txt").read_text().splitlines()[0]
        )
    filename = {"canal": "canal-data.txt", "maxwell": "maxwell-data.txt", "ogg": "ogg-data.txt"}[name]
    return events(FOLDERS[name] / filename)[0]


@pytest.mark.parametrize("name", ["debezium", "canal", "maxwell", "ogg"])
def test_recognise_tells_the_four_envelopes_apart(name: str) -> None:
    record = first_record(name)
    assert recognise(record) == name
    assert looks_like_envelope(record) == name
    assert choose_envelope("auto", record) == name
    assert name in FLINK_FORMATS and FLINK_FORMATS[name].endswith("-json")


def test_recognise_schema_envelopes_ddl_and_bootstrap_messages() -> None:
    schema_line = (CONFORMANCE / "flink-debezium" / "debezium-data-schema-include.txt").read_text().splitlines()[0]
    assert recognise(json.loads(schema_line)) == "debezium"
    assert recognise(events(CANAL / "canal-data.txt")[9]) == "canal"  # the CREATE message, data null
    assert recognise({"type": "bootstrap-complete", "database": "d", "table": "t", "data": {}}) == "maxwell"
    assert recognise({"type": "table-create", "database": "d", "table": "t", "def": {}}) == "maxwell"
    assert recognise({"table": "S.T", "op_type": "T", "before": None, "after": None}) == "ogg"
    assert recognise({"id": 1, "name": "x"}) is None and recognise("text") is None


@pytest.mark.parametrize(
    "row",
    [
        {"__op": "u", "id": 1, "before": "not an image"},  # flattened Debezium
        {"type": "INSERT", "id": 1, "name": "x"},  # flattened Canal
        {"type": "insert", "id": 1},  # flattened Maxwell
        {"op_type": "I", "id": 1, "table": "S.T"},  # flattened OGG
        {"op": "c", "id": 1},
    ],
)
def test_flattened_rows_are_not_taken_for_envelopes(row: dict[str, Any]) -> None:
    assert looks_like_envelope(row) is None


def test_envelope_message_tells_the_user_what_to_run() -> None:
    record = first_record("canal")
    name = looks_like_envelope(record)
    assert name == "canal"
    assert envelope_message(name) == (
        "this is a Canal message (a 'data' array beside 'type'), not a flattened row: use `cdc decode --envelope canal`"
    )
    # what the flattened presets would otherwise read: `type` is their op column
    assert PRESETS["canal"].op_column in record and PRESETS["maxwell"].op_column in first_record("maxwell")


def test_auto_fails_clearly_on_an_unknown_record_and_on_a_mix() -> None:
    with pytest.raises(InputError) as err:
        choose_envelope("auto", {"id": 1})
    assert err.value.hint is not None and "--envelope" in err.value.hint
    with pytest.raises(UsageError):
        choose_envelope("avro", {"id": 1})
    assert choose_envelope("ogg", {"id": 1}) == "ogg"
    check_envelope("canal", first_record("canal"))
    with pytest.raises(InputError, match="mixed envelopes"):
        check_envelope("canal", first_record("maxwell"))
    with pytest.raises(InputError, match="this record is a Debezium message, but the stream is Maxwell"):
        MaxwellDecoder().decode(first_record("debezium"))


# -- live rows: rebuilding images (shared with Debezium) -------------------------------------------------


TEXTS = ImageTexts("the table is not REPLICA IDENTITY FULL", "ALTER TABLE … REPLICA IDENTITY FULL, or --key")


def test_live_rows_rebuild_a_partial_before_image_from_the_key() -> None:
    live = LiveRows(("id",), TEXTS)
    live.track("+I", {"id": 1, "name": "Alice", "city": "Paris"})
    # Debezium's partial before image of the issue: no key in it; the update's key is in 'after'
    before = live.complete_before({"city": "Paris"}, {"id": 1, "name": "Alice", "city": "Shanghai"}, "UPDATE")
    assert before == {"id": 1, "name": "Alice", "city": "Paris"}
    # a delete's key must be in its before image
    with pytest.raises(InputError, match="names no key"):
        live.complete_before({"city": "Paris"}, None, "DELETE")
    assert live.complete_before({"id": 1}, None, "DELETE") == {"id": 1, "name": "Alice", "city": "Paris"}
    # a key-only delete with nulls elsewhere (PostgreSQL REPLICA IDENTITY DEFAULT)
    assert live.complete_before({"id": 1, "name": None, "city": None}, None, "DELETE")["name"] == "Alice"


def test_live_rows_without_a_key_say_why_and_how_to_fix() -> None:
    live = LiveRows((), TEXTS)
    with pytest.raises(InputError) as err:
        live.complete_before(None, {"id": 1}, "UPDATE")
    assert "is null; the table is not REPLICA IDENTITY FULL" in str(err.value) and err.value.hint == TEXTS.hint
    with pytest.raises(InputError, match=r"incomplete \(missing name\)"):
        live.complete_before({"id": 1}, {"id": 1, "name": "x"}, "UPDATE")
    assert live.complete_before({"id": 1, "name": "y"}, {"id": 1, "name": "x"}, "UPDATE") == {"id": 1, "name": "y"}


def test_live_rows_fill_placeholders_and_after_images() -> None:
    mark = "__debezium_unavailable_value"
    live = LiveRows(("id",), TEXTS, placeholder=mark)
    live.track("+I", {"id": 1, "doc": "long text", "n": 1})
    assert live.missing({"id": 1, "doc": mark, "n": 1}, {"id": 1, "doc": mark, "n": 2}) == ["doc"]
    before = live.complete_before({"id": 1, "doc": mark, "n": 1}, {"id": 1, "doc": mark, "n": 2}, "UPDATE")
    assert before == {"id": 1, "doc": "long text", "n": 1}
    assert live.complete_after({"id": 1, "doc": mark, "n": 2}, before) == {"id": 1, "doc": "long text", "n": 2}
    assert live.complete_after({"id": 1, "n": 3}) == {"id": 1, "doc": "long text", "n": 3}
    with pytest.raises(InputError, match="placeholder"):
        LiveRows((), TEXTS, placeholder=mark).complete_after({"id": 2, "doc": mark})


def test_live_rows_truncate_as_a_multiset_without_a_key() -> None:
    live = LiveRows()
    for row in ({"a": 1}, {"a": 1}, {"a": 2}):
        live.track("+I", row)
    live.track("-D", {"a": 2})
    assert len(live) == 2 and live.truncate() == [{"a": 1}, {"a": 1}] and len(live) == 0


# -- the samples a user can try ------------------------------------------------------------------------


def keyed_table(changes: list[tuple[str, dict[str, Any]]], key: str) -> dict[Any, dict[str, Any]]:
    table: dict[Any, dict[str, Any]] = {}
    for kind, row in changes:
        if kind in ("+I", "+U"):
            table[row[key]] = row
        else:
            assert table.pop(row[key]) == row
    return table


def test_sample_canal_stream() -> None:
    records = events(SAMPLES / "canal-products.jsonl")
    decoder = CanalDecoder(EnvelopeOptions(table_include="products"))
    table = keyed_table(decode_all(decoder, records), "id")
    assert decoder.notes == {"filtered messages": 1, "DDL messages": 1}
    assert {k: (r["price"], r["stock"]) for k, r in table.items()} == {
        1: (Decimal("4.90"), 120),
        2: (Decimal("12.00"), 38),
        4: (Decimal("18.00"), 9),
    }


def test_sample_maxwell_stream() -> None:
    decoder = MaxwellDecoder(EnvelopeOptions(key=("id",)))
    table = keyed_table(decode_all(decoder, events(SAMPLES / "maxwell-products.jsonl")), "id")
    assert table == {1: {"id": 1, "name": "espresso cup", "price": 4.9, "stock": 120}}
    assert decoder.notes == {"bootstrap markers": 2, "bootstrap rows already live": 1, "DDL messages": 1}


def test_sample_ogg_stream_needs_the_key_for_its_compressed_images() -> None:
    records = events(SAMPLES / "ogg-products.jsonl")
    table = keyed_table(decode_all(OggDecoder(EnvelopeOptions(key=("ID",))), records), "ID")
    assert table == {1: {"ID": 1, "NAME": "espresso cup", "PRICE": 4.9, "STOCK": 120}}
    with pytest.raises(InputError, match="missing NAME, STOCK"):
        decode_all(OggDecoder(), records)


# -- Flink 2.3 itself on the doc cases (recorded by flink-canal/flink_oracle.py) ----------------------

# Where Flink 2.3 emits rows and cdc emits other rows (or fails), and why cdc is right there.
DEVIATIONS = {
    ("canal", "multi-row-update-each-row-its-own-old"): "Flink's findValue searches the whole 'old' array: NULLs",
    ("canal", "decimal-and-bool-by-sqltype"): "Flink reads Canal's BOOLEAN '1' with Boolean.parseBoolean: false",
    ("ogg", "compressed-update"): "Flink emits NULL for the columns a compressed after image leaves out",
    ("ogg", "partial-before-without-key"): "Flink emits NULL for the columns a partial before image leaves out",
    ("ogg", "partial-before-with-key"): "the same, rebuilt from the key",
    ("ogg", "empty-before-with-key"): "Flink emits -U(NULL, …) for 'before': {} (FLINK-32712)",
    ("ogg", "key-only-delete-with-key"): "Flink emits NULL for the columns of a key-only delete",
    ("ogg", "update-of-unseen-key"): "Flink emits a -U with NULLs; cdc cannot rebuild it and says so",
    ("ogg", "table-include"): "ogg-json has no include options",
}


def oracle_cases() -> list[Any]:
    params = []
    for envelope, folder in FOLDERS.items():
        answers = json.loads((folder / "flink-2.3-oracle.json").read_text(encoding="utf-8"))
        for case in events(folder / "doc-cases.jsonl"):
            params.append(pytest.param(envelope, case, answers[case["case"]], id=f"{envelope}-{case['case']}"))
    return params


@pytest.mark.parametrize(("envelope", "case", "flink"), oracle_cases())
def test_flink_itself_agrees_or_the_difference_is_known(
    envelope: str, case: dict[str, Any], flink: dict[str, Any]
) -> None:
    if "rows" not in flink:  # Flink fails: cdc goes beyond it (documented in the decoder) or fails too
        assert "error" in flink
        return
    options = dict(case.get("options", {}))
    if "key" in options:
        options["key"] = tuple(options["key"])
    try:
        got = [
            [kind, [None if v is None else str(v) for v in image.values()]]
            for kind, image in decode_all(decoder_for(envelope, EnvelopeOptions(**options)), case["events"])
        ]
    except InputError:
        got = None
    if (envelope, case["case"]) in DEVIATIONS:
        assert got != flink["rows"]
    else:
        assert got == flink["rows"]


# -- through the command line: cdc decode, --input-format, the change-feed pipelines -------------


@pytest.mark.parametrize(
    ("envelope", "filename", "flags"),
    [
        ("canal", "canal-data.txt", []),
        ("canal", "canal-data-filter-table.txt", ["--database-include", "^my.*", "--table-include", "^prod.*"]),
        ("maxwell", "maxwell-data.txt", []),
        ("ogg", "ogg-data.txt", []),
    ],
)
def test_cdc_decode_gives_flinks_changelog(envelope: str, filename: str, flags: list[str]) -> None:
    from helpers import parse_jsonl, run_cdc

    folder = FOLDERS[envelope]
    expected = [(k, i, n, d, as_float32(w)) for k, i, n, d, w in flink_rows(folder)]
    for named in (["--envelope", envelope], []):  # named, and recognised from the first record
        result = run_cdc(["decode", folder / filename, *named, *flags, "--stats"])
        assert result.returncode == 0, result.stderr
        rows = parse_jsonl(result.stdout)
        assert comparable([(r.pop("op"), r) for r in rows]) == expected


def test_an_envelope_is_read_wherever_changelog_rows_are() -> None:
    from helpers import run_cdc

    # A command's --key also rebuilds what the envelope leaves out, as decode --key does.
    sample = SAMPLES / "maxwell-products.jsonl"
    decoded = run_cdc(["decode", sample])
    keyed = run_cdc(["decode", sample, "--key", "id"])
    for command, piped in ((["materialize", "--key", "id"], keyed), (["to-changelog"], decoded)):
        direct = run_cdc([*command, "-i", "maxwell", sample])
        assert direct.returncode == 0, direct.stderr
        assert direct.stdout == run_cdc(command, stdin=piped.stdout).stdout
    reports = [
        json.loads(run_cdc(["inspect", "--key", "id", "--json", *args], stdin=stdin).stdout)
        for args, stdin in ((["-i", "maxwell", sample], None), ([], keyed.stdout))
    ]
    for report in reports:  # the places differ: a line of the events, a line of the changelog
        del report["inputs"], report["consistency"]["examples"]
    # the events name their table; the changelog rows do not
    assert [t["name"] for t in reports[0].pop("tables")] == ["shop.products"]
    assert reports[0] == reports[1]


def test_from_changelog_refuses_an_envelope_and_names_the_command_to_run() -> None:
    from helpers import run_cdc

    result = run_cdc(["from-changelog", "--preset", "canal", "--key", "id", SAMPLES / "canal-products.jsonl"])
    assert result.returncode == 3 and result.stdout == b""
    assert b"this is a Canal message" in result.stderr and b"cdc decode --envelope canal" in result.stderr


def test_a_mix_of_envelopes_is_an_error_at_its_line(tmp_path: Path) -> None:
    from helpers import run_cdc

    mixed = tmp_path / "mixed.jsonl"
    first = (SAMPLES / "maxwell-products.jsonl").read_text().splitlines()[0]
    other = (SAMPLES / "mysql-inventory.jsonl").read_text().splitlines()[0]
    mixed.write_text(first + "\n" + other + "\n")
    result = run_cdc(["decode", mixed])
    assert result.returncode == 3
    assert f"{mixed}:2: this record is a Debezium message, but the stream is Maxwell".encode() in result.stderr


@pytest.mark.parametrize(
    ("envelope", "line"),
    [
        ("canal", '{"data":[{"id":"1"}],"database":"shop","isDdl":false,"old":null,"table":"p","type":[]}'),
        ("maxwell", '{"database":"shop","table":"p","type":{},"ts":1,"data":{"id":1}}'),
        ("ogg", '{"table":[],"op_type":"I","after":{"id":1}}'),
    ],
)
def test_a_field_of_another_json_type_is_a_bad_record_skip_can_set_aside(
    tmp_path: Path, envelope: str, line: str
) -> None:
    f = tmp_path / "odd.jsonl"
    f.write_text(line + "\n")
    failed = run_cdc(["decode", f, "--envelope", envelope])
    assert failed.returncode == 3 and f"{f}:1: ".encode() in failed.stderr
    assert b"unexpected JSON type" in failed.stderr
    skipped = run_cdc(["decode", f, "--envelope", envelope, "--on-error", "skip"])
    assert skipped.returncode == 0 and b"skipped 1 bad record(s)" in skipped.stderr
