"""Options shared by the commands, as ``Annotated`` aliases."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

IO_PANEL = "Input and output"
ERR_PANEL = "Errors and reporting"


class OnError(StrEnum):
    fail = "fail"
    skip = "skip"


Inputs = Annotated[
    list[str] | None,
    typer.Argument(help="Input files, read in order as one stream; none or '-' reads stdin.", show_default=False),
]
Output = Annotated[
    str,
    typer.Option("--output", "-o", help="Output file (written atomically); '-' is stdout.", rich_help_panel=IO_PANEL),
]
InputFormat = Annotated[
    str | None,
    typer.Option(
        "--input-format",
        "-i",
        help="jsonl|csv|tsv|parquet, and debezium for commands that read changelog rows; "
        "default: by suffix (stdin: JSONL, Parquet sniffed).",
        rich_help_panel=IO_PANEL,
        show_default=False,
    ),
]
OutputFormat = Annotated[
    str | None,
    typer.Option(
        "--output-format",
        "-f",
        help="jsonl|csv|tsv|parquet|print|table; default: by suffix, else JSONL.",
        rich_help_panel=IO_PANEL,
        show_default=False,
    ),
]
Columns = Annotated[
    str | None,
    typer.Option(
        "--columns",
        help="Comma list fixing the CSV/Parquet output columns (otherwise the first row does).",
        rich_help_panel=IO_PANEL,
        show_default=False,
    ),
]
KindColumn = Annotated[
    str,
    typer.Option(
        "--kind-column",
        help="Column of changelog rows that holds the row kind (+I -U +U -D).",
        rich_help_panel=IO_PANEL,
    ),
]
OnErrorOpt = Annotated[
    OnError,
    typer.Option(
        "--on-error",
        help="fail on the first bad record, or skip (count, and --rejects) it.",
        rich_help_panel=ERR_PANEL,
        case_sensitive=True,
    ),
]
RejectsOpt = Annotated[
    str | None,
    typer.Option(
        "--rejects",
        help="With --on-error skip: write each skipped record here as JSON lines.",
        rich_help_panel=ERR_PANEL,
        show_default=False,
    ),
]
StatsOpt = Annotated[
    bool, typer.Option("--stats", help="Print a one-line summary on stderr.", rich_help_panel=ERR_PANEL)
]
ProgressOpt = Annotated[
    bool | None,
    typer.Option(
        "--progress/--no-progress",
        help="Progress bar on stderr (default: when it is a terminal).",
        rich_help_panel=ERR_PANEL,
        show_default=False,
    ),
]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show a traceback with errors.", rich_help_panel=ERR_PANEL)
]
KeyOpt = Annotated[
    list[str] | None,
    typer.Option("--key", "-k", help="Key column(s): a comma list, or repeat the flag.", show_default=False),
]


def split_list(values: list[str] | str | None) -> tuple[str, ...]:
    """``['id,name', 'x']`` → ``('id', 'name', 'x')``."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    return tuple(part.strip() for text in values for part in text.split(",") if part.strip())
