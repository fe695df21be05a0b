"""The one place that turns errors into a message and an exit code (SPEC §6)."""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer

from cdc.core.errors import CdcError

EXIT_INTERRUPTED = 130
EXIT_DATA = 3  # bad input data, or reading/writing it failed


def say(message: str) -> None:
    """A diagnostic line on stderr (never stdout: that is for data)."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _silence_stdout() -> None:
    # The reader of our stdout went away (`| head`): point fd 1 at /dev/null so the
    # interpreter's final flush does not complain either.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def options_of(command: Any) -> set[str]:
    """Every option name of a click command."""
    return {name for p in command.params for name in (*p.opts, *getattr(p, "secondary_opts", ()))}


# Every command's option names, for hints about another command's option: set by cli/app.py,
# which builds the commands (importing it here would make the two modules import each other).
every_command_options: Callable[[], dict[str, set[str]]] = dict


def command_hint(hint: str, name: str | None = None, options: set[str] | None = None) -> str:
    """A hint as the command at hand can follow it: an option it names that this command does
    not have (a decoder's --on-truncate met by materialize -i debezium) is said to be another
    command's, with the commands that have it — never offered as if it were this one's."""
    if options is None:
        from typer._click.globals import get_current_context

        ctx = get_current_context(silent=True)
        if ctx is None:
            return hint
        name, options = ctx.info_name, options_of(ctx.command)
    foreign = [o for o in dict.fromkeys(_OPTION.findall(hint)) if o not in options]
    if not foreign:
        return hint
    notes = []
    for option in foreign:
        owners = [c for c, opts in every_command_options().items() if option in opts]
        where = f"an option of cdc {', cdc '.join(owners)}" if owners else "not an option of cdc"
        notes.append(f"{option} is {where}, not of cdc {name}")
    return f"{hint} ({'; '.join(notes)})"


def _hint_here(hint: str) -> str:
    try:
        return command_hint(hint)
    except Exception:  # noqa: BLE001 - the error being reported matters more than its hint's note
        return hint


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


@contextmanager
def reported_errors(verbose: bool = False, output: str = "-") -> Iterator[None]:
    import signal

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler and _main_thread():
        # from here on an output may be open: Ctrl-C unwinds (KeyboardInterrupt), rolling it back
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    except CdcError as exc:
        if verbose:
            traceback.print_exc()
        say(f"cdc: error: {exc}")
        if exc.hint:
            say(f"hint: {_hint_here(exc.hint)}")
        raise typer.Exit(exc.exit_code) from None
    except BrokenPipeError:
        from cdc.formats.streams import names_stdout

        if names_stdout(output):  # `cdc … | head`: the reader has all it wanted
            _silence_stdout()
            raise typer.Exit(0) from None
        say(f"cdc: error: {output}: its reader went away; the output stopped there and is incomplete")
        raise typer.Exit(EXIT_DATA) from None
    except OSError as exc:  # a full disk, a file too large, a read failing: the output was rolled back
        if verbose:
            traceback.print_exc()
        if exc.filename:
            say(f"cdc: error: {exc.filename}: {exc.strerror or exc}; nothing was written to the output file")
        else:  # stdout, or a stream without a name: what went out before stays out
            say(f"cdc: error: {exc.strerror or exc}; the output stopped there and is incomplete")
        raise typer.Exit(EXIT_DATA) from None
    except RecursionError:  # a value nested deeper than Python's stack: bad input, not a crash
        if verbose:
            traceback.print_exc()
        say("cdc: error: a value is nested too deeply to process")
        raise typer.Exit(EXIT_DATA) from None
    except KeyboardInterrupt:
        say("cdc: interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:  # noqa: BLE001 - a case no check foresaw: a message, not a traceback
        if type(exc).__module__.startswith(("typer", "click")):  # typer.Exit (--expect's 1), usage errors
            raise
        if verbose:
            traceback.print_exc()
        say(f"cdc: error: unexpected {type(exc).__name__}: {exc}")
        say("hint: a case cdc does not handle yet (most likely in the input); --verbose shows where; please report it")
        raise typer.Exit(EXIT_DATA) from None
