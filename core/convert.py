"""The stateless conversions: FROM_CHANGELOG and TO_CHANGELOG, row by row.

Rows are plain dicts. A bad row is raised as an ``InputError`` unless a ``reject`` callback is
given (``--on-error skip``), which records it; the caller attaches the location.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from cdc.core.errors import InputError, UsageError
from cdc.core.kinds import KIND_BY_TEXT, RowKind
from cdc.core.mapping import (
    describe_codes,
    is_upsert_mapping,
    parse_from_mapping,
    parse_kinds,
    parse_to_mapping,
    reverse_mapping,
)
from cdc.core.model import Row
from cdc.core.presets import get_preset
from cdc.core.rowstore import missing_key
from cdc.core.specs import FromChangelogSpec, ToChangelogSpec
from cdc.core.stats import Counts

_MISSING = object()
UPSERT_NEEDS_KEY = (
    "an op mapping that produces UPDATE_AFTER without UPDATE_BEFORE describes an upsert changelog and requires a key"
)


def from_changelog_spec(
    op: str | None = None,
    op_mapping: Sequence[str] = (),
    preset: str | None = None,
    keys: Sequence[str] = (),
    drop: Sequence[str] = (),
    kind_column: str = "op",
    commit_columns: Sequence[str] | None = None,
    drop_commit_columns: bool = False,
) -> FromChangelogSpec:
    """The spec of a FROM_CHANGELOG job, from flags: a preset sets the op column, the mapping
    and a change feed's commit columns; explicit flags override it; an upsert mapping needs its
    key (Flink's PARTITION BY)."""
    chosen = get_preset(preset) if preset else None
    if op_mapping:
        mapping = parse_from_mapping(op_mapping)
    elif chosen is not None:
        mapping = dict(chosen.mapping)
    else:
        mapping = parse_from_mapping([])
    if is_upsert_mapping(mapping.values()) and not keys:
        raise UsageError(
            UPSERT_NEEDS_KEY,
            hint="give the upsert key with --key COLUMN (Flink's PARTITION BY), "
            "or map a code to UPDATE_BEFORE for retract semantics",
        )
    commits = tuple(commit_columns) if commit_columns is not None else (chosen.commit_columns if chosen else ())
    if drop_commit_columns and not commits:
        raise UsageError("--drop-commit-columns: no commit columns", hint="name them with --commit-columns COLS")
    return FromChangelogSpec(
        op_column=op or (chosen.op_column if chosen else "op"),
        mapping=mapping,
        kind_column=kind_column,
        keys=tuple(dict.fromkeys(keys)),
        drop=frozenset(parse_kinds(drop, "--drop")),
        commit_columns=commits,
        pair_key=chosen.pair_key if chosen and commits else (),  # the key a commit's images pair by
        drop_commit_columns=drop_commit_columns,
    )


def to_changelog_spec(
    op: str | None = None,
    op_mapping: Sequence[str] = (),
    preset: str | None = None,
    drop: Sequence[str] = (),
    kind_column: str = "op",
) -> ToChangelogSpec:
    """The spec of a TO_CHANGELOG job, from flags; a preset's mapping is turned around."""
    chosen = get_preset(preset) if preset else None
    if op_mapping:
        mapping = parse_to_mapping(op_mapping)
    elif chosen is not None:
        mapping = reverse_mapping(chosen.mapping)
    else:
        mapping = parse_to_mapping([])
    return ToChangelogSpec(
        mapping=mapping,
        op_column=op or (chosen.op_column if chosen else "op"),
        kind_column=kind_column,
        drop=frozenset(parse_kinds(drop, "--drop")),
    )


def type_name(value: object) -> str:
    """A JSON-ish name for a value's type, for messages."""
    return {bool: "boolean", int: "number", float: "number", str: "string", dict: "object", list: "array"}.get(
        type(value), type(value).__name__
    )


def bad_op_code(code: object, column: str, mapping: Mapping[str, RowKind]) -> InputError:
    if code is _MISSING:
        return InputError(
            f"op column {column!r} does not exist in this row",
            hint="name the op column with --op COLUMN (or pick a --preset)",
        )
    if code is None:
        return InputError(f"NULL op code in column {column!r}; every changelog row must carry an operation code")
    if not isinstance(code, str):
        return InputError(f"op column {column!r} must be of STRING type, but was {type_name(code)} ({code!r})")
    if code in KIND_BY_TEXT and code not in mapping:  # +I/-U/+U/-D: Flink's own short kinds
        hint = "these are Flink's row kinds: --preset flink-short maps +I -U +U -D"
    else:
        hint = "map it with --op-mapping 'CODE=KIND', or skip such rows with --on-error skip"
    return InputError(
        f"invalid op code {code!r} in column {column!r}; defined op codes are {describe_codes(mapping)}", hint=hint
    )


class FromChangelogRow:
    """One append-only row → its changelog row, or nothing (dropped); bad rows raise InputError.

    A callable object so that the same logic serves the row stream and the parallel chunk path;
    everything a row needs is looked up once, here, because this runs once per row.
    """

    def __init__(self, spec: FromChangelogSpec, counts: Counts | None = None):
        self.spec = spec
        self.counts = counts if counts is not None else Counts()
        # Plain str values keep the hot loop and the JSON encoder on their fastest paths.
        self.lookup: dict[str, str] = {c: k.value for c, k in spec.mapping.items() if k not in spec.drop}
        self.op, self.kc, self.keys = spec.op_column, spec.kind_column, spec.keys
        self.simple = self.kc == self.op and not self.keys

    def __call__(self, row: Row, raw: bytes = b"") -> tuple[Row, ...]:
        code = row.get(self.op)
        kind = self.lookup.get(code) if type(code) is str else None  # type: ignore[arg-type]
        if kind is None:
            return self._unmapped(row)
        if self.simple:
            out = {self.kc: kind, **row}
            out[self.kc] = kind  # the op column's slot, first, now holds the kind
        else:
            out = self._reshape(row, kind)
        self.counts.by_kind[kind] += 1
        return (out,)

    def columns(self, names: Sequence[str]) -> list[str]:
        """The output columns of input rows with these columns."""
        rest = [n for n in names if n != self.op and n not in self.keys]
        return [self.kc, *self.keys, *rest]

    def _unmapped(self, row: Row) -> tuple[Row, ...]:
        code = row.get(self.op, _MISSING)
        if type(code) is str and code in self.spec.mapping:  # mapped to a dropped kind
            self.counts.dropped += 1
            return ()
        raise bad_op_code(code, self.op, self.spec.mapping)

    def _reshape(self, row: Row, kind: str) -> Row:
        kc, op = self.kc, self.op
        if kc != op and kc in row:
            raise kind_collision(kc)
        out: Row = {kc: kind}
        for key in self.keys:
            if key not in row:
                raise missing_key(key, row)
            out[key] = row[key]
        out.update(row)
        if kc == op:
            out[kc] = kind
        else:
            del out[op]
        return out


def from_changelog(rows: Iterable[Row], spec: FromChangelogSpec, counts: Counts) -> Iterator[Row]:
    """Append-only rows with an op-code column → changelog rows (kind column first); a bad row
    raises ``InputError`` (the engine decides whether it fails the run or is set aside)."""
    convert = FromChangelogRow(spec, counts)
    for row in rows:
        yield from convert(row)
    counts.written = sum(counts.by_kind.values())


def kind_collision(kind_column: str) -> InputError:
    """A data column named like the kind column: never read as the row kind, never overwritten."""
    return InputError(
        f"input column {kind_column!r} collides with the kind column",
        hint="rename the kind column with --kind-column NAME",
    )


def read_kind(row: Mapping[str, Any], kind_column: str) -> RowKind:
    """The kind of a changelog row, or an InputError saying what is wrong with it."""
    text = row.get(kind_column, _MISSING)
    kind = KIND_BY_TEXT.get(text) if type(text) is str else None
    if kind is None:
        raise bad_kind(text, kind_column, row)
    return kind


def bad_kind(text: object, kind_column: str, row: Mapping[str, Any] | None = None) -> InputError:
    """Why a changelog row has no kind; ``row`` lets it say what the row is instead (a change
    event to decode, plain rows to map or to read as inserts)."""
    from cdc.core.envelopes.detect import recognise

    envelope = recognise(row) if row is not None else None
    if envelope is not None:
        hint = (
            f"this is a {envelope} change event, not a changelog row: read it with --input-format {envelope} "
            f"(or turn it into changelog rows with cdc decode --envelope {envelope})"
        )
    elif text is _MISSING or (text is not None and row is not None):
        hint = (
            "changelog rows carry their kind in a column (+I/-U/+U/-D): name it with --kind-column NAME; "
            "plain rows with an op-code column: cdc from-changelog maps it (--op, --preset); "
            "plain rows that are all inserts (an append-only table): cdc replay and cdc aggregate read them "
            "with --input-mode append"
        )
    else:
        hint = None
    if text is _MISSING:
        return InputError(f"kind column {kind_column!r} does not exist in this row", hint=hint)
    if text is None:
        return InputError(f"NULL row kind in column {kind_column!r}", hint=hint)
    message = (
        f"invalid row kind {text!r} in column {kind_column!r}; expected one of "
        "+I, -U, +U, -D or INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE"
    )
    return InputError(message, hint=hint if envelope is not None else None)


class ToChangelogRow:
    """One changelog row → its append-only row with the op column first, or nothing (unmapped)."""

    def __init__(self, spec: ToChangelogSpec, counts: Counts | None = None):
        self.spec = spec
        self.counts = counts if counts is not None else Counts()
        self.kc, self.op = spec.kind_column, spec.op_column
        self.lookup: dict[str, tuple[str, str]] = {}  # spelling → (kind, code), mapped kinds only
        for text, kind in KIND_BY_TEXT.items():
            code = None if kind in spec.drop else spec.mapping.get(kind)
            if code is not None:
                self.lookup[text] = (kind.value, code)

    def columns(self, names: Sequence[str]) -> list[str]:
        """The output columns of input rows with these columns."""
        return [self.op, *(n for n in names if n != self.kc)]

    def __call__(self, row: Row, raw: bytes = b"") -> tuple[Row, ...]:
        text = row.get(self.kc)
        entry = self.lookup.get(text) if type(text) is str else None  # type: ignore[arg-type]
        if entry is None:
            text = row.get(self.kc, _MISSING)
            if type(text) is str and text in KIND_BY_TEXT:  # a kind the mapping leaves out
                self.counts.dropped += 1
                return ()
            raise bad_kind(text, self.kc, row)
        kind, code = entry
        op, kc = self.op, self.kc
        out: Row = {op: code, **row}
        if op == kc:
            out[op] = code
        else:
            if op in row:
                raise InputError(
                    f"input column {op!r} collides with the output op column",
                    hint="choose another name with --op NAME",
                )
            del out[kc]
        self.counts.by_kind[kind] += 1
        return (out,)


def to_changelog(rows: Iterable[Row], spec: ToChangelogSpec, counts: Counts) -> Iterator[Row]:
    """Changelog rows → append-only rows with an op column first; unmapped kinds are dropped."""
    convert = ToChangelogRow(spec, counts)
    for row in rows:
        yield from convert(row)
    counts.written = sum(counts.by_kind.values())


_KIND_VALUES = {text: kind.value for text, kind in KIND_BY_TEXT.items()}


def split_change(row: Row, kind_column: str) -> tuple[str, Row]:
    """A changelog row → ``(kind, image)``, the image being the row without its kind column.

    The kind column is popped from the row in place: readers hand out fresh dicts.
    """
    text = row.get(kind_column, _MISSING)
    kind = _KIND_VALUES.get(text) if type(text) is str else None  # type: ignore[arg-type]
    if kind is None:
        raise bad_kind(text, kind_column, row)
    del row[kind_column]
    return kind, row
