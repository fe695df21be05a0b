"""``cdc to-changelog``: TO_CHANGELOG over the changelog."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cdc.core.kinds import ALL_KINDS, RowKind
from cdc.flink.sql.changelog import changelog_source
from cdc.flink.sql.coltypes import DEFAULT_FLINK_VERSION, check_version, ident
from cdc.flink.sql.scan import DebeziumInfo
from cdc.flink.sql.tables import Script, Sink, Source, finish, map_literal, select_list


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
