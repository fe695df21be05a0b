"""The ``cdc`` application: one Typer app, one module per command."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from cdc import __version__
from cdc.cli import debezium_decode, debezium_encode, from_changelog, inspect_cmd, materialize, replay, to_changelog

app = typer.Typer(
    name="cdc",
    help="Convert and check changelog files the way Apache Flink SQL reads changelog streams.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cdc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool | None, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = None,
) -> None:
    """Convert and check changelog files the way Apache Flink SQL reads changelog streams."""


app.command("from-changelog", short_help="Op-coded append-only rows → changelog rows (Flink FROM_CHANGELOG).")(
    from_changelog.command
)
app.command("to-changelog", short_help="Changelog rows → append-only rows with an op column (Flink TO_CHANGELOG).")(
    to_changelog.command
)
app.command("debezium-decode", short_help="Debezium JSON change events → changelog rows (Flink debezium-json).")(
    debezium_decode.command
)
app.command("debezium-encode", short_help="Changelog rows → Debezium JSON events (one u event per update).")(
    debezium_encode.command
)
app.command("materialize", short_help="Apply a changelog to in-memory state → the table (time travel, CI diffs).")(
    materialize.command
)
app.command("replay", short_help="Run a changelog through keyed state; re-emit it as retract or upsert.")(
    replay.command
)
app.command("inspect", short_help="What kind of changelog is this? Kinds, mode, counts, keys, consistency.")(
    inspect_cmd.command
)


def main() -> None:
    # pyarrow's default allocator (mimalloc) keeps freed record batches: a Parquet to Parquet
    # run peaks at 183 MB on 1.6M rows, 131 MB with the system allocator, at the same speed.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    app()
