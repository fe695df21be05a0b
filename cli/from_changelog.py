"""``cdc from-changelog``: op-coded append-only rows → changelog rows (Flink FROM_CHANGELOG)."""

from __future__ import annotations

from typing import Annotated

import typer

from cdc.cli import options as o
from cdc.cli.running import call
from cdc.core.presets import PRESETS
from cdc.engine import api

MAPPING_PANEL = "Op codes"

OpColumn = Annotated[
    str | None,
    typer.Option(
        "--op",
        help="The op-code column; it must exist and is removed. \\[default: op, or the preset's]",
        rich_help_panel=MAPPING_PANEL,
        show_default=False,
    ),
]
OpMapping = Annotated[
    list[str] | None,
    typer.Option(
        "--op-mapping",
        "-m",
        rich_help_panel=MAPPING_PANEL,
        show_default=False,
        help="'CODES=KIND' (repeatable; codes a comma list) or one JSON object. "
        "\\[default: INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]",
    ),
]
Preset = Annotated[
    str | None,
    typer.Option(
        "--preset",
        rich_help_panel=MAPPING_PANEL,
        show_default=False,
        help="Named vocabulary: " + ", ".join(PRESETS) + ". Sets --op and --op-mapping; flags override.",
    ),
]
Drop = Annotated[
    list[str] | None,
    typer.Option(
        "--drop",
        rich_help_panel=MAPPING_PANEL,
        show_default=False,
        help="Drop rows of this kind (repeatable), e.g. --drop UPDATE_BEFORE.",
    ),
]


CommitColumns = Annotated[
    str | None,
    typer.Option(
        "--commit-columns",
        rich_help_panel=MAPPING_PANEL,
        show_default=False,
        help="A change feed's commit columns (comma list; the first names the commit): each commit's "
        "pre- and post-images are paired whatever their order. \\[default: the preset's; '' for none]",
    ),
]
DropCommitColumns = Annotated[
    bool,
    typer.Option(
        "--drop-commit-columns",
        rich_help_panel=MAPPING_PANEL,
        help="Leave the commit columns out of the rows (by default they stay: a --time-column for --as-of).",
    ),
]


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL, o.CSV_IN)
def command(
    common: o.Common,
    op: OpColumn = None,
    op_mapping: OpMapping = None,
    preset: Preset = None,
    key: o.KeyOpt = None,
    drop: Drop = None,
    commit_columns: CommitColumns = None,
    drop_commit_columns: DropCommitColumns = False,
    kind_column: o.KindColumn = "op",
) -> None:
    """Turn append-only rows with an op-code column into changelog rows (Flink FROM_CHANGELOG).

    Each row's code is mapped to a row kind; the op column is removed and the kind column
    (+I -U +U -D) is written first. NULL and unknown codes fail with FILE:LINE, or are skipped.

    **Examples**

    ```
    cdc from-changelog samples/orders-ops.csv -f print
    cdc from-changelog samples/flat-cdc.jsonl --preset debezium --key id
    cdc from-changelog samples/delta-cdf-orders.csv --preset delta-cdf \\
      | cdc materialize --key order_id
    cdc from-changelog samples/flat-cdc.jsonl --op __op \\
      -m 'c, r=INSERT' -m u=UPDATE_AFTER -m d=DELETE --key id
    ```
    """
    call(
        common,
        api.from_changelog,
        "from-changelog",
        table_kinds=kind_column,
        op=op,
        op_mapping=op_mapping,
        preset=preset,
        key=key,
        drop=drop,
        commit_columns=commit_columns,
        drop_commit_columns=drop_commit_columns,
        kind_column=kind_column,
    )
