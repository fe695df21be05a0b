"""A result without rows is still a valid file: a CSV header, a Parquet schema.

Its columns are the ones the run would have written: a table's, the input's data columns (a CSV
header or a Parquet schema declares them; JSON lines, the first changes); an aggregate's, the kind
column, the group-by columns and the aggregates; a replay's, the kind column, then the data
columns; from-changelog's and to-changelog's, the input's columns with the kind (or op) column
where a row of theirs has it (JSON lines: the first rows read, whether or not any was kept). Its
Parquet types are the ones the writer would have given them: inferred, as from the rows of a run,
from rows made of the first changes (``Examples``), which are never written; or taken from a
Parquet input's schema. JSON lines without a row (no object at all) show nothing: an empty file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc.core.kinds import KIND_BY_TEXT
from cdc.core.model import Row
from cdc.core.specs import AggregateSpec, FromChangelogSpec, MaterializeSpec, ReplaySpec, ToChangelogSpec
from cdc.engine.commands import lookup

EXAMPLE_ROWS = 1000  # the first changes an empty result's types are inferred from

SHAPED = ("csv", "tsv", "parquet")  # the output formats that show columns without rows


@dataclass
class Empty:
    """What a result without rows shows: its columns, and rows like the ones the run would have
    written (for their types; never written)."""

    columns: list[str]
    examples: list[Row] = field(default_factory=list)


class Examples:
    """The first changes of a job's inputs, whichever path reads them: JSON objects (or table
    rows) with a kind the kind column spells (any row, for plain rows without one), the kind
    column left out."""

    def __init__(self, kind_column: str | None, limit: int = EXAMPLE_ROWS):
        self.kind_column = kind_column
        self.limit = limit
        self.rows: list[Row] = []
        self.full = limit <= 0

    def add(self, row: Any) -> None:
        if self.full or type(row) is not dict:
            return
        kc = self.kind_column
        if kc is not None:
            kind = row.get(kc)
            if type(kind) is not str or kind not in KIND_BY_TEXT:
                return
        self.rows.append({k: v for k, v in row.items() if k != kc})
        self.full = len(self.rows) >= self.limit

    def add_lines(self, chunk: bytes) -> None:
        """The changes among JSON lines (blank and bad lines are none)."""
        if self.full:
            return
        from cdc.formats.jsonl import loads_for

        loads = loads_for(chunk)
        position, size = 0, len(chunk)
        while position < size and not self.full:
            end = chunk.find(b"\n", position)
            end = size if end < 0 else end
            line = chunk[position:end]
            position = end + 1
            if not line.strip():
                continue
            try:
                row = loads(line)
            except ValueError:  # orjson's JSONDecodeError too
                continue
            self.add(row)

    def add_batch(self, batch: Any) -> None:
        """The changes among an Arrow batch's rows."""
        start = 0
        while not self.full and start < len(batch):
            take = self.limit - len(self.rows)
            for row in batch.slice(start, take).to_pylist():
                self.add(row)
            start += take

    def columns(self) -> list[str]:
        """Their columns, in the order they first appear."""
        return list(dict.fromkeys(name for row in self.rows for name in row))


def examples_for(spec: Any, out_format: str | None = None) -> Examples | None:
    """What a job keeps of its first changes for an empty result in ``out_format`` (None: it
    needs nothing)."""
    if out_format is not None and out_format not in SHAPED:
        return None
    shape = lookup(SHAPES, spec)
    return None if shape is None else shape.examples(spec)


def empty_result(
    spec: Any, declared: Sequence[str] | None, examples: Examples | None, metadata: frozenset[str] = frozenset()
) -> Empty | None:
    """The empty result of a job: ``declared``, the columns the input declares (None: JSON
    lines); ``metadata``, the commit columns a table leaves out."""
    rows = examples.rows if examples is not None else []
    names = declared if declared is not None else examples.columns() if examples is not None else []
    shape = lookup(SHAPES, spec)
    return None if shape is None else shape.empty(spec, names, rows, metadata)


def _changelog(spec: Any, names: Sequence[str], rows: list[Row], metadata: frozenset[str]) -> Empty | None:
    """The columns of a replay (the kind column, then the data columns), or of a from-changelog
    or to-changelog of rows with columns ``names`` (the kind or op column where the conversion
    puts it); each example row as the run would have written it, a kind or code in that column."""
    if not names:
        return None  # no row read, no column declared: nothing is known
    columns_of, marker, value = _columns_of(spec)
    made = [{c: value if c == marker else row.get(c) for c in columns_of(list(row))} for row in rows]
    return Empty(columns_of(names), made)


Columns = Callable[[Sequence[str]], list[str]]


def _from_changelog_columns(spec: FromChangelogSpec) -> tuple[Columns, str, str]:
    """The output columns of input rows with these columns; the column of the kind, and a kind."""
    from cdc.core.convert import FromChangelogRow

    of_row, commits = FromChangelogRow(spec).columns, spec.commit_columns
    if not spec.drop_commit_columns:
        return of_row, spec.kind_column, "+I"
    return (lambda names: [n for n in of_row(names) if n not in commits]), spec.kind_column, "+I"  # without them


def _to_changelog_columns(spec: ToChangelogSpec) -> tuple[Columns, str, str]:
    from cdc.core.convert import ToChangelogRow

    return ToChangelogRow(spec).columns, spec.op_column, next(iter(spec.mapping.values()), "")


def _replay_columns(spec: ReplaySpec) -> tuple[Columns, str, str]:
    kc = spec.kind_column
    return (lambda names: [kc, *(n for n in names if n != kc)]), kc, "+I"


def _table(spec: MaterializeSpec, names: Sequence[str], rows: list[Row], metadata: frozenset[str]) -> Empty:
    return Empty([n for n in names if n != spec.kind_column and n not in metadata], rows)


def _aggregate(spec: AggregateSpec, names: Sequence[str], rows: list[Row], metadata: frozenset[str]) -> Empty:
    kc, query = spec.kind_column, spec.query
    made = [{kc: "+I", **query.example_row(row)} for row in rows or [{}]]  # COUNT is an integer all the same
    return Empty([kc, *query.columns], made)


def _changes_examples(spec: Any) -> Examples:
    """The first changes: rows with a kind column, or plain rows (``--input-mode``)."""
    return Examples(spec.kind_column if spec.input_mode == "changelog" else None)


@dataclass(frozen=True)
class Shape:
    """A command's empty result: what it keeps of its first rows, and the result made of them
    (spec, names, example rows, metadata columns); its columns (``columns``: output columns of
    input columns, the kind or op column, a kind written in it)."""

    examples: Callable[[Any], Examples]
    empty: Callable[[Any, Sequence[str], list[Row], frozenset[str]], Empty | None] = _changelog
    columns: Callable[[Any], tuple[Columns, str, str]] | None = None


def _columns_of(spec: Any) -> tuple[Columns, str, str]:
    shape = lookup(SHAPES, spec)
    assert shape is not None and shape.columns is not None
    return shape.columns(spec)


def _every_row(spec: Any) -> Examples:
    return Examples(None)  # every row read shows its columns, kept, dropped or bad


# The commands whose result without rows shows columns (the others: none).
SHAPES: dict[type, Shape] = {
    MaterializeSpec: Shape(lambda spec: Examples(spec.kind_column), _table),
    AggregateSpec: Shape(_changes_examples, _aggregate),
    ReplaySpec: Shape(_changes_examples, columns=_replay_columns),
    FromChangelogSpec: Shape(_every_row, columns=_from_changelog_columns),
    ToChangelogSpec: Shape(_every_row, columns=_to_changelog_columns),
}
