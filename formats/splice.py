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
from collections.abc import Mapping
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
_BLANK_LINE = re.compile(b"\n\n")  # sre finds it three times faster than `in` (memchr on the first byte)


def _count_lines(chunk: bytes) -> int:
    return chunk.count(b"\n") + (not chunk.endswith(b"\n"))


def _has_whitespace(text: bytes) -> bool:
    return b" " in text or b"\t" in text or b"\r" in text


class _Lines:
    """Decodes every line of a chunk — exactly one JSON value a line — as ``kind``."""

    def __init__(self, kind: Any):
        self.each = msgspec.json.Decoder(kind)
        self.array = msgspec.json.Decoder(list[kind])  # type: ignore[valid-type]

    def __call__(self, chunk: bytes, compact: bool) -> tuple[list[Any], bytes, bytes] | None:
        """The values, and the chunk as text: the lines joined without the last newline, each
        row starting after the returned separator; with ``compact``, with no whitespace between
        tokens. Input that is compact already (Kafka's JSON converter writes it so) is decoded
        line by line in one call; anything else as one JSON array, so that a blank line or two
        values on one line fail to decode rather than shift the count of values."""
        lines = _count_lines(chunk)
        body = chunk[:-1] if chunk.endswith(b"\n") else chunk
        try:
            if not _has_whitespace(chunk):
                if chunk[:1] == b"\n" or _BLANK_LINE.search(chunk):
                    return None  # a blank line: a tombstone to count, or nothing; the general way
                values, text, separator = self.each.decode_lines(chunk), body, b"\n{"
            else:
                array = b"[" + body.replace(b"\n", b",") + b"]"
                if compact:
                    array = _format(array, indent=-1)
                values, text, separator = self.array.decode(array), array[1:-1], b",{"
        except _Errors:
            return None
        return (values, text, separator) if len(values) == lines else None


def _disguised_names(body: bytes, *names: str) -> bool:
    if b"\\" not in body or b"\\u" not in body:  # one byte is found ten times faster than two
        return False
    return not all(name.isascii() for name in names) or _ASCII_ESCAPE.search(body) is not None


def _one_column(name: str) -> _Lines:
    """Decodes JSON objects to one string-valued key of each (the rest is checked and skipped)."""
    return _Lines(msgspec.defstruct("OneColumn", [("value", str)], rename={"value": name}))


def compact_rows(rows: bytes, count: int) -> bytes:
    """``count`` JSON objects, one per line → the same objects with no whitespace between tokens."""
    if b" " not in rows and b"\t" not in rows:
        return rows
    array = _format(b"[" + rows[:-1].replace(b"\n", b",") + b"]", indent=-1)
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
        self.decode = _one_column(column)
        self.key = orjson.dumps(column)
        self.name_key = orjson.dumps(name) if name != column else b""
        self.member = {code: self.key + b":" + orjson.dumps(code) for code in codes}
        # One pass takes every member out with the comma before it; a member first in its row
        # goes with the comma after it (a second pass, only when there are such rows).
        either = b"(?:" + b"|".join(re.escape(m) for m in self.member.values()) + b")"
        self.after_comma = re.compile(b"," + either)
        self.first_member = re.compile(b"\\{" + either + b",")
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
        if _disguised_names(chunk, self.column, self.name):
            return None
        decoded = self.decode(chunk, compact=True)
        if decoded is None:
            return None
        rows, text, separator = decoded
        lines = len(rows)
        if text.count(b"{") != lines:
            return None  # nested objects (the name could be a key inside), a non-object line
        if self.name_key and self.name_key in text:
            return None
        codes = list(map(attrgetter("value"), rows))
        present = set(codes)
        if not present <= self.member.keys():
            return None
        # Without nested objects every `"column":` is a member of a row.
        text = self.after_comma.sub(b"", text)
        if self.key + b":" in text:
            text = self.first_member.sub(b"{", text)
            if self.key + b":" in text:
                return None  # a row holding nothing but the column
        members = text[1:].split(separator)  # each row's members and closing brace
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
        self.decode = _Lines(_Event)
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
        if _declined(chunk, self.kind_column):
            return None
        # The kind column must not be a column of any image: "op" may occur once a line, as the op.
        if chunk.count(self.kind_key) != (_count_lines(chunk) if self.kind_column == "op" else 0):
            return None
        decoded = self.decode(chunk, compact=False)
        if decoded is None:
            return None
        events = decoded[0]
        lines = len(events)
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
