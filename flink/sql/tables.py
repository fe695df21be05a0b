"""The shared DDL: sources, sinks, the script and its last statement."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cdc.core.errors import UsageError
from cdc.core.kinds import ALL_KINDS, RowKind
from cdc.flink.sql.coltypes import DEFAULT_FLINK_VERSION, STREAMING, ident, literal

FORMATS = {
    "jsonl": "json",
    "csv": "csv",
    "tsv": "csv",
    "parquet": "parquet",
    "debezium": "debezium-json",
    "debezium-avro": "debezium-avro-confluent",
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
    registry: str | None = None  # debezium-avro: the schema registry's URL

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
        if self.fmt == "debezium-avro":
            if self.connector != "kafka" or not self.registry:
                raise UsageError("debezium-avro-confluent reads a Kafka topic with a schema registry")
            options["debezium-avro-confluent.url"] = self.registry
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
