"""The stateless conversions: FROM_CHANGELOG and TO_CHANGELOG, row by row.

Rows are plain dicts. A bad row is raised as an ``InputError`` unless a ``reject`` callback is
given (``--on-error skip``), which records it; the caller attaches the location.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc.core.errors import InputError
from cdc.core.kinds import KIND_BY_TEXT, RowKind
from cdc.core.mapping import describe_codes
from cdc.core.stats import Counts

Row = dict[str, Any]
Reject = Callable[[InputError], None]
_MISSING = object()


@dataclass(frozen=True)
class FromChangelogSpec:
    op_column: str
    mapping: Mapping[str, RowKind]
    kind_column: str = "op"
    keys: tuple[str, ...] = ()
    drop: frozenset[RowKind] = field(default_factory=frozenset)


@dataclass(frozen=True)
class ToChangelogSpec:
    mapping: Mapping[RowKind, str]
    op_column: str = "op"
    kind_column: str = "op"
    drop: frozenset[RowKind] = field(default_factory=frozenset)


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
    return InputError(
        f"invalid op code {code!r} in column {column!r}; defined op codes are {describe_codes(mapping)}",
        hint="map it with --op-mapping 'CODE=KIND', or skip such rows with --on-error skip",
    )


def from_changelog(
    rows: Iterable[Row], spec: FromChangelogSpec, counts: Counts, reject: Reject | None = None
) -> Iterator[Row]:
    """Append-only rows with an op-code column → changelog rows (kind column first)."""
    op, kc, keys = spec.op_column, spec.kind_column, spec.keys
    # Plain str values keep the hot loop and the JSON encoder on their fastest paths.
    lookup: dict[str, str | None] = {
        code: (None if kind in spec.drop else kind.value) for code, kind in spec.mapping.items()
    }
    by_kind = counts.by_kind
    for row in rows:
        code = row.get(op, _MISSING)
        kind = lookup.get(code, _MISSING) if type(code) is str else _MISSING  # type: ignore[call-overload]
        if kind is _MISSING:
            err = bad_op_code(code, op, spec.mapping)
            if reject is None:
                raise err
            reject(err)
            continue
        if not isinstance(kind, str):
            counts.dropped += 1
            continue
        if kc != op and kc in row:
            raise InputError(
                f"input column {kc!r} collides with the kind column",
                hint="rename the kind column with --kind-column NAME",
            )
        if keys:
            out: Row = {kc: kind}
            for key in keys:
                if key not in row:
                    raise InputError(f"key column {key!r} does not exist in this row")
                out[key] = row[key]
            out.update(row)
        else:
            out = {kc: kind, **row}
        if kc == op:
            out[kc] = kind  # the op column's slot now holds the kind
        else:
            del out[op]
        by_kind[kind] += 1
        yield out
    counts.written = sum(by_kind.values())


def read_kind(row: Mapping[str, Any], kind_column: str) -> RowKind:
    """The kind of a changelog row, or an InputError saying what is wrong with it."""
    text = row.get(kind_column, _MISSING)
    kind = KIND_BY_TEXT.get(text) if type(text) is str else None
    if kind is None:
        raise bad_kind(text, kind_column)
    return kind


def bad_kind(text: object, kind_column: str) -> InputError:
    if text is _MISSING:
        return InputError(
            f"kind column {kind_column!r} does not exist in this row",
            hint="changelog rows carry their kind in a column (+I/-U/+U/-D); name it with --kind-column NAME",
        )
    if text is None:
        return InputError(f"NULL row kind in column {kind_column!r}")
    return InputError(
        f"invalid row kind {text!r} in column {kind_column!r}; expected one of "
        "+I, -U, +U, -D or INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE"
    )


def to_changelog(
    rows: Iterable[Row], spec: ToChangelogSpec, counts: Counts, reject: Reject | None = None
) -> Iterator[Row]:
    """Changelog rows → append-only rows with an op column first; unmapped kinds are dropped."""
    kc, op = spec.kind_column, spec.op_column
    lookup: dict[str, tuple[str, str | None]] = {}
    for text, kind in KIND_BY_TEXT.items():
        code = None if kind in spec.drop else spec.mapping.get(kind)
        lookup[text] = (kind.value, code)
    by_kind = counts.by_kind
    for row in rows:
        text = row.get(kc, _MISSING)
        entry = lookup.get(text) if type(text) is str else None
        if entry is None:
            err = bad_kind(text, kc)
            if reject is None:
                raise err
            reject(err)
            continue
        kind_text, code = entry
        if code is None:
            counts.dropped += 1
            continue
        if op != kc and op in row:
            raise InputError(
                f"input column {op!r} collides with the output op column",
                hint="choose another name with --op NAME",
            )
        out: Row = {op: code, **row}
        if op == kc:
            out[op] = code
        else:
            del out[kc]
        by_kind[kind_text] += 1
        yield out
    counts.written = sum(by_kind.values())


def split_changes(rows: Iterable[Row], kind_column: str, reject: Reject | None = None) -> Iterator[tuple[str, Row]]:
    """Changelog rows → ``(kind, image)`` pairs; the image is the row without its kind column."""
    for row in rows:
        text = row.get(kind_column, _MISSING)
        kind = KIND_BY_TEXT.get(text) if type(text) is str else None
        if kind is None:
            err = bad_kind(text, kind_column)
            if reject is None:
                raise err
            reject(err)
            continue
        image = dict(row)
        del image[kind_column]
        yield kind.value, image
