"""The Flink SQL that does the same job on a cluster (``--print-sql``).

Every builder returns a whole script for ``sql-client.sh -f``: a header comment, ``SET`` lines
(streaming mode first), the source table, views, and a last statement whose rows are what the cdc
command emits — a ``SELECT`` the SQL client shows with its ``op`` column, or an ``INSERT INTO`` a
sink when one is asked for. What Flink 2.3 really accepts was found by running these scripts
(``scaleout/FINDINGS.md``; ``scaleout/flink_check.py`` runs them against cdc's output). Where a
Flink version cannot do the job, a builder raises :class:`UsageError` (exit 2) naming the reason
and what would work: it never prints SQL that runs wrong.

Builders take plain data — column name → Flink type, op column, mapping, keys, flags — so any
front end can call them. ``flink_version`` is ``"2.3"`` (default, the newest release) or
``"2.4"`` (upstream master: FROM_CHANGELOG with PARTITION BY / upsert mode; not yet released, so
scripts for it are not run by the harness).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from cdc.core.errors import UsageError
from cdc.core.kinds import ALL_KINDS, DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, RowKind

Row = dict[str, Any]

FLINK_VERSIONS = ("2.3", "2.4")
DEFAULT_FLINK_VERSION = "2.3"
STREAMING = "SET 'execution.runtime-mode' = 'streaming';"
# The text Flink's json format reads into TIMESTAMP(3) (json.timestamp-format.standard = SQL).
SQL_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,3})?")
# Debezium's placeholder for an unchanged TOAST column (PostgreSQL); cdc fills it from state.
TOAST_PLACEHOLDER = "__debezium_unavailable_value"


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


def check_version(flink_version: str) -> str:
    if flink_version not in FLINK_VERSIONS:
        raise UsageError(
            f"no Flink SQL dialect for Flink {flink_version!r}",
            hint="FROM_CHANGELOG / TO_CHANGELOG exist from Flink 2.3; choose one of " + ", ".join(FLINK_VERSIONS),
        )
    return flink_version


# ---------------------------------------------------------------------------------------------
# Connectors


FORMATS = {
    "jsonl": "json",
    "csv": "csv",
    "tsv": "csv",
    "parquet": "parquet",
    "debezium": "debezium-json",
    "canal": "canal-json",
    "maxwell": "maxwell-json",
    "ogg": "ogg-json",
}
ENVELOPES = ("debezium", "canal", "maxwell", "ogg")


@dataclass
class Source:
    """Where the input lives, as a Flink table.

    ``fmt``: jsonl | csv | tsv | parquet | debezium | canal | maxwell | ogg. ``connector``:
    ``filesystem`` (``path``), ``kafka`` or ``upsert-kafka`` (``topic``, ``bootstrap_servers``;
    upsert-kafka needs ``key``: its PRIMARY KEY, read from the record key as JSON).
    """

    path: str
    fmt: str
    connector: str = "filesystem"
    topic: str | None = None
    bootstrap_servers: str | None = None
    key: Sequence[str] = ()

    @property
    def kafka(self) -> bool:
        return self.connector in ("kafka", "upsert-kafka")

    def options(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        fmt = FORMATS[self.fmt]
        if self.connector == "upsert-kafka":
            if self.fmt != "jsonl":
                raise UsageError(f"an upsert-kafka source reads JSON rows, not {self.fmt}")
            if not self.key:
                raise UsageError("an upsert-kafka source needs key columns (its PRIMARY KEY): --key")
            options = {
                "connector": "upsert-kafka",
                "topic": self.topic or "",
                "properties.bootstrap.servers": self.bootstrap_servers or "",
                "key.format": "json",
                "value.format": "json",
                "value.fields-include": "ALL",
            }
        elif self.connector == "kafka":
            options = {
                "connector": "kafka",
                "topic": self.topic or "",
                "properties.bootstrap.servers": self.bootstrap_servers or "",
                "scan.startup.mode": "earliest-offset",
                "format": fmt,
            }
        elif self.connector == "filesystem":
            if self.path == "-":
                raise UsageError(
                    "--print-sql needs an input file: Flink's filesystem connector reads a path, not stdin",
                    hint="name the input file, or read from Kafka (--sql-source kafka --topic T --bootstrap-servers H)",
                )
            options = {"connector": "filesystem", "path": "file://" + os.path.abspath(self.path), "format": fmt}
        else:
            raise UsageError(f"unknown SQL source connector {self.connector!r}; use filesystem, kafka or upsert-kafka")
        if self.kafka and not (self.topic and self.bootstrap_servers):
            raise UsageError(f"a {self.connector} source needs a topic and bootstrap servers")
        prefix = "value." if self.connector == "upsert-kafka" else ""
        if self.fmt == "tsv":
            options[prefix + "csv.field-delimiter"] = "\t"
        if self.fmt in ("csv", "tsv"):
            options[prefix + "csv.null-literal"] = ""
        options.update(extra or {})
        return options

    def with_options(self, extra: Mapping[str, str] | None = None) -> str:
        return with_clause(self.options(extra))


@dataclass
class Sink:
    """Where the result goes, when not to the SQL client's result view (``SELECT``).

    ``connector``: ``filesystem`` (``path``: a folder; JSON rows), ``kafka`` (JSON rows) — a
    changelog result is written as cdc writes changelog rows, the kind in ``kind_column`` as
    ``+I/-U/+U/-D`` (TO_CHANGELOG) — or ``upsert-kafka`` (``key`` columns: the record key; an
    update overwrites, a delete is a tombstone; values are the rows without a kind column).
    """

    connector: str
    path: str | None = None
    topic: str | None = None
    bootstrap_servers: str | None = None
    key: Sequence[str] = ()
    kind_column: str = "op"

    def options(self) -> dict[str, str]:
        if self.connector == "filesystem":
            if not self.path:
                raise UsageError("a filesystem sink needs a path")
            return {"connector": "filesystem", "path": "file://" + os.path.abspath(self.path), "format": "json"}
        if not (self.topic and self.bootstrap_servers):
            raise UsageError(f"a {self.connector} sink needs a topic and bootstrap servers")
        if self.connector == "kafka":
            return {
                "connector": "kafka",
                "topic": self.topic,
                "properties.bootstrap.servers": self.bootstrap_servers,
                "format": "json",
            }
        if self.connector == "upsert-kafka":
            if not self.key:
                raise UsageError("an upsert-kafka sink needs key columns (its PRIMARY KEY)")
            return {
                "connector": "upsert-kafka",
                "topic": self.topic,
                "properties.bootstrap.servers": self.bootstrap_servers,
                "key.format": "json",
                "value.format": "json",
            }
        raise UsageError(f"unknown SQL sink connector {self.connector!r}; use filesystem, kafka or upsert-kafka")


def with_clause(options: Mapping[str, str]) -> str:
    body = ",\n".join(f"  {literal(k)} = {literal(v)}" for k, v in options.items())
    return f"WITH (\n{body}\n)"


def create_table(
    name: str,
    columns: Mapping[str, str],
    source: Source,
    extra_lines: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
) -> str:
    lines = [f"  {ident(c)} {t}" for c, t in columns.items()] + [f"  {line}" for line in extra_lines]
    if source.connector == "upsert-kafka":
        lines.append(f"  PRIMARY KEY ({', '.join(map(ident, source.key))}) NOT ENFORCED")
    body = ",\n".join(lines)
    return f"CREATE TABLE {ident(name)} (\n{body}\n) {source.with_options(options)};"


def map_literal(pairs: Sequence[tuple[str, str]]) -> str:
    return "MAP[" + ", ".join(f"{literal(k)}, {literal(v)}" for k, v in pairs) + "]"


def grouped_codes(mapping: Mapping[str, RowKind]) -> list[tuple[str, str]]:
    """``{'c': +I, 'r': +I}`` → ``[('c, r', 'INSERT')]``: each kind once, codes as a comma list."""
    codes: dict[RowKind, list[str]] = {}
    for code, kind in mapping.items():
        codes.setdefault(kind, []).append(code)
    return [(", ".join(c), kind.name) for kind, c in codes.items()]


def select_list(columns: Iterable[str]) -> str:
    return ", ".join(map(ident, columns))


def header(command: str, flink_version: str = DEFAULT_FLINK_VERSION, notes: Sequence[str] = ()) -> str:
    lines = [f"-- {command}: the same job in Apache Flink SQL {flink_version} (sql-client.sh -f)"]
    lines += [f"-- {n}" for n in notes]
    return "\n".join(lines) + "\n"


@dataclass
class Script:
    """A script in the making: SET lines, DDL/views, and the last statement."""

    command: str
    flink_version: str
    notes: list[str] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    statements: list[str] = field(default_factory=list)

    def text(self) -> str:
        sets = [STREAMING] + [f"SET {literal(k)} = {literal(v)};" for k, v in self.settings.items()]
        parts = [header(self.command, self.flink_version, self.notes) + "\n".join(sets), *self.statements]
        return "\n\n".join(parts) + "\n"


def finish(
    script: Script,
    query: str,
    columns: Sequence[str],
    sink: Sink | None,
    changelog: bool = True,
    types: Mapping[str, str] | None = None,
) -> str:
    """Append the last statement: ``query`` itself, or ``INSERT INTO`` the sink.

    ``query`` selects ``columns``; ``changelog`` says whether its result has other kinds than +I.
    """
    if sink is None:
        script.statements.append(query + ";")
        return script.text()
    kinds = sink.kind_column
    types = types or {}
    cols = [f"  {ident(c)} {types.get(c, 'STRING')}" for c in columns]
    if sink.connector == "upsert-kafka":
        cols.append(f"  PRIMARY KEY ({', '.join(map(ident, sink.key))}) NOT ENFORCED")
        script.statements.append(output_table(cols, sink.options()))
        script.statements.append(f"INSERT INTO `cdc_output`\n{query};")
        return script.text()
    if changelog:
        if kinds in columns:
            raise UsageError(f"the kind column {kinds!r} is also a data column; rename it with --kind-column")
        cols.insert(0, f"  {ident(kinds)} STRING")
        script.statements.append(f"CREATE TEMPORARY VIEW `cdc_result` AS\n{query};")
        query = encoded("cdc_result", columns, kinds, ALL_KINDS)
    script.statements.append(output_table(cols, sink.options()))
    script.statements.append(f"INSERT INTO `cdc_output`\n{query};")
    return script.text()


def output_table(lines: Sequence[str], options: Mapping[str, str]) -> str:
    body = ",\n".join(lines)
    return f"CREATE TABLE `cdc_output` (\n{body}\n) {with_clause(options)};"


def encoded(table: str, columns: Sequence[str], kind_column: str, kinds: Sequence[RowKind]) -> str:
    """The changelog of ``table`` as append-only rows, the kind in ``kind_column`` as cdc writes
    it (``+I/-U/+U/-D``); kinds not listed are dropped (TO_CHANGELOG's mapping is a filter)."""
    mapping = map_literal([(k.name, k.value) for k in kinds])
    return (
        f"SELECT {select_list([kind_column, *columns])} FROM TO_CHANGELOG(\n  input => TABLE {ident(table)},\n"
        f"  op => DESCRIPTOR({ident(kind_column)}),\n  op_mapping => {mapping}\n)"
    )


def _csv_header_view(source: Source, columns: Sequence[str], table: str = "cdc_input") -> str | None:
    """Flink 2.3 reads a CSV file's header line as data ('csv.ignore-first-line' is not an option
    of the csv format there): keep every row that is not the header."""
    if source.fmt not in ("csv", "tsv") or source.kafka:
        return None
    condition = "\n   OR ".join(f"{ident(c)} IS DISTINCT FROM {literal(c)}" for c in columns)
    return f"CREATE TEMPORARY VIEW `cdc_rows` AS\nSELECT * FROM {ident(table)}\nWHERE {condition};"


def source_statements(
    script: Script,
    source: Source,
    columns: Mapping[str, str],
    empty_strings: bool = False,
    extra_lines: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
) -> str:
    """The input table (and the CSV header filter); returns the name to read rows from."""
    if source.fmt in ("csv", "tsv") and empty_strings:
        raise UsageError(
            'the input has quoted empty fields (""): cdc reads them as empty strings and empty unquoted '
            "fields as null, Flink's csv format cannot tell the two apart",
            hint="convert the file to JSON lines first (cdc ... -f jsonl), then print the SQL for that file",
        )
    script.statements.append(create_table("cdc_input", columns, source, extra_lines, options))
    view = _csv_header_view(source, list(columns))
    if view is None:
        return "cdc_input"
    script.notes.append("the csv format of Flink 2.3 reads the header line as a row: the view cdc_rows drops it")
    script.statements.append(view)
    return "cdc_rows"


# ---------------------------------------------------------------------------------------------
# from-changelog / to-changelog


UPSERT_NEEDS_24 = (
    "an upsert mapping (UPDATE_AFTER without UPDATE_BEFORE) with --key is Flink's FROM_CHANGELOG with "
    "PARTITION BY, which Flink 2.3 does not have ('Only tables with set semantics may be partitioned')"
)


def from_changelog_sql(
    command: str,
    source: Source,
    columns: Mapping[str, str],
    op_column: str,
    mapping: Mapping[str, RowKind],
    keys: Sequence[str] = (),
    skip: bool = False,
    drop: Iterable[RowKind] = (),
    *,
    flink_version: str = DEFAULT_FLINK_VERSION,
    sink: Sink | None = None,
    empty_strings: bool = False,
    commit_columns: Sequence[str] = (),
    drop_columns: Sequence[str] = (),
) -> str:
    """``cdc from-changelog``: FROM_CHANGELOG over the input table.

    - ``columns``: input column → Flink type (the op column among them); ``op_column``;
      ``mapping``: code → kind; ``keys``: ``--key``; ``skip``: ``--on-error skip``;
      ``drop``: ``--drop`` kinds; ``empty_strings``: the sampled CSV had quoted empty fields.
    - Flink 2.3: no PARTITION BY (an upsert mapping is refused: needs 2.4), no ``error_handling``
      (unknown named arguments are ignored there), so ``skip`` and ``drop`` become a view keeping
      only rows whose code is mapped (and not dropped) before FROM_CHANGELOG.
    - ``commit_columns``: a change feed whose pre- and post-images cdc pairs within a commit —
      refused (FROM_CHANGELOG keeps the file's order); ``drop_columns``: left out of the rows
      (``--drop-commit-columns``).
    """
    check_version(flink_version)
    if commit_columns:
        raise UsageError(
            f"cdc pairs each commit's pre- and post-images (commit column {commit_columns[0]}) whatever their order "
            "in the file; Flink's FROM_CHANGELOG is stateless and keeps the file's order",
            hint="if each commit's pre-images already precede their post-images, the same job without pairing is "
            "the mapping without the preset (--op COLUMN -m CODES=KIND …)",
        )
    if op_column not in columns:
        raise UsageError(f"the op column {op_column!r} is not among the input's columns")
    upsert = UPDATE_AFTER in mapping.values() and UPDATE_BEFORE not in mapping.values()
    if upsert and flink_version == "2.3":
        raise UsageError(
            UPSERT_NEEDS_24,
            hint="pass --flink-version 2.4 (upsert FROM_CHANGELOG), or map a code to UPDATE_BEFORE for retract "
            "semantics",
        )
    script = Script(command, flink_version)
    table = source_statements(script, source, columns, empty_strings)
    dropped = set(drop)
    kept_codes = [code for code, kind in mapping.items() if kind not in dropped]
    dropped_codes = [code for code, kind in mapping.items() if kind in dropped]
    op = ident(op_column)
    condition = None
    if skip:
        condition = f"{op} IN ({', '.join(map(literal, kept_codes))})" if kept_codes else "FALSE"
        script.notes.append("--on-error skip: the view cdc_kept keeps rows whose op code is mapped")
    elif dropped_codes:
        condition = f"{op} IS NULL OR {op} NOT IN ({', '.join(map(literal, dropped_codes))})"
    if dropped_codes:
        script.notes.append("--drop: the view cdc_kept removes the codes of the dropped kinds")
    if condition is not None:
        script.statements.append(
            f"CREATE TEMPORARY VIEW `cdc_kept` AS\nSELECT * FROM {ident(table)}\nWHERE {condition};"
        )
        table = "cdc_kept"
    partition = f" PARTITION BY {select_list(keys)}" if keys and flink_version != "2.3" else ""
    args = [f"  input => TABLE {ident(table)}{partition}"]
    if op_column != "op":
        args.append(f"  op => DESCRIPTOR({op})")
    default = {k.name: k for k in ALL_KINDS}
    if dict(mapping) != default:
        args.append(f"  op_mapping => {map_literal(grouped_codes(mapping))}")
    out_cols = [c for c in columns if c != op_column and c not in drop_columns]
    query = f"SELECT {select_list(out_cols)} FROM FROM_CHANGELOG(\n" + ",\n".join(args) + "\n)"
    return finish(script, query, out_cols, sink, types=columns)


def changelog_view(columns: Mapping[str, str], kind_column: str, table: str = "cdc_input") -> str:
    """Changelog rows in a file are append-only rows to Flink: FROM_CHANGELOG turns them back."""
    pairs = [(f"{k.value}, {k.name}", k.name) for k in ALL_KINDS]
    args = [f"  input => TABLE {ident(table)}"]
    if kind_column != "op":
        args.append(f"  op => DESCRIPTOR({ident(kind_column)})")
    args.append(f"  op_mapping => {map_literal(pairs)}")
    return "CREATE TEMPORARY VIEW `cdc_changelog` AS\nSELECT * FROM FROM_CHANGELOG(\n" + ",\n".join(args) + "\n);"


def changelog_source(
    script: Script,
    source: Source,
    columns: Mapping[str, str],
    kind_column: str,
    empty_strings: bool = False,
    debezium: DebeziumInfo | None = None,
) -> tuple[str, list[str]]:
    """A changelog as a Flink table: changelog rows through a FROM_CHANGELOG view, or an envelope
    format's table. Returns the table name and its data columns."""
    if source.fmt in ENVELOPES:
        return envelope_table(script, source, columns, debezium or DebeziumInfo()), list(columns)
    if kind_column not in columns:
        raise UsageError(f"the kind column {kind_column!r} is not among the input's columns")
    table = source_statements(script, source, columns, empty_strings)
    script.statements.append(changelog_view(columns, kind_column, table))
    return "cdc_changelog", [c for c in columns if c != kind_column]


def to_changelog_sql(
    command: str,
    source: Source,
    columns: Mapping[str, str],
    kind_column: str,
    op_column: str,
    mapping: Mapping[RowKind, str],
    drop: Iterable[RowKind] = (),
    *,
    flink_version: str = DEFAULT_FLINK_VERSION,
    sink: Sink | None = None,
    empty_strings: bool = False,
    debezium: DebeziumInfo | None = None,
) -> str:
    """``cdc to-changelog``: TO_CHANGELOG over the changelog.

    ``columns``: input column → type (changelog rows: the kind column among them; a Debezium
    source: the image columns); ``kind_column``; ``op_column``: the output op column;
    ``mapping``: kind → code; ``drop``: kinds dropped; ``debezium``: what the sample showed of a
    Debezium input (see :class:`DebeziumInfo`).
    """
    check_version(flink_version)
    script = Script(command, flink_version)
    table, data = changelog_source(script, source, columns, kind_column, empty_strings, debezium)
    dropped = set(drop)
    kept = {k: v for k, v in mapping.items() if k not in dropped}
    pairs: dict[str, list[str]] = {}
    for kind in ALL_KINDS:
        if kind in kept:
            pairs.setdefault(kept[kind], []).append(kind.name)
    args = [f"  input => TABLE {ident(table)}"]
    if op_column != "op":
        args.append(f"  op => DESCRIPTOR({ident(op_column)})")
    default = {k: k.name for k in ALL_KINDS}
    if kept != default:
        args.append(f"  op_mapping => {map_literal([(', '.join(k), code) for code, k in pairs.items()])}")
    out_cols = [op_column, *data]
    query = f"SELECT {select_list(out_cols)} FROM TO_CHANGELOG(\n" + ",\n".join(args) + "\n)"
    types = {op_column: "STRING", **columns}
    return finish(script, query, out_cols, sink, changelog=False, types=types)


# ---------------------------------------------------------------------------------------------
# Envelopes: debezium-json, canal-json, maxwell-json, ogg-json


METADATA_TYPES = {
    "schema": "STRING",
    "ingestion-timestamp": "TIMESTAMP_LTZ(3)",
    "source.timestamp": "TIMESTAMP_LTZ(3)",
    "source.database": "STRING",
    "source.schema": "STRING",
    "source.table": "STRING",
    "source.properties": "MAP<STRING, STRING>",
}
# The metadata each envelope format of Flink offers (key → type), from the formats' sources.
ENVELOPE_METADATA: dict[str, dict[str, str]] = {
    "debezium": METADATA_TYPES,
    "canal": {
        "database": "STRING",
        "table": "STRING",
        "sql-type": "MAP<STRING, INT>",
        "pk-names": "ARRAY<STRING>",
        "ingestion-timestamp": "TIMESTAMP_LTZ(3)",
        "event-timestamp": "TIMESTAMP_LTZ(3)",
    },
    "maxwell": {
        "database": "STRING",
        "table": "STRING",
        "primary-key-columns": "ARRAY<STRING>",
        "ingestion-timestamp": "TIMESTAMP_LTZ(3)",
    },
    "ogg": {
        "table": "STRING",
        "primary-keys": "ARRAY<STRING>",
        "ingestion-timestamp": "TIMESTAMP_LTZ(6)",
        "event-timestamp": "TIMESTAMP_LTZ(6)",
    },
}


@dataclass
class DebeziumInfo:
    """What the sampled Debezium events showed, beyond the column types.

    - ``schema_include``: events carry the ``{"schema", "payload"}`` envelope;
    - ``raw_columns``: column → type of the values as sent (before cdc's logical-type decoding);
      a column whose decoded type differs (a Connect ``Decimal`` as base64, a ``Date`` /
      ``MicroTimestamp`` as a number) is one Flink's debezium-json cannot decode as cdc does;
    - ``text_tombstones``: the file has ``null`` lines (Flink: "Corrupt Debezium JSON message");
    - ``toast``: an image holds ``__debezium_unavailable_value`` (cdc fills it from state);
    - ``null_before``: an update or delete without a before image (Flink fails, also with a key);
    - ``partial_before``: a before image without some columns (cdc fails unless ``--key``; Flink
      emits it with nulls);
    - ``raw_values``: cdc writes values as sent (``--raw-values``), metadata times as epoch millis;
    - ``rejected``: a record cdc skips (a Debezium ``m``/``t`` event, a Canal DDL other than CREATE,
      a Maxwell ``bootstrap-start``/``table-*`` message) on which Flink's format fails — the same
      job only with ``--on-error skip`` (``ignore-parse-errors`` drops it);
    - ``unsupported``: a record cdc emits rows for that Flink's format cannot read (a Maxwell
      ``bootstrap-insert``);
    - ``tables``: the source tables seen; cdc emits each table's rows with their own columns, a
      Flink table has one column set, so several tables need a table filter (Canal's
      ``table.include``) or are refused;
    - ``partial_after``: an update's after image lacks columns (GoldenGate compressed updates):
      cdc fills them from the key's last row, Flink emits nulls — refused;
    - ``text_booleans``: a Canal BOOLEAN column (``sqlType`` 16) sent as ``1``/``0``: cdc reads
      ``1`` as true, Flink's ``Boolean.parseBoolean`` as false — refused unless ``raw_values``
      (both keep the text then).

    ``unsupported`` also names the updates Flink's format cannot read as cdc does: a Canal
    ``UPDATE`` or Maxwell ``update`` without ``old`` (Flink: NullPointerException), a Canal
    ``old`` shorter than ``data`` (Flink: ArrayIndexOutOfBoundsException), and a multi-row Canal
    ``UPDATE`` where Flink's rule — a column's old value is the first element of ``old`` naming
    it (Jackson ``findValue`` over the whole array) — gives another before image than cdc's
    ``old[i]`` over ``data[i]``.

    :func:`scan_records` fills everything but the column types from the first records as sent.
    """

    schema_include: bool = False
    raw_columns: Mapping[str, str] | None = None
    text_tombstones: bool = False
    toast: bool = False
    null_before: bool = False
    partial_before: bool = False
    raw_values: bool = False  # cdc keeps values as sent (--raw-values), timestamps as epoch millis
    rejected: str = ""  # a record cdc skips that Flink's format fails on (ignore-parse-errors drops it)
    unsupported: str = ""  # a record cdc turns into rows that Flink's format cannot read at all
    tables: frozenset[str] = frozenset()  # the source tables the records came from (db.table)
    partial_after: bool = False  # an update's after image without some columns (GoldenGate compressed)
    text_booleans: str = ""  # Canal: a BOOLEAN (sqlType 16) sent as text other than true/false (e.g. '1')
    first_error: str = ""  # the first record cdc itself could not decode (set by the CLI's sampling)
    truncate: bool = False  # a truncate record (Debezium op t, Canal TRUNCATE, GoldenGate op_type T)
    on_truncate: str = "fail"  # cdc's --on-truncate: delete emits -D for every live row, which Flink cannot


# The record types each Flink format reads (others fail unless ignore-parse-errors), and the
# ones cdc emits rows for although Flink cannot read them.
FLINK_TYPES = {
    "debezium": ("op", {"c", "r", "u", "d"}),
    "canal": ("type", {"INSERT", "UPDATE", "DELETE", "CREATE"}),  # CREATE: a DDL Flink skips
    "maxwell": ("type", {"insert", "update", "delete"}),
    "ogg": ("op_type", {"I", "U", "D"}),
}
CDC_ROWS = {"maxwell": {"bootstrap-insert"}}


def scan_records(
    records: Iterable[Any],
    envelope: str = "debezium",
    schema_include: str = "auto",
    database_include: str | None = None,
    table_include: str | None = None,
) -> DebeziumInfo:
    """What Flink's envelope format would meet in these records (parsed JSON lines as sent;
    ``None`` for a ``null`` line): see :class:`DebeziumInfo`. Column types are not set here.
    ``database_include`` / ``table_include`` (Canal): records of other tables are skipped, as
    canal-json skips them before reading them."""
    info = DebeziumInfo()
    field_name, readable = FLINK_TYPES[envelope]
    columns: set[str] = set()
    tables: set[str] = set()
    for record in records:
        if record is None:
            info.text_tombstones = True
            continue
        if not isinstance(record, dict):
            continue
        payload = record.get("payload") if schema_include == "true" or "payload" in record else record
        if not isinstance(payload, dict):
            continue
        kind = payload.get(field_name)
        if envelope == "canal" and not _included(payload, database_include, table_include):
            continue
        source = payload.get("source") if envelope == "debezium" else payload
        if isinstance(source, dict) and (source.get("table") is not None or source.get("db") is not None):
            tables.add(f"{source.get('database', source.get('db'))}.{source.get('table')}")
        if kind is not None and kind not in readable:
            what = f"a record with {field_name} {kind!r}"
            if kind in CDC_ROWS.get(envelope, ()):
                info.unsupported = info.unsupported or what
            else:
                info.rejected = info.rejected or what
        if kind in ("t", "TRUNCATE", "T"):
            info.truncate = True
        if envelope == "canal":
            info.unsupported = info.unsupported or _canal_update(payload)
            info.text_booleans = info.text_booleans or _canal_text_boolean(payload)
        if envelope == "maxwell" and kind == "update" and not isinstance(payload.get("old"), dict):
            info.unsupported = (
                info.unsupported or "an update without 'old' (Flink's maxwell-json: NullPointerException)"
            )
        if envelope not in ("debezium", "ogg"):
            continue
        before, after = payload.get("before"), payload.get("after")
        for image in (before, after):
            if isinstance(image, dict) and TOAST_PLACEHOLDER in image.values():
                info.toast = True
        if isinstance(after, dict):
            seen = columns | (before.keys() if isinstance(before, dict) else set())
            if str(kind).lower() == "u" and not after.keys() >= seen:
                info.partial_after = True
            columns |= after.keys()
        if str(kind).lower() in ("u", "d"):
            if not isinstance(before, dict):
                info.null_before = True
            elif not before.keys() >= columns:
                info.partial_before = True
    info.tables = frozenset(tables)
    return info


def _included(message: Mapping[str, Any], database_include: str | None, table_include: str | None) -> bool:
    """canal-json's filters: the whole database / table name matches the regular expression."""
    for pattern, name in ((database_include, message.get("database")), (table_include, message.get("table"))):
        if pattern is not None and not re.fullmatch(pattern, str(name)):
            return False
    return True


def _canal_update(message: Mapping[str, Any]) -> str:
    """What of a Canal UPDATE Flink's canal-json cannot read as cdc does ('' when nothing).

    Flink takes row ``i``'s before image from ``old[i]``, and a column ``old[i]`` lacks from
    ``data[i]`` only when no element of ``old`` names it (Jackson ``findValue`` over the whole
    array); else it stays NULL. cdc takes it from ``data[i]`` (the row's own ``old`` says what
    changed)."""
    if message.get("type") != "UPDATE" or not isinstance(message.get("data"), list):
        return ""
    data, old = message["data"], message.get("old")
    if not isinstance(old, list):
        return "an UPDATE without 'old' (Flink's canal-json: NullPointerException)"
    if len(old) < len(data):
        return "an UPDATE whose 'old' has fewer elements than 'data' (Flink's canal-json: ArrayIndexOutOfBounds)"
    named = {c for o in old if isinstance(o, dict) for c in o}
    for i, row in enumerate(data):
        own = old[i] if isinstance(old[i], dict) else {}
        if isinstance(row, dict) and any(c in named and c not in own and v is not None for c, v in row.items()):
            return (
                "a multi-row UPDATE whose rows changed different columns: Flink's canal-json leaves a column NULL in "
                "a row's before image when another row's 'old' names it, cdc takes the row's own value"
            )
    return ""


def _canal_text_boolean(message: Mapping[str, Any]) -> str:
    """A BOOLEAN column (sqlType 16) whose text Flink's Boolean.parseBoolean reads otherwise than cdc."""
    types = message.get("sqlType")
    if not isinstance(types, dict):
        return ""
    for image in [*(message.get("data") or []), *(message.get("old") or [])]:
        if not isinstance(image, dict):
            continue
        for column, value in image.items():
            if types.get(column) == 16 and value is not None and str(value).lower() not in ("true", "false"):
                return str(column)
    return ""


def _check_decoded_types(columns: Mapping[str, str], raw: Mapping[str, str] | None) -> None:
    if raw is None:
        return
    for name, decoded in columns.items():
        sent = raw.get(name)
        if sent is None or sent == decoded:
            continue
        if decoded.startswith("DECIMAL") and sent == "STRING":
            raise UsageError(
                f"column {name!r} is a Kafka Connect Decimal (base64 bytes): cdc decodes it, Flink's debezium-json "
                "cannot ('Character A is neither a decimal digit number…')",
                hint="configure Debezium with decimal.handling.mode=string (or double), or keep the values as sent "
                "(debezium-decode --raw-values)",
            )
        raise UsageError(
            f"column {name!r} carries a Debezium logical type ({sent} as sent, {decoded} decoded): cdc decodes it, "
            "Flink's debezium-json reads only the value as sent",
            hint="keep the values as sent (debezium-decode --raw-values), or configure Debezium's "
            "time.precision.mode / decimal.handling.mode to send strings",
        )


def envelope_table(
    script: Script,
    source: Source,
    columns: Mapping[str, str],
    info: DebeziumInfo,
    metadata: Sequence[tuple[str, str]] = (),
    skip: bool = False,
    key: Sequence[str] = (),
    database_include: str | None = None,
    table_include: str | None = None,
) -> str:
    fmt = FORMATS[source.fmt]
    options: dict[str, str] = {}
    if database_include or table_include:
        if source.fmt != "canal":
            raise UsageError(f"{fmt} has no database / table filter in Flink 2.3 (canal-json has)")
        if database_include:
            options["canal-json.database.include"] = database_include
        if table_include:
            options["canal-json.table.include"] = table_include
    elif len(info.tables) > 1:
        raise UsageError(
            f"the input holds changes of {len(info.tables)} tables ({', '.join(sorted(info.tables))}): cdc emits "
            "each with its own columns, a Flink table has one set of columns",
            hint="one table per script: --table-include T for Canal ('canal-json.table.include'), else one topic "
            "or file per table",
        )
    _check_decoded_types(columns, info.raw_columns)
    if info.toast:
        raise UsageError(
            f"the input holds Debezium's {TOAST_PLACEHOLDER!r} (an unchanged PostgreSQL TOAST column): cdc fills it "
            "from the last row of the key, Flink passes the placeholder on as data",
            hint="set REPLICA IDENTITY FULL on the table so Debezium sends the value",
        )
    if not columns:
        if info.first_error:
            raise UsageError(
                f"cdc cannot decode the first records either ({info.first_error}): no columns to declare",
                hint="the SQL of a job that cannot read its input would fail the same way",
            )
        raise UsageError(
            f"no {fmt} change event among the first records: no columns to declare",
            hint=f"is the input {fmt}?",
        )
    if info.partial_after:
        raise UsageError(
            "an update's after image lacks columns (GoldenGate compressed updates): cdc fills them from the last "
            f"row of the key, Flink's {fmt} emits them as null",
            hint="have the extract log full images (NOCOMPRESSUPDATES)",
        )
    if info.null_before and key:
        raise UsageError(
            "an update or delete has no before image (PostgreSQL REPLICA IDENTITY DEFAULT): cdc rebuilds it from "
            "the last row of the --key, Flink's debezium-json fails on it even with a primary key",
            hint="set REPLICA IDENTITY FULL on the table",
        )
    if info.partial_before and not key:
        raise UsageError(
            "a before image lacks columns (PostgreSQL REPLICA IDENTITY DEFAULT, GoldenGate without full before "
            "images): cdc stops there, Flink would emit the row with nulls",
            hint="give --key COLS (Flink: a primary key with table.exec.source.cdc-events-duplicate rebuilds "
            "before images from state), or set REPLICA IDENTITY FULL",
        )
    if info.truncate and info.on_truncate == "delete":
        raise UsageError(
            "--on-truncate delete emits -D for every live row of the table at a truncate; Flink's "
            f"{fmt} has no such form (it fails on a truncate, or drops it with ignore-parse-errors)",
            hint="print the SQL with --on-truncate skip and --on-error skip, which Flink does as cdc does",
        )
    if info.unsupported:
        raise UsageError(
            f"the input has {info.unsupported}: Flink's {fmt} does not give the rows cdc emits for it",
            hint="filter those records out first, or read them with cdc",
        )
    if info.text_booleans and not info.raw_values:
        raise UsageError(
            f"column {info.text_booleans!r} is a BOOLEAN (sqlType 16) sent as '1'/'0': cdc reads '1' as true, Flink's "
            "canal-json (Boolean.parseBoolean) as false",
            hint="keep the values as sent (--raw-values), or have Canal send true/false",
        )
    if info.rejected and not skip:
        raise UsageError(
            f"the input has {info.rejected}: cdc skips it, Flink's {fmt} fails on it",
            hint=f"pass --on-error skip (Flink: '{fmt}.ignore-parse-errors' drops it, as cdc does)",
        )
    if info.text_tombstones and not skip and not source.kafka:
        raise UsageError(
            "the file has 'null' lines (tombstones): cdc skips them, Flink's filesystem source hands them to "
            f"{fmt}, which fails ('Corrupt Debezium JSON message')",
            hint="read the topic itself (--sql-source kafka: a tombstone there has no value and is skipped), "
            "drop the lines first (grep -vx null), or pass --on-error skip (Flink: ignore-parse-errors)",
        )
    if info.schema_include:
        if source.fmt != "debezium":
            raise UsageError(f"{fmt} has no schema envelope")
        options["debezium-json.schema-include"] = "true"
    if skip:
        options[f"{fmt}.ignore-parse-errors"] = "true"
        script.notes.append(f"--on-error skip: '{fmt}.ignore-parse-errors' drops records Flink cannot read")
    available = ENVELOPE_METADATA[source.fmt]
    extra = []
    if metadata and not source.kafka:
        raise UsageError(
            "format metadata columns are read through Kafka: Flink's filesystem connector offers only file.* metadata",
            hint="--sql-source kafka --topic T --bootstrap-servers H",
        )
    for k, column in metadata:
        if k not in available:
            raise UsageError(f"{fmt} has no metadata {k!r}; it has " + ", ".join(available))
        if info.raw_values and available[k].startswith("TIMESTAMP"):
            raise UsageError(
                f"--raw-values writes metadata {k!r} as the epoch milliseconds sent; Flink's {fmt} gives it as "
                f"{available[k]}",
                hint="leave out --raw-values for this metadata, or read the raw number from the event yourself",
            )
        extra.append(f"{ident(column)} {available[k]} METADATA FROM {literal('value.' + k)} VIRTUAL")
        if available[k].startswith("TIMESTAMP_LTZ"):
            script.settings["table.local-time-zone"] = "UTC"
    if key:
        extra.append(f"PRIMARY KEY ({select_list(key)}) NOT ENFORCED")
        script.settings["table.exec.source.cdc-events-duplicate"] = "true"
        script.notes.append(
            "--key: with a primary key and cdc-events-duplicate Flink rebuilds before images from the last row of "
            "the key (ChangelogNormalize)"
        )
    script.statements.append(create_table("cdc_input", columns, source, extra, options))
    return "cdc_input"


def debezium_sql(
    command: str,
    source: Source,
    columns: Mapping[str, str],
    schema_include: bool,
    metadata: Sequence[tuple[str, str]] = (),
    skip: bool = False,
    key: Sequence[str] = (),
    *,
    flink_version: str = DEFAULT_FLINK_VERSION,
    sink: Sink | None = None,
    info: DebeziumInfo | None = None,
    database_include: str | None = None,
    table_include: str | None = None,
) -> str:
    """``cdc debezium-decode`` (and ``decode --envelope E`` for canal / maxwell / ogg, by
    ``source.fmt``): the envelope format's table, selected.

    ``columns``: image column → type (as cdc decodes them); ``schema_include``; ``metadata``:
    (key, column) pairs; ``skip``: ``--on-error skip``; ``key``: ``--key``; ``info``: see
    :class:`DebeziumInfo` (its ``schema_include`` is overridden by the argument).
    """
    check_version(flink_version)
    info = replace(info, schema_include=schema_include) if info else DebeziumInfo(schema_include)
    script = Script(command, flink_version)
    table = envelope_table(script, source, columns, info, metadata, skip, key, database_include, table_include)
    out_cols = [*columns, *(column for _, column in metadata)]
    types = dict(columns) | {column: ENVELOPE_METADATA[source.fmt][k] for k, column in metadata}
    return finish(script, f"SELECT {select_list(out_cols)} FROM {ident(table)}", out_cols, sink, types=types)


def decode_sql(
    source: Source,
    columns: Mapping[str, str],
    *,
    metadata: Sequence[tuple[str, str]] = (),
    skip: bool = False,
    key: Sequence[str] = (),
    info: DebeziumInfo | None = None,
    flink_version: str = DEFAULT_FLINK_VERSION,
    sink: Sink | None = None,
    database_include: str | None = None,
    table_include: str | None = None,
) -> str:
    """``cdc decode --envelope debezium|canal|maxwell|ogg`` (``source.fmt`` names the envelope).

    ``database_include`` / ``table_include``: Canal's filters (regular expressions on the whole
    name, Flink's ``canal-json.database.include`` / ``table.include``); records of several tables
    without a filter are refused (one Flink table has one column set).

    Canal: one row per element of ``data``, ``old`` merged over it as the before image; Maxwell:
    ``data`` with ``old``; OGG: ``op_type`` I/U/D with ``before``/``after`` — as Flink's
    canal-json / maxwell-json / ogg-json read them. Metadata keys per format: ``ENVELOPE_METADATA``.
    """
    if source.fmt not in ENVELOPES:
        raise UsageError(f"decode reads an envelope ({', '.join(ENVELOPES)}), not {source.fmt}")
    info = info or DebeziumInfo()
    return debezium_sql(
        f"cdc decode --envelope {source.fmt}",
        source,
        columns,
        info.schema_include,
        metadata,
        skip,
        key,
        flink_version=flink_version,
        sink=sink,
        info=info,
        database_include=database_include,
        table_include=table_include,
    )


def debezium_encode_sql(
    source: Source,
    columns: Mapping[str, str],
    sink: Sink,
    *,
    kind_column: str = "op",
    split_updates: bool = True,
    flink_version: str = DEFAULT_FLINK_VERSION,
    empty_strings: bool = False,
    debezium: DebeziumInfo | None = None,
) -> str:
    """``cdc debezium-encode --split-updates``: changelog rows into a ``debezium-json`` sink.

    ``sink``: a ``kafka`` or ``filesystem`` :class:`Sink` (its format becomes debezium-json).
    Flink writes ``+I``/``+U`` as ``{"before":null,"after":…,"op":"c"}`` and ``-U``/``-D`` as
    ``{"before":…,"after":null,"op":"d"}``, with no ``source``/``ts_ms``: that is cdc's
    ``--split-updates`` form without ``ts_ms``/``source``. cdc's default (one ``u`` event per
    update pair) is not something Flink writes: refused.
    """
    check_version(flink_version)
    if not split_updates:
        raise UsageError(
            "Flink's debezium-json writes an update as two events (d, then c); cdc's default joins the pair into "
            "one u event",
            hint="print the SQL for --split-updates, Flink's form",
        )
    script = Script("cdc debezium-encode --split-updates", flink_version)
    table, data = changelog_source(script, source, columns, kind_column, empty_strings, debezium)
    options = sink.options()
    if sink.connector == "upsert-kafka":
        raise UsageError("debezium-json is written through the kafka or filesystem connector, not upsert-kafka")
    options["format"] = "debezium-json"
    cols = ",\n".join(f"  {ident(c)} {columns[c]}" for c in data)
    script.statements.append(f"CREATE TABLE `cdc_output` (\n{cols}\n) {with_clause(options)};")
    script.statements.append(f"INSERT INTO `cdc_output`\nSELECT {select_list(data)} FROM {ident(table)};")
    return script.text()


# ---------------------------------------------------------------------------------------------
# Keyed state: materialize, replay, aggregate


def _key_check(keys: Sequence[str], columns: Iterable[str]) -> None:
    missing = [k for k in keys if k not in columns]
    if missing:
        raise UsageError(f"key column(s) {', '.join(missing)} not among the columns")


def materialize_sql(
    source: Source,
    columns: Mapping[str, str],
    *,
    kind_column: str = "op",
    keys: Sequence[str] = (),
    flink_version: str = DEFAULT_FLINK_VERSION,
    sink: Sink | None = None,
    empty_strings: bool = False,
    debezium: DebeziumInfo | None = None,
    drop_columns: Sequence[str] = (),
    sample: Sequence[Row] = (),
) -> str:
    """``cdc materialize [--key K]``: the table a changelog describes.

    The changelog (changelog rows via FROM_CHANGELOG, or an envelope table) is the dynamic table;
    ``SELECT *`` from it is the query whose result the SQL client shows as a table
    (``sql-client.execution.result-mode = table``); its changelog nets to cdc's table. With
    ``keys`` the result goes into an upsert sink keyed by them when ``sink`` is ``upsert-kafka``
    (Flink's SinkUpsertMaterializer keeps the last row per key); without keys it is a multiset.
    ``drop_columns``: a change feed's commit columns, which are not part of the table (nor of a
    retraction's match): the query selects the other columns. ``--as-of``, ``--dedup`` and
    ``--expect`` have no SQL form here.

    ``sample``: the first changelog rows (with ``kind_column``). With ``keys`` and no upsert-kafka
    sink, a changelog that contradicts its keyed state there (an insert of an existing key, a
    retraction unlike the stored row or of an absent one) is refused: the SQL client's table is
    a multiset, which equals cdc's keyed table only for a consistent changelog. With an
    upsert-kafka sink (which drops ``-U``; ``+I``/``+U`` put, ``-D`` deletes the key) only a
    ``-U`` that no ``+U`` follows differs from cdc (whose ``-U`` takes the row out). Without keys
    cdc and the SQL client apply a changelog alike (a retraction removes one equal row, if any).
    """
    check_version(flink_version)
    script = Script("cdc materialize" + (f" --key {','.join(keys)}" if keys else ""), flink_version)
    table, data = changelog_source(script, source, columns, kind_column, empty_strings, debezium)
    data = [c for c in data if c not in drop_columns]
    if keys and sample:
        _key_check(keys, data)
        if sink is not None and sink.connector == "upsert-kafka":
            found = dangling_retractions(sample, kind_column, keys)
            where = "an upsert sink drops -U, so the row stays"
        else:
            found = keyed_findings(sample, kind_column, keys, drop_columns)
            where = "the SQL client's table (and a file sink's changelog) is a multiset, not keyed"
        if found:
            raise UsageError(
                f"the changelog contradicts its keyed state in the first rows ({found}): cdc's keyed table then "
                f"differs from Flink's ({where})",
                hint="materialize without --key (a multiset: the same in cdc and Flink), or fix the changelog "
                "(cdc inspect shows where it is inconsistent)",
            )
    _key_check(keys, data)
    script.settings["sql-client.execution.result-mode"] = "table"
    if sink is not None and sink.connector == "upsert-kafka":
        if list(sink.key) != list(keys):
            raise UsageError("the upsert-kafka sink's key must be --key")
    elif keys:
        script.notes.append("the rows of a key: give an upsert-kafka sink keyed by it for a keyed table on Kafka")
    types = {c: columns[c] for c in data}
    return finish(script, f"SELECT {select_list(data)} FROM {ident(table)}", data, sink, types=types)


def keyed_findings(rows: Iterable[Row], kind_column: str, keys: Sequence[str], metadata: Sequence[str] = ()) -> str:
    """The inconsistencies cdc's keyed state finds in changelog rows, counted ('' when none)."""
    from cdc.core.kinds import KIND_BY_TEXT
    from cdc.core.state import Findings, Policy, new_state

    findings = Findings(Policy.ignore)
    state = new_state(keys, findings, metadata=frozenset(metadata))
    for row in rows:
        kind = KIND_BY_TEXT.get(str(row.get(kind_column, "")).strip())
        if kind is not None:
            state.apply(kind.value, {k: v for k, v in row.items() if k != kind_column})
    return ", ".join(f"{what} {n}" for what, n in findings.counts.most_common())


def dangling_retractions(rows: Iterable[Row], kind_column: str, keys: Sequence[str]) -> str:
    """``-U`` rows whose key's next change is not ``+U``/``+I``/``-D`` (or that end the rows),
    counted ('' when none): cdc takes such a row out of its keyed table, an upsert sink keeps it."""
    from cdc.core.kinds import KIND_BY_TEXT

    pending: dict[tuple[str, ...], int] = {}
    dangling = 0
    for row in rows:
        kind = KIND_BY_TEXT.get(str(row.get(kind_column, "")).strip())
        key = tuple(repr(row.get(k)) for k in keys)
        if kind is None:
            continue
        if key in pending:
            del pending[key]
            dangling += kind == UPDATE_BEFORE
        if kind == UPDATE_BEFORE:
            pending[key] = 1
    dangling += len(pending)
    return f"a -U that no +U follows {dangling}" if dangling else ""


def replay_sql(
    source: Source,
    columns: Mapping[str, str],
    keys: Sequence[str],
    *,
    input_mode: str = "changelog",
    emit: str = "retract",
    kind_column: str = "op",
    order_by: str | None = None,
    delete_when: tuple[str, str] | None = None,
    flink_version: str = DEFAULT_FLINK_VERSION,
    sink: Sink | None = None,
    empty_strings: bool = False,
    debezium: DebeziumInfo | None = None,
    sample: Sequence[Row] = (),
) -> str:
    """``cdc replay --key K``: a changelog through keyed state (Flink's ChangelogNormalize).

    - ``input_mode='upsert'``: ``source`` must be an ``upsert-kafka`` source keyed by ``keys``
      (every record upserts its key, a tombstone deletes it) — Flink then normalizes by key:
      ``+I`` for a new key, ``-U`` old / ``+U`` new, ``-D`` with the stored row, no-op updates
      dropped. ``delete_when`` (``--delete-when COL=VALUE``) has no SQL form: refused.
    - ``input_mode='changelog'``: changelog rows with a PRIMARY KEY and
      ``table.exec.source.cdc-events-duplicate`` (needs a Kafka ``debezium-json`` source in Flink:
      a FROM_CHANGELOG view cannot carry a primary key): refused for changelog-row files.
    - ``input_mode='append'`` with ``order_by``: the versioned view of Flink's versioned-table docs,
      ``ROW_NUMBER() OVER (PARTITION BY keys ORDER BY order_by DESC) = 1`` — keep-last by a time
      column; ``order_by`` must be a TIMESTAMP column for Flink's deduplication (else refused), or
      text in Flink's SQL timestamp format in every ``sample`` row (a JSON source: a CSV header
      line would fail the scan).
    - ``emit='upsert'``: rows without ``-U`` (an upsert sink's view); ``'retract'``: with ``-U``.
    """
    check_version(flink_version)
    script = Script(f"cdc replay --key {','.join(keys)} --input-mode {input_mode}", flink_version)
    if emit not in ("retract", "upsert"):
        raise UsageError(f"--emit {emit!r}: retract or upsert")
    if input_mode == "upsert":
        if delete_when is not None:
            raise UsageError(
                "--delete-when has no Flink SQL form: upsert-kafka deletes a key on a tombstone (a record "
                "without value)",
                hint="produce deletes as tombstones",
            )
        if source.connector != "upsert-kafka" or list(source.key) != list(keys):
            raise UsageError(
                "--input-mode upsert is Flink's upsert-kafka source (a file has no upsert connector in Flink)",
                hint="--sql-source upsert-kafka --topic T --bootstrap-servers H, the records keyed by --key",
            )
        _key_check(keys, columns)
        script.statements.append(create_table("cdc_input", columns, source))
        table, data = "cdc_input", list(columns)
    elif input_mode == "append":
        if order_by is None:
            raise UsageError("--input-mode append needs --order-by (Flink's keep-last-row deduplication)")
        kind = columns.get(order_by, "")
        if not kind.startswith(("TIMESTAMP", "STRING")):
            raise UsageError(
                f"--order-by {order_by}: Flink deduplicates on an event-time attribute (a TIMESTAMP with a "
                f"watermark); {order_by} is {kind or 'not a column'}",
                hint="order by a timestamp column",
            )
        _key_check(keys, columns)
        if kind == "STRING":
            # Flink reads the text into TIMESTAMP(3) (SQL format) while scanning the table — before any
            # view: a CSV header line, or any other text, fails the job.
            if source.fmt in ("csv", "tsv") and not source.kafka:
                raise UsageError(
                    f"--order-by {order_by} is read as TIMESTAMP(3) while Flink scans the file, and the csv "
                    "format reads the header line as a row: its text fails the job",
                    hint="convert the file to JSON lines first (cdc ... -f jsonl), then print the SQL for that file",
                )
            bad = next(
                (v for r in sample if (v := r.get(order_by)) is not None and not SQL_TIMESTAMP.fullmatch(str(v))), None
            )
            if bad is not None:
                raise UsageError(
                    f"--order-by {order_by}: Flink deduplicates on an event-time attribute, a TIMESTAMP(3) read from "
                    f"'yyyy-MM-dd HH:mm:ss[.SSS]' text; {order_by} holds {bad!r}",
                    hint="order by a column holding such timestamps",
                )
        # An event-time attribute: TIMESTAMP(3) (or TIMESTAMP_LTZ(3)) with a watermark, so that the
        # ROW_NUMBER view is Flink's keep-last-row deduplication on event time, not a Top-N.
        columns = dict(columns)
        columns[order_by] = "TIMESTAMP_LTZ(3)" if "LTZ" in kind else "TIMESTAMP(3)"
        if kind == "STRING":
            script.notes.append(f"{order_by} is read as TIMESTAMP(3): its values must be 'yyyy-MM-dd HH:mm:ss[.SSS]'")
        watermark = f"WATERMARK FOR {ident(order_by)} AS {ident(order_by)}"
        table = source_statements(script, source, columns, empty_strings, extra_lines=[watermark])
        data = list(columns)
        script.statements.append(
            "CREATE TEMPORARY VIEW `cdc_versioned` AS\n"
            f"SELECT {select_list(data)} FROM (\n"
            f"  SELECT *, ROW_NUMBER() OVER (PARTITION BY {select_list(keys)} ORDER BY {ident(order_by)} DESC) "
            "AS `cdc_rownum`\n"
            f"  FROM {ident(table)}\n) WHERE `cdc_rownum` = 1;"
        )
        table = "cdc_versioned"
    elif source.fmt in ENVELOPES:
        # An envelope table with a PRIMARY KEY and cdc-events-duplicate: ChangelogNormalize by key.
        _key_check(keys, columns)
        table = envelope_table(script, source, columns, debezium or DebeziumInfo(), key=keys)
        data = list(columns)
    else:
        raise UsageError(
            "replay of changelog rows by key is ChangelogNormalize over a source with a PRIMARY KEY: Flink gives "
            "no primary key to a FROM_CHANGELOG view",
            hint="read the changes as Debezium JSON from Kafka (debezium-decode --key), or upsert rows "
            "(--input-mode upsert, upsert-kafka)",
        )
    if emit == "upsert" and (sink is None or sink.connector != "upsert-kafka"):
        # The SQL client would show -U rows too: write the upsert log as cdc does, the kind first.
        if kind_column in data:
            raise UsageError(f"the kind column {kind_column!r} is also a data column; rename it with --kind-column")
        script.notes.append(f"--emit upsert: the changelog without -U, its kind in column {kind_column}")
        query = encoded(table, data, kind_column, (INSERT, UPDATE_AFTER, DELETE))
        types = {kind_column: "STRING", **columns}
        return finish(script, query, [kind_column, *data], sink, changelog=False, types=types)
    return finish(script, f"SELECT {select_list(data)} FROM {ident(table)}", data, sink, types=columns)


AGG_FUNCTIONS = ("COUNT", "SUM", "MIN", "MAX", "AVG", "FIRST_VALUE", "LAST_VALUE")


def agg_type(function: str, argument_type: str | None) -> str:
    """The type of an aggregate's result in Flink: COUNT BIGINT; SUM of a DECIMAL(p, s)
    DECIMAL(38, s), AVG of one DECIMAL(38, max(s, 6)); else SUM/AVG/MIN/MAX/FIRST_VALUE/LAST_VALUE
    keep the argument's type (AVG of integers is an integer in Flink)."""
    fn = function.upper()
    if fn == "COUNT" or argument_type is None:
        return "BIGINT"
    if argument_type.startswith("DECIMAL(") and fn in ("SUM", "AVG"):
        scale = int(argument_type[len("DECIMAL(") :].split(",")[1].strip(" )"))
        return f"DECIMAL(38, {max(scale, 6) if fn == 'AVG' else scale})"
    return argument_type


def aggregate_sql(
    source: Source,
    columns: Mapping[str, str],
    group_by: Sequence[str],
    aggregates: Sequence[tuple[str, str, str | None, bool]],
    *,
    input_mode: str = "append",
    kind_column: str = "op",
    keys: Sequence[str] = (),
    where: str | None = None,
    flink_version: str = DEFAULT_FLINK_VERSION,
    sink: Sink | None = None,
    empty_strings: bool = False,
    select: Callable[[str], str] | None = None,
    debezium: DebeziumInfo | None = None,
    emit: str = "retract",
    delete_when: tuple[str, str] | None = None,
) -> str:
    """``cdc aggregate``: a continuous ``GROUP BY`` (Flink's group aggregate and its update log).

    - ``aggregates``: ``(name, function, argument or None for COUNT(*), distinct)``, function one
      of ``AGG_FUNCTIONS``; ``group_by``: grouping columns (none: one global row); ``where``: a
      Flink SQL predicate over the input columns, used as written.
    - ``input_mode``: ``append`` (plain rows), ``changelog`` (changelog rows through
      FROM_CHANGELOG, or an envelope source), ``upsert`` (an ``upsert-kafka`` source keyed by
      ``keys``; ``delete_when`` has no form there: a delete is a tombstone).
    - ``select``: the query's own SQL writer instead (``AggregateQuery.select_sql``: the source
      table's name → ``SELECT … FROM it [WHERE …] GROUP BY …``); ``aggregates`` still name the
      output columns and give their types.
    - ``emit``: ``retract`` (the SQL client's changelog: ``+I -U +U -D``) or ``upsert`` (cdc's
      upsert log: the same without ``-U``, written as rows with the kind in ``kind_column``
      through TO_CHANGELOG, unless the sink is upsert-kafka, which takes the update log itself).
    """
    check_version(flink_version)
    if not aggregates:
        raise UsageError("aggregate needs at least one --agg")
    if emit not in ("retract", "upsert"):
        raise UsageError(f"--emit {emit!r}: retract or upsert")
    script = Script(f"cdc aggregate --group-by {','.join(group_by)}", flink_version)
    if input_mode == "append":
        table = source_statements(script, source, columns, empty_strings)
        data = list(columns)
    elif input_mode == "changelog":
        table, data = changelog_source(script, source, columns, kind_column, empty_strings, debezium)
    elif input_mode == "upsert":
        if delete_when is not None:
            raise UsageError(
                "--delete-when has no Flink SQL form: upsert-kafka deletes a key on a tombstone (a record "
                "without value)",
                hint="produce deletes as tombstones and print the SQL without --delete-when",
            )
        if source.connector != "upsert-kafka" or list(source.key) != list(keys) or not keys:
            raise UsageError(
                "--input-mode upsert is Flink's upsert-kafka source keyed by --key",
                hint="--sql-source upsert-kafka --topic T --bootstrap-servers H",
            )
        script.statements.append(create_table("cdc_input", columns, source))
        table, data = "cdc_input", list(columns)
    else:
        raise UsageError(f"--input-mode {input_mode!r}: changelog, append or upsert")
    _key_check(group_by, data)
    items = [ident(g) for g in group_by]
    out_cols = list(group_by)
    types = {g: columns[g] for g in group_by}
    for name, function, argument, distinct in aggregates:
        fn = function.upper()
        if fn not in AGG_FUNCTIONS:
            raise UsageError(f"aggregate function {function!r}: one of {', '.join(AGG_FUNCTIONS)}")
        if argument is None:
            if fn != "COUNT":
                raise UsageError(f"{fn}(*) is not an aggregate; only COUNT(*)")
            expr = "COUNT(*)"
        else:
            _key_check([argument], data)
            expr = f"{fn}({'DISTINCT ' if distinct else ''}{ident(argument)})"
        items.append(f"{expr} AS {ident(name)}")
        out_cols.append(name)
        types[name] = agg_type(fn, None if argument is None else columns[argument])
    query = f"SELECT {', '.join(items)}\nFROM {ident(table)}"
    if where:
        query += f"\nWHERE {where}"
    if group_by:
        query += f"\nGROUP BY {select_list(group_by)}"
    if select is not None:
        query = select(ident(table))
    if sink is not None and sink.connector == "upsert-kafka":
        if list(sink.key) != list(group_by) or not group_by:
            raise UsageError("the upsert-kafka sink's key must be the --group-by columns")
        return finish(script, query, out_cols, sink, types=types)
    if emit == "upsert":
        if kind_column in out_cols:
            raise UsageError(f"the kind column {kind_column!r} is also an output column; rename it with --kind-column")
        script.notes.append(f"--emit upsert: the update log without -U, its kind in column {kind_column}")
        script.statements.append(f"CREATE TEMPORARY VIEW `cdc_result` AS\n{query};")
        query = encoded("cdc_result", out_cols, kind_column, (INSERT, UPDATE_AFTER, DELETE))
        return finish(
            script, query, [kind_column, *out_cols], sink, changelog=False, types={kind_column: "STRING", **types}
        )
    return finish(script, query, out_cols, sink, types=types)


# ---------------------------------------------------------------------------------------------
# inspect

INSPECT_LEFT_OUT = (
    "cdc inspect also reports the mode, distinct and live keys, consistency findings and message "
    "counts as retract vs upsert: those need state per key and have no one-query form here"
)


def inspect_sql(
    source: Source,
    columns: Mapping[str, str],
    kind_column: str = "op",
    *,
    time_column: str | None = None,
    flink_version: str = DEFAULT_FLINK_VERSION,
    sink: Sink | None = None,
    empty_strings: bool = False,
    debezium: DebeziumInfo | None = None,
) -> str:
    """``cdc inspect``: the changes per kind (as cdc counts them: ``+I/-U/+U/-D``), and with
    ``time_column`` its range per kind. The input is read as a changelog (FROM_CHANGELOG, or an
    envelope format's table) and written back as codes by TO_CHANGELOG, so that an envelope input
    is counted the way cdc decodes it; the GROUP BY's result is an update log whose last values are
    the counts."""
    check_version(flink_version)
    script = Script("cdc inspect", flink_version, notes=[INSPECT_LEFT_OUT])
    table, data = changelog_source(script, source, columns, kind_column, empty_strings, debezium)
    if time_column is not None and time_column not in data:
        raise UsageError(f"--time-column {time_column!r} is not among the input's columns")
    script.statements.append(
        "CREATE TEMPORARY VIEW `cdc_kinds` AS\n" + encoded(table, data, kind_column, ALL_KINDS) + ";"
    )
    out = ["kind", "changes"]
    aggs = ["COUNT(*) AS `changes`"]
    types = {"kind": "STRING", "changes": "BIGINT"}
    if time_column is not None:
        aggs += [f"MIN({ident(time_column)}) AS `time_min`", f"MAX({ident(time_column)}) AS `time_max`"]
        out += ["time_min", "time_max"]
        types |= {"time_min": columns.get(time_column, "STRING"), "time_max": columns.get(time_column, "STRING")}
    query = f"SELECT {ident(kind_column)} AS `kind`, {', '.join(aggs)}\nFROM `cdc_kinds`\nGROUP BY {ident(kind_column)}"
    return finish(script, query, out, sink, types=types)
