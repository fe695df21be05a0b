"""``cdc decode`` / ``debezium-decode``: an envelope format's table, selected."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from cdc.core.errors import UsageError
from cdc.flink.sql.changelog import envelope_table
from cdc.flink.sql.coltypes import DEFAULT_FLINK_VERSION, check_version, ident
from cdc.flink.sql.scan import ENVELOPE_METADATA, DebeziumInfo
from cdc.flink.sql.tables import ENVELOPES, Script, Sink, Source, finish, select_list


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
    table = envelope_table(
        script, source, columns, info, metadata, skip, key, database_include, table_include, keep_noop=bool(key)
    )
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
