"""``cdc inspect``: changes per kind."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cdc.core.errors import UsageError
from cdc.core.kinds import ALL_KINDS
from cdc.flink.sql.changelog import changelog_source
from cdc.flink.sql.coltypes import DEFAULT_FLINK_VERSION, check_version, ident
from cdc.flink.sql.scan import DebeziumInfo
from cdc.flink.sql.tables import Script, Sink, Source, encoded, finish

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
    checks: Sequence[str] = (),
) -> str:
    """``cdc inspect``: the changes per kind (as cdc counts them: ``+I/-U/+U/-D``), and with
    ``time_column`` its range per kind; ``checks``: how the command's options shape the part of
    the report the script leaves out (``--key``: the keys checked), said in its header. The input is
    read as a changelog (FROM_CHANGELOG, or an
    envelope format's table) and written back as codes by TO_CHANGELOG, so that an envelope input
    is counted the way cdc decodes it; the GROUP BY's result is an update log whose last values are
    the counts."""
    check_version(flink_version)
    script = Script("cdc inspect", flink_version, notes=[INSPECT_LEFT_OUT, *checks])
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
