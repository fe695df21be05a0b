"""The ``cdc`` application: one Typer app, one module per command."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Annotated, Any, NoReturn

import typer
import typer.core
import typer.main

from cdc import __version__
from cdc.cli import errors as cli_errors

# name → (module in cdc.cli, one line for `cdc --help`). A run imports and registers only the
# command it names: importing the other six and Typer reading their signatures is ~15 ms of
# start-up that a command on a small file would otherwise spend for nothing.
COMMANDS = {
    "from-changelog": ("from_changelog", "Op-coded append-only rows → changelog rows (Flink FROM_CHANGELOG)."),
    "to-changelog": ("to_changelog", "Changelog rows → append-only rows with an op column (Flink TO_CHANGELOG)."),
    "decode": ("decode", "Debezium, Canal, Maxwell or OGG change events → changelog rows (Flink *-json)."),
    "debezium-decode": (
        "debezium_decode",
        "Debezium JSON change events → changelog rows (= decode --envelope debezium).",
    ),
    "debezium-encode": ("debezium_encode", "Changelog rows → Debezium JSON events (one u event per update)."),
    "materialize": ("materialize", "Apply a changelog to in-memory state → the table (time travel, CI diffs)."),
    "replay": ("replay", "Run a changelog through keyed state; re-emit it as retract or upsert."),
    "aggregate": ("aggregate", "A continuous GROUP BY over changes → Flink's update log (+I, -U/+U, -D)."),
    "inspect": ("inspect_cmd", "What kind of changelog is this? Kinds, mode, counts, keys, consistency."),
}
ABOUT = "Convert and check changelog files the way Apache Flink SQL reads changelog streams."


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cdc {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool | None, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = None,
) -> None:
    """Convert and check changelog files the way Apache Flink SQL reads changelog streams."""


class _Command(typer.core.TyperCommand):
    """A command that refuses an option of one value given twice: the first would be ignored."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        single: dict[str, str] = {}
        for param in self.params:
            takes_one = getattr(param, "is_flag", True) is False and not getattr(param, "multiple", True)
            if param.param_type_name == "option" and takes_one and param.nargs == 1:
                for name in (*param.opts, *param.secondary_opts):
                    single[name] = param.opts[0]
        seen: dict[str, str] = {}
        i = 0
        while i < len(args) and args[i] != "--":
            arg = args[i]
            name = arg.split("=", 1)[0] if arg.startswith("--") else arg[:2]
            i += 1
            if arg.startswith("-") and name in single:
                option = single[name]
                value = arg[len(name) :].removeprefix("=") if arg != name else (args[i] if i < len(args) else "")
                if arg == name:
                    i += 1  # its value
                if option in seen:
                    from typer._click.exceptions import UsageError

                    raise UsageError(f"{option} given twice ({seen[option]!r}, {value!r}): give it once", ctx=ctx)
                seen[option] = value
        return super().parse_args(ctx, args)


def build_app(only: str | None = None) -> typer.Typer:
    """The app with every command, or with just the one named ``only``."""
    app = typer.Typer(
        name="cdc",
        help=ABOUT,
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode="markdown",
        pretty_exceptions_show_locals=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    for name, (module, short_help) in COMMANDS.items():
        if only is None or name == only:
            app.command(name, short_help=short_help, cls=_Command)(importlib.import_module(f"cdc.cli.{module}").command)
    return app


def command_options() -> dict[str, set[str]]:
    """Each command's option names (builds every command: for messages, not for start-up)."""
    app = typer.main.get_command(build_app())
    return {name: cli_errors.options_of(command) for name, command in app.commands.items()}  # type: ignore[attr-defined]


cli_errors.every_command_options = command_options


def main() -> NoReturn:
    # pyarrow's default allocator (mimalloc) keeps freed record batches: a Parquet to Parquet
    # run peaks at 183 MB on 1.6M rows, 131 MB with the system allocator, at the same speed.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    named = sys.argv[1] if len(sys.argv) > 1 else None
    if named is None or "--help" in sys.argv or "-h" in sys.argv:
        _trim_help_lines()
    try:
        build_app(only=named if named in COMMANDS else None)()
        code: Any = 0
    except SystemExit as stop:
        code = stop.code
    _leave(code)


class _TrimmedLines:
    """A help screen's stream without the spaces rich pads every line with: a copied example
    ending in `\\` must end there, or the shell reads an escaped space, not a line break."""

    def __init__(self, stream: Any):
        import re

        self._stream, self._pending = stream, ""
        self._padding = re.compile(r"(?:\x1b\[[0-9;]*m| )+$")  # spaces and the styles around them

    def write(self, text: str) -> int:
        *lines, self._pending = (self._pending + text).split("\n")
        for line in lines:
            self._stream.write(self._padding.sub(_reset_if_styled, line) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._pending)
            self._pending = ""
        self._stream.flush()

    def isatty(self) -> bool:
        return bool(self._stream.isatty())

    def fileno(self) -> int:
        return int(self._stream.fileno())


def _reset_if_styled(tail: Any) -> str:
    """The padding at a line's end dropped; a style it closed is still closed."""
    return "\x1b[0m" if "\x1b" in tail.group(0) else ""


def _trim_help_lines() -> None:
    import typer.rich_utils

    make = typer.rich_utils._get_rich_console

    def console(stderr: bool = False) -> Any:
        made = make(stderr)
        made.file = _TrimmedLines(made.file)  # type: ignore[assignment]  # a write/flush stream is all rich uses
        return made

    typer.rich_utils._get_rich_console = console


def _leave(code: Any) -> NoReturn:
    """Exit without the interpreter's teardown: unloading pyarrow (its thread pools, its
    modules) takes 15–20 ms, a tenth of a small Parquet run, and nothing is left to save — every
    output and rejects file is committed or rolled back before a command returns."""
    if code is None:
        code = 0
    elif not isinstance(code, int):
        sys.stderr.write(f"{code}\n")
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away (`| head`), or a closed stream
            pass
    os._exit(code)
