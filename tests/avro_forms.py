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
