"""The row path: any job, one record at a time — the reference every other path is held to.

Each spec becomes ``Steps``: ``step`` turns one input row into the rows it makes (raising
``InputError`` for a bad one, which the loop hands to the session: fail or set aside), and
``finish`` gives what only the end can (a table, a pending ``-U``, a net change).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from cdc.core.convert import FromChangelogRow, ToChangelogRow, kind_collision, split_change
from cdc.core.errors import CdcError, InputError, Location
from cdc.core.model import OnError, Row
from cdc.core.profile import Profile
from cdc.core.replay import KeyedReplay, ReplayCounts, Replayer
from cdc.core.specs import (
    AggregateSpec,
    CopySpec,
    DecodeSpec,
    EncodeSpec,
    FromChangelogSpec,
    InspectSpec,
    MaterializeSpec,
    ReplaySpec,
    ToChangelogSpec,
)
from cdc.core.state import Where
from cdc.core.stats import Counts
from cdc.engine.commands import EVERY, Command, lookup
from cdc.engine.empty import SHAPED, Empty, Examples, empty_result, examples_for
from cdc.engine.inputs import open_rows
from cdc.engine.job import Job, Result
from cdc.engine.session import Session, result_skips
from cdc.engine.tables import metadata_of, new_table_state, table_rows, write_rows
from cdc.formats.base import RowReader
from cdc.formats.streams import STDIO


@dataclass
class Steps:
    step: Callable[[Row], Iterable[Row]] | None  # None: rows pass as read (decode)
    finish: Callable[[], Iterable[Row]] = tuple
    # The output columns of input columns (for an empty result's header and schema), where known.
    columns: Callable[[Sequence[str]], list[str]] | None = None
    # Or the whole empty result (columns and types) of the input's columns (None: JSON lines).
    empty: Callable[[Sequence[str] | None], Empty | None] | None = None
    # What keeps the first input rows for it (``transformed`` hands them over).
    examples: Examples | None = None
    writes: bool = True  # False: a report, no output rows (inspect)
    # A table whose rows differ in columns (ADD COLUMN mid-stream) comes out as rows of all of
    # them, where the format fixes its columns; JSON lines keep each row as written (every path).
    fill: bool = True


def steps_for(spec: Any, result: Result, where: Where) -> Steps:
    """The row transform of a spec; ``result`` gets the counts and the command's account."""
    command = lookup(COMMANDS, spec)
    if command is None:
        raise TypeError(f"no row transform for {type(spec).__name__}")
    steps: Steps = command.do(spec, result, where)
    return steps


def _from_changelog(spec: FromChangelogSpec, result: Result, where: Where) -> Steps:
    from_row = FromChangelogRow(spec, result.counts)
    steps = _paired(spec, from_row, result.counts) if spec.commit_columns else Steps(from_row)
    return _shaped(steps, spec)


def _to_changelog(spec: ToChangelogSpec, result: Result, where: Where) -> Steps:
    return _shaped(Steps(ToChangelogRow(spec, result.counts)), spec)


def _copy(spec: CopySpec, result: Result, where: Where) -> Steps:
    return Steps(None, columns=list)


def _decode(spec: DecodeSpec, result: Result, where: Where) -> Steps:
    return Steps(None)  # the reader decodes events


def _encode(spec: EncodeSpec, result: Result, where: Where) -> Steps:
    from cdc.formats.debezium import DebeziumEncoder

    encoder = DebeziumEncoder(spec, result.counts)
    return Steps(encoder.step, encoder.finish)


def _shaped(steps: Steps, spec: Any) -> Steps:
    """The steps with the empty result of ``spec`` (``empty.empty_result``), of the input's
    declared columns or of the first rows it keeps."""
    examples = steps.examples = examples_for(spec)
    steps.empty = lambda declared: empty_result(spec, declared, examples)
    return steps


def _paired(spec: FromChangelogSpec, from_row: FromChangelogRow, counts: Counts) -> Steps:
    """A change feed: each commit's rows come out once it ends, pre- and post-images paired."""
    from cdc.core.commits import CommitPairing

    pairing = CommitPairing(
        spec.commit_columns, spec.keys or spec.pair_key, drop=spec.drop_commit_columns, notes=counts.notes
    )
    kc = spec.kind_column

    def with_kinds(changes: list[tuple[str, Row]]) -> list[Row]:
        return [{kc: kind, **image} for kind, image in changes]

    commit = spec.commit_columns[0]

    def step(row: Row) -> list[Row]:
        out = []
        for changed in from_row(row):
            if commit not in changed:  # rows without commits (e.g. written by to-changelog): in order
                return with_kinds(pairing.finish()) + [changed]
            kind = changed.pop(kc)
            out.extend(pairing.push(kind, changed))
        return with_kinds(out)

    return Steps(step, lambda: with_kinds(pairing.finish()))


def _materialize(spec: MaterializeSpec, result: Result, where: Where) -> Steps:
    state = result.detail = new_table_state(spec)
    apply, kind_column = state.apply, spec.kind_column
    examples = Examples(kind_column)

    def step(row: Row) -> tuple[()]:
        kind, image = split_change(row, kind_column)
        apply(kind, image, where)
        return ()

    def empty(declared: Sequence[str] | None) -> Empty | None:
        return empty_result(spec, declared, examples, state.metadata)

    steps = Steps(step, lambda: table_rows(state, spec, steps.fill), empty=empty, examples=examples)
    return steps


def _inspect(spec: InspectSpec, result: Result, where: Where) -> Steps:
    profile = result.detail = Profile(spec.key, spec.time_column, metadata_of(spec), frozenset(spec.ignore_columns))
    add, kind_column = profile.add, spec.kind_column

    def step(row: Row) -> tuple[()]:
        kind, image = split_change(row, kind_column)
        add(kind, image, where)
        return ()

    return Steps(step, writes=False)


def _replay(spec: ReplaySpec, result: Result, where: Where) -> Steps:
    from cdc.core.inputmodes import change_reader

    counts = result.detail = ReplayCounts()
    replayer = Replayer(spec, counts)
    change_of = change_reader(spec.input_mode, spec.kind_column, spec.delete_when)
    kc = spec.kind_column

    def with_kinds(changes: list[tuple[str, Row]]) -> list[Row]:
        result.counts.by_kind.update(kind for kind, _ in changes)
        return [{kc: kind, **image} for kind, image in changes]

    plain = spec.input_mode != "changelog"

    def step(row: Row) -> list[Row]:
        if plain and kc in row:  # a data column (an audit table's op) is never the row kind
            raise kind_collision(kc)
        kind, image = change_of(row)
        return with_kinds(replayer.step(kind, image))

    return _shaped(Steps(step, lambda: with_kinds(replayer.finish())), spec)


def _aggregate(spec: AggregateSpec, result: Result, where: Where) -> Steps:
    """A continuous GROUP BY: each change updates its group, which emits what changed."""
    from cdc.core.aggregate import GroupAggregate, UpsertWatch
    from cdc.core.inputmodes import change_reader
    from cdc.core.state import Findings

    group = result.detail = GroupAggregate(spec.query, Findings(spec.policy))
    apply, kc = group.apply, spec.kind_column
    change_of = change_reader(spec.input_mode, kc, spec.delete_when)
    by_kind = result.counts.by_kind
    examples = examples_for(spec)
    assert examples is not None
    normalize = None
    if spec.input_mode == "upsert":  # Flink's ChangelogNormalize before the aggregate
        normalize = KeyedReplay(ReplaySpec(spec.key, keep_noop=False)).apply

    watch = UpsertWatch(group.findings) if spec.input_mode == "changelog" else None

    def step(row: Row) -> list[Row]:
        kind, image = change_of(row)
        if watch is not None and watch.watching:
            watch.see(kind, where)
        changes = normalize(kind, image) if normalize is not None else [(kind, image)]
        out = []
        for k, r in changes:
            for kind_out, row_out in apply(k, r, where):
                by_kind[kind_out] += 1
                out.append({kc: kind_out, **row_out})
        return out

    return Steps(step, empty=lambda declared: empty_result(spec, None, examples), examples=examples)


# The row path runs every command and implements every field of each: the reference.
COMMANDS: dict[type, Command] = {
    spec_type: Command(do, EVERY, EVERY)
    for spec_type, do in (
        (FromChangelogSpec, _from_changelog),
        (ToChangelogSpec, _to_changelog),
        (CopySpec, _copy),
        (DecodeSpec, _decode),
        (EncodeSpec, _encode),
        (MaterializeSpec, _materialize),
        (InspectSpec, _inspect),
        (ReplaySpec, _replay),
        (AggregateSpec, _aggregate),
    )
}


def transformed(reader: RowReader, steps: Steps, current: Session) -> Iterator[Row]:
    """The rows ``steps`` make of the reader's, bad ones handed to the session; the first ones
    kept for an empty result too (``steps.examples``)."""
    step, rows = steps.step, iter(reader)
    if steps.examples is not None:
        rows = chain(_kept(rows, steps.examples), rows)  # the rest as read, nothing on the way
    if step is None:
        yield from rows
    else:
        bad = current.bad
        for row in rows:
            try:
                out = step(row)
            except InputError as err:
                bad(err, reader.raw())
                continue
            yield from out
    yield from steps.finish()


def _kept(rows: Iterator[Row], examples: Examples) -> Iterator[Row]:
    """The first rows, handed to ``examples`` on the way until it has enough."""
    for row in rows:
        examples.add(row)
        yield row
        if examples.full:
            return


def _empty_of(steps: Steps, reader: RowReader) -> Callable[[], Empty | None] | None:
    """The empty result of the run, asked once its inputs are read (their columns known)."""
    make, columns = steps.empty, steps.columns
    if make is not None:
        return lambda: make(reader.columns)
    if columns is not None:
        return lambda: Empty(columns(reader.columns) if reader.columns is not None else [])
    return None


OUTPUT = "<output>"  # where a writer places a value it cannot hold: a row of the output


PLACES_KEPT = 1 << 17  # more than the rows a writer holds before it writes them (Parquet: 65,536)


class Places:
    """The input places of the latest rows given to a writer (output rows numbered from 1):
    stdin cannot be read again to find the record a misfit value came from."""

    def __init__(self) -> None:
        self.kept: deque[Location] = deque(maxlen=PLACES_KEPT)
        self.made = 0

    def rows(self, rows: Iterator[Row], reader: Any) -> Iterator[Row]:
        kept = self.kept
        for row in rows:
            kept.append(reader.location())
            self.made += 1
            yield row

    def of(self, number: int) -> Location | None:
        at = number - (self.made - len(self.kept)) - 1
        return self.kept[at] if 0 <= at < len(self.kept) else None


def input_of_output_row(job: Job, number: int) -> Location | None:
    """Where the input record that made output row ``number`` is: the job's inputs read again up
    to that row (a writer finds a value it cannot hold rows after its record went by). None when
    the inputs cannot be read twice (stdin, a caller's rows) or the row came at the end (a table)."""
    if job.rows is not None or STDIO in job.inputs:
        return None
    again = Session(job.with_(on_error=OnError.skip, rejects=None), None)  # bad records went by the first time
    result = Result()
    opened: list[RowReader] = []
    steps = steps_for(job.spec, result, lambda: opened[0].location())
    reader = open_rows(job, again.reject, None, result.counts, _findings_of(result))
    opened.append(reader)
    again.where = reader.location
    made = 0
    try:
        for _ in transformed(reader, steps, again):
            made += 1
            if made == number:
                where = reader.location()
                return where if where.source != reader.source else None  # "<inputs>": read to the end
    except CdcError:
        return None
    finally:
        reader.close()
    return None


def _findings_of(result: Result) -> Any:
    """The command's findings (its state's), which a Debezium decoder reports into as well."""
    detail = result.detail
    findings = getattr(detail, "findings", None)
    if findings is None and detail is not None and hasattr(detail, "state"):
        findings = getattr(detail.state, "findings", None)
    return findings


def run(job: Job, current: Session) -> Result:
    result = Result(path="rows")
    opened: list[RowReader] = []
    steps = steps_for(job.spec, result, lambda: opened[0].location())
    steps.fill = job.out_format != "jsonl"
    reader = open_rows(job, current.reject, current.on_bytes, result.counts, _findings_of(result))
    opened.append(reader)
    current.where = reader.location
    if job.out_format not in SHAPED:
        steps.examples = None  # its output shows no columns without rows
    rows = transformed(reader, steps, current)
    if not steps.writes:
        for _ in rows:
            pass
    else:
        first = next(rows, None)  # the first row opens the input: Parquet output learns its types
        rows = chain(() if first is None else (first,), rows)
        empty = _empty_of(steps, reader)
        places = None
        if job.rows is None and STDIO in job.inputs and not getattr(job.spec, "rows_at_end", False):
            places = Places()  # stdin cannot be read again (a table's rows come at the end)
            rows = places.rows(rows, reader)
        try:
            result.counts.written = write_rows(job, current, rows, reader, empty)
        except InputError as err:  # a value the output cannot hold, found rows after it was read
            if err.where is not None and err.where.source == OUTPUT and err.where.row is not None:
                found = places.of(err.where.row) if places is not None else None
                err.where = found or input_of_output_row(job, err.where.row) or err.where
            raise
    result.read = reader.records
    result_skips(current, result)
    return result
