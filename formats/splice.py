"""JSON lines → JSON lines a chunk at a time, without turning rows into Python objects.

The stateless conversions only move one column: from-changelog and to-changelog take the op (or
kind) column out of each row and put the mapped value first; debezium-decode puts the kind in
front of the ``before``/``after`` object. So a chunk of ~1 MB is handled with C-speed calls on
whole buffers: msgspec validates every line and reads just the op codes (the rest stays bytes,
``msgspec.Raw``), ``bytes.replace`` takes the op members out, and msgspec's formatter writes the
rows compact, as orjson would. Per row that is well under a microsecond, where
``orjson.loads`` + ``dumps`` take two to four.

A splice answers ``None`` for any chunk it is not sure of — a blank line, an unknown code, a nested
object, a key spelled with ``\\u`` escapes, a Debezium placeholder — and that chunk goes the general
way, line by line, which decides what each line means or how it is wrong. Counts are added only
when a whole chunk succeeds. Values are copied as they were read: number literals keep their
digits (``1.10`` stays ``1.10``, integers of any size stay exact).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any

import msgspec
import orjson

from cdc.core.kinds import KIND_BY_TEXT, RowKind
from cdc.core.stats import Counts

_format = msgspec.json.format
_Errors = (msgspec.DecodeError, msgspec.ValidationError)
# A \u escape of a printable ASCII character could spell a column name in disguise; encoders only
# escape control and non-ASCII characters, so such a chunk is left to the general path.
_ASCII_ESCAPE = re.compile(rb"\\u00[2-7][0-9a-fA-F]")


def _lines_of(chunk: bytes) -> tuple[bytes, int]:
    """The chunk without its final newline, and its number of lines."""
    body = chunk[:-1] if chunk.endswith(b"\n") else chunk
    return body, body.count(b"\n") + 1


def _as_array(body: bytes) -> bytes:
    return b"[" + body.replace(b"\n", b",") + b"]"


def _disguised_names(body: bytes, *names: str) -> bool:
    if b"\\u" not in body:
        return False
    return not all(name.isascii() for name in names) or _ASCII_ESCAPE.search(body) is not None


def _one_column_array(name: str) -> Callable[[bytes], list[Any]]:
    """Decodes a JSON array of objects to one string-valued key of each (the rest is skipped)."""
    struct = msgspec.defstruct("OneColumn", [("value", str)], rename={"value": name})
    return msgspec.json.Decoder(list[struct]).decode  # type: ignore[valid-type]


def compact_rows(rows: bytes, count: int) -> bytes:
    """``count`` JSON objects, one per line → the same objects with no whitespace between tokens."""
    if b" " not in rows and b"\t" not in rows:
        return rows
    array = _format(_as_array(rows[:-1]), indent=-1)
    if array.count(b"{") == count:  # no nested objects: every "},{" is a line break
        return array[1:-1].replace(b"},{", b"}\n{") + b"\n"
    return b"".join(_format(row, indent=-1) + b"\n" for row in rows[:-1].split(b"\n"))


class ColumnSplice:
    """Take column ``column`` out of each row and put ``name: mapped value`` first.

    ``codes`` maps each accepted value (``"INSERT"``) to the kind it counts as and the member to
    write (``"+I"``); a chunk with any other value, or one holding ``name`` already when it differs
    from ``column``, goes the general way (it has an error or a dropped row to report).
    """

    def __init__(self, column: str, name: str, codes: Mapping[str, tuple[str, str]], counts: Counts):
        self.column, self.name = column, name
        self.decode = _one_column_array(column)
        self.key = orjson.dumps(column)
        self.name_key = orjson.dumps(name) if name != column else b""
        self.member = {code: self.key + b":" + orjson.dumps(code) for code in codes}
        self.kind = {code: kind for code, (kind, _) in codes.items()}
        first = {
            code: b"{" + orjson.dumps(name) + b":" + orjson.dumps(text) + b"," for code, (_, text) in codes.items()
        }
        self.first, self.next = first, {code: b"\n" + prefix for code, prefix in first.items()}
        self.counts = counts

    def takes(self, line: bytes) -> bool:
        """The checks of ``__call__`` that one line can fail on its own, at C speed."""
        return (
            line.count(b"{") == 1
            and not _disguised_names(line, self.column, self.name)
            and not (self.name_key and self.name_key in line)
        )

    def __call__(self, chunk: bytes) -> tuple[bytes, int] | None:
        body, lines = _lines_of(chunk)
        if _disguised_names(body, self.column, self.name):
            return None
        try:
            array = _format(_as_array(body), indent=-1)
            if array.count(b"{") != lines:
                return None  # nested objects (the name could be a key inside), two values on a line
            if self.name_key and self.name_key in array:
                return None
            rows = self.decode(array)
        except _Errors:
            return None
        codes = list(map(attrgetter("value"), rows))
        present = set(codes)
        if not present <= self.member.keys():
            return None
        # Without nested objects every `"column":` is a member of a row: take each out with the
        # comma before it, or, first in its row, with the comma after it.
        for code in present:
            array = array.replace(b"," + self.member[code], b"")
        if self.key + b":" in array:
            for code in present:
                array = array.replace(b"{" + self.member[code] + b",", b"{")
            if self.key + b":" in array:
                return None  # a row holding nothing but the column
        members = array[2:-1].split(b",{")  # each row's members and closing brace
        parts: list[bytes] = [b""] * (2 * lines)
        parts[0::2] = list(map(self.next.__getitem__, codes))
        parts[0] = self.first[codes[0]]
        parts[1::2] = members
        parts.append(b"\n")
        for code in present:
            self.counts.by_kind[self.kind[code]] += codes.count(code)
        return b"".join(parts), lines


def from_changelog_splice(
    op_column: str, kind_column: str, mapping: Mapping[str, RowKind], drop: frozenset[RowKind], counts: Counts
) -> ColumnSplice | None:
    if any(kind in drop for kind in mapping.values()):
        return None  # rows to drop: the general path counts them
    codes = {code: (kind.value, kind.value) for code, kind in mapping.items()}
    return ColumnSplice(op_column, kind_column, codes, counts)


def to_changelog_splice(
    kind_column: str, op_column: str, mapping: Mapping[RowKind, str], drop: frozenset[RowKind], counts: Counts
) -> ColumnSplice | None:
    codes = {}
    for text, kind in KIND_BY_TEXT.items():
        code = None if kind in drop else mapping.get(kind)
        if code is None:
            return None  # an unmapped kind is dropped: the general path counts it
        codes[text] = (kind.value, code)
    return ColumnSplice(kind_column, op_column, codes, counts)


_NULL = msgspec.Raw(b"null")


class _Event(msgspec.Struct):
    op: str
    before: msgspec.Raw = _NULL
    after: msgspec.Raw = _NULL


_PLACEHOLDER = b"__debezium_unavailable_value"


def _declined(text: bytes, kind_column: str) -> bool:
    """What makes a Debezium line the splice's to decline, found without parsing it."""
    return _PLACEHOLDER in text or b'"payload"' in text or _disguised_names(text, kind_column)


def _text_image(image: msgspec.Raw) -> bool:
    """An image given as JSON text is MongoDB's, which the general way refuses with a reason."""
    return image != _NULL and bytes(image)[:1] == b'"'


class DebeziumSplice:
    """Chunks of payload-only Debezium events with complete images → changelog lines.

    A chunk with anything else — an envelope, a tombstone, a truncate or message, a placeholder, a
    missing or partial before image — goes the general way (schema, state or an error message).
    """

    def __init__(self, kind_column: str, counts: Counts):
        self.kind_column = kind_column
        self.decode = msgspec.json.Decoder(list[_Event]).decode
        self.keys_of = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
        self.kind_key = orjson.dumps(kind_column)
        self.prefix = {
            kind: b"{" + self.kind_key + b":" + orjson.dumps(kind) + b"," for kind in ("+I", "-U", "+U", "-D")
        }
        self.counts = counts

    def takes(self, line: bytes) -> bool:
        """The checks of ``__call__`` that one line can fail on its own, at C speed."""
        return (
            line.count(self.kind_key) == (1 if self.kind_column == "op" else 0)
            and bool(line.strip())
            and not _declined(line, self.kind_column)
        )

    def __call__(self, chunk: bytes) -> tuple[bytes, int] | None:
        body, lines = _lines_of(chunk)
        if _declined(body, self.kind_column):
            return None
        # The kind column must not be a column of any image: "op" may occur once a line, as the op.
        if body.count(self.kind_key) != (lines if self.kind_column == "op" else 0):
            return None
        try:
            events = self.decode(_as_array(body))
        except _Errors:
            return None
        if len(events) != lines:
            return None
        done = self._rows(events)
        if done is None:
            return None
        rows, inserts, updates, deletes = done
        kinds = self.counts.by_kind
        kinds["+I"] += inserts
        kinds["-U"] += updates
        kinds["+U"] += updates
        kinds["-D"] += deletes
        return compact_rows(b"\n".join(rows) + b"\n", len(rows)), lines

    def _rows(self, events: list[_Event]) -> tuple[list[bytes], int, int, int] | None:
        """Each event's rows, and the numbers of inserts, updates and deletes."""
        insert, before_, after_, delete = (self.prefix[k] for k in ("+I", "-U", "+U", "-D"))
        keys_of = self.keys_of
        rows: list[bytes] = []
        append = rows.append
        n_insert = n_update = n_delete = 0
        for event in events:
            op = event.op
            if op == "c" or op == "r":
                after = bytes(event.after)
                if after[:1] != b"{" or after == b"{}" or _text_image(event.before):
                    return None
                append(after.replace(b"{", insert, 1))
                n_insert += 1
            elif op == "u":
                before, after = bytes(event.before), bytes(event.after)
                if before[:1] != b"{" or after[:1] != b"{" or before == b"{}" or after == b"{}":
                    return None
                if before != after and not keys_of(before).keys() >= keys_of(after).keys():
                    return None
                append(before.replace(b"{", before_, 1))
                append(after.replace(b"{", after_, 1))
                n_update += 1
            elif op == "d":
                before = bytes(event.before)
                if before[:1] != b"{" or before == b"{}" or _text_image(event.after):
                    return None
                append(before.replace(b"{", delete, 1))
                n_delete += 1
            else:
                return None
        return rows, n_insert, n_update, n_delete
