"""``cdc to-changelog``: changelog rows → append-only rows with an op column (Flink TO_CHANGELOG)."""

from __future__ import annotations

from typing import Annotated

import typer

from cdc.cli import options as o
from cdc.cli.from_changelog import MAPPING_PANEL, Drop, Preset
from cdc.cli.running import call
from cdc.engine import api

OpName = Annotated[
    str | None,
    typer.Option(
        "--op",
        help="Name of the output op column, written first. \\[default: op, or the preset's]",
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
        help="'KINDS=CODE' (repeatable; kinds a comma list) or one JSON object. Only mapped kinds are "
        "written; the rest are dropped. \\[default: INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]",
    ),
]


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL, o.CSV_IN, o.TABLES, o.AVRO_IN)
def command(
    common: o.Common,
    op: OpName = None,
    op_mapping: OpMapping = None,
    preset: Preset = None,
    drop: Drop = None,
    kind_column: o.KindColumn = "op",
) -> None:
    """Turn changelog rows into append-only rows with an op column (Flink TO_CHANGELOG).

    Output is \\[op, all input columns]. With --op-mapping only the mapped kinds are written, so a
    mapping is also a filter: the deletion-flag pattern below drops -U rows.

    **Examples**

    ```
    cdc to-changelog samples/product-prices.jsonl --op deleted \\
      -m 'INSERT, UPDATE_AFTER=false' -m 'DELETE=true'
    cdc from-changelog samples/orders-ops.csv \\
      | cdc to-changelog --preset delta-cdf -o /tmp/cdf.parquet
    cdc to-changelog -i debezium samples/mysql-inventory.jsonl -f csv
    ```
    """
    call(
        common,
        api.to_changelog,
        "to-changelog",
        op=op,
        op_mapping=op_mapping,
        preset=preset,
        drop=drop,
        kind_column=kind_column,
    )
