"""``materialize --key`` over JSON lines at speed.

The C kernel (``_kernel.keyed``) applies plain changes to a table of row bytes — key bytes →
the row as written, compact — without turning any row into a dict. Whatever it declines is
looked at here: a blank line is skipped, a bad line or kind is reported like the row path does;
anything else (a change that raises a finding, a key that is not an integer or a plain string, a
repeated column) hands the table over to the general ``KeyedState``, which takes every change
from there on. At the end the live rows are parsed once into that state, so the rest of
``materialize`` (output, ``--expect``, ``--stats``) sees the same table either way; or, when
the table goes out as JSON lines, its rows are written as they are (parsing 100k rows only to
print them again was a third of the run).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the pool is made when the first chunk comes
    from concurrent.futures import Future, ThreadPoolExecutor

import orjson

from cdc.core.convert import read_kind
from cdc.core.errors import InputError, Location
from cdc.core.kinds import KIND_BY_TEXT
from cdc.core.model import Reject
from cdc.core.specs import MaterializeSpec
from cdc.core.state import KeyedState
from cdc.engine.commands import SESSION, Command, implements
from cdc.engine.empty import empty_result, examples_for
from cdc.engine.handover import hand_over
from cdc.engine.inputs import line_chunks
from cdc.engine.job import Job, Result
from cdc.engine.paths import texts_parquet
from cdc.engine.paths.native.kernel import KINDS, _kernel, available, escape_at
from cdc.engine.session import Session, result_skips
from cdc.engine.tables import new_table_state, table_rows, write_rows, write_texts
from cdc.formats.jsonl import bad_line_error, loads_for, not_an_object_message


def can_run(job: Job) -> bool:
    """JSON lines in, the kernel built."""
    return available() and bool(job.formats) and all(f == "jsonl" for f in job.formats)


def _keyed(job: Job) -> bool:
    """A key (without one: a multiset, the state kernel's); no commit columns in the rows (the
    kernel compares rows whole)."""
    return bool(job.spec.key) and job.spec.commit_columns == ()


def run(job: Job, current: Session) -> Result:
    """The table built in the kernel's, written as the rows' own JSON texts where it can be."""
    spec = job.spec
    state = new_table_state(spec)
    assert isinstance(state, KeyedState)
    as_lines = job.writes_bytes and job.out_format == "jsonl" and not (job.columns or spec.sort)
    as_texts = as_lines or texts_parquet.takes(job)
    lines = KeyedLines(state, spec.kind_column, keep_texts=as_texts, told=partial(hand_over, current))
    examples = examples_for(spec, job.out_format)  # for an empty table's columns and types
    for chunk, first, name in line_chunks(job, current.on_bytes, examples=examples):
        lines.feed(chunk, name, first, current.reject)
    lines.finish()
    current.where = _inputs  # an error of the output (a column CSV cannot take) names the inputs
    result = Result(path="keyed-kernel", read=lines.records, detail=state)
    texts = lines.texts()
    empty = partial(empty_result, spec, None, examples, state.metadata)
    if texts is not None and as_lines:
        result.counts.written = write_texts(job, current, texts)
    elif texts is not None:
        result.counts.written = texts_parquet.write_parquet(job, current, texts, empty)
    else:
        rows = table_rows(state, spec, job.out_format != "jsonl")
        result.counts.written = write_rows(job, current, rows, empty=empty)
    result_skips(current, result)
    return result


class KeyedLines:
    """Feeds chunks of changelog lines to a keyed state, through the kernel while it can."""

    def __init__(
        self,
        state: KeyedState,
        kind_column: str,
        keep_texts: bool = False,
        told: Callable[[str], None] | None = None,
    ):
        self.state = state
        self.told = told  # told why the general state takes over (``handover.hand_over``)
        self.kind_column = kind_column
        self.keep_texts = keep_texts
        self.args = (
            orjson.dumps(kind_column),
            tuple((orjson.dumps(text), KINDS.index(kind.value)) for text, kind in KIND_BY_TEXT.items()),
            tuple(orjson.dumps(column) for column in state.key),
        )
        self.rows: Any = _kernel.Table()  # key bytes → row bytes; None once handed over
        self.records = 0
        self._pool: ThreadPoolExecutor | None = None
        self._pending: tuple[Future[Any], bytes, str, int, Reject] | None = None

    def feed(self, chunk: bytes, source: str, first_line: int, reject: Reject) -> None:
        """Parse this chunk on a thread (the kernel lets go of the GIL) while the one before is
        applied: the two halves of the work on the two cores."""
        job = None
        if self.rows is not None and escape_at(chunk) >= 0:  # the kernel would copy it as written
            self._drain()
            if self.rows is not None:
                self._hand_over()
        if self.rows is not None:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(1, thread_name_prefix="cdc-parse")
            started = threading.Event()
            job = self._pool.submit(_parse, started, chunk, self.args)
            started.wait()  # the applying below holds the GIL: let the parser get going first
        self._drain()
        if self.rows is None or job is None:
            self._general(chunk, source, first_line, reject)
        else:
            self._pending = (job, chunk, source, first_line, reject)

    def _drain(self) -> None:
        if self._pending is None:
            return
        job, chunk, source, first_line, reject = self._pending
        self._pending = None
        packed, position, lines = job.result()
        assert self.rows is not None
        stop, records, kinds, retract, upsert = _kernel.apply_changes(packed, self.rows)
        self._add(records, kinds, retract, upsert)
        if stop >= 0:  # a change that raises a finding: the general state takes it from here
            self._hand_over("a change that raises a finding")
            self._general(chunk[stop:], source, first_line + records, reject)
        elif position < len(chunk):  # a line the parser declined
            self._feed_lines(chunk, position, first_line + lines, source, reject)

    def _add(self, records: int, kinds: tuple[int, ...], retract: int, upsert: int) -> None:
        state = self.state
        for kind, n in zip(KINDS, kinds, strict=True):
            if n:
                state.by_kind[kind] += n
        state.retract_messages += retract
        state.upsert_messages += upsert
        self.records += records

    def _feed_lines(self, chunk: bytes, position: int, line_no: int, source: str, reject: Reject) -> None:
        """From a declined line on: parse and apply together, looking at each declined line."""
        size = len(chunk)
        while position < size and self.rows is not None:
            position, lines, kinds, retract, upsert = _kernel.keyed(
                chunk, position, self.args[0], self.args[1], self.args[2], self.rows
            )
            self._add(lines, kinds, retract, upsert)
            line_no += lines
            if position >= size:
                return
            newline = chunk.find(b"\n", position)
            end = size if newline < 0 else newline + 1
            if self._not_a_change(chunk[position : end if newline < 0 else newline], Location(source, line_no), reject):
                position, line_no = end, line_no + 1
                continue
            self._hand_over(
                "a change the kernel does not read (a key not an integer or plain string, a repeated column)"
            )
        self._general(chunk[position:], source, line_no, reject)

    def _not_a_change(self, line: bytes, where: Location, reject: Reject) -> bool:
        """A blank line (skipped) or a bad one (reported): True; a change to apply: False."""
        if not line.strip():
            return True
        parsed = self._parse(line, where, reject)
        if parsed is None:
            return True
        try:
            read_kind(parsed, self.kind_column)
        except InputError as err:
            self.records += 1
            self._bad(err, where, line, reject)
            return True
        return False

    def _parse(self, line: bytes, where: Location, reject: Reject) -> dict[str, Any] | None:
        """The line's object, or None once its error is reported (and counted as a record)."""
        loads = loads_for(line)
        try:
            row = loads(line)
        except (orjson.JSONDecodeError, ValueError):
            self.records += 1
            self._bad(bad_line_error(line, where.line or 0), where, line, reject)
            return None
        if type(row) is not dict:
            self.records += 1
            self._bad(InputError(not_an_object_message(row, line)), where, line, reject)
            return None
        return row

    @staticmethod
    def _bad(err: InputError, where: Location, line: bytes, reject: Reject) -> None:
        reject(err.located(where), line.decode("utf-8", "backslashreplace").rstrip("\r\n"))

    def _general(self, data: bytes, source: str, first_line: int, reject: Reject) -> None:
        """Lines after the hand-over: parsed and applied one by one, as the row path does."""
        apply, kind_column = self.state.apply, self.kind_column
        for line_no, line in enumerate(data.split(b"\n"), first_line):
            if not line.strip():
                continue
            where = Location(source, line_no)
            row = self._parse(line, where, reject)
            if row is None:
                continue
            self.records += 1
            try:
                kind = read_kind(row, kind_column).value
            except InputError as err:
                self._bad(err, where, line, reject)
                continue
            del row[kind_column]
            try:
                apply(kind, row, partial(_at, where))
            except InputError as err:  # --strict: a bad record, set aside under --on-error skip
                self._bad(err, where, line, reject)

    def _hand_over(self, reason: str | None = None) -> None:
        """The kernel's table becomes the general state's, in the same order; with a reason, the
        general state takes the changes from here on (else: only the table, at the end)."""
        assert self.rows is not None
        if reason is not None and self.told is not None:
            self.told(reason)
        items = self.rows.items()
        self.rows = None  # the row bytes now live in items only: each is freed once parsed
        load = self.state.load
        for i, (_, image, retracted) in enumerate(items):
            items[i] = None
            load(loads_for(image)(image), retracted)

    def finish(self) -> None:
        """Apply what is pending. The table then goes to the general state, unless it is kept
        as texts and never left the kernel: then ``texts()`` has its rows, the state the counts."""
        try:
            self._drain()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
        if self.rows is not None and not self.keep_texts:
            self._hand_over()

    def texts(self) -> list[bytes] | None:
        """The live rows as JSON texts, in first-insertion order, as their last change wrote them
        (compact); None once the general state holds the table."""
        if self.rows is None:
            return None
        texts: list[bytes] = self.rows.texts()
        self.rows = None  # the kernel's table is freed: the texts are the one copy from here on
        return texts


def _at(where: Location) -> Location:
    return where


def _inputs() -> Location:
    """Where the row path's reader is once every input is read."""
    return Location("<inputs>")


def _parse(started: threading.Event, chunk: bytes, args: tuple[Any, ...]) -> tuple[bytes, int, int]:
    started.set()
    return _kernel.parse_changes(chunk, 0, *args)  # type: ignore[no-any-return]


# materialize --key (not --dedup or --as-of: those keep other state); the table written by the
# row path's writer unless it goes out as the rows' own texts.
COMMANDS: dict[type, Command] = {
    MaterializeSpec: implements(
        run,
        "kind_column",
        "key",
        "policy",
        "sort",
        "commit_columns",
        job=SESSION | {"columns", "sink"},
        can_run=_keyed,
    ),
}
