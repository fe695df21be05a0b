"""Debezium's unavailable-value placeholder, in every form a column type gives it.

A value Debezium could not read — PostgreSQL's unchanged TOASTed values under REPLICA IDENTITY
DEFAULT, Oracle's unchanged LOBs, MySQL's NOBLOB images — is sent as the placeholder
(``unavailable.value.placeholder``, default ``__debezium_unavailable_value``), converted to the
column's type (Debezium's ``UnchangedToastedPlaceholder``, ``PostgresValueConverter``):

- text, json, xml, … and bytea under ``binary.handling.mode=hex|base64``: the text itself;
- bytea under ``bytes`` (the default): its UTF-8 bytes, which Kafka Connect's JSON writes as base64
  (under ``hex``, ``base64`` and ``base64-url-safe`` Debezium sends the text itself);
- text/varchar/json arrays: ``[placeholder]``; bytea arrays: ``[base64 of its bytes]``;
- int/date arrays and bigint arrays: its bytes as (signed, Java) integers;
- uuid arrays: ``[UUID.nameUUIDFromBytes(its bytes)]``;
- hstore: the map ``{placeholder: placeholder}``, or that map as JSON text (``hstore.handling.mode=json``).

Only before images and the after images of updates carry it: in an insert or a snapshot read
the same text is the column's real value.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from typing import Any

DEFAULT = "__debezium_unavailable_value"


def _java_uuid(raw: bytes) -> str:
    """Java's ``UUID.nameUUIDFromBytes``: the MD5 of the bytes as a version-3 UUID."""
    digest = bytearray(hashlib.md5(raw).digest())  # noqa: S324 - Java's name-based UUID is MD5
    digest[6] = (digest[6] & 0x0F) | 0x30
    digest[8] = (digest[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(digest)))


class Placeholder:
    """Recognises the placeholder ``text`` in each of its per-type forms."""

    def __init__(self, text: str = DEFAULT):
        self.text = text
        raw = text.encode()
        b64 = base64.b64encode(raw).decode()
        url = base64.urlsafe_b64encode(raw).decode()
        hstore = json.dumps({text: text}, separators=(",", ":"), ensure_ascii=False)
        self.scalars = frozenset({text, b64, url, b64.rstrip("="), url.rstrip("="), hstore})
        integers = [b - 256 if b > 127 else b for b in raw]
        uuid_text = _java_uuid(raw)
        self.lists = ([text], [b64], [url], integers, [uuid_text])
        self.map = {text: text}
        # What a JSON line holding a form surely contains (long needles: bytes.find skips faster):
        # the quoted text (also in an array or a map), base64 bytes, hstore as JSON text, the
        # integers (compact or spaced), the UUID.
        ints = ",".join(map(str, integers))
        quoted, hstore_text = json.dumps(text, ensure_ascii=False), json.dumps(hstore, ensure_ascii=False)[1:-1]
        forms = (quoted, b64.rstrip("="), url.rstrip("="), hstore_text, ints, uuid_text)
        self.markers = tuple(dict.fromkeys(m.encode() for m in (*forms, ints.replace(",", ", "))))

    def matches(self, value: Any) -> bool:
        kind = type(value)
        if kind is str:
            return bool(value in self.scalars)
        if kind is list:
            return bool(value) and bool(value in self.lists)
        if kind is dict:
            return bool(value == self.map)
        return False

    def columns(self, image: Any) -> list[str]:
        """The columns of ``image`` that hold the placeholder, in any form."""
        if not isinstance(image, dict):
            return []
        matches = self.matches
        return [c for c, v in image.items() if v is not None and matches(v)]

    def marked(self, image: Any) -> Any:
        """``image`` with each placeholder form replaced by the placeholder text (one form for
        the state that rebuilds them); the same object when it holds none."""
        found = self.columns(image)
        if not found:
            return image
        out = dict(image)
        for c in found:
            out[c] = self.text
        return out

    def in_line(self, line: bytes) -> bool:
        """Whether a JSON line may hold the placeholder in some form (no false negatives for
        JSON as Kafka Connect writes it; a false positive only sends the line the general way)."""
        return any(m in line for m in self.markers)
