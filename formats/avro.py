"""Debezium change events in Avro, in each form they reach a file, read as the events the Debezium
decoder reads (Flink's ``debezium-avro-confluent``; fastavro does the Avro):

- ``container``: an Avro object container file (``Obj\\x01``; Kafka Connect's S3/GCS/HDFS sinks with
  ``AvroFormat``), the schema in its header, read block by block;
- ``framed``: Confluent wire-format messages (magic byte 0, a 4-byte schema id, the Avro binary),
  each after its length as a 4-byte big-endian integer (``0xFFFFFFFF``: a tombstone) — what
  ``kcat -C -f '%R%s'`` writes, and what ``debezium-encode --format avro-confluent`` writes;
- ``wire``: the same messages one after the other with a separator or none (``kcat -C -D SEP``;
  any separator without a NUL byte, the default newline included): a message's end is known
  from its schema, the separator learnt from the first gap;
- ``kcat``: ``kcat -C -J`` lines, the message's bytes as the ``payload`` string;
- ``json``: Avro's JSON encoding (``kcat -s value=avro``: unions wrapped by branch name), with the
  schema from its ``value_schema_id`` (``kcat -J -s value=avro``) or, without one, unwrapped by
  shape with its values raw (logical types need the schema);
- ``parquet``: Parquet files of envelopes (Kafka Connect's S3 sink with ``ParquetFormat``;
  ``parquet.avro.schema`` in the footer names the Connect types).

Each record becomes ``{"schema": CONNECT, "payload": VALUE}`` with the Connect schema of its Avro
schema and the values as the JsonConverter spells them (``formats.avro_schema``): so the same
events decode to the same rows and types as from JSON. Schemas of wire-format messages come from
``formats.schema_registry``. A record is located by its number (``FILE: row N``; JSON forms by
line), and every error names the schema id where there is one.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from cdc.core.errors import InputError, Location
from cdc.core.model import Reject, Row
from cdc.formats.avro_schema import AvroSchemaError, connect_schema, literal_for, reading_schema
from cdc.formats.base import RowReader
from cdc.formats.schema_registry import Schemas, SchemaSources

CONTAINER_MAGIC = b"Obj\x01"
PARQUET_MAGIC = b"PAR1"
TOMBSTONE_LENGTH = 0xFFFFFFFF
AVRO_BRANCHES = frozenset(("null", "boolean", "int", "long", "float", "double", "bytes", "string", "array", "map"))
NO_SCHEMA = "Avro JSON without its schema (values raw)"
BATCH_ROWS = 4096


# -- telling the forms apart ------------------------------------------------------------------


def binary_form(head: bytes) -> str | None:
    """The binary form a stream starts with (its first bytes), or None."""
    if head[:4] == CONTAINER_MAGIC:
        return "container"
    if head[:4] == PARQUET_MAGIC:
        return "parquet"
    if len(head) >= 9 and _frames(head):
        return "framed"
    if len(head) >= 6 and head[0] == 0:
        return "wire"
    return None


def _frames(head: bytes) -> bool:
    """Length-prefixed messages: the first frame a wire message (magic 0) or a tombstone, and the
    next frame's length (where ``head`` reaches it) one that fits."""
    n = int.from_bytes(head[:4], "big")
    if n == TOMBSTONE_LENGTH:
        return len(head) < 8 or _frames(head[4:])
    if n < 6 or head[4] != 0:
        return False
    rest = head[4 + n :]
    if len(rest) < 4:
        return True
    following = int.from_bytes(rest[:4], "big")
    return following == TOMBSTONE_LENGTH or 6 <= following < 1 << 30


def text_form(first: Any) -> str | None:
    """The form of a JSON-lines input, by its first record: ``kcat`` (the payload a wire-format
    message), ``json`` (Avro's JSON encoding), or None (JSON the Debezium decoder reads)."""
    if not isinstance(first, dict):
        return None
    if {"topic", "partition", "offset", "payload"} <= first.keys():
        payload = first.get("payload")
        if isinstance(payload, str) and payload[:1] == "\x00":
            return "kcat"
        if "value_schema_id" in first or (isinstance(payload, dict) and is_avro_json(payload)):
            return "json"
        return None
    return "json" if is_avro_json(first) else None


def is_avro_json(event: dict[str, Any]) -> bool:
    """A Debezium envelope in Avro's JSON encoding: an image or ``ts_ms`` wrapped in its union
    branch (``{"after": {"db.shop.orders.Value": {…}}}``, ``{"ts_ms": {"long": 1}}``)."""
    if "op" not in event:
        return False
    for name in ("before", "after", "ts_ms", "ts_us", "ts_ns"):
        value = event.get(name)
        if isinstance(value, dict) and len(value) == 1:
            branch = next(iter(value))
            if branch in AVRO_BRANCHES or ("." in branch and isinstance(value[branch], dict)):
                return True
    return False


def form_of(head: bytes) -> str | None:
    """The Avro form of an input by its first bytes (a binary form, or the first line's record), or None."""
    form = binary_form(head)
    if form is not None:
        return form
    line = head.split(b"\n", 1)[0].strip().removeprefix(b"\xef\xbb\xbf")
    if not line.startswith(b"{"):
        return None
    try:
        first = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:  # kcat -J writes a message's bytes raw: not UTF-8
            first = orjson.loads(line.decode("latin-1"))
        except orjson.JSONDecodeError:
            return None
    return text_form(first)


def reader_factory(decoder: Any, schemas: Schemas | None) -> Any:
    """``(stream, source, reject) → reader`` of the Avro inputs of a run, decoded by ``decoder``
    (its form told by the stream's first bytes)."""

    def make(stream: BinaryIO, source: str, reject: Reject | None = None) -> AvroEventsReader:
        peekable: Any = stream if hasattr(stream, "peek") else io.BufferedReader(stream)  # type: ignore[arg-type]
        form = form_of(peekable.peek(1 << 16)[: 1 << 16])
        if form is None:
            raise InputError(
                "not Debezium events in Avro: no container file (Obj\\x01), wire-format message (magic byte 0), "
                "Parquet file, kcat -J record or Avro JSON",
                where=Location(source),
            )
        return AvroEventsReader(peekable, source, reject, decoder, schemas, form)

    return make


# -- a writer schema, once per id -------------------------------------------------------------


class WriterSchema:
    """One Avro writer schema: its Connect schema (the event's ``schema``), the schema fastavro
    reads it with (logical types left off), and the spelling of its values."""

    def __init__(self, avro: Any, schema_id: int | None = None):
        import fastavro

        what = f"schema id {schema_id}" if schema_id is not None else "the file's schema"
        try:
            self.connect = connect_schema(avro)
            self.reading = fastavro.parse_schema(reading_schema(avro))
        except AvroSchemaError as exc:
            raise AvroSchemaError(f"{what}: {exc.message}") from None
        except Exception as exc:  # noqa: BLE001 - fastavro's own words for a schema it cannot parse
            raise AvroSchemaError(f"{what} is not a valid Avro schema: {exc}") from None
        _check_envelope(self.connect, what)
        self.literal = literal_for(self.connect)
        self.schema_id = schema_id

    def event(self, record: Any) -> Row:
        payload = self.literal(record) if self.literal is not None else record
        return {"schema": self.connect, "payload": payload}


def _check_envelope(connect: dict[str, Any], what: str) -> None:
    """A Debezium envelope, or a record Debezium writes beside them (a heartbeat, a transaction
    marker, a schema change, a flattened row): the decoder says what each is."""
    names = [f.get("field") for f in connect.get("fields") or []]
    name = str(connect.get("name") or "")
    if connect.get("type") != "struct":
        raise AvroSchemaError(f"{what} is a {connect.get('type')}, not a Debezium envelope (a record)")
    if "op" in names or any(str(n).startswith("__") for n in names):
        return
    if name.endswith(("Heartbeat", "SchemaChangeValue", "TransactionMetadataValue")) or {"status", "id"} <= set(names):
        return
    raise AvroSchemaError(
        f"{what} ({name or 'a record'}) is not a Debezium envelope: its fields are "
        f"{', '.join(map(str, names[:8])) or 'none'}; expected before, after, source, op"
    )


# -- the reader ---------------------------------------------------------------------------------


class AvroEventsReader(RowReader):
    """The changelog rows of one input of Debezium events in Avro (any form), made by the run's
    Debezium decoder."""

    def __init__(
        self,
        stream: BinaryIO,
        source: str,
        reject: Reject | None,
        decoder: Any,
        schemas: Schemas | None,
        form: str,
    ):
        super().__init__(source, reject)
        self.stream: Any = stream if hasattr(stream, "peek") else io.BufferedReader(stream)  # type: ignore[arg-type]
        self.decoder = decoder
        self.schemas = schemas if schemas is not None else SchemaSources().open()
        self.form = form
        self.line: int | None = None  # the JSON forms' line
        self._raw = ""
        self._writers: dict[int, WriterSchema] = {}
        self._fields: Any = None
        _point_at(decoder, self.location)

    def location(self) -> Location:
        if self.line is not None:
            return Location(self.source, line=self.line)
        return Location(self.source, row=self.records or None)

    def raw(self) -> str:
        return self._raw

    @property  # type: ignore[override]
    def arrow_schema(self) -> Any:
        """Column types the envelopes declare (decimals), for Parquet output."""
        fields = getattr(self.decoder, "arrow_fields", None)
        return fields() if fields is not None else None

    @arrow_schema.setter
    def arrow_schema(self, value: Any) -> None:
        pass

    def __iter__(self) -> Iterator[Row]:
        from cdc.formats.logical_types import BadValue

        events = getattr(self, "_" + self.form)()
        decode = self.decoder.decode
        while True:
            try:
                event = next(events)
            except StopIteration:
                return
            except InputError as err:
                if not _can_go_on(self.form):
                    raise err.located(self.location()) from None
                self.bad_record(err)
                continue
            try:
                yield from decode(event, b"")
            except (InputError, BadValue) as exc:
                self.bad_record(exc if isinstance(exc, InputError) else InputError(str(exc)))

    def close(self) -> None:
        self.stream.close()

    # -- a schema by id --------------------------------------------------------------------

    def writer(self, schema_id: int) -> WriterSchema:
        found = self._writers.get(schema_id)
        if found is None:
            try:
                avro = orjson.loads(self.schemas.text(schema_id))
            except orjson.JSONDecodeError as exc:
                raise AvroSchemaError(f"schema id {schema_id} is not JSON: {exc}") from None
            found = self._writers[schema_id] = WriterSchema(avro, schema_id)
        return found

    def message(self, data: bytes) -> Row:
        """One Confluent wire-format message (magic 0, schema id, Avro binary) → its event."""
        import fastavro

        if len(data) < 5 or data[0] != 0:
            found = f"byte 0x{data[0]:02x}" if data else "nothing"
            raise InputError(f"not a Confluent wire-format message: expected the magic byte 0, found {found}")
        schema_id = int.from_bytes(data[1:5], "big")
        writer = self.writer(schema_id)
        body = io.BytesIO(data)
        body.seek(5)
        try:
            record = fastavro.schemaless_reader(body, writer.reading)
        except Exception as exc:  # noqa: BLE001 - fastavro's error for bytes the schema does not read
            raise InputError(f"the message does not read as schema id {schema_id}: {_why(exc)}") from None
        left = len(data) - body.tell()
        if left:
            raise InputError(f"{left} byte(s) left after the record of schema id {schema_id}: not this schema's data")
        return writer.event(record)

    # -- the forms -------------------------------------------------------------------------

    def _container(self) -> Iterator[Row | None]:
        import fastavro

        try:
            source: Any = self.stream if _seekable(self.stream) else _Told(self.stream)
            blocks = fastavro.block_reader(source)
            writer = WriterSchema(orjson.loads(blocks.metadata["avro.schema"]))
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - a header fastavro cannot read
            raise InputError(f"not a readable Avro container file: {_why(exc)}") from None
        number = 0
        while True:
            try:
                block = next(blocks)
            except StopIteration:
                return
            except Exception as exc:  # noqa: BLE001 - a block cut short or corrupt
                raise InputError(
                    f"the file ends inside block {number + 1} (after {self.records} records): truncated ({_why(exc)})"
                ) from None
            number += 1
            data, reading = block.bytes_, writer.reading  # type: ignore[attr-defined]  # the block's records
            for _ in range(block.num_records):
                self.records += 1
                try:
                    record = fastavro.schemaless_reader(data, reading)
                except Exception as exc:  # noqa: BLE001
                    raise InputError(f"block {number} does not read as the file's schema: {_why(exc)}") from None
                yield writer.event(record)

    def _framed(self) -> Iterator[Row | None]:
        read = self.stream.read
        while True:
            head = read(4)
            if not head:
                return
            self.records += 1
            if len(head) < 4:
                raise InputError("the file ends inside a message's length: truncated")
            n = int.from_bytes(head, "big")
            if n == TOMBSTONE_LENGTH:
                self._raw = ""
                yield None
                continue
            data = read(n)
            self._raw = base64.b64encode(data).decode()
            if len(data) < n:
                raise InputError(f"the file ends inside a message ({len(data)} of its {n} bytes): truncated")
            yield self.message(data)

    def _wire(self) -> Iterator[Row | None]:
        import fastavro

        stream = self.stream
        separator: bytes | None = None
        while True:
            head = stream.read(5)
            if not head:
                return
            self.records += 1
            if len(head) < 5 or head[0] != 0:
                if len(head) < 5:
                    raise InputError("the file ends inside a message: truncated")
                raise InputError(
                    f"not a Confluent wire-format message: expected the magic byte 0, found byte 0x{head[0]:02x}"
                    + (f" (after the separator {separator!r})" if separator else "")
                )
            schema_id = int.from_bytes(head[1:5], "big")
            writer = self.writer(schema_id)
            try:
                record = fastavro.schemaless_reader(stream, writer.reading)
            except Exception as exc:  # noqa: BLE001
                raise InputError(f"the message does not read as schema id {schema_id}: {_why(exc)}") from None
            yield writer.event(record)
            gap = _until_nul(stream)
            if not gap:
                continue
            if separator is None:
                separator = gap
            tombstones, rest = divmod(len(gap), len(separator))
            if rest or gap != separator * tombstones:
                raise InputError(
                    f"after message {self.records}: {gap[:16]!r} where the separator {separator!r} was "
                    f"(or the message is not schema id {schema_id}'s data)"
                )
            for _ in range(tombstones - 1):  # kcat -D writes nothing for a null value
                self.records += 1
                yield None

    def _kcat(self) -> Iterator[Row | None]:
        for text in self._lines():
            if not text:
                yield None
                continue
            try:
                record = orjson.loads(text.decode("latin-1"))  # kcat writes the message's bytes raw
            except orjson.JSONDecodeError as exc:
                raise InputError(f"not a kcat -J record: {exc}") from None
            if not isinstance(record, dict) or "payload" not in record:
                raise InputError("not a kcat -J record (no payload)")
            for name in ("topic", "key"):  # the other texts as they were: UTF-8
                if isinstance(record.get(name), str):
                    record[name] = record[name].encode("latin-1").decode("utf-8", "replace")
            payload = record.get("payload")
            if isinstance(payload, str):
                record["payload"] = self.message(payload.encode("latin-1"))
            elif isinstance(payload, dict):
                record["payload"] = self._json_value(payload, record.get("value_schema_id"))
            yield _unkafka(self.decoder, record)

    def _json(self) -> Iterator[Row | None]:
        for text in self._lines():
            if not text:
                yield None
                continue
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                raise InputError(f"not JSON: {exc}") from None
            if isinstance(value, dict) and {"topic", "offset", "payload"} <= value.keys():
                payload = value.get("payload")
                value["payload"] = (
                    self._json_value(payload, value.get("value_schema_id")) if isinstance(payload, dict) else payload
                )
                yield _unkafka(self.decoder, value)
                continue
            if not isinstance(value, dict):
                raise InputError(f"expected a JSON object, found {type(value).__name__}")
            yield self._json_value(value, None)

    def _json_value(self, value: dict[str, Any], schema_id: Any) -> Row:
        """One value in Avro's JSON encoding: read with its schema where its id says which (fastavro's
        JSON decoder), else unwrapped by shape — its values raw, as a schema-less event."""
        if isinstance(schema_id, int) and not isinstance(schema_id, bool) and schema_id >= 0:
            import fastavro

            writer = self.writer(schema_id)
            try:
                record = next(iter(fastavro.json_reader(io.StringIO(orjson.dumps(value).decode()), writer.reading)))
            except Exception as exc:  # noqa: BLE001
                raise InputError(f"the record does not read as schema id {schema_id}: {_why(exc)}") from None
            return writer.event(record)
        counts = getattr(self.decoder, "counts", None)
        if counts is not None and not counts.notes.get(NO_SCHEMA):
            counts.notes[NO_SCHEMA] += 1
        return _unwrapped(value)  # type: ignore[no-any-return]

    def _lines(self) -> Iterator[bytes]:
        """Each line's text (stripped; empty for a blank line: a tombstone, as JSON lines read it)."""
        self.line = 0
        for line in self.stream:
            self.line += 1
            self.records += 1
            text = line.strip()
            if self.line == 1:
                text = text.removeprefix(b"\xef\xbb\xbf")
            self._raw = text.decode("utf-8", "replace")
            yield b"" if text == b"null" else text

    def _parquet(self) -> Iterator[Row | None]:
        import pyarrow.parquet as pq

        from cdc.formats.avro_schema import connect_of_arrow

        source: Any = self.stream
        if not _seekable(source):  # stdin: a Parquet footer is at the end
            source = io.BytesIO(source.read())
        try:
            file = pq.ParquetFile(source)
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"not a readable Parquet file: {_why(exc)}") from None
        metadata = file.schema_arrow.metadata or {}
        avro = metadata.get(b"parquet.avro.schema")
        if avro is not None:
            writer = WriterSchema(orjson.loads(avro))
            connect, literal = writer.connect, writer.literal
        else:
            connect = {
                "type": "struct",
                "fields": [{**connect_of_arrow(f.type, f.nullable), "field": f.name} for f in file.schema_arrow],
                "optional": False,
            }
            _check_envelope(connect, "the Parquet file's columns")
            literal = literal_for(connect)
        for batch in file.iter_batches(batch_size=BATCH_ROWS):
            for record in batch.to_pylist():
                self.records += 1
                yield {"schema": connect, "payload": literal(record) if literal is not None else record}


class _Schemas:
    """A decoder that keeps the Connect schema of each event (``row_types``)."""

    def __init__(self) -> None:
        self.seen: dict[int, Any] = {}
        self.events: list[Any] = []

    def decode(self, event: Any, raw: bytes = b"") -> list[Row]:
        self.events.append(event)
        schema = event.get("schema") if isinstance(event, dict) else None
        if isinstance(schema, dict):
            self.seen.setdefault(id(schema), schema)
        return []


def row_types(path: str, schemas: Schemas | None) -> tuple[dict[str, set[str]], list[Any]]:
    """Column → the Connect types (``int64``, ``string`` …) its Avro writer schemas give it, over an
    input of Debezium events in Avro, and its events as the JSON path reads them (``--print-sql``:
    what Flink's Avro reader will meet)."""
    from cdc.formats.streams import display_name, open_input

    capture = _Schemas()
    reader = reader_factory(capture, schemas)(open_input(path), display_name(path), lambda err, raw: None)
    try:
        for _ in reader:
            pass
    finally:
        reader.close()
    types: dict[str, set[str]] = {}
    for schema in capture.seen.values():
        for part in schema.get("fields") or []:
            if part.get("field") in ("before", "after") and part.get("type") == "struct":
                for f in part.get("fields") or []:
                    types.setdefault(f["field"], set()).add(_type_text(f))
    return types, capture.events


def _type_text(field: dict[str, Any]) -> str:
    """``int64``, ``array<int64>``: a Connect field's type with its items'."""
    kind = str(field.get("type"))
    items = field.get("items")
    return f"{kind}<{_type_text(items)}>" if kind == "array" and isinstance(items, dict) else kind


def _can_go_on(form: str) -> bool:
    """After a bad message, the next one can be found (its length or line is known)."""
    return form in ("framed", "kcat", "json")


def _until_nul(stream: Any) -> bytes:
    """The bytes before the next NUL (a wire message's magic) or the end, consumed."""
    gap: bytes = b""
    while True:
        ahead = stream.peek(1)
        if not ahead:
            return gap
        cut = ahead.find(b"\x00")
        if cut == 0:
            return gap
        take = len(ahead) if cut < 0 else cut
        gap += stream.read(take)
        if cut >= 0:
            return gap


class _Told:
    """A pipe that says how far it has been read (fastavro asks a block's offset)."""

    def __init__(self, stream: Any):
        self._stream = stream
        self._at = 0

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._stream.read(size)
        self._at += len(data)
        return data

    def tell(self) -> int:
        return self._at


def _seekable(stream: Any) -> bool:
    try:
        return bool(stream.seekable())
    except (AttributeError, ValueError):
        return False


def _why(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _unwrapped(value: Any) -> Any:
    """A value of Avro's JSON encoding without its schema: a union's ``{"branch": value}`` is the
    value; ``bytes`` are spelled base64 (the JsonConverter's spelling)."""
    if isinstance(value, dict):
        if len(value) == 1:
            branch, inner = next(iter(value.items()))
            if branch == "bytes" and isinstance(inner, str):
                return base64.b64encode(inner.encode("latin-1")).decode()
            if branch in AVRO_BRANCHES or ("." in branch and isinstance(inner, dict)):
                return _unwrapped(inner)
        return {k: _unwrapped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrapped(v) for v in value]
    return value


def _unkafka(decoder: Any, record: Row) -> Any:
    """A Kafka record for a decoder that takes them (``--metadata kafka.*``, ``formats.kafka``),
    else its value."""
    from cdc.formats.kafka import KafkaDecoder

    d = decoder
    while d is not None:
        if isinstance(d, KafkaDecoder):
            return record
        d = d.__dict__.get("inner")
    return record.get("payload")


def _point_at(decoder: Any, where: Any) -> None:
    """Findings and table gates name the record this reader is at."""
    d = decoder
    while d is not None and hasattr(d, "__dict__"):
        gate = d.__dict__.get("gate")
        if gate is not None:
            gate.where = where
        if "where" in d.__dict__:
            d.where = where
        d = d.__dict__.get("inner")
