"""``cdc aggregate``: a continuous GROUP BY over changes, emitting Flink's update log."""

from __future__ import annotations

from typing import Annotated

import typer

from cdc.cli import options as o
from cdc.cli.report import report_findings
from cdc.cli.running import call
from cdc.core.state import Policy
from cdc.engine import api
from cdc.engine.job import Result

PANEL = "Query"


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL, o.CSV_IN, o.TABLES, o.AVRO_IN)
def command(
    common: o.Common,
    group_by: Annotated[
        list[str] | None,
        typer.Option(
            "--group-by",
            "-g",
            rich_help_panel=PANEL,
            show_default=False,
            help="Group-by column(s): a comma list, or repeat the flag. None: one global row.",
        ),
    ] = None,
    agg: Annotated[
        list[str] | None,
        typer.Option(
            "--agg",
            "-a",
            rich_help_panel=PANEL,
            show_default=False,
            help="NAME=FUNC(ARG), repeatable, in output order: COUNT(*), COUNT(col), COUNT(DISTINCT col), "
            "SUM, MIN, MAX, AVG, FIRST_VALUE, LAST_VALUE.",
        ),
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            rich_help_panel=PANEL,
            show_default=False,
            help="Keep input rows where COL OP VALUE (= != <> < <= > >=, IS [NOT] NULL), joined by AND; "
            "repeated, the conditions are joined by AND too.",
        ),
    ] = None,
    emit: Annotated[
        o.Emit,
        typer.Option("--emit", rich_help_panel=PANEL, help="retract: -U before each +U; upsert: no -U."),
    ] = o.Emit.retract,
    input_mode: Annotated[
        o.InputMode,
        typer.Option(
            "--input-mode",
            rich_help_panel=PANEL,
            help="changelog: rows with a kind column; append: each plain row is an insert; "
            "upsert: each plain row upserts its --key.",
        ),
    ] = o.InputMode.changelog,
    key: o.KeyOpt = None,
    delete_when: Annotated[
        str | None,
        typer.Option(
            "--delete-when",
            rich_help_panel=PANEL,
            show_default=False,
            help="Upsert mode: a row with COLUMN=VALUE deletes its key, e.g. __deleted=true.",
        ),
    ] = None,
    on_inconsistency: Annotated[
        Policy,
        typer.Option(
            "--on-inconsistency",
            rich_help_panel=PANEL,
            help="A retraction of a row the group never counted: fail, warn (count + first examples), or ignore.",
        ),
    ] = Policy.warn,
    strict: Annotated[
        bool, typer.Option("--strict", rich_help_panel=PANEL, help="Same as --on-inconsistency fail.")
    ] = False,
    kind_column: o.KindColumn = "op",
) -> None:
    """Run a continuous GROUP BY over changes and write the update log Flink's group aggregate
    emits: +I for a new group, -U/+U when its result changes (or +U alone with --emit upsert),
    -D when its last row is retracted, nothing when the result stays the same.

    **Examples**

    ```
    cdc aggregate samples/clicks.jsonl --input-mode append \\
      -g user -a 'cnt=COUNT(url)'
    cdc aggregate samples/clicks.jsonl --input-mode append \\
      -g user -a 'cnt=COUNT(url)' --emit upsert -f print
    cdc aggregate samples/clicks-continued.jsonl --input-mode append \\
      -g user -a 'cnt=COUNT(url)' | cdc aggregate -g cnt -a 'freq=COUNT(*)'
    ```
    """
    result = call(
        common,
        api.aggregate,
        "aggregate",
        summary=_summary,
        table_kinds=kind_column,
        group_by=group_by,
        agg=agg,
        where=where,
        emit=emit,
        input_mode=input_mode,
        key=key,
        delete_when=delete_when,
        on_inconsistency=on_inconsistency,
        strict=strict,
        kind_column=kind_column,
    )
    if result.sql is None:
        report_findings("aggregate", result.findings)


def _summary(result: Result) -> str:
    summary: str = result.detail.counts.summary()
    return summary
