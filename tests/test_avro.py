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


def _cases(variants: tuple[str, ...]) -> list[Any]:
    return [
        pytest.param(db, variant, t["name"], id=f"{db}-{variant}-{t['name']}")
        for db in DATABASES
        for variant in variants
        for t in _tables(db)
        if not (t["edge"] and variant != "precise")
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


@pytest.mark.parametrize(("db", "variant", "name"), _cases(("precise",)))
def test_every_avro_form_decodes_as_the_json_events(
    forms: Forms, db: str, variant: str, name: str, tmp_path: Path
) -> None:
    _check_every_form(forms, db, variant, name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(("db", "variant", "name"), _cases(("string", "double")))
def test_every_avro_form_decodes_as_the_json_events_under_every_decimal_setting(
    forms: Forms, db: str, variant: str, name: str, tmp_path: Path
) -> None:
    _check_every_form(forms, db, variant, name, tmp_path)
