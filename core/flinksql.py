"""The Flink SQL that does the same job on a cluster (``--print-sql``).

Column types are inferred from the first rows; the FROM_CHANGELOG / TO_CHANGELOG calls carry
the same op column and mapping the command used (notes/flink-semantics.md §1).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from cdc.core.kinds import ALL_KINDS, RowKind

Row = dict[str, Any]


def ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _decimal_type(value: Decimal) -> str:
    sign, digits, exponent = value.as_tuple()
    scale = max(-int(exponent), 0) if isinstance(exponent, int) else 0
    precision = max(len(digits), scale, 1)
    return f"DECIMAL({min(max(precision, 10), 38)}, {min(scale, 38)})"


def sql_type(value: Any) -> str | None:
    """The Flink type of one value; None for null (decided by other rows)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT" if -(2**63) <= value < 2**63 else "DECIMAL(38, 0)"
    if isinstance(value, float):
        return "DOUBLE"
    if isinstance(value, Decimal):
        return _decimal_type(value)
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, dt.datetime):
        return "TIMESTAMP_LTZ(6)" if value.tzinfo is not None else "TIMESTAMP(6)"
    if isinstance(value, dt.date):
        return "DATE"
    if isinstance(value, dt.time):
        return "TIME(6)"
    if isinstance(value, bytes | bytearray):
        return "BYTES"
    if isinstance(value, dict):
        fields = ", ".join(f"{ident(k)} {sql_type(v) or 'STRING'}" for k, v in value.items())
        return f"ROW<{fields}>" if fields else "STRING"
    if isinstance(value, list):
        inner = next((t for v in value if (t := sql_type(v)) is not None), "STRING")
        return f"ARRAY<{inner}>"
    return "STRING"


def infer_columns(rows: Iterable[Row], text_only: bool = False) -> dict[str, str]:
    """Column → type over sample rows, first-seen order; numbers widen int → double."""
    types: dict[str, str | None] = {}
    for row in rows:
        for name, value in row.items():
            t = "STRING" if text_only else sql_type(value)
            current = types.get(name)
            if current is None:
                types[name] = t
            elif t is not None and t != current and {t, current} == {"BIGINT", "DOUBLE"}:
                types[name] = "DOUBLE"
    return {name: (t or "STRING") for name, t in types.items()}


@dataclass
class Source:
    """Where the input lives, as a Flink table: path and format."""

    path: str
    fmt: str  # jsonl | csv | tsv | parquet | debezium

    def with_options(self, extra: Mapping[str, str] | None = None, kafka: bool = False) -> str:
        if kafka:
            options = {
                "connector": "kafka",
                "topic": "<your topic>",
                "properties.bootstrap.servers": "<host:9092>",
                "scan.startup.mode": "earliest-offset",
            }
        else:
            path = "<path to the input>" if self.path == "-" else "file://" + os.path.abspath(self.path)
            options = {"connector": "filesystem", "path": path}
        options["format"] = {
            "jsonl": "json",
            "csv": "csv",
            "tsv": "csv",
            "parquet": "parquet",
            "debezium": "debezium-json",
        }[self.fmt]
        if self.fmt == "tsv":
            options["csv.field-delimiter"] = "\t"
        if self.fmt in ("csv", "tsv"):
            options["csv.null-literal"] = ""
            options["csv.ignore-first-line"] = "true"  # the header row
        options.update(extra or {})
        body = ",\n".join(f"  {literal(k)} = {literal(v)}" for k, v in options.items())
        return f"WITH (\n{body}\n)"


def create_table(
    name: str,
    columns: Mapping[str, str],
    source: Source,
    extra_lines: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
    kafka: bool = False,
) -> str:
    lines = [f"  {ident(c)} {t}" for c, t in columns.items()] + [f"  {line}" for line in extra_lines]
    body = ",\n".join(lines)
    return f"CREATE TABLE {ident(name)} (\n{body}\n) {source.with_options(options, kafka)};"


def map_literal(pairs: Sequence[tuple[str, str]]) -> str:
    return "MAP[" + ", ".join(f"{literal(k)}, {literal(v)}" for k, v in pairs) + "]"


def grouped_codes(mapping: Mapping[str, RowKind]) -> list[tuple[str, str]]:
    """``{'c': +I, 'r': +I}`` → ``[('c, r', 'INSERT')]``: each kind once, codes as a comma list."""
    codes: dict[RowKind, list[str]] = {}
    for code, kind in mapping.items():
        codes.setdefault(kind, []).append(code)
    return [(", ".join(c), kind.name) for kind, c in codes.items()]


def header(command: str, source: Source | None = None) -> str:
    text = f"-- {command}: the same job in Apache Flink SQL (2.3 or later)\n"
    if source is not None and source.fmt in ("csv", "tsv"):
        text += (
            "-- 'csv.ignore-first-line' skips the header row from Flink 2.4 (FLINK-20746); "
            "on 2.3 drop that option and the file's header line\n"
        )
    return text


def from_changelog_sql(
    command: str,
    source: Source,
    columns: Mapping[str, str],
    op_column: str,
    mapping: Mapping[str, RowKind],
    keys: Sequence[str] = (),
    skip: bool = False,
    drop: Iterable[RowKind] = (),
) -> str:
    args = ["  input => TABLE `cdc_input`" + (f" PARTITION BY {', '.join(map(ident, keys))}" if keys else "")]
    if op_column != "op":
        args.append(f"  op => DESCRIPTOR({ident(op_column)})")
    default = {k.name: k for k in ALL_KINDS}
    if dict(mapping) != default:
        args.append(f"  op_mapping => {map_literal(grouped_codes(mapping))}")
    if skip:
        args.append("  error_handling => 'SKIP'")
    notes = ""
    dropped = sorted(k.name for k in drop)
    if dropped:
        notes = (
            f"-- --drop {', '.join(dropped)}: FROM_CHANGELOG has no filter on row kinds; "
            "downstream operators see those rows\n"
        )
    call = "SELECT * FROM FROM_CHANGELOG(\n" + ",\n".join(args) + "\n);"
    return header(command, source) + create_table("cdc_input", columns, source) + "\n\n" + notes + call + "\n"


def changelog_view(columns: Mapping[str, str], kind_column: str) -> str:
    """Changelog rows in a file are append-only rows to Flink: FROM_CHANGELOG turns them back."""
    pairs = [(f"{k.value}, {k.name}", k.name) for k in ALL_KINDS]
    args = ["  input => TABLE `cdc_input`"]
    if kind_column != "op":
        args.append(f"  op => DESCRIPTOR({ident(kind_column)})")
    args.append(f"  op_mapping => {map_literal(pairs)}")
    return "CREATE TEMPORARY VIEW `cdc_changelog` AS\nSELECT * FROM FROM_CHANGELOG(\n" + ",\n".join(args) + "\n);"


def to_changelog_sql(
    command: str,
    source: Source,
    columns: Mapping[str, str],
    kind_column: str,
    op_column: str,
    mapping: Mapping[RowKind, str],
    drop: Iterable[RowKind] = (),
) -> str:
    dropped = set(drop)
    kept = {k: v for k, v in mapping.items() if k not in dropped}
    pairs: dict[str, list[str]] = {}
    for kind in ALL_KINDS:
        if kind in kept:
            pairs.setdefault(kept[kind], []).append(kind.name)
    args = ["  input => TABLE " + ("`cdc_input`" if source.fmt == "debezium" else "`cdc_changelog`")]
    if op_column != "op":
        args.append(f"  op => DESCRIPTOR({ident(op_column)})")
    default = {k: k.name for k in ALL_KINDS}
    if kept != default:
        args.append(f"  op_mapping => {map_literal([(', '.join(k), code) for code, k in pairs.items()])}")
    call = "SELECT * FROM TO_CHANGELOG(\n" + ",\n".join(args) + "\n);"
    if source.fmt == "debezium":
        table = create_table("cdc_input", columns, source)
        return header(command) + table + "\n\n" + call + "\n"
    table = create_table("cdc_input", columns, source)
    return header(command, source) + table + "\n\n" + changelog_view(columns, kind_column) + "\n\n" + call + "\n"


METADATA_TYPES = {
    "schema": "STRING",
    "ingestion-timestamp": "TIMESTAMP_LTZ(3)",
    "source.timestamp": "TIMESTAMP_LTZ(3)",
    "source.database": "STRING",
    "source.schema": "STRING",
    "source.table": "STRING",
    "source.properties": "MAP<STRING, STRING>",
}


def debezium_sql(
    command: str,
    source: Source,
    columns: Mapping[str, str],
    schema_include: bool,
    metadata: Sequence[tuple[str, str]] = (),
    skip: bool = False,
    key: Sequence[str] = (),
) -> str:
    options = {}
    if schema_include:
        options["debezium-json.schema-include"] = "true"
    if skip:
        options["debezium-json.ignore-parse-errors"] = "true"
    extra = [
        f"{ident(column)} {METADATA_TYPES[k]} METADATA FROM {literal('value.' + k)} VIRTUAL" for k, column in metadata
    ]
    if key:
        extra.append(f"PRIMARY KEY ({', '.join(map(ident, key))}) NOT ENFORCED")
    notes = ""
    if metadata:
        notes += "-- format metadata is read through the Kafka connector ('value.' keys): point it at your topic\n"
    if key:
        notes += (
            "-- --key: Flink cannot rebuild missing before images; with a primary key and\n"
            "-- SET 'table.exec.source.cdc-events-duplicate' = 'true' it normalizes the changelog by key\n"
        )
    table = create_table("cdc_input", columns, source, extra, options, kafka=bool(metadata))
    return header(command) + notes + table + "\n\nSELECT * FROM `cdc_input`;\n"
