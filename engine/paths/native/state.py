"""The state engine over JSON lines in the C kernel: ``materialize`` without a key or with
``--dedup``, ``inspect``, ``replay`` and ``debezium-encode``.

Each chunk of changelog lines is parsed on a thread, without the GIL (``_kernel.parse_records``:
kind, the key's canonical text — or, without a key, the row's — the row as written, and the time
or order values a command reads), while the chunk before is applied to a ``_kernel.State`` (an
upsert table, a multiset, or replay's table) that writes replay's rows as bytes. What the texts
cannot tell, the State asks here (``handle``): the message of a finding, made by the core state
itself on a copy holding the one stored row (so the words and the place are the row path's, and
``--strict`` fails, or sets the line aside under ``--on-error skip``, as there); whether two rows
whose texts differ are equal dicts; how two time values compare. A line the parser declines is
looked at here: a blank line is skipped, a bad line or kind is reported like the row path does;
any other (a key that is not a scalar, an escaped or repeated column name, a nested value in a
row without a key) hands the state over to the core's, which takes every change from there on.

``debezium-encode`` needs no table: ``_kernel.encode`` writes the events of the lines it is sure
of, a ``-U`` waiting for its ``+U`` across calls; the general encoder takes the lines it declines.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from cdc.core.convert import read_kind, split_change
from cdc.core.errors import InputError, Location
from cdc.core.model import Reject, Row
from cdc.core.profile import Profile
from cdc.core.replay import KeyedReplay, ReplayCounts, Replayer
from cdc.core.rowstore import row_identity, same_row
from cdc.core.specs import AggregateSpec, EncodeSpec, InspectSpec, MaterializeSpec, ReplaySpec
from cdc.core.state import KeyedState, MultisetState, TableState
from cdc.core.timeorder import TimePoint, as_number, sort_key
from cdc.engine.commands import SESSION, Command, implements, lookup
from cdc.engine.empty import empty_result, examples_for
from cdc.engine.handover import hand_over
from cdc.engine.inputs import line_chunks
from cdc.engine.job import Job, Result
from cdc.engine.paths.native.base import (
    COUNTERS,
    DELETED,
    F_DEDUP,
    F_INT_BOUNDS,
    F_KEEP,
    F_KEEP_NOOP,
    F_NET,
    F_ORDER,
    F_RETRACT,
    F_SINCE,
    F_TIME,
    F_UNTIL,
    F_WINDOW,
    H_ABSENT,
    H_DIFFERS,
    H_EQUAL,
    H_EXISTS,
    H_LATE,
    H_NO_ORDER,
    H_NO_TIME,
    H_NO_WINDOW,
    H_TIME_LESS,
    H_WINDOW,
    INT64,
    KEYED,
    MULTISET,
    REPLAY,
    RETRACTED,
    Chunk,
    Engine,
    HandOver,
    _row,
    _spellings,
)
from cdc.engine.paths.native.kernel import KINDS, _kernel, available, count_lines
from cdc.engine.session import Session, result_skips
from cdc.engine.tables import metadata_of, new_table_state, table_rows, write_rows, write_texts
from cdc.formats.jsonl import (
    CHUNK_BYTES,
    bad_line_error,
    dumps,
    loads,
    loads_for,
    not_an_object_message,
)

if TYPE_CHECKING:  # the pool is made when the first chunk comes
    from concurrent.futures import Future, ThreadPoolExecutor

CHUNK = CHUNK_BYTES  # the size of the chunks read (tests make it small: many chunks, -U/+U pairs cut)


def can_run(job: Job) -> bool:
    """JSON lines in, the kernel built."""
    return available() and bool(job.formats) and all(f == "jsonl" for f in job.formats)


def _writes_lines(job: Job) -> bool:
    return job.out_format == "jsonl"


def _materializes(job: Job) -> bool:
    """Without a key or with --dedup (materialize --key: the keyed kernel). Not with a change
    feed's commit columns in the first row (the kernel compares rows whole; where the first row
    could not be read, a chunk that names one goes the general way), nor a key column that is
    the kind column (the kernel reads rows with it)."""
    spec = job.spec
    return (not spec.key or spec.dedup) and not spec.commit_columns and spec.kind_column not in spec.key


def _inspects(job: Job) -> bool:
    spec = job.spec
    return not spec.commit_columns and spec.kind_column not in (*spec.key, spec.time_column)


def _replays(job: Job) -> bool:
    spec = job.spec
    return _writes_lines(job) and spec.kind_column not in (*spec.key, spec.order_by, spec.time_column)


def _encodes(job: Job) -> bool:
    return _writes_lines(job) and job.spec.time_column != job.spec.kind_column


def _aggregates(job: Job) -> bool:
    from cdc.engine.paths.native.aggregate import takes

    return _writes_lines(job) and takes(job.spec)


def _materialize(job: Job, current: Session) -> Result:
    keep_texts = job.writes_bytes and job.out_format == "jsonl" and not job.columns
    return _run_engine(job, current, MaterializeEngine(job.spec, keep_texts=keep_texts))


def _inspect(job: Job, current: Session) -> Result:
    return _run_engine(job, current, InspectEngine(job.spec))


def _replay(job: Job, current: Session) -> Result:
    return _run_engine(job, current, ReplayEngine(job.spec, current.open_output().stream))


def _aggregate(job: Job, current: Session) -> Result:
    from cdc.engine.paths.native.aggregate import AggregateEngine

    return _run_engine(job, current, AggregateEngine(job.spec, current.open_output().stream))


def run(job: Job, current: Session) -> Result:
    command = lookup(COMMANDS, job.spec)
    assert command is not None
    result: Result = command.do(job, current)
    return result


def _run_engine(job: Job, current: Session, engine: Engine) -> Result:
    spec = job.spec
    from cdc.engine.workers import keep_heap_memory

    keep_heap_memory()  # chunks and their records are megabytes each: kept on the heap, not mapped anew
    lines = StateLines(engine, partial(hand_over, current))
    current.where = lines.location
    examples = engine.examples = examples_for(spec, job.out_format)  # for an empty result
    for chunk, first, name in line_chunks(job, current.on_bytes, CHUNK, examples):
        lines.feed(chunk, name, first, current.reject)
    lines.finish()
    result = Result(path="state-kernel", read=lines.records)
    engine.result(result, job, current)
    result_skips(current, result)
    return result


# -- reading chunks ------------------------------------------------------------------------------


def _parse(started: threading.Event, chunk: bytes | memoryview, args: tuple[Any, ...]) -> tuple[bytes, int, int]:
    started.set()
    return _kernel.parse_records(chunk, 0, *args)  # type: ignore[no-any-return]


SPLIT = 1 << 16  # a chunk at least this long is parsed in two halves, one on each core


def _split(chunk: bytes) -> int:
    """A line end near the middle of a long chunk (else its end)."""
    if len(chunk) < SPLIT:
        return len(chunk)
    cut = chunk.find(b"\n", len(chunk) // 2)
    return len(chunk) if cut < 0 else cut + 1


class StateLines:
    """Feeds chunks of changelog lines to an engine: the first half of each parsed on a thread
    (the kernel lets go of the GIL) while the chunk before is applied, then its second half parsed
    here — so that parsing, the larger part of the work, is shared by the two cores."""

    def __init__(self, engine: Engine, told: Callable[[str], None] | None = None):
        self.engine = engine
        self.told = told  # told why the core's state takes over (``handover.hand_over``)
        self.records = 0
        self._pool: ThreadPoolExecutor | None = None
        self._pending: tuple[Future[Any], Chunk, int, tuple[bytes, int, int] | None] | None = None
        self._last = Location("-")

    def location(self) -> Location:
        """Where an error the session catches is: the inputs once read (the row path's reader)."""
        return self._last

    def feed(self, chunk: bytes, source: str, first_line: int, reject: Reject) -> None:
        self._last = Location(source, first_line + count_lines(chunk) - (1 if chunk.endswith(b"\n") else 0))
        at = Chunk(chunk, source, first_line, reject)
        job = None
        if self.engine.kernel is not None and self.engine.hands_over(chunk):
            self._drain()
            if self.engine.kernel is not None:
                self._take_over("a chunk that names a change feed's commit column")
        split = len(chunk)
        if self.engine.kernel is not None:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(1, thread_name_prefix="cdc-parse")
            split = _split(chunk)
            started = threading.Event()
            job = self._pool.submit(_parse, started, memoryview(chunk)[:split], self.engine.parse_args)
            started.wait()  # the applying below holds the GIL: let the parser get going first
        self._drain()
        if job is None or self.engine.kernel is None:  # handed over by the chunk before: the general way
            self._general(at, 0, first_line)
            return
        second = None
        if split < len(chunk):  # the second half, here, while the thread parses the first
            second = _kernel.parse_records(chunk, split, *self.engine.parse_args)
        self._pending = (job, at, split, second)

    def _drain(self) -> None:
        if self._pending is None:
            return
        job, at, split, second = self._pending
        self._pending = None
        packed, position, lines = job.result()
        if not self._applied(packed, lines, at):
            return
        if position < split:  # a line the first half declined: from there on one line after another
            self._declined(at, position, at.first_line + lines)
            return
        if second is None:
            return
        packed, position, more = second
        at = Chunk(at.chunk, at.source, at.first_line + lines, at.reject)
        if self._applied(packed, more, at) and position < len(at.chunk):
            self._declined(at, position, at.first_line + more)

    def _applied(self, packed: bytes, lines: int, at: Chunk) -> bool:
        """The records of ``lines`` lines from ``at``; False when the kernel stopped at one (then
        the rest of the chunk went the general way)."""
        if self.engine.kernel is None:  # handed over while this chunk was parsed: cannot be (drained first)
            raise AssertionError("records for a state handed over")
        try:
            stop = self.engine.apply(packed, at)
        except HandOver as stopped:  # the kernel left the record undone: the general way takes it
            self.records += stopped.line
            self.engine.hand_over()
            self.engine.undo(stopped.kind)
            self._general(at, stopped.offset, at.first_line + stopped.line)
            return False
        if stop is None:
            self.records += lines
            return True
        line, offset = struct.unpack_from("=II", packed, stop + 1)
        self.records += line
        self._take_over("a change the kernel's state does not apply (a finding, or a value it cannot compare)")
        self._general(at, offset, at.first_line + line)
        return False

    def _take_over(self, reason: str) -> None:
        self.engine.hand_over()
        if self.told is not None:
            self.told(reason)

    def _declined(self, at: Chunk, position: int, line_no: int) -> None:
        """From a declined line on: each one looked at, the kernel again after it."""
        chunk, size = at.chunk, len(at.chunk)
        while position < size:
            newline = chunk.find(b"\n", position)
            end = size if newline < 0 else newline + 1
            line = chunk[position : end if newline < 0 else newline]
            if not self._not_a_change(line, Location(at.source, line_no), at.reject):
                self._take_over("a change the kernel does not read (a key not a scalar, an escaped or repeated column)")
                self._general(at, position, line_no)
                return
            position, line_no = end, line_no + 1
            if position < size:
                packed, next_position, lines = _kernel.parse_records(chunk, position, *self.engine.parse_args)
                if not self._applied(packed, lines, Chunk(chunk, at.source, line_no, at.reject)):
                    return
                position = next_position
                line_no += lines

    def _not_a_change(self, line: bytes, where: Location, reject: Reject) -> bool:
        """A blank line (skipped) or a bad one (reported): True; a change to apply: False."""
        if not line.strip():
            return True
        row = self._parse(line, where, reject)
        if row is None:
            return True
        if self.engine.kind_column is None:  # plain rows: any object is a change
            return False
        try:
            read_kind(row, self.engine.kind_column)
        except InputError as err:
            self.records += 1
            _bad(err, where, line, reject)
            return True
        return False

    def _parse(self, line: bytes, where: Location, reject: Reject) -> dict[str, Any] | None:
        """The line's object, or None once its error is reported (and counted as a record)."""
        try:
            row = loads_for(line)(line)
        except (orjson.JSONDecodeError, ValueError):
            self.records += 1
            _bad(bad_line_error(line, where.line or 0), where, line, reject)
            return None
        if type(row) is not dict:
            self.records += 1
            _bad(InputError(not_an_object_message(row, line)), where, line, reject)
            return None
        return row

    def _general(self, at: Chunk, position: int, first_line: int) -> None:
        """Lines after the hand-over: parsed and applied one by one, as the row path does."""
        data = at.chunk[position:]
        parse = loads_for(data)
        step = self.engine.step
        for line_no, line in enumerate(data.split(b"\n"), first_line):
            if not line.strip():
                continue
            where = Location(at.source, line_no)
            try:
                row = parse(line)
            except (orjson.JSONDecodeError, ValueError):
                self.records += 1
                _bad(bad_line_error(line, line_no), where, line, at.reject)
                continue
            self.records += 1
            if type(row) is not dict:
                _bad(InputError(not_an_object_message(row, line)), where, line, at.reject)
                continue
            try:
                step(row, where)
            except InputError as err:
                _bad(err, where, line, at.reject)

    def finish(self) -> None:
        try:
            self._drain()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
        self._last = Location("<inputs>")
        self.engine.finish()


def _bad(err: InputError, where: Location, line: bytes, reject: Reject) -> None:
    reject(err.located(where), line.decode("utf-8", "backslashreplace").rstrip("\r\n"))


# -- materialize and inspect: a table ------------------------------------------------------------


class TableEngine(Engine):
    """A keyed or multiset table in the kernel, findings made by the core's state."""

    def __init__(self, kind_column: str, key: tuple[str, ...], table: TableState, flags: int, extras: tuple[str, ...]):
        self.kind_column = self.kc = kind_column
        self.key = key
        self.table = table  # the core's state: findings (and, once handed over, everything)
        command = KEYED if key else MULTISET
        self.kernel = _kernel.State(command, flags, len(extras), (b"",) * 4)
        self.parse_args = (
            orjson.dumps(kind_column),
            _spellings(),
            tuple(orjson.dumps(c) for c in key),
            tuple(orjson.dumps(c) for c in extras),
        )
        self.counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)

    def apply(self, packed: bytes, at: Chunk) -> int | None:
        self.kernel.apply(packed, 0, self._handle(at))
        return None

    def _handle(self, at: Chunk) -> Callable[[int, int, int, int, bytes | None, bytes | None], int]:
        def handle(code: int, line: int, offset: int, kind: int, a: bytes | None, b: bytes | None) -> int:
            return self.handle(code, line, offset, KINDS[kind], a, b, at)

        return handle

    def handle(self, code: int, line: int, offset: int, kind: str, a: bytes | None, b: bytes | None, at: Chunk) -> int:
        if code == H_EQUAL:
            return int(same_row(_row(a), _row(b)))
        if code == H_ABSENT and not self.key:
            # The kernel finds a multiset's row by its text: a retraction whose image names a
            # column as null that the stored row lacks (or the reverse: ALTER TABLE … ADD COLUMN
            # mid-stream) is the same row to the core. The general way takes it from here.
            raise HandOver(line, offset, kind)
        if code in (H_EXISTS, H_ABSENT, H_DIFFERS):
            return self._finding(kind, a, _row(b), line, offset, at)
        raise AssertionError(f"the kernel asked {code}")

    def _finding(self, kind: str, stored: bytes | None, image: Row, line: int, offset: int, at: Chunk) -> int:
        """A change the kernel found contradicting the table: the core's state, holding just the
        stored row, applies it (so the finding is its own); 1: it applied, 0: it was set aside."""
        table = self.table
        copy: TableState
        if isinstance(table, KeyedState):
            copy = KeyedState(table.key, table.findings, table.dedup, table.metadata, table.ignored)
            if stored is not None:
                copy.load(_row(stored))
        else:
            copy = MultisetState(table.findings, metadata=table.metadata, ignored=table.ignored)
        where = at.where(line)
        try:
            copy.apply(kind, image, lambda: where)
        except InputError as err:  # --strict: a bad record (set aside under --on-error skip)
            at.bad(err, line, offset)
            return 0
        return 1

    def _load_counters(self) -> None:
        self.counters = dict(zip(COUNTERS, self.kernel.counters(), strict=True))
        table, c = self.table, self.counters
        for kind in KINDS:
            if c[kind]:
                table.by_kind[kind] = c[kind]
        table.retract_messages = c["retract"]
        table.upsert_messages = c["upsert"]
        if isinstance(table, KeyedState | MultisetState):
            table.duplicates = c["duplicates"]

    def _load_rows(self) -> None:
        """The kernel's table into the core's state, in the same order."""
        table = self.table
        if isinstance(table, KeyedState):
            for _, row, flags, _ in self.kernel.items():
                if not flags & DELETED:
                    table.load(_row(row), bool(flags & RETRACTED))
        elif isinstance(table, MultisetState):
            rows = table.table.rows
            for _, row, _, count in self.kernel.items():
                parsed = _row(row)
                rows[row_identity(parsed, table.unmatched)] = [parsed, count]
            previous = self.kernel.previous()
            if previous is not None:
                table._previous = (KINDS[previous[0]], row_identity(_row(previous[1]), table.unmatched))

    def hand_over(self) -> None:
        self._load_counters()
        self._load_rows()
        self.kernel = None

    def undo(self, kind: str) -> None:
        self.table.by_kind[kind] -= 1
        if isinstance(self.table, MultisetState):
            self.table._previous = None  # the kernel took the stopped record for the previous one

    def step(self, row: Row, where: Location) -> None:
        kind, image = split_change(row, self.kc)
        self.table.apply(kind, image, lambda: where)


def _watch(commit_columns: tuple[str, ...] | None) -> tuple[bytes, ...]:
    """Commit columns not known (the first row could not be read): any that a chunk names."""
    from cdc.core.presets import COMMIT_COLUMNS

    return tuple(orjson.dumps(c) for c in COMMIT_COLUMNS) if commit_columns is None else ()


class MaterializeEngine(TableEngine):
    def __init__(self, spec: MaterializeSpec, keep_texts: bool):
        self.spec = spec
        self.keep_texts = keep_texts
        self.texts: list[bytes] | None = None
        super().__init__(spec.kind_column, spec.key, new_table_state(spec), F_DEDUP if spec.dedup else 0, ())
        self.watch = _watch(spec.commit_columns)

    def finish(self) -> None:
        """The table goes to the core's state, unless it is written as texts and never left the
        kernel: then ``texts`` has its rows, the state the counts."""
        if self.kernel is None:
            return
        if self.keep_texts and not self.spec.sort:
            self._load_counters()
            self.texts = self.kernel.texts()
            self.kernel = None
        else:
            self.hand_over()

    def _rows(self, job: Job) -> Any:
        return table_rows(self.table, self.spec, job.out_format != "jsonl")

    def result(self, result: Result, job: Job, current: Session) -> None:
        result.detail = self.table
        if self.texts is not None:
            result.counts.written = write_texts(job, current, self.texts)
        else:
            empty = partial(empty_result, self.spec, None, self.examples, self.table.metadata)
            result.counts.written = write_rows(job, current, self._rows(job), empty=empty)


class _Sized(set[Any]):
    """A set that only counts (inspect's distinct keys, counted in the kernel)."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def __len__(self) -> int:
        return self.size


class _CountedTable(TableState):
    """The core's table state with the kernel's counts, rows parsed only when asked for."""

    def __init__(self, like: TableState, live: int, texts: list[bytes]):
        super().__init__(like.findings, like.metadata)
        self.by_kind = like.by_kind
        self.retract_messages, self.upsert_messages = like.retract_messages, like.upsert_messages
        self.live = live
        self.texts = texts

    def __len__(self) -> int:
        return self.live

    def rows(self) -> Any:
        return (_row(text) for text in self.texts)


class InspectEngine(TableEngine):
    def __init__(self, spec: InspectSpec):
        self.spec = spec
        self.profile = Profile(spec.key, spec.time_column, metadata_of(spec), frozenset(spec.ignore_columns))
        flags = (F_KEEP if spec.key else 0) | (F_TIME if spec.time_column is not None else 0)
        extras = (spec.time_column,) if spec.time_column is not None else ()
        super().__init__(spec.kind_column, spec.key, self.profile.state, flags, extras)
        self.watch = _watch(spec.commit_columns)

    def handle(self, code: int, line: int, offset: int, kind: str, a: bytes | None, b: bytes | None, at: Chunk) -> int:
        if code == H_NO_TIME:
            at.bad(InputError(f"time column {self.spec.time_column!r} does not exist in this row"), line, offset)
            return 0
        if code == H_TIME_LESS:
            return int(sort_key(_row(a)) < sort_key(_row(b)))
        return super().handle(code, line, offset, kind, a, b, at)

    def _load_profile(self) -> None:
        self._load_counters()
        profile, c = self.profile, self.counters
        profile.changes = c["changes"]
        profile.time_missing = c["time_missing"]
        low, high = self.kernel.time_range()
        profile.time_min = _time_value(low)
        profile.time_max = _time_value(high)

    def hand_over(self) -> None:
        self._load_profile()
        if self.key:
            key_of = self.profile._key_of
            assert key_of is not None
            self.profile.distinct_keys = {key_of(_row(row)) for _, row, _, _ in self.kernel.items()}
        self._load_rows()
        self.kernel = None

    def undo(self, kind: str) -> None:
        super().undo(kind)
        self.profile.changes -= 1

    def step(self, row: Row, where: Location) -> None:
        kind, image = split_change(row, self.kc)
        self.profile.add(kind, image, lambda: where)

    def finish(self) -> None:
        if self.kernel is None:
            return
        self._load_profile()
        keys, live = self.kernel.sizes()
        self.profile.state = _CountedTable(self.table, live, self.kernel.texts())
        if self.key:
            self.profile.distinct_keys = _Sized(keys)
        self.kernel = None

    def result(self, result: Result, job: Job, current: Session) -> None:
        result.detail = self.profile


def _time_value(value: int | bytes | None) -> Any:
    return _row(value) if isinstance(value, bytes) else value


# -- replay --------------------------------------------------------------------------------------


def _int_bound(value: Any) -> int | None:
    """A --since/--until the kernel compares in C: a number that is a 64-bit integer."""
    number = as_number(value)
    if number is None or number != number.to_integral_value() or not -INT64 < number < INT64:
        return None
    return int(number)


class ReplayEngine(Engine):
    def __init__(self, spec: ReplaySpec, out: BinaryIO):
        from cdc.formats.jsonl import JsonlWriter

        self.spec = spec
        self.kind_column = self.kc = spec.kind_column
        self.out = out
        self.writer = JsonlWriter(out)
        self.counts = ReplayCounts()
        self.by_kind: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.since = TimePoint(spec.since, "--since", spec.time_column) if spec.since is not None else None
        self.until = TimePoint(spec.until, "--until", spec.time_column) if spec.until is not None else None
        self.replayer: Replayer | None = None
        flags = F_RETRACT if spec.emit == "retract" else 0
        flags |= F_KEEP_NOOP if spec.keep_noop else 0
        extras: tuple[str, ...] = ()
        if spec.order_by is not None:
            flags |= F_ORDER
            extras += (spec.order_by,)
        since = until = 0
        if spec.time_column is not None:
            flags |= F_WINDOW
            extras += (spec.time_column,)
            bounds = [_int_bound(b) for b in (spec.since, spec.until) if b is not None]
            if None not in bounds:
                flags |= F_INT_BOUNDS
                since = _int_bound(spec.since) or 0 if spec.since is not None else 0
                until = _int_bound(spec.until) or 0 if spec.until is not None else 0
            flags |= (F_SINCE if spec.since is not None else 0) | (F_UNTIL if spec.until is not None else 0)
        flags |= F_NET if spec.net else 0
        kc = orjson.dumps(spec.kind_column)
        firsts = tuple(kc + b":" + orjson.dumps(kind) for kind in KINDS)
        self.kernel = _kernel.State(REPLAY, flags, len(extras), firsts, since, until)
        self.parse_args = (
            kc,
            _spellings(),
            tuple(orjson.dumps(c) for c in spec.key),
            tuple(orjson.dumps(c) for c in extras),
        )

    def _handle(self, at: Chunk | None) -> Callable[[int, int, int, int, bytes | None, bytes | None], int]:
        spec = self.spec

        def handle(code: int, line: int, offset: int, kind: int, a: bytes | None, b: bytes | None) -> int:
            if code == H_EQUAL:
                return int(same_row(_row(a), _row(b)))
            if code == H_LATE:
                return int(TimePoint(_row(a)).compare(_row(b)) < 0)
            if code == H_WINDOW:
                t = _row(b)
                after = self.until is not None and self.until.compare(t) > 0
                before = self.since is not None and self.since.compare(t) <= 0
                return (1 if after else 0) | (2 if before else 0)
            assert at is not None
            if code == H_NO_ORDER:
                at.bad(InputError(f"--order-by column {spec.order_by!r} does not exist in this row"), line, offset)
                return 0
            if code == H_NO_WINDOW:
                at.bad(InputError(f"time column {spec.time_column!r} does not exist in this row"), line, offset)
                return 0
            raise AssertionError(f"the kernel asked {code}")

        return handle

    def apply(self, packed: bytes, at: Chunk) -> int | None:
        out = self.kernel.apply(packed, 0, self._handle(at))
        if out:
            self.out.write(out)
        return None

    def _load_counts(self) -> None:
        c = dict(zip(COUNTERS, self.kernel.counters(), strict=True))
        counts = self.counts
        counts.read, counts.written, counts.noops, counts.late = c["read"], c["written"], c["noops"], c["late"]
        counts.before_window, counts.after_window = c["before_window"], c["after_window"]
        counts.ignored_retractions = c["ignored"]
        counts.retract_messages, counts.upsert_messages = c["out_retract"], c["out_upsert"]
        for kind in KINDS:
            self.by_kind[kind] = c["out" + kind]

    def hand_over(self) -> None:
        self._load_counts()
        replayer = self.replayer = Replayer(self.spec, self.counts)
        self._load(replayer.state, 0)
        if replayer.at_since is not None:
            self._load(replayer.at_since, 1)
        self.kernel = None

    def _load(self, state: KeyedReplay, which: int) -> None:
        table, order = state.table, state._order
        for _, text, _, seen in self.kernel.items(which):
            row = _row(text)
            key = table.key_of(row)
            table.put(key, row)
            if seen is not None:
                order[key] = _row(seen) if isinstance(seen, bytes) else seen

    def _write(self, changes: Iterable[tuple[str, Row]]) -> None:
        kc = self.kc
        rows = []
        for kind, image in changes:
            self.by_kind[kind] += 1
            rows.append({kc: kind, **image})
        if rows:
            self.writer.write_rows(rows)

    def step(self, row: Row, where: Location) -> None:
        assert self.replayer is not None
        kind, image = split_change(row, self.kc)
        self._write(self.replayer.step(kind, image))

    def finish(self) -> None:
        if self.kernel is not None:
            if self.spec.net:
                out = self.kernel.net(self._handle(None))
                if out:
                    self.out.write(out)
            self._load_counts()
            self.kernel = None
        else:
            assert self.replayer is not None
            self._write(self.replayer.finish())
        self.out.flush()

    def result(self, result: Result, job: Job, current: Session) -> None:
        result.detail = self.counts
        for kind, n in self.by_kind.items():
            if n:
                result.counts.by_kind[kind] = n
        result.counts.written = sum(self.by_kind.values())


# -- debezium-encode -----------------------------------------------------------------------------


def _run_encode(job: Job, current: Session) -> Result:
    """Events of the lines the kernel is sure of as it writes them; the rest (and the end) by
    the general encoder, which holds the pending -U while it decides."""
    from cdc.engine.workers import keep_heap_memory
    from cdc.formats.debezium import DebeziumEncoder
    from cdc.formats.jsonl import JsonlWriter

    keep_heap_memory()
    spec: EncodeSpec = job.spec
    result = Result(path="state-kernel")
    counts = result.counts
    encoder = DebeziumEncoder(spec, counts)
    out = current.open_output().stream
    writer = JsonlWriter(out)
    source = b',"source":' + dumps(dict(spec.source)).rstrip(b"\n") if spec.source else b""
    args = (
        orjson.dumps(spec.kind_column),
        _spellings(),
        tuple(orjson.dumps(c) for c in spec.key),
        orjson.dumps(spec.time_column) if spec.time_column else b"",
        source,
        str(encoder.now_ms).encode(),
        spec.split_updates,
    )
    pending: bytes | None = None
    current.where = lambda: Location("<inputs>")  # errors of the end (a last -U's time), as the row path
    events = counts.notes
    for chunk, first, name in line_chunks(job, current.on_bytes, CHUNK):
        position, line_no, size = 0, first, len(chunk)
        while position < size:
            data, position, lines, kinds, made, pending = _kernel.encode(chunk, position, *args, pending)
            out.write(data)
            result.read += lines
            line_no += lines
            for kind, n in zip(KINDS, kinds, strict=True):
                if n:
                    counts.by_kind[kind] += n
            for op, n in zip("cud", made, strict=True):
                if n:
                    events[f"events {op}"] += n
            counts.written += sum(made)
            if position >= size:
                break
            newline = chunk.find(b"\n", position)
            end = size if newline < 0 else newline + 1
            line = chunk[position : end if newline < 0 else newline]
            encoder.pending = None if pending is None else loads(pending)
            _encode_line(encoder, writer, line, Location(name, line_no), current.reject, result)
            pending = None if encoder.pending is None else dumps(encoder.pending)[:-1]
            position, line_no = end, line_no + 1
    encoder.pending = None if pending is None else loads(pending)
    writer.write_rows(encoder.finish())
    out.flush()
    result_skips(current, result)
    return result


def _encode_line(encoder: Any, writer: Any, line: bytes, where: Location, reject: Reject, result: Result) -> None:
    """One line the kernel declined, the general way: skipped (blank), set aside or encoded."""
    if not line.strip():
        return
    result.read += 1
    try:
        row = loads_for(line)(line)
    except (orjson.JSONDecodeError, ValueError):
        _bad(bad_line_error(line, where.line or 0), where, line, reject)
        return
    if type(row) is not dict:
        _bad(InputError(not_an_object_message(row, line)), where, line, reject)
        return
    try:
        events = encoder.step(row)
    except InputError as err:
        _bad(err, where, line, reject)
        return
    writer.write_rows(events)


ROWS_OUT = SESSION | {"columns", "sink"}  # a table written by the row path's writer
COMMANDS: dict[type, Command] = {
    MaterializeSpec: implements(
        _materialize,
        "kind_column",
        "key",
        "policy",
        "dedup",
        "sort",
        "commit_columns",
        job=ROWS_OUT,
        can_run=_materializes,
    ),
    InspectSpec: implements(
        _inspect, "kind_column", "key", "time_column", "commit_columns", job=ROWS_OUT, can_run=_inspects
    ),
    ReplaySpec: implements(
        _replay,
        "key",
        "emit",
        "keep_noop",
        "order_by",
        "time_column",
        "since",
        "until",
        "net",
        "kind_column",
        can_run=_replays,
    ),
    EncodeSpec: implements(
        _run_encode, "kind_column", "split_updates", "time_column", "source", "key", can_run=_encodes
    ),
    AggregateSpec: implements(_aggregate, "query", "input_mode", "kind_column", "policy", can_run=_aggregates),
}
