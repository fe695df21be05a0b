"""A progress bar on stderr: input bytes consumed, of the total when the inputs are files.

One bar per terminal: by default only a cdc that reads files (not a pipe) draws it, so in
``cdc decode dump.jsonl | cdc materialize --key id`` the first process shows the bar and the
second stays quiet; and none when the rows go to the same terminal (stdout), where the bar's
redraws would mix with them. ``--progress`` forces a bar, ``--no-progress`` hides it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from cdc.formats.streams import names_stdout


def wanted(enabled: bool | None, inputs: Sequence[str], output: str = "-") -> bool:
    if enabled is not None:
        return enabled
    to_terminal = sys.stdout.isatty() and names_stdout(output)
    return sys.stderr.isatty() and "-" not in inputs and not to_terminal


class Bar:
    """The engine's ``Progress``: a rich bar, shown from ``start`` until ``stop``."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

        self._progress: Any = Progress(
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task: Any = None

    def start(self, total: int | None) -> None:
        self._task = self._progress.add_task("reading", total=total)
        self._progress.start()

    def advance(self, consumed: int) -> None:
        self._progress.advance(self._task, consumed)

    def stop(self) -> None:
        self._progress.stop()
