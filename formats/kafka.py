"""Kafka topic dumps as people make them, read as the change events they hold.

- ``kcat -C -J``: one JSON object per message, ``{"topic", "partition", "offset", "tstype", "ts",
  "broker", "headers"?, "key", "payload"}`` (kcat's ``json.c``): ``key`` and ``payload`` are the
  message's bytes as a JSON string (or the JSON itself, with Avro deserialisation), ``null``
  when absent — a ``null`` payload is a tombstone.
- ``kafka-console-consumer --property print.key=true``: ``KEY<TAB>VALUE`` per line, ``null`` for an
  absent key or value; ``print.timestamp``, ``print.partition`` and ``print.offset`` add leading
  ``CreateTime:…`` / ``LogAppendTime:…``, ``Partition:…`` and ``Offset:…`` fields.

Each message's value is decoded by the envelope's decoder; ``--metadata kafka.topic=COL`` (and
``kafka.partition``, ``kafka.offset``, ``kafka.timestamp``, ``kafka.timestamp-type``, ``kafka.key``)
adds the message's Kafka fields to its rows. A kcat record is recognised by its fields wherever
events are read; console-consumer lines by their shape (the first line), or ``-i kafka-console``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import orjson

from cdc.core.errors import InputError, UsageError
from cdc.core.model import Row

KAFKA_METADATA = (
    "kafka.topic",
    "kafka.partition",
    "kafka.offset",
    "kafka.timestamp",
    "kafka.timestamp-type",
    "kafka.key",
)
KCAT_FIELDS = frozenset(("topic", "partition", "offset", "payload"))
CONSOLE_MARK = "__kafka_console"
_PREFIX = re.compile(rb"^(CreateTime|LogAppendTime|NO_TIMESTAMP|Partition|Offset):(-?\d*)$")


def is_kcat(event: Any) -> bool:
    return type(event) is dict and event.keys() >= KCAT_FIELDS


def split_metadata(specs: tuple[str, ...]) -> tuple[tuple[str, ...], list[tuple[str, str]]]:
    """The envelope's own metadata requests, and the Kafka ones as (key, column)."""
    from cdc.core.envelopes.base import metadata_column

    own, kafka = [], []
    for spec in specs:
        key, _, column = spec.partition("=")
        key = key.strip()
        if key.startswith("kafka."):
            if key not in KAFKA_METADATA:
                raise UsageError(f"--metadata: no Kafka metadata {key!r}; choose from {', '.join(KAFKA_METADATA)}")
            kafka.append((key, column.strip() or metadata_column(key)))
        else:
            own.append(spec)
    return tuple(own), kafka


def _text(value: Any) -> Any:
    """A message's key: its JSON when it is JSON text, else the text."""
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _timestamp(ms: Any) -> Any:
    if isinstance(ms, int) and not isinstance(ms, bool):
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return None


class KafkaDecoder:
    """An envelope decoder that also takes Kafka records (kcat's, or console lines made into
    one by ``console_lines``): the value is the event, the rest metadata."""

    def __init__(self, inner: Any, kafka: list[tuple[str, str]], counts: Any, console: bool = False):
        self.inner = inner
        self.kafka = kafka
        self.counts = counts
        self.console = console  # console-consumer lines: read through ConsoleStream

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _unwrap(self, record: Row) -> tuple[Any, Row]:
        payload = record.get("payload")
        if isinstance(payload, str):
            from cdc.formats.jsonl import loads  # numbers as written (a NUMERIC decimal's digits)

            try:
                payload = loads(payload.encode())
            except ValueError as exc:
                raise InputError(f"the Kafka message's value is not JSON: {exc}") from None
        return payload, record

    def _meta(self, record: Row) -> Row:
        out: Row = {}
        for key, column in self.kafka:
            if key == "kafka.topic":
                out[column] = record.get("topic")
            elif key == "kafka.partition":
                out[column] = record.get("partition")
            elif key == "kafka.offset":
                out[column] = record.get("offset")
            elif key == "kafka.timestamp":
                out[column] = _timestamp(record.get("ts"))
            elif key == "kafka.timestamp-type":
                out[column] = {"create": "CreateTime", "logappend": "LogAppendTime"}.get(record.get("tstype") or "")
            else:
                out[column] = _text(record.get("key"))
        return out

    def decode(self, event: Row | None, raw: bytes = b"") -> list[Row]:
        if not is_kcat(event):
            if self.kafka:
                raise InputError("--metadata kafka.*: this record is not a Kafka message (kcat -J or console-consumer)")
            rows: list[Row] = self.inner.decode(event, raw)
            return rows
        assert event is not None
        self.counts.notes["kafka messages"] += 1
        value, record = self._unwrap(event)
        rows = self.inner.decode(value, b"")
        if self.kafka and rows:
            meta = self._meta(record)
            clash = set(meta).intersection(rows[0])
            if clash:
                raise InputError(
                    f"metadata column(s) {', '.join(sorted(clash))} collide with the row's columns",
                    hint="name the metadata column: --metadata KEY=COLUMN",
                )
            rows = [{**row, **meta} for row in rows]
        return rows

    def fast_decode(self) -> Callable[[Row | None, bytes], Any]:
        inner = self.inner.fast_decode()
        decode = self.decode
        kafka = self.kafka

        def fast(event: Row | None, raw: bytes = b"") -> Any:
            if kafka or (type(event) is dict and "offset" in event and "topic" in event):
                return decode(event, raw)
            return inner(event, raw)

        return fast

    def reader(self, stream: BinaryIO, source: str, reject: Any = None) -> Any:
        from cdc.formats.debezium import EnvelopeReader

        lines: Any = ConsoleStream(stream) if self.console else stream
        reader = EnvelopeReader(lines, source, reject, self)
        gate = getattr(self.inner, "gate", None)
        if gate is not None:  # the tables' first lines
            gate.where = reader.location
        elif hasattr(self.inner, "where"):  # an envelope decided at the first event
            self.inner.where = reader.location
        return reader


def console_line(line: bytes) -> bytes:
    """One console-consumer line as a kcat-like record (the line as it was when it is not one:
    the JSON reader then says what is wrong with it, at its line)."""
    body = line.rstrip(b"\r")
    if not body.strip():
        return line
    fields = body.split(b"\t")
    record: dict[str, Any] = {CONSOLE_MARK: True, "topic": None, "partition": None, "offset": None}
    while len(fields) > 1:
        m = _PREFIX.match(fields[0])
        if m is None:
            break
        name, value = m.group(1), m.group(2)
        number = int(value) if value else None
        if name in (b"CreateTime", b"LogAppendTime"):
            record["ts"], record["tstype"] = number, "create" if name == b"CreateTime" else "logappend"
        elif name == b"Partition":
            record["partition"] = number
        elif name == b"Offset":
            record["offset"] = number
        fields.pop(0)
    value = fields[-1]
    key = b"\t".join(fields[:-1]) if len(fields) > 1 else None
    record["key"] = None if key is None or key == b"null" else key.decode("utf-8", "replace")
    stripped = value.strip()
    if stripped != b"null" and not stripped.startswith((b"{", b"[", b'"')):
        return line  # not a JSON value: the JSON reader names the line
    record["payload"] = None  # the value's text goes in as it is: its numbers keep their digits
    head = orjson.dumps(record)
    return head[: -len(b"null}")] + (b"null" if stripped == b"null" else stripped) + b"}"


def looks_like_console(line: bytes) -> bool:
    """``KEY<TAB>VALUE`` (or ``VALUE`` after ``CreateTime:…`` fields) whose value is a JSON object or
    ``null`` — a line that is not JSON itself (a JSON value holds no raw tab: the last one splits)."""
    body = line.strip(b"\r\n")
    if b"\t" not in body:
        return False
    try:
        orjson.loads(body)
        return False
    except orjson.JSONDecodeError:
        pass
    value = body.rsplit(b"\t", 1)[1]
    if value.strip() == b"null":
        return True
    try:
        return type(orjson.loads(value)) is dict
    except orjson.JSONDecodeError:
        return False


class ConsoleStream:
    """A binary stream of console-consumer lines, read as kcat-like JSON lines (one for one, so
    every line keeps its number)."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream
        self._rest = b""

    def read(self, size: int = -1) -> bytes:
        while True:
            chunk = self._stream.read(size if size > 0 else -1)
            if not chunk:
                rest, self._rest = self._rest, b""
                return console_line(rest) if rest else b""
            data = self._rest + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                self._rest = data
                continue
            self._rest = data[cut + 1 :]
            return b"\n".join(console_line(line) for line in data[:cut].split(b"\n")) + b"\n"

    def readline(self) -> bytes:
        line = self._stream.readline()
        return console_line(line.rstrip(b"\n")) + (b"\n" if line.endswith(b"\n") else b"")

    def close(self) -> None:
        self._stream.close()

    def __iter__(self) -> Iterator[bytes]:
        while True:
            line = self.readline()
            if not line:
                return
            yield line
