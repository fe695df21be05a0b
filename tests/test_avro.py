"""Debezium events in Avro (issue 34): every form decodes to the same changelog, and the same
Parquet types, as the same events in JSON.

The differential test takes the real Debezium streams of ``tests/conformance/debezium-scenarios``
(every column type the scenarios' PostgreSQL and MariaDB tables have: decimals of every setting,
VariableScaleDecimal, dates/times/timestamps with infinities and BC years, TIME past 24 h, json,
arrays, hstore, bytea, placeholders, schema changes mid-stream), makes each into the Avro forms a
user meets (``avro_forms``: what AvroConverter writes for the same Connect records) and holds
``cdc decode`` of each form, table by table, to ``cdc decode`` of the JSON: byte for byte as JSON
lines, schema and rows as Parquet.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from avro_forms import make_forms
from helpers import CONFORMANCE

import cdc

DATA = CONFORMANCE / "debezium-scenarios"
DATABASES = ("postgres", "mariadb")
BINARY_FORMS = ("framed.bin", "wire.bin", "kcat.jsonl", "json.jsonl", "containers")


def _tables(db: str) -> list[dict[str, Any]]:
    tables: list[dict[str, Any]] = json.loads((DATA / db / "scenario.json").read_text())["tables"]
    return tables


class Forms:
    """The Avro forms of each scenario stream, made once per session when first asked for."""

    def __init__(self, factory: pytest.TempPathFactory):
        self.factory = factory
        self.made: dict[tuple[str, str], Path] = {}

    def __getitem__(self, which: tuple[str, str]) -> Path:
        if which not in self.made:
            db, variant = which
            out = self.factory.mktemp(f"avro-{db}-{variant}")
            containers = make_forms(DATA / db / f"{variant}.all.schema.jsonl", out)["containers"]
            (out / "made.json").write_text(json.dumps({"containers": [str(p) for p in containers]}))
            self.made[which] = out
        return self.made[which]


@pytest.fixture(scope="session")
def forms(tmp_path_factory: pytest.TempPathFactory) -> Forms:
    return Forms(tmp_path_factory)


def _inputs(folder: Path, form: str) -> list[str]:
    if form == "containers":
        return json.loads((folder / "made.json").read_text())["containers"]
    return [str(folder / form)]


def _decode(source: Any, table: dict[str, Any], out: Path, **extra: Any) -> bytes:
    options: dict[str, Any] = {"table_include": table["name"], "on_truncate": "delete", "envelope": "debezium"}
    if table["key"] and table["decode_key"]:
        options["key"] = table["key"]
    if table["name"].endswith("audit"):
        options["kind_column"] = "cdc_kind"
    cdc.decode(source, output=str(out), **options, **extra)
    return out.read_bytes()


# The quick tier's tables: between them every column type of the scenarios (edge values, arrays,
# placeholders, a schema change); the slow tier takes every table under every decimal setting.
QUICK = {"s_edge", "s_arrays", "s_toast", "s_evolve", "m_time", "m_evolve", "m_ph"}


def _cases(variants: tuple[str, ...], quick: bool | None = None) -> list[Any]:
    return [
        pytest.param(db, variant, t["name"], id=f"{db}-{variant}-{t['name']}")
        for db in DATABASES
        for variant in variants
        for t in _tables(db)
        if not (t["edge"] and variant != "precise") and (quick is None or (t["name"] in QUICK) == quick)
    ]


def _check_every_form(forms: Forms, db: str, variant: str, name: str, tmp_path: Path) -> None:
    table = next(t for t in _tables(db) if t["name"] == name)
    folder = forms[(db, variant)]
    events = DATA / db / f"{variant}.all.schema.jsonl"
    expected = _decode(str(events), table, tmp_path / "json.jsonl")
    assert expected.count(b"\n") >= 1  # the table has changes in this stream
    for form in BINARY_FORMS:
        got = _decode(_inputs(folder, form), table, tmp_path / f"{form}.jsonl", schemas=folder / "schemas")
        # Byte for byte, but for a double's spelling: the JSON keeps Jackson's (1.234567891E7), Avro has none
        assert got == expected or _values(got) == _values(expected), f"{form} decodes differently from the JSON"
    expected_table = _parquet(events, table, tmp_path / "json.parquet")
    got_table = _parquet(_inputs(folder, "framed.bin"), table, tmp_path / "framed.parquet", schemas=folder / "schemas")
    if isinstance(expected_table, str):  # the JSON's own Parquet refused (the table changed a type): so is the Avro's
        assert got_table == expected_table
        return
    assert got_table.schema == expected_table.schema
    assert got_table.to_pylist() == expected_table.to_pylist()


def _values(lines: bytes) -> list[Any]:
    return [json.loads(line, parse_float=Decimal) for line in lines.split(b"\n") if line]


def _parquet(source: Any, table: dict[str, Any], out: Path, **extra: Any) -> Any:
    import pyarrow.parquet as pq

    try:
        _decode(source, table, out, **extra)
    except cdc.InputError as err:
        return err.message
    return pq.read_table(out)


@pytest.mark.parametrize(("db", "variant", "name"), _cases(("precise",), quick=True))
def test_every_avro_form_decodes_as_the_json_events(
    forms: Forms, db: str, variant: str, name: str, tmp_path: Path
) -> None:
    _check_every_form(forms, db, variant, name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(("db", "variant", "name"), _cases(("precise",), quick=False) + _cases(("string", "double")))
def test_every_avro_form_decodes_as_the_json_events_under_every_decimal_setting(
    forms: Forms, db: str, variant: str, name: str, tmp_path: Path
) -> None:
    _check_every_form(forms, db, variant, name, tmp_path)


# -- bad input: a clear error naming the file, the record and the schema id; exit 3 -------------


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Avro forms of a short real stream (the s_edge table's events)."""
    out = tmp_path_factory.mktemp("avro-small")
    lines = (DATA / "postgres" / "precise.all.schema.jsonl").read_bytes().split(b"\n")
    (out / "events.jsonl").write_bytes(b"\n".join(line for line in lines if b'"table":"s_edge"' in line) + b"\n")
    make_forms(out / "events.jsonl", out)
    return out


def _error(source: Any, **options: Any) -> str:
    with pytest.raises(cdc.InputError) as caught:
        cdc.decode(source, envelope="debezium", key="id", **options)
    return str(caught.value)


def test_a_schema_id_the_folder_lacks_is_named(small: Path, tmp_path: Path) -> None:
    (tmp_path / "7.avsc").write_text((small / "schemas" / "1.avsc").read_text())
    message = _error(str(small / "framed.bin"), schemas=tmp_path)
    assert message.startswith(f"{small / 'framed.bin'}: row 1: schema id 1 is not in --schemas {tmp_path}")
    assert "(it holds 7)" in message


def test_wire_format_messages_without_a_schema_source_say_where_schemas_come_from(small: Path) -> None:
    with pytest.raises(cdc.InputError) as caught:
        cdc.decode(str(small / "framed.bin"), envelope="debezium")
    assert "schema id 1" in str(caught.value) and "--schema-registry" in (caught.value.hint or "")


def test_a_truncated_container_block_is_an_error_at_its_record(small: Path, tmp_path: Path) -> None:
    whole = (small / "container-0001.avro").read_bytes()
    cut = tmp_path / "cut.avro"
    cut.write_bytes(whole[: len(whole) - 40])
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    message = _error(str(cut), output=str(out))
    assert message.startswith(f"{cut}: ") and "truncated" in message and "block 1" in message
    assert out.read_text() == "old\n"  # nothing written half: the target keeps its content


def test_a_wrong_magic_byte_is_named(small: Path, tmp_path: Path) -> None:
    data = bytearray((small / "framed.bin").read_bytes())
    length = int.from_bytes(data[:4], "big")
    data[4 + length + 4] = 0x7B  # the second message's magic byte
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(data))
    message = _error(str(bad), schemas=small / "schemas")
    assert message == f"{bad}: row 2: not a Confluent wire-format message: expected the magic byte 0, found byte 0x7b"


def test_a_bad_message_is_skipped_and_counted_under_skip(small: Path, tmp_path: Path) -> None:
    data = bytearray((small / "framed.bin").read_bytes())
    length = int.from_bytes(data[:4], "big")
    data[4 + length + 4] = 0x7B
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(data))
    good = cdc.decode(str(small / "framed.bin"), envelope="debezium", key="id", schemas=small / "schemas")
    skipped = cdc.decode(str(bad), envelope="debezium", key="id", schemas=small / "schemas", on_error="skip")
    assert skipped.skipped == 1 and len(skipped.rows or []) < len(good.rows or [])


def test_a_schema_that_is_not_a_debezium_envelope_is_refused_with_its_id(tmp_path: Path) -> None:
    import io

    import fastavro

    schema = {"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "3.avsc").write_text(json.dumps(schema))
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), {"id": 1})
    message = b"\0" + (3).to_bytes(4, "big") + body.getvalue()
    dump = tmp_path / "orders.bin"
    dump.write_bytes(len(message).to_bytes(4, "big") + message)
    text = _error(str(dump), schemas=tmp_path / "schemas")
    assert text == (
        f"{dump}: row 1: schema id 3 (shop.Order) is not a Debezium envelope: its fields are id; "
        "expected before, after, source, op"
    )


def test_a_registry_that_does_not_answer_is_named_without_its_credentials(small: Path) -> None:
    import socket

    with socket.socket() as s:  # a free port, nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    message = _error(str(small / "framed.bin"), schema_registry=f"http://user:secret@127.0.0.1:{port}")
    assert f"row 1: schema id 1: the schema registry at http://127.0.0.1:{port} does not answer" in message
    assert "secret" not in message and "user" not in message


def test_schemas_come_from_the_registry_once_per_id_with_basic_auth(small: Path) -> None:
    import http.server
    import threading

    asked: list[tuple[str, str | None]] = []

    class Registry(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            asked.append((self.path, self.headers.get("Authorization")))
            sid = self.path.rsplit("/", 1)[-1]
            schema = small / "schemas" / f"{sid}.avsc"
            body = json.dumps({"schema": schema.read_text()}).encode() if schema.exists() else b'{"message":"no"}'
            self.send_response(200 if schema.exists() else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        got = cdc.decode(
            str(small / "framed.bin"), envelope="debezium", key="id", schema_registry=url, schema_registry_auth="u:p"
        )
        local = cdc.decode(str(small / "framed.bin"), envelope="debezium", key="id", schemas=small / "schemas")
    finally:
        server.shutdown()
    assert got.rows == local.rows and got.rows
    assert sorted({p for p, _ in asked}) == sorted(f"/schemas/ids/{p.stem}" for p in (small / "schemas").iterdir())
    assert len(asked) == len({p for p, _ in asked})  # each id once
    assert {a for _, a in asked} == {"Basic dTpw"}


def test_avro_json_without_its_schema_is_unwrapped_not_decoded_into_branch_names(small: Path, tmp_path: Path) -> None:
    # What `kcat -s value=avro` prints (no schema id): the fix of the silent wrong answer of issue 34.
    lines = [json.loads(line)["payload"] for line in (small / "json.jsonl").read_text().splitlines()]
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps(p) + "\n" for p in lines if p is not None))
    got = cdc.decode(str(plain), envelope="debezium", key="id", on_truncate="skip").rows or []
    raw = cdc.decode(str(small / "events.jsonl"), envelope="debezium", key="id", on_truncate="skip", raw_values=True)
    assert got and not any(k.endswith(".Value") for row in got for k in row)
    assert got == raw.rows  # the values as sent: the schema names their types


# -- encode: debezium-encode --format avro | avro-confluent ------------------------------------


@pytest.mark.parametrize("table", ["s_numdef", "s_arrays"])
@pytest.mark.parametrize("form", ["avro", "avro-confluent"])
def test_encoded_avro_decodes_to_the_same_changelog(form: str, table: str, tmp_path: Path) -> None:
    events = DATA / "postgres" / "precise.all.schema.jsonl"
    t = next(x for x in _tables("postgres") if x["name"] == table)
    changelog = tmp_path / "changelog.jsonl"
    _decode(str(events), t, changelog)
    decoded = cdc.decode(str(events), envelope="debezium", table_include=table, key=t["key"], on_truncate="delete")
    out = tmp_path / ("events.avro" if form == "avro" else "events.bin")
    (tmp_path / "schemas").mkdir()
    extra: dict[str, Any] = {"schemas": tmp_path / "schemas"} if form == "avro-confluent" else {}
    cdc.debezium_encode(decoded.rows or [], format=form, output=str(out), source_fields={"table": table}, **extra)
    back = cdc.decode(str(out), envelope="debezium", key=t["key"], **extra)
    assert back.rows == decoded.rows
    if form == "avro-confluent":
        assert [p.name for p in (tmp_path / "schemas").iterdir()] == ["1.avsc"]
        schema = json.loads((tmp_path / "schemas" / "1.avsc").read_text())
        assert schema["name"] == "Envelope" and schema["namespace"] == f"cdc.{table}"


def test_split_updates_are_written_as_flinks_d_and_c(small: Path, tmp_path: Path) -> None:
    rows = cdc.decode(str(small / "events.jsonl"), envelope="debezium", key="id", on_truncate="skip").rows or []
    out = tmp_path / "split.avro"
    cdc.debezium_encode(rows, format="avro", split_updates=True, output=str(out))
    import fastavro

    with open(out, "rb") as f:
        ops = [r["op"] for r in fastavro.reader(f)]
    assert "u" not in ops and ops.count("d") == sum(r["op"] in ("-U", "-D") for r in rows)


# -- what a real Avro converter wrote (tests/conformance/debezium-avro) ---------------------------

REAL = CONFORMANCE / "debezium-avro"


def _real_inputs(db: str, variant: str, form: str) -> list[str]:
    folder = REAL / db / variant
    if form == "containers":
        return sorted(str(p) for p in folder.glob("container-*.avro"))
    return [str(folder / form)]


def _real_cases(quick: bool) -> list[Any]:
    return [
        pytest.param(db, variant, t["name"], id=f"{db}-{variant}-{t['name']}")
        for db in DATABASES
        for variant in ("precise", "string", "double")
        for t in _tables(db)
        if not (t["edge"] and variant != "precise") and (variant == "precise" and t["name"] in QUICK) == quick
    ]


def _check_real(db: str, variant: str, name: str) -> None:
    table = next(t for t in _tables(db) if t["name"] == name)
    options: dict[str, Any] = {"table_include": name, "on_truncate": "delete", "envelope": "debezium"}
    if table["key"] and table["decode_key"]:
        options["key"] = table["key"]
    if name.endswith("audit"):
        options["kind_column"] = "cdc_kind"
    expected = cdc.decode(str(DATA / db / f"{variant}.all.schema.jsonl"), **options).rows
    assert expected
    forms = (
        ("framed.bin", "wire.bin", "kcat.jsonl", "json.jsonl", "containers")
        if variant == "precise"
        else ("framed.bin",)
    )
    for form in forms:
        got = cdc.decode(_real_inputs(db, variant, form), schemas=REAL / db / variant / "schemas", **options).rows
        assert got == expected, f"{form}: the converter's Avro decodes differently from the JSON events"


@pytest.mark.parametrize(("db", "variant", "name"), _real_cases(quick=True))
def test_a_real_avro_converters_output_decodes_as_the_json_events(db: str, variant: str, name: str) -> None:
    _check_real(db, variant, name)


@pytest.mark.slow
@pytest.mark.parametrize(("db", "variant", "name"), _real_cases(quick=False))
def test_a_real_avro_converters_output_decodes_as_the_json_events_for_every_table(
    db: str, variant: str, name: str
) -> None:
    _check_real(db, variant, name)


# -- --print-sql: Flink's debezium-avro-confluent ----------------------------------------------


def _one_table(db: str, name: str, tmp_path: Path) -> Path:
    """The real converter's messages of one table (its schemas' namespace names it): a topic's."""
    folder = REAL / db / "precise"
    table, at, data = bytearray(), 0, (folder / "framed.bin").read_bytes()
    while at < len(data):
        n = int.from_bytes(data[at : at + 4], "big")
        frame = data[at : at + 4 + (0 if n == 0xFFFFFFFF else n)]
        at += len(frame)
        if n != 0xFFFFFFFF:
            schema = json.loads((folder / "schemas" / f"{int.from_bytes(frame[5:9], 'big')}.avsc").read_text())
            if schema.get("namespace", "").endswith("." + name):
                table += frame
    dump = tmp_path / f"{name}.bin"
    dump.write_bytes(bytes(table))
    return dump


def test_print_sql_of_an_avro_input_reads_debezium_avro_confluent_from_kafka(tmp_path: Path) -> None:
    folder = REAL / "mariadb" / "precise"
    dump = _one_table("mariadb", "m_numdef", tmp_path)
    kafka = {"sql_source": "kafka", "topic": "sc.m_numdef", "bootstrap_servers": "127.0.0.1:9092"}
    sql = cdc.decode(
        str(dump),
        key="id",
        schemas=folder / "schemas",
        schema_registry="http://127.0.0.1:8081",
        print_sql=True,
        **kafka,
    ).sql
    assert sql is not None
    assert "'format' = 'debezium-avro-confluent'" in sql
    assert "'debezium-avro-confluent.url' = 'http://127.0.0.1:8081'" in sql
    assert "`amount` DECIMAL(10, 2)" in sql and "PRIMARY KEY (`id`) NOT ENFORCED" in sql
    with pytest.raises(cdc.UsageError, match="debezium-avro-confluent"):
        cdc.decode(str(dump), key="id", schemas=folder / "schemas", print_sql=True)


def test_print_sql_refuses_what_flinks_avro_reader_fails_on(tmp_path: Path) -> None:
    # PostgreSQL REPLICA IDENTITY DEFAULT: updates without a before image (Flink: IllegalStateException)
    folder = REAL / "postgres" / "precise"
    with pytest.raises(cdc.UsageError, match="no before image.*debezium-avro-confluent fails"):
        cdc.decode(
            str(_one_table("postgres", "s_comp", tmp_path)),
            key="region,n",
            schemas=folder / "schemas",
            schema_registry="http://127.0.0.1:8081",
            print_sql=True,
            sql_source="kafka",
            topic="t",
            bootstrap_servers="127.0.0.1:9092",
        )


# -- Parquet files of envelopes (Kafka Connect's S3 sink with ParquetFormat) ----------------------


@pytest.mark.parametrize(("db", "table"), [("postgres", "s_edge"), ("postgres", "s_arrays"), ("mariadb", "m_time")])
def test_parquet_files_of_envelopes_decode_as_the_json_events(db: str, table: str, tmp_path: Path) -> None:
    from avro_forms import parquet_of

    folder = REAL / db / "precise"
    mine = []
    for path in sorted(folder.glob("container-*.avro")):
        import fastavro

        with open(path, "rb") as f:
            if json.loads(fastavro.reader(f).metadata["avro.schema"]).get("namespace", "").endswith("." + table):
                mine.append(path)
    files = parquet_of(mine, tmp_path)
    t = next(x for x in _tables(db) if x["name"] == table)
    options: dict[str, Any] = {"on_truncate": "delete", "envelope": "debezium"}
    if t["key"] and t["decode_key"]:
        options["key"] = t["key"]
    expected = cdc.decode(str(DATA / db / "precise.all.schema.jsonl"), table_include=table, **options).rows
    got = cdc.decode([str(p) for p in files], **options).rows
    assert expected and got == expected
    again = cdc.decode([str(p) for p in files], input_format="debezium", **options).rows  # -i debezium: sniffed
    assert again == expected


def test_a_column_of_decimals_spelt_as_json_numbers_is_written_as_decimals(tmp_path: Path) -> None:
    # JSON lines read 1.5 as a double and 12345678901234567890.123456789 exactly: one decimal column
    events = tmp_path / "changelog.jsonl"
    events.write_text('{"op":"+I","id":1,"n":1.5}\n{"op":"+I","id":2,"n":12345678901234567890.123456789}\n')
    out = tmp_path / "events.avro"
    cdc.debezium_encode(str(events), format="avro", output=str(out))
    rows = cdc.decode(str(out), envelope="debezium").rows or []
    assert [r["n"] for r in rows] == [Decimal("1.500000000"), Decimal("12345678901234567890.123456789")]


def test_a_container_file_on_stdin_is_read_as_a_named_one() -> None:
    from helpers import run_cdc

    path = REAL / "mariadb" / "precise" / "container-0003.avro"
    piped = run_cdc(["decode"], stdin=path.read_bytes())
    named = run_cdc(["decode", str(path)])
    assert piped.returncode == named.returncode == 0
    assert piped.stdout == named.stdout and piped.stdout.count(b"\n") == 2
