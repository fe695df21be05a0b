"""A ``.json`` file holding one array of objects (pretty-printed or not, as Debezium's docs and
many exports show it), read as the same records as JSON lines: streaming, an element at a time.

A scanner that knows strings and brackets finds where each top-level element starts and ends
(no whole-file list, no whole-file parse); each element's text is then parsed on its own, and
its record is placed at the line where it starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

from cdc.core.errors import InputError

CHUNK = 1 << 20
_SPECIAL = re.compile(rb'["\\\[\]{},\n]')
_WS = b" \t\r\n"


def may_be_array(name: str) -> bool:
    """Inputs read as one JSON array when they start with '[': a ``.json`` file (also compressed)
    and stdin. A ``.jsonl`` file is JSON lines, whatever its first line holds."""
    lower = name.lower()
    for compressed in (".gz", ".zst", ".zstd"):
        lower = lower.removesuffix(compressed)
    return name in ("-", "<stdin>") or lower.endswith(".json")


def starts_array(head: bytes) -> bool:
    """The text's first character (after a BOM and white space) opens an array."""
    return head.removeprefix(b"\xef\xbb\xbf").lstrip(_WS)[:1] == b"["


class Elements:
    """``(text, line)`` of each element of the one top-level array of a stream."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream
        self.line = 1  # the line the scanner is at

    def __iter__(self) -> Iterator[tuple[bytes, int]]:  # noqa: C901 - one state machine
        depth = 0  # 0: before the array; 1: inside it, between elements
        in_string = escaped = False
        started = ended = False
        element = bytearray()
        element_line = 0
        first = True
        while True:
            data = self._stream.read(CHUNK)
            if not data:
                break
            if first:
                data = data.removeprefix(b"\xef\xbb\xbf")
                first = False
            pos = 0
            skip = 1 if escaped else 0  # the character after a backslash is the string's
            escaped = False
            for m in _SPECIAL.finditer(data):
                at = m.start()
                c = data[at : at + 1]
                if at < skip:
                    continue
                if c == b"\n":
                    self.line += 1
                    continue
                if in_string:
                    if c == b"\\":
                        skip = at + 2
                        escaped = at + 1 >= len(data)  # the escaped character is in the next chunk
                    elif c == b'"':
                        in_string = False
                    continue
                if ended:
                    raise InputError("text after the end of the JSON array", hint="a .json file holds one array")
                if depth == 0:
                    if c != b"[" or data[pos:at].strip(_WS):
                        raise InputError("expected a JSON array ('[') or JSON lines")
                    depth, started, pos = 1, True, at + 1
                    continue
                if c == b'"':
                    in_string = True
                    if depth == 1 and not element_line:
                        element_line = self.line
                    continue
                if c in b"[{":
                    if depth == 1:
                        if data[pos:at].strip(_WS):
                            raise InputError(f"unexpected text in the array: {data[pos:at].strip()[:40]!r}")
                        pos, element_line = at, self.line
                        element.clear()
                    depth += 1
                    continue
                if c in b"]}":
                    depth -= 1
                    if depth == 1:  # an element's end
                        element += data[pos : at + 1]
                        yield bytes(element), element_line
                        element.clear()
                        element_line = 0
                        pos = at + 1
                    elif depth == 0:  # the array's end
                        rest = bytes(element) + data[pos:at]
                        if rest.strip(_WS):
                            yield rest.strip(_WS), element_line or self.line
                        element.clear()
                        ended, pos = True, at + 1
                    continue
                if c == b"," and depth == 1:
                    rest = bytes(element) + data[pos:at]
                    if rest.strip(_WS):  # a scalar element (not a record: the reader says so)
                        yield rest.strip(_WS), element_line or self.line
                    element.clear()
                    element_line = 0
                    pos = at + 1
            if depth == 0 and not started:
                if data[pos:].strip(_WS):
                    raise InputError("expected a JSON array ('[') or JSON lines")
            elif ended:
                if data[pos:].strip(_WS):
                    raise InputError("text after the end of the JSON array", hint="a .json file holds one array")
            else:
                element += data[pos:]
                if depth == 1 and not element_line and data[pos:].strip(_WS):
                    element_line = self.line
        if started and not ended:
            raise InputError("the JSON array is never closed (a truncated file?)")


class Prefixed:
    """A stream read on after ``head``, the bytes already taken from it."""

    def __init__(self, head: bytes, stream: BinaryIO):
        self._head = head
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        if self._head:
            head, self._head = self._head, b""
            return head
        return self._stream.read(size)
