"""Real Debezium events (Kafka Connect JsonConverter output, schemas.enable=true) made into every
form Avro events reach a file in, as Confluent's AvroConverter would have written them: the Avro
schema of each Connect schema (``formats.avro_schema.avro_schema``, AvroData's rules) and the same
values as Avro datums, written by fastavro.

Forms: ``framed.bin`` (kcat -f '%R%s'), ``wire.bin`` (kcat -D '\\n'), ``kcat.jsonl`` (kcat -J),
``json.jsonl`` (kcat -J -s value=avro: Avro JSON with value_schema_id), ``schemas/ID.avsc``, and one
container file per run of events of one schema (``container-NNNN.avro``, in stream order: a sink
starts a new file when the schema changes; tombstones, which a container cannot hold, left out).
"""

from __future__ import annotations

import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro

from cdc.formats.avro_schema import avro_datum, avro_schema


def _kcat_string(data: bytes) -> bytes:
    """A message's bytes as kcat's yajl writes them in a JSON string: raw, control bytes escaped."""
    out = bytearray(b'"')
    for b in data:
        if b == 0x22:
            out += b'\\"'
        elif b == 0x5C:
            out += b"\\\\"
        elif b < 0x20:
            out += b"\\u%04x" % b
        else:
            out.append(b)
    return bytes(out + b'"')


def make_forms(events: Path, out: Path) -> dict[str, Any]:
    """Write every form of the events in ``events`` under ``out``; returns what was written."""
    (out / "schemas").mkdir(parents=True, exist_ok=True)
    ids: dict[str, int] = {}
    parsed: dict[int, Any] = {}
    messages: list[tuple[int, bytes, Any] | None] = []
    runs: list[tuple[int, list[Any]]] = []
    for line in events.read_bytes().split(b"\n"):
        line = line.strip()
        if not line:
            continue
        event = json.loads(line, parse_float=Decimal)
        if event is None or event.get("payload") is None:
            messages.append(None)
            continue
        schema = avro_schema(event["schema"])
        text = json.dumps(schema)
        sid = ids.setdefault(text, len(ids) + 1)
        if sid not in parsed:
            parsed[sid] = fastavro.parse_schema(schema)
            (out / "schemas" / f"{sid}.avsc").write_text(text)
        datum = avro_datum(event["schema"], event["payload"])
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed[sid], datum)
        messages.append((sid, b"\0" + sid.to_bytes(4, "big") + buf.getvalue(), datum))
        if not runs or runs[-1][0] != sid:
            runs.append((sid, []))
        runs[-1][1].append(datum)
    with open(out / "framed.bin", "wb") as framed, open(out / "wire.bin", "wb") as wire:
        for m in messages:
            framed.write(b"\xff\xff\xff\xff" if m is None else len(m[1]).to_bytes(4, "big") + m[1])
            if m is not None:
                wire.write(m[1] + b"\n")
    with open(out / "kcat.jsonl", "wb") as kcat, open(out / "json.jsonl", "wb") as avro_json:
        for offset, m in enumerate(messages):
            head = b'{"topic":"t","partition":0,"offset":%d,"tstype":"create","ts":1,"broker":0,"key":null,' % offset
            if m is None:
                kcat.write(head + b'"payload":null}\n')
                avro_json.write(head + b'"payload":null}\n')
                continue
            kcat.write(head + b'"payload":' + _kcat_string(m[1]) + b"}\n")
            text = io.StringIO()
            fastavro.json_writer(text, parsed[m[0]], [m[2]])
            avro_json.write(
                head + b'"payload":' + text.getvalue().strip().encode() + b',"value_schema_id":%d}\n' % m[0]
            )
    containers = []
    for n, (sid, datums) in enumerate(runs, 1):
        path = out / f"container-{n:04d}.avro"
        with open(path, "wb") as f:
            fastavro.writer(f, parsed[sid], datums)
        containers.append(path)
    return {"messages": len(messages), "schemas": len(ids), "containers": containers}


def _arrow_type(avro: Any, named: dict[str, Any]) -> tuple[Any, bool]:
    """parquet-avro's mapping (Kafka Connect's S3 sink, ParquetFormat): (Arrow type, nullable)."""
    import pyarrow as pa

    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        kind, _ = _arrow_type(branches[0], named)
        return kind, "null" in avro
    if isinstance(avro, str):
        if avro in named:
            return named[avro], False
        avro = {"type": avro}
    kind, logical = avro.get("type"), avro.get("logicalType")
    if isinstance(kind, dict | list):
        return _arrow_type(kind, named)
    if kind == "record":
        fields = []
        for f in avro["fields"]:
            t, nullable = _arrow_type(f["type"], named)
            fields.append(pa.field(f["name"], t, nullable))
        struct = pa.struct(fields)
        name = avro["name"] if "." in avro["name"] else f"{avro.get('namespace', '')}.{avro['name']}".lstrip(".")
        named[name] = named[avro["name"]] = struct
        return struct, False
    if kind == "array":
        return pa.list_(_arrow_type(avro["items"], named)[0]), False
    if kind == "map":
        return pa.map_(pa.string(), _arrow_type(avro["values"], named)[0]), False
    if logical == "decimal":
        p, s = int(avro["precision"]), int(avro.get("scale", 0))
        return (pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)), False
    if logical == "date":
        return pa.date32(), False
    if logical == "timestamp-millis":
        return pa.timestamp("ms", tz="UTC"), False
    if logical == "time-millis":
        return pa.time32("ms"), False
    return {
        "boolean": pa.bool_(),
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "bytes": pa.binary(),
        "string": pa.string(),
    }[kind], False


def parquet_of(containers: list[Path], out: Path) -> list[Path]:
    """Parquet files of the envelopes in ``containers`` as Kafka Connect's S3 sink writes them with
    ParquetFormat (parquet-avro: the Avro schema in the footer as ``parquet.avro.schema``, logical
    types as Parquet's): one file per run of one schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    written = []
    for n, path in enumerate(containers, 1):
        with open(path, "rb") as f:
            reader = fastavro.reader(f)
            schema_text = reader.metadata["avro.schema"]
            records = list(reader)
        avro = json.loads(schema_text)
        struct, _ = _arrow_type(avro, {})
        schema = pa.schema(list(struct), metadata={"parquet.avro.schema": schema_text, "writer.model.name": "avro"})
        target = out / f"part-{n:04d}.parquet"
        pq.write_table(pa.Table.from_pylist(records, schema=schema), target)
        written.append(target)
    return written
