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
    ),
    "iceberg": Preset(
        "_change_type",
        {"INSERT": INSERT, "UPDATE_BEFORE": UPDATE_BEFORE, "UPDATE_AFTER": UPDATE_AFTER, "DELETE": DELETE},
        "Iceberg changelog view (create_changelog_view)",
    ),
    "ducklake": Preset(
        "change_type",
        {"insert": INSERT, "update_preimage": UPDATE_BEFORE, "update_postimage": UPDATE_AFTER, "delete": DELETE},
        "DuckLake table_changes()",
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
