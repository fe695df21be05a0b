"""``cdc from-changelog``: FROM_CHANGELOG over the input table."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from cdc.core.errors import UsageError
from cdc.core.kinds import ALL_KINDS, UPDATE_AFTER, UPDATE_BEFORE, RowKind
from cdc.flink.sql.coltypes import DEFAULT_FLINK_VERSION, check_version, ident, literal
from cdc.flink.sql.tables import (
    Script,
    Sink,
    Source,
    finish,
    grouped_codes,
    map_literal,
    select_list,
    source_statements,
)

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
    kind_column: str = "op",
) -> str:
    """``cdc from-changelog``: FROM_CHANGELOG over the input table.

    - ``columns``: input column → Flink type (the op column among them); ``op_column``;
      ``mapping``: code → kind; ``keys``: ``--key``; ``skip``: ``--on-error skip``;
      ``drop``: ``--drop`` kinds; ``empty_strings``: the sampled CSV had quoted empty fields.
    - Flink 2.3: no PARTITION BY (an upsert mapping with ``keys`` is written as rows with their kind
      in ``kind_column``, without keys refused), no ``error_handling``
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
    if upsert and not keys:
        raise UsageError(
            "an op mapping that produces UPDATE_AFTER without UPDATE_BEFORE describes an upsert changelog and "
            "requires a key",
            hint="give the upsert key with --key COLUMN, or map a code to UPDATE_BEFORE for retract semantics",
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
    out_cols = [c for c in columns if c != op_column and c not in drop_columns]
    if encodes_upsert(mapping, keys, flink_version):
        # Flink 2.3 has no keyed FROM_CHANGELOG, and a table with +U but no -U needs a primary key: the
        # upsert changelog is written as cdc writes it, rows with their kind (as --emit upsert does).
        if kind_column in out_cols:
            raise UsageError(f"the kind column {kind_column!r} is also a data column; rename it with --kind-column")
        cases = " ".join(f"WHEN {literal(code)} THEN {literal(kind.value)}" for code, kind in mapping.items())
        fail = f"CAST(CAST(CONCAT('invalid op code ', COALESCE({op}, 'NULL')) AS INT) AS STRING)"
        script.notes.append(
            f"an upsert changelog (--key {','.join(keys)}): Flink 2.3 has no keyed FROM_CHANGELOG, so its rows are "
            f"written with their kind in column {kind_column}; an unmapped code fails the job, as it fails cdc"
        )
        query = f"SELECT CASE {op} {cases} ELSE {fail} END AS {ident(kind_column)}, {select_list(out_cols)}\n"
        query += f"FROM {ident(table)}"
        types = {kind_column: "STRING", **columns}
        return finish(script, query, [kind_column, *out_cols], sink, changelog=False, types=types)
    partition = f" PARTITION BY {select_list(keys)}" if keys and flink_version != "2.3" else ""
    args = [f"  input => TABLE {ident(table)}{partition}"]
    if op_column != "op":
        args.append(f"  op => DESCRIPTOR({op})")
    default = {k.name: k for k in ALL_KINDS}
    if dict(mapping) != default:
        args.append(f"  op_mapping => {map_literal(grouped_codes(mapping))}")
    query = f"SELECT {select_list(out_cols)} FROM FROM_CHANGELOG(\n" + ",\n".join(args) + "\n)"
    return finish(script, query, out_cols, sink, types=columns)


def encodes_upsert(mapping: Mapping[str, RowKind], keys: Sequence[str], flink_version: str) -> bool:
    """The script writes an upsert changelog as rows with their kind (Flink 2.3, an upsert mapping with a key)."""
    upsert = UPDATE_AFTER in mapping.values() and UPDATE_BEFORE not in mapping.values()
    return upsert and bool(keys) and flink_version == "2.3"
