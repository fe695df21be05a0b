"""``--op-mapping`` parsing with Flink's validation rules (FROM_CHANGELOG / TO_CHANGELOG).

An entry is ``'CODES=KIND'`` (from-changelog) or ``'KINDS=CODE'`` (to-changelog), or one JSON
object holding several entries. Keys are comma lists, each part trimmed; Java's ``split(",")``
drops trailing empty parts, and so do we.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from cdc.core.errors import UsageError
from cdc.core.kinds import ALL_KINDS, LONG_NAMES, RowKind, parse_kind_name

DEFAULT_FROM_MAPPING: dict[str, RowKind] = {k.name: k for k in ALL_KINDS}
DEFAULT_TO_MAPPING: dict[RowKind, str] = {k: k.name for k in ALL_KINDS}

_COMMA_LIST_HINT = "map several codes to one operation with a comma-separated key, e.g. --op-mapping 'c, r=INSERT'"


def split_codes(key: str) -> list[str]:
    """``'c, r'`` → ``['c', 'r']``, dropping trailing empty parts like Java's ``String.split``."""
    parts = [p.strip() for p in key.split(",")]
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _entries(raw: Sequence[str], *, kind_on_left: bool) -> Iterable[tuple[str, str]]:
    for text in raw:
        stripped = text.strip()
        if stripped.startswith("{"):
            try:
                obj = json.loads(stripped)
            except ValueError as exc:
                raise UsageError(f"--op-mapping: invalid JSON object {text!r}: {exc}") from exc
            if not isinstance(obj, dict) or not all(isinstance(v, str) for v in obj.values()):
                raise UsageError(f"--op-mapping: expected a JSON object of strings, got {text!r}")
            yield from obj.items()
            continue
        # Kind names never contain '=', so split on the '=' next to the kind side.
        key, sep, value = text.partition("=") if kind_on_left else text.rpartition("=")
        if not sep:
            example = "'INSERT, UPDATE_AFTER=false'" if kind_on_left else "'c, r=INSERT'"
            raise UsageError(f"--op-mapping: expected KEY=VALUE, got {text!r}; e.g. {example}")
        yield key, value


def _kind(name: str, flag: str) -> RowKind:
    kind = parse_kind_name(name)
    if kind is None:
        raise UsageError(
            f"{flag}: unknown change operation {name.strip()!r}; "
            f"valid values are {LONG_NAMES} (or +I, -U, +U, -D); operations are case-sensitive"
        )
    return kind


def parse_from_mapping(raw: Sequence[str]) -> dict[str, RowKind]:
    """``['c, r=INSERT', 'd=DELETE']`` → ``{'c': +I, 'r': +I, 'd': -D}``; default when empty."""
    if not raw:
        return dict(DEFAULT_FROM_MAPPING)
    mapping: dict[str, RowKind] = {}
    seen_kinds: set[RowKind] = set()
    for key, value in _entries(raw, kind_on_left=False):
        kind = _kind(value, "--op-mapping")
        if kind in seen_kinds:
            raise UsageError(f"--op-mapping: duplicate change operation {kind.name!r}", hint=_COMMA_LIST_HINT)
        seen_kinds.add(kind)
        for code in split_codes(key):
            if code in mapping:
                raise UsageError(f"--op-mapping: code {code!r} is mapped twice")
            mapping[code] = kind
    return mapping


def parse_to_mapping(raw: Sequence[str]) -> dict[RowKind, str]:
    """``['INSERT, UPDATE_AFTER=false', 'DELETE=true']`` → ``{+I: 'false', +U: 'false', -D: 'true'}``."""
    if not raw:
        return dict(DEFAULT_TO_MAPPING)
    mapping: dict[RowKind, str] = {}
    for key, value in _entries(raw, kind_on_left=True):
        for name in split_codes(key):
            kind = _kind(name, "--op-mapping")
            if kind in mapping:
                raise UsageError(f"--op-mapping: duplicate change operation {kind.name!r}")
            mapping[kind] = value
    return mapping


def parse_kinds(names: Sequence[str], flag: str) -> set[RowKind]:
    """``--drop UPDATE_BEFORE`` (repeatable, comma lists allowed) → a set of kinds."""
    return {_kind(n, flag) for text in names for n in split_codes(text)}


def is_upsert_mapping(kinds: Iterable[RowKind]) -> bool:
    """Flink: a mapping that produces UPDATE_AFTER but not UPDATE_BEFORE describes upserts."""
    present = set(kinds)
    return RowKind.UPDATE_AFTER in present and RowKind.UPDATE_BEFORE not in present


def reverse_mapping(mapping: Mapping[str, RowKind]) -> dict[RowKind, str]:
    """A from-direction mapping turned around: each kind → its first code."""
    reversed_: dict[RowKind, str] = {}
    for code, kind in mapping.items():
        reversed_.setdefault(kind, code)
    return reversed_


def describe_codes(mapping: Mapping[str, RowKind]) -> str:
    return "[" + ", ".join(mapping) + "]"
