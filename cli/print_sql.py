"""``--print-sql``: read the first rows to infer columns, print the Flink SQL, and stop."""

from __future__ import annotations

import sys
from collections.abc import Callable
from itertools import islice
from typing import Annotated, Any

import typer

from cdc.core.flinksql import Source, infer_columns
from cdc.formats.registry import INPUT_FORMATS, input_format, open_inputs
from cdc.formats.streams import STDIO

SAMPLE_ROWS = 100

PrintSql = Annotated[
    bool,
    typer.Option(
        "--print-sql",
        help="Print the Flink SQL that does the same job on a cluster, and exit.",
        rich_help_panel="Beyond one machine",
    ),
]


def sample(
    paths: list[str],
    fmt: str | None,
    readers: dict[str, Callable[..., Any]] | None = None,
    choices: Any = INPUT_FORMATS,
) -> list[dict[str, Any]]:
    # Lenient: a bad record among the first rows says nothing about the columns.
    reader = open_inputs(paths[:1], fmt, lambda err: None, readers=readers, choices=choices)
    return list(islice(iter(reader), SAMPLE_ROWS))


def source_of(paths: list[str], explicit: str | None, choices: Any = INPUT_FORMATS) -> Source:
    path = paths[0] if paths else STDIO
    fmt = input_format(path, explicit, choices) or "jsonl"
    return Source(path, fmt)


def columns_of(rows: list[dict[str, Any]], source: Source) -> dict[str, str]:
    return infer_columns(rows, text_only=source.fmt in ("csv", "tsv"))


def emit(sql: str) -> None:
    sys.stdout.write(sql)
    sys.stdout.flush()
