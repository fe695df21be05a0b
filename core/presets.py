"""Named op-code vocabularies users meet (notes/peers.md §1.1), as from-changelog mappings."""

from __future__ import annotations

from dataclasses import dataclass, field

from cdc.core.errors import UsageError
from cdc.core.kinds import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, RowKind


@dataclass(frozen=True)
class Preset:
    op_column: str
    mapping: dict[str, RowKind] = field(default_factory=dict)
    description: str = ""
    # A change feed's commit columns (metadata, never part of a row's identity); the first one
    # names the commit. Non-empty: the feed's images are paired per commit (core.commits).
    commit_columns: tuple[str, ...] = ()
    # Columns the feed carries that identify a row across its versions (DuckLake's rowid): they
    # pair a commit's pre- and post-images when no --key is given.
    pair_key: tuple[str, ...] = ()


PRESETS: dict[str, Preset] = {
    "debezium": Preset(
        "__op",
        {"c": INSERT, "r": INSERT, "u": UPDATE_AFTER, "d": DELETE},
        "flattened Debezium rows (ExtractNewRecordState, add.fields=op): __op c,r / u / d; upsert",
    ),
    "delta-cdf": Preset(
        "_change_type",
        {"insert": INSERT, "update_preimage": UPDATE_BEFORE, "update_postimage": UPDATE_AFTER, "delete": DELETE},
        "Delta Lake change data feed",
        commit_columns=("_commit_version", "_commit_timestamp"),
    ),
    "iceberg": Preset(
        "_change_type",
        {"INSERT": INSERT, "UPDATE_BEFORE": UPDATE_BEFORE, "UPDATE_AFTER": UPDATE_AFTER, "DELETE": DELETE},
        "Iceberg changelog view (create_changelog_view)",
        commit_columns=("_change_ordinal", "_commit_snapshot_id"),
    ),
    "ducklake": Preset(
        "change_type",
        {"insert": INSERT, "update_preimage": UPDATE_BEFORE, "update_postimage": UPDATE_AFTER, "delete": DELETE},
        "DuckLake table_changes()",
        commit_columns=("snapshot_id",),
        pair_key=("rowid",),
    ),
    "risingwave": Preset(
        "op",
        {"Insert": INSERT, "UpdateDelete": UPDATE_BEFORE, "UpdateInsert": UPDATE_AFTER, "Delete": DELETE},
        "RisingWave subscription cursor",
    ),
    "maxwell": Preset(
        "type",
        {"insert": INSERT, "update": UPDATE_AFTER, "delete": DELETE},
        "Maxwell rows (type insert/update/delete); upsert",
    ),
    "canal": Preset(
        "type",
        {"INSERT": INSERT, "UPDATE": UPDATE_AFTER, "DELETE": DELETE},
        "Canal rows (type INSERT/UPDATE/DELETE); upsert",
    ),
    "ogg": Preset(
        "op_type",
        {"I": INSERT, "U": UPDATE_AFTER, "D": DELETE},
        "Oracle GoldenGate rows (op_type I/U/D); upsert",
    ),
    "flink-short": Preset(
        "op",
        {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE},
        "Flink's short row kinds +I/-U/+U/-D",
    ),
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise UsageError(f"--preset: unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None


# Every preset's commit columns: in a changelog they are metadata (materialize, inspect).
COMMIT_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(c for p in PRESETS.values() for c in p.commit_columns))
