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
    stdin_read_ahead: bool = False  # stdin read ahead to see whether it fits (a --memory-limit given)
    # Filled in by ``resolve``: each input's format (stdin sniffed) and the output's.
    formats: tuple[str, ...] = ()
    out_format: str = ""
    # The input's schema line (``formats.stream_schema``), and whether the output gets one: the
    # row path reads and writes them (``plan.choose``).
    stream_schema: Any = None
    schema_line: bool = False
    csv: Any = None  # how CSV/TSV inputs are written (formats.base.CsvDialect): delimiter, quote, header
    arrays: bool = False  # an input is one JSON array (formats.json_array), not JSON lines
    container: str = "auto"  # envelope inputs of changelog commands: kcat, kafka-console (DecodeSpec.container)
    # Debezium events in Avro: where wire-format messages' schemas come from, and how debezium-encode
    # writes Avro (formats.schema_registry.SchemaSources); None: no Avro option given
    avro: Any = None

    def with_(self, **changes: Any) -> Job:
        return replace(self, **changes)

    @property
    def writes_bytes(self) -> bool:
        """Output goes to a file or stdout as bytes (not to a caller's sink)."""
        return self.sink is None


@dataclass
class Result:
    """What a run did: the API's return value, and what the commands report (``--stats``).

    - ``rows``: the output rows, when the call had no ``output=`` (else None: they were written);
    - ``path``: the engine path that ran (rows, lines, kernel-lines, arrow …; ``arrow-state→rows``
      after a hand-over), ``handover``: why the path handed the run over to the row path's rules;
    - ``read``: input records, good or bad; ``counts``: rows per kind read and written (``Counts``);
    - ``skipped``: bad records set aside under ``on_error="skip"``; ``first_skip`` the first one;
    - ``findings``: materialize, aggregate, inspect: the changes that contradicted the state
      (``.total``, ``.counts``, ``.examples``); None for commands that keep no state;
    - ``differences``: materialize with ``expect=``: a ``TableDiff`` (``.equal``, ``.changed``,
      ``.only_in_result``, ``.only_in_expected``, ``.summary()``); None without ``expect=``;
    - ``ok``: False when ``expect=`` was given and the table differs; ``check()`` raises
      ``cdc.ExpectationFailed`` then (``raise_for_diff()`` is the same);
    - ``report``: inspect: the report as ``cdc inspect --json`` prints it (a dict);
    - ``sql``: with ``print_sql=True``: the Flink SQL script; nothing else ran;
    - ``flink_job``: with ``on_flink=URL``: the id of the Flink job whose rows were written;
    - ``detail``: the command's own account (a table state, replay counts, an inspect profile).
    """

    path: str = ""
    handover: str | None = None
    read: int = 0
    counts: Counts = field(default_factory=Counts)
    skipped: int = 0
    first_skip: InputError | None = None
    detail: Any = None
    rows: list[Row] | None = None
    differences: Any = None  # a core.compare.TableDiff
    report: dict[str, Any] | None = None
    sql: str | None = None
    flink_job: str | None = None  # with on_flink: the Flink job that made the rows

    @property
    def findings(self) -> Any:
        """The changes that contradicted the state (``.total``, ``.counts``, ``.examples``), or None."""
        return getattr(self.detail, "findings", None)

    @property
    def ok(self) -> bool:
        """False when ``expect=`` was given and the result differs from it."""
        return self.differences is None or bool(self.differences.equal)

    def check(self) -> Result:
        """Raise ``cdc.ExpectationFailed`` (its ``differences`` attached) unless ``ok``; returns self."""
        if not self.ok:
            from cdc.core.errors import ExpectationFailed

            raise ExpectationFailed(f"the result {self.differences.summary()}", self.differences)
        return self

    raise_for_diff = check
