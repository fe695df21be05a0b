"""A byte-progress bar on stderr, only when stderr is a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from cdc.formats.streams import input_size


@contextmanager
def byte_progress(paths: Sequence[str], enabled: bool | None) -> Iterator[Callable[[int], None] | None]:
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    sizes = [input_size(p) for p in paths] or [None]
    total = None if None in sizes else sum(s for s in sizes if s is not None)
    progress = Progress(
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task("reading", total=total)
    with progress:
        yield lambda n: progress.advance(task, n)
