"""A job: what to do (a core spec), from which inputs, to which output; and what came of it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from cdc.core.errors import InputError
from cdc.core.model import OnError, Row
from cdc.core.stats import Counts
from cdc.formats.streams import STDIO


class RowSink(Protocol):
    """Where rows go instead of a file: the API's list, the CLI's rich table."""

    def write_rows(self, rows: Iterable[Row]) -> None: ...

    def close(self) -> None: ...


class Progress(Protocol):
    """Told how much input there is and how much has been consumed (bytes)."""

    def start(self, total: int | None) -> None: ...

    def advance(self, consumed: int) -> None: ...


@dataclass(frozen=True)
class Job:
    """One run of a command. ``spec`` is a core spec (``FromChangelogSpec``, ``MaterializeSpec`` …)
    and says what to do; the rest says where from and where to. Paths take a job whole."""

    spec: Any
    inputs: tuple[str, ...] = (STDIO,)
    input_format: str | None = None  # an explicit --input-format; else by suffix, stdin sniffed
    output: str = STDIO
    output_format: str | None = None  # an explicit --output-format; else by suffix, stdout JSONL
    columns: tuple[str, ...] = ()
    on_error: OnError = OnError.fail
    rejects: str | None = None
    rows: Iterable[Row] | None = None  # rows given by a caller (the API) instead of input files
    sink: RowSink | None = None  # rows handed to a caller instead of written to ``output``
    memory_limit: int | None = None  # bytes the state may take before it spills (None: no limit)
    temp_dir: str | None = None  # where a spill goes (None: the system's temporary folder)
    # Filled in by ``resolve``: each input's format (stdin sniffed) and the output's.
    formats: tuple[str, ...] = ()
    out_format: str = ""

    def with_(self, **changes: Any) -> Job:
        return replace(self, **changes)

    @property
    def writes_bytes(self) -> bool:
        """Output goes to a file or stdout as bytes (not to a caller's sink)."""
        return self.sink is None


@dataclass
class Result:
    """What a run did, for ``--stats``, skip reports and the API."""

    path: str = ""  # the path that ran (rows, lines, kernel-lines, arrow …; "arrow-state→rows" after a hand-over)
    handover: str | None = None  # why the path handed the run over to the row path's rules
    read: int = 0  # input records, good or bad
    counts: Counts = field(default_factory=Counts)
    skipped: int = 0
    first_skip: InputError | None = None
    detail: Any = None  # the command's own account: a state, replay counts, a profile
    rows: list[Row] | None = None  # the API's collected output

    @property
    def findings(self) -> Any:
        """materialize: the changes that contradicted the table (``.total``, ``.counts``,
        ``.examples``); None for commands that keep no table."""
        return getattr(self.detail, "findings", None)
