"""``cdc debezium-encode --split-updates``: a debezium-json sink."""

from __future__ import annotations

from collections.abc import Mapping

from cdc.core.errors import UsageError
from cdc.flink.sql.changelog import changelog_source
from cdc.flink.sql.coltypes import DEFAULT_FLINK_VERSION, check_version, ident
from cdc.flink.sql.scan import DebeziumInfo
from cdc.flink.sql.tables import Script, Sink, Source, select_list, with_clause


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
