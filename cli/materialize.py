"""``cdc materialize``: a changelog applied to in-memory state → the table it describes."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cdc.cli import options as o
from cdc.cli.report import render_diff, report_findings, state_stats
from cdc.cli.running import call, stdout_is_terminal
from cdc.core.state import Policy
from cdc.engine import api

STATE_PANEL = "State"

OnInconsistency = Annotated[
    Policy,
    typer.Option(
        "--on-inconsistency",
        rich_help_panel=STATE_PANEL,
        help="Insert of an existing key, retraction of an absent row, a -U unlike the stored "
        "row, a negative count: fail, warn (count + first examples), or ignore.",
    ),
]
Strict = Annotated[bool, typer.Option("--strict", rich_help_panel=STATE_PANEL, help="Same as --on-inconsistency fail.")]
Dedup = Annotated[
    bool,
    typer.Option(
        "--dedup",
        rich_help_panel=STATE_PANEL,
        help="Drop an event equal to the previous event for its key (at-least-once duplicates).",
    ),
]
TimeColumn = Annotated[
    str | None,
    typer.Option(
        "--time-column",
        "-t",
        rich_help_panel=STATE_PANEL,
        show_default=False,
        help="Column holding each change's time (for --as-of).",
    ),
]
AsOf = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        rich_help_panel=STATE_PANEL,
        show_default=False,
        help="The versioned table at this time: per key, the latest version with time ≤ VALUE "
        "(numbers, ISO date-times, else text).",
    ),
]
Sort = Annotated[bool, typer.Option("--sort", help="Sort rows by key (default: first-insertion order).")]
Expect = Annotated[
    str | None,
    typer.Option(
        "--expect",
        show_default=False,
        help="Compare with an expected table (any format): exit 0 equal, 1 different.",
    ),
]


MemoryLimit = Annotated[
    str | None,
    typer.Option(
        "--memory-limit",
        show_default=False,
        rich_help_panel=STATE_PANEL,
        help="Memory the table may take (512MB, 8GB, 40%); past it the changes spill to --temp-dir, "
        "partitioned by key, and come back in the same order (stdin is read ahead to tell only when this "
        "is given). \\[default: 50% of RAM]",
    ),
]
TempDir = Annotated[
    str | None,
    typer.Option(
        "--temp-dir",
        show_default=False,
        rich_help_panel=STATE_PANEL,
        help="Where a spill goes (removed at the end). \\[default: the system's temporary folder]",
    ),
]


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL, o.CSV_IN, o.TABLES, o.AVRO_IN)
def command(
    common: o.Common,
    key: o.KeyOpt = None,
    on_inconsistency: OnInconsistency = Policy.warn,
    strict: Strict = False,
    dedup: Dedup = False,
    as_of: AsOf = None,
    time_column: TimeColumn = None,
    sort: Sort = False,
    expect: Expect = None,
    commit_columns: o.CommitColumnsOpt = None,
    ignore_columns: o.IgnoreColumnsOpt = None,
    kind_column: o.KindColumn = "op",
    memory_limit: MemoryLimit = None,
    temp_dir: TempDir = None,
) -> None:
    """Apply a changelog to in-memory state and write the table it describes (no kind column).

    With --key the state is an upsert table (+I/+U put, -U/-D remove); without, a multiset where a
    retraction removes one equal row. Rows come out in first-insertion order of their key.

    **Examples**

    ```
    cdc debezium-decode samples/mysql-inventory.jsonl | cdc materialize --key id
    cdc materialize samples/product-prices.jsonl --key product_id \\
      --as-of 13:00:00 --time-column update_time
    cdc debezium-decode samples/mysql-inventory.jsonl \\
      | cdc materialize --key id --expect samples/inventory-expected.csv
    ```
    """
    shown: dict[str, Any] = {}
    if expect is not None and common.output == "-" and common.output_format is None:
        shown["output"] = None  # stdout shows the diff; the table is written only where -o or -f say
    elif common.output_format is None and common.output == "-" and stdout_is_terminal():
        common.output_format = "table"
    result = call(
        common,
        api.materialize,
        "materialize",
        summary=lambda r: state_stats(r.detail, r.read, r.counts.written),
        key=key,
        on_inconsistency=on_inconsistency,
        strict=strict,
        dedup=dedup,
        as_of=as_of,
        time_column=time_column,
        sort=sort,
        expect=expect,
        commit_columns=commit_columns,
        kind_column=kind_column,
        ignore_columns=ignore_columns,
        memory_limit=memory_limit,
        temp_dir=temp_dir,
        **shown,
    )
    if result.sql is not None:
        return
    report_findings("materialize", result.findings)
    if result.differences is not None:
        render_diff(result.differences, str(expect))
        if not result.ok:
            raise typer.Exit(1)
