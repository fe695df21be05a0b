"""What the Flink script does of each command: a closed world, as ``engine/commands.py`` is for
the engine's paths.

``SCRIPTS`` holds one ``Script`` per spec type (the command): the builder of its script
(``flink.print_sql``), the spec fields the builder writes into the script, the job options it
honours, and what ``--on-flink`` honours besides (the engine writes the cluster's rows as a local
run writes its own: ``--sort``, ``--columns``). A job that sets a field or an option its entry
does not declare is refused for ``--print-sql`` and ``--on-flink`` (``engine/scripts.py``) with the
option's name and the reason (``WHY_NOT``, else ``NOT_WRITTEN``), before its input is read: a
field added to a spec is refused until its builder writes it and says so here.
``tests/test_closed_world.py`` walks every field of every spec through this table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc.core.specs import (
    AggregateSpec,
    DecodeSpec,
    EncodeSpec,
    FromChangelogSpec,
    InspectSpec,
    MaterializeSpec,
    ReplaySpec,
    ToChangelogSpec,
)
from cdc.flink import print_sql

# Where the rows go, which the script has no say in: a printed script writes none, and
# ``--on-flink`` hands the cluster's rows to the engine's writer (a caller's sink, a schema line).
WRITES = frozenset({"sink", "schema_line"})
# What the engine's writer does to the cluster's rows (``--on-flink`` without a ``--sql-sink``).
CLUSTER = frozenset({"columns"})


@dataclass(frozen=True)
class Script:
    """One command's script: its builder, the spec fields it writes, the job options it honours,
    and the fields and options ``--on-flink`` honours besides."""

    build: Callable[[print_sql.Common, Any], print_sql.FlinkScript]
    fields: frozenset[str]
    job: frozenset[str] = WRITES
    cluster: frozenset[str] = CLUSTER


def script(
    build: Callable[[print_sql.Common, Any], print_sql.FlinkScript],
    *fields: str,
    job: tuple[str, ...] = (),
    cluster: tuple[str, ...] = (),
) -> Script:
    return Script(build, frozenset(fields), WRITES | set(job), CLUSTER | set(cluster))


SKIPS = ("on_error",)  # --on-error skip: the script's format drops what Flink cannot read (ignore-parse-errors)

SCRIPTS: dict[type, Script] = {
    FromChangelogSpec: script(
        print_sql.print_from_changelog_sql, "op_column", "mapping", "kind_column", "keys", "drop", job=SKIPS
    ),
    ToChangelogSpec: script(print_sql.print_to_changelog_sql, "mapping", "op_column", "kind_column", "drop"),
    DecodeSpec: script(
        print_sql.print_decode_sql,
        "envelope",
        "kind_column",
        "schema_include",
        "raw_values",
        "metadata",
        "on_truncate",
        "key",
        "database_include",
        "table_include",
        "bootstrap",
        "policy",
        job=(*SKIPS, "avro"),  # Debezium Avro: Flink's debezium-avro-confluent (print_sql._avro_decode_sql)
    ),
    EncodeSpec: script(print_sql.print_encode_sql, "kind_column", "split_updates", "key"),
    MaterializeSpec: script(
        print_sql.print_materialize_sql, "kind_column", "key", "policy", "dedup", "commit_columns", cluster=("sort",)
    ),
    # inspect's script is the part of the report one query computes (its header says what it leaves
    # out, and how --key and the identity's columns shape that part)
    InspectSpec: script(
        print_sql.print_inspect_sql, "kind_column", "time_column", "key", "commit_columns", "ignore_columns"
    ),
    ReplaySpec: script(
        print_sql.print_replay_sql,
        "key",
        "emit",
        "keep_noop",
        "order_by",
        "input_mode",
        "delete_when",
        "kind_column",
    ),
    AggregateSpec: script(
        print_sql.print_aggregate_sql, "query", "input_mode", "key", "delete_when", "kind_column", "policy"
    ),
}


@dataclass(frozen=True)
class Refused:
    """Why the script does not do a field or an option (said after its option's name; ``{value}``
    in it: the job's value of it)."""

    why: str
    hint: str | None = None


NOT_WRITTEN = Refused(
    "is not written into the Flink script: the job on a cluster would compute something else than cdc's run",
    hint="run the command without --print-sql / --on-flink, or without that option",
)

# A field's or a job option's reason, by name (a spec field of that name on any command), or by
# (spec type, name) where one command's differs.
WHY_NOT: dict[Any, Refused] = {
    (FromChangelogSpec, "commit_columns"): Refused(
        "(commit columns {value}): cdc pairs each commit's pre- and post-images whatever their order in the file; "
        "Flink's FROM_CHANGELOG is stateless and keeps the file's order",
        hint="if each commit's pre-images already precede their post-images, the same job without pairing is "
        "the mapping without the preset (--op COLUMN -m CODES=KIND …)",
    ),
    (FromChangelogSpec, "pair_key"): Refused(
        "pairs a commit's pre- and post-images by the row id; Flink's FROM_CHANGELOG is stateless and keeps the "
        "file's order"
    ),
    (FromChangelogSpec, "drop_commit_columns"): Refused(
        "leaves out a change feed's commit columns, whose commits the script does not pair"
    ),
    "tables": Refused(
        "picks tables of change events on the way in; the script's source reads every event of the file",
        hint="decode the events with cdc decode --table-include … --print-sql, which Flink's formats filter",
    ),
    "ignore_columns": Refused(
        "leaves columns out of a row's identity; Flink matches a retraction against the whole row"
    ),
    "unavailable_placeholder": Refused(
        "makes cdc fill such a value from the last row of the key; Flink's debezium-json passes the placeholder "
        "on as data",
        hint="set REPLICA IDENTITY FULL on the table so Debezium sends the value",
    ),
    "container": Refused(
        "reads a dump of a Kafka topic; Flink reads the topic's own records",
        hint="read the topic itself: --sql-source kafka --topic T --bootstrap-servers H",
    ),
    (EncodeSpec, "time_column"): Refused("sets each event's ts_ms; Flink's debezium-json sink writes no ts_ms"),
    (EncodeSpec, "source"): Refused("writes each event's source block; Flink's debezium-json sink writes none"),
    "as_of": Refused(
        "has no Flink SQL form here",
        hint="print the SQL without it; a temporal join (FOR SYSTEM_TIME AS OF) is the cluster's --as-of",
    ),
    (MaterializeSpec, "time_column"): Refused("goes with --as-of, which has no Flink SQL form here"),
    "sort": Refused(
        "orders the table by key; a streaming query's result has no order",
        hint="--on-flink sorts the cluster's rows as cdc sorts its own",
    ),
    "since": Refused(
        "has no Flink SQL form here: a window of the changes by a column's value is a batch question, not one "
        "continuous query"
    ),
    "until": Refused(
        "has no Flink SQL form here: a window of the changes by a column's value is a batch question, not one "
        "continuous query"
    ),
    "net": Refused("goes with --since/--until, which have no Flink SQL form here"),
    (ReplaySpec, "time_column"): Refused("goes with --since/--until, which have no Flink SQL form here"),
    # job options
    "on_error": Refused(
        "skips what cdc cannot read; this command's script has no form that skips (its job fails there)",
        hint="print the SQL without --on-error skip",
    ),
    "rejects": Refused("keeps the records cdc skips; on a cluster Flink's format skips them unseen"),
    "columns": Refused(
        "chooses the output's columns; the script's query writes every column",
        hint="--on-flink writes the cluster's rows with --columns, as cdc writes its own",
    ),
    "csv": Refused("are not written into the script's CSV format yet"),
    "stream_schema": Refused(
        "is cdc's carried schema (its first line); Flink's json format reads that line as a row",
        hint="write the input without it (CDC_SCHEMA_LINE=never)",
    ),
    "arrays": Refused("is one JSON array; Flink's json format reads JSON lines", hint="write it as JSON lines first"),
    "rows": Refused("are rows given in the call; the script reads a file (or a Kafka topic) by name"),
    "avro": Refused(
        "reads Debezium events in Avro; this command's script reads debezium-json",
        hint="decode them first (cdc decode … -o FILE), or print cdc decode's script: Flink's debezium-avro-confluent",
    ),
    (EncodeSpec, "avro"): Refused("writes Avro; the script's sink writes debezium-json"),
}

# The option that sets a field or a job option, where it is not ``--`` and its name with dashes.
OPTIONS: dict[Any, str] = {
    (FromChangelogSpec, "op_column"): "--op",
    "mapping": "--op-mapping",
    "keys": "--key",
    "pair_key": "--preset",
    (FromChangelogSpec, "commit_columns"): "--commit-columns/--preset",
    "policy": "--on-inconsistency",
    "tables": "--table-include/--database-include",
    "query": "--group-by/--agg",
    "container": "--input-format kcat|kafka-console",
    "on_error": "--on-error skip",
    "csv": "--delimiter/--quote-char/--no-header/--header-names",
    "stream_schema": "the input's schema line",
    "arrays": "the input",
    "rows": "the source",
    "avro": "an Avro input",
    (EncodeSpec, "avro"): "--format avro|avro-confluent",
}


def lookup(table: Mapping[Any, Any], spec_type: type, name: str) -> Any:
    """The entry for ``name`` on ``spec_type``'s command: by (type, name), else by name."""
    for cls in spec_type.__mro__:
        if (cls, name) in table:
            return table[(cls, name)]
    return table.get(name)


def option_of(spec_type: type, name: str) -> str:
    """The option that sets field (or job option) ``name`` of a ``spec_type`` job: ``--new-flag``."""
    found: str | None = lookup(OPTIONS, spec_type, name)
    return found if found is not None else "--" + name.replace("_", "-")


def why_not(spec_type: type, name: str) -> Refused:
    found: Refused | None = lookup(WHY_NOT, spec_type, name)
    return found if found is not None else NOT_WRITTEN
