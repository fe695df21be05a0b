"""A job's inputs: their formats (named, by suffix, or sniffed on stdin) and their rows.

Commands that read changelog rows also read change events decoded on the way in
(``--input-format debezium``); commands that decode read the events themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from cdc.core.envelopes.detect import choose_envelope, envelope_message, looks_like_envelope
from cdc.core.errors import InputError, Location, UsageError
from cdc.core.model import Reject, Row
from cdc.core.presets import COMMIT_COLUMNS
from cdc.core.specs import CHANGELOG, EVENTS, DecodeSpec, FromChangelogSpec, InspectSpec, MaterializeSpec, Tables
from cdc.core.stats import Counts
from cdc.engine.commands import lookup
from cdc.engine.job import Job
from cdc.engine.paths.native.kernel import count_lines
from cdc.formats.base import RowReader
from cdc.formats.envelopes import ENVELOPES, Gated, decoder_for
from cdc.formats.json_array import may_be_array
from cdc.formats.kafka import KafkaDecoder
from cdc.formats.registry import AVRO, INPUT_FORMATS, format_of, input_format, open_inputs, output_format, sniff_stdin
from cdc.formats.stream_schema import StreamSchema, is_schema_line, wanted
from cdc.formats.streams import STDIO, display_name

SINK = "rows"  # the output format of a job whose rows go to a caller's sink
KAFKA_DUMPS = ("kcat", "kafka-console")  # -i of decode: events in a Kafka dump
# Commands that keep state yet read a stream of several tables (they list them): inspect.
LISTS_TABLES: dict[type, bool] = {InspectSpec: True}


def input_choices(spec: Any) -> tuple[str, ...]:
    """The formats a spec's input may be in."""
    if spec.reads == EVENTS:
        return ("jsonl", *ENVELOPES, *KAFKA_DUMPS)
    if spec.reads == CHANGELOG:
        return (*INPUT_FORMATS, *ENVELOPES)
    return INPUT_FORMATS


def resolve(job: Job) -> Job:
    """The job with every input's format and the output's format decided (and ``--envelope
    auto`` from the first record, where it can be read ahead)."""
    unnamed = job.sink is None and not job.output_format and _special_unnamed(job.output)
    out_format = SINK if job.sink is not None else "jsonl" if unnamed else output_format(job.output, job.output_format)
    if job.rows is not None:
        return job.with_(formats=(SINK,), out_format=out_format)
    spec = job.spec
    choices = input_choices(spec)
    formats = []
    if spec.reads == EVENTS and job.input_format in KAFKA_DUMPS:
        spec = replace(spec, container=job.input_format)
        job = job.with_(input_format="jsonl")
    for path in job.inputs:
        if spec.reads == EVENTS and job.input_format is None:  # events are JSON lines, whatever the name
            fmt = format_of(path) or "jsonl"
        else:
            fmt = input_format(path, job.input_format, choices) or sniff_stdin()  # None: stdin
        if spec.reads == EVENTS and fmt not in ("jsonl", *ENVELOPES, AVRO, "parquet"):
            raise UsageError(f"change events are JSON lines, Avro or Parquet; {fmt} input cannot hold them")
        formats.append(fmt)
    stream_schema = job.stream_schema
    if stream_schema is None and spec.reads != EVENTS and formats and formats[0] == "jsonl":
        first = first_record(job.inputs[0])
        if first is not None and is_schema_line(first[0]):
            try:
                stream_schema = StreamSchema.of(first[0])
            except InputError as err:
                raise err.located(Location(display_name(job.inputs[0]), first[1])) from None
            ignored = getattr(spec, "ignore_columns", None)
            if ignored is not None:  # the stream's metadata columns are not row identity
                spec = replace(spec, ignore_columns=tuple(dict.fromkeys([*ignored, *stream_schema.metadata])))
    spec, formats, forms = _avro_inputs(spec, job.inputs, formats)
    decide = lookup(DECIDE, spec)
    if decide is not None:
        spec, formats = decide(spec, job.inputs, formats)
    formats = [AVRO if form else fmt for fmt, form in zip(formats, forms, strict=True)]
    if job.avro and AVRO not in formats and out_format not in ("avro", "avro-confluent"):
        raise UsageError(
            "--schema-registry / --schemas give the schemas of Debezium events in Avro: the input is "
            + ", ".join(dict.fromkeys(formats)),
            hint="leave them out for JSON events",
        )
    avro = job.avro
    if avro is None and AVRO in formats:  # the row path's reader reads Avro: a job option only it declares
        from cdc.formats.schema_registry import SchemaSources

        avro = SchemaSources()
    if unnamed and formats[0] in INPUT_FORMATS:  # -o /dev/null, a FIFO: the input's format
        out_format = formats[0]
    arrays = job.arrays or json_arrays(job, formats)
    container = job.container
    if container == "auto" and spec.reads != EVENTS and any(f in ENVELOPES for f in formats):
        container = container_of(job.inputs[0])
    if container == "auto" and spec.reads != EVENTS and forms[0] == "kcat":
        container = "kcat"
    schema_line = job.schema_line or (
        out_format == "jsonl" and _typed(spec, stream_schema) and wanted(job.output == STDIO)
    )
    return job.with_(
        spec=spec,
        formats=tuple(formats),
        out_format=out_format,
        stream_schema=stream_schema,
        schema_line=schema_line,
        container=container,
        arrays=arrays,
        avro=avro,
    )


def _avro_inputs(spec: Any, inputs: tuple[str, ...], formats: list[str]) -> tuple[Any, list[str], list[str | None]]:
    """The Avro form of each input that may hold Debezium events in Avro (``formats.avro``): they
    are Debezium's (the envelope), read by the row path's Avro reader (format ``avro``); a run of
    kcat -J records is a Kafka dump."""
    from cdc.formats.registry import avro_form

    events = spec.reads == EVENTS
    forms = [
        avro_form(p, f) if events or f in ("debezium", AVRO) else None for p, f in zip(inputs, formats, strict=True)
    ]
    if not any(forms):
        return spec, formats, forms
    if events:
        if spec.envelope not in ("auto", "debezium"):
            raise UsageError(f"Avro change events are Debezium's; --envelope {spec.envelope} cannot read them")
        spec = replace(spec, envelope="debezium")
        if forms[0] == "kcat" and spec.container == "auto":
            spec = replace(spec, container="kcat")
    return spec, ["debezium" if form else f for f, form in zip(formats, forms, strict=True)], forms


def _typed(spec: Any, stream_schema: Any) -> bool:
    """Rows whose values JSON cannot type (decimals, times) or that carry metadata columns: the
    decoded envelopes (Canal by sqlType, Debezium by its schema block), or a schema line read."""
    if stream_schema is not None:
        return True
    if spec.reads == EVENTS:
        return not spec.raw_values or bool(spec.metadata)
    return False


def _decode(spec: DecodeSpec, inputs: tuple[str, ...], formats: list[str]) -> tuple[Any, list[str]]:
    spec = _decided(spec, inputs[0])
    return spec, [spec.envelope] * len(formats)


def _from_changelog(spec: FromChangelogSpec, inputs: tuple[str, ...], formats: list[str]) -> tuple[Any, list[str]]:
    _not_an_envelope(inputs, formats)
    return spec, formats


def _commit_columns(spec: Any, inputs: tuple[str, ...], formats: list[str]) -> tuple[Any, list[str]]:
    """A table's commit columns (None: the known ones found in the first input's columns)."""
    if spec.commit_columns is None:
        columns = first_columns(inputs[0], formats[0])
        if columns is not None:  # else every known commit column is taken for one
            spec = replace(spec, commit_columns=tuple(c for c in COMMIT_COLUMNS if c in columns))
    return spec, formats


# What a command decides of its spec once its inputs are known: (spec, inputs, formats) → both.
DECIDE: dict[type, Callable[[Any, tuple[str, ...], list[str]], tuple[Any, list[str]]]] = {
    DecodeSpec: _decode,
    FromChangelogSpec: _from_changelog,
    MaterializeSpec: _commit_columns,
    InspectSpec: _commit_columns,
}


def _special_unnamed(path: str) -> bool:
    """An output that is not a regular file (``/dev/null``, a FIFO) and whose name has no
    format's suffix: written in the format of the input, as stdout is — never guessed from the name."""
    from cdc.formats.streams import is_special

    return path != STDIO and format_of(path) is None and is_special(path)


def first_columns(path: str, fmt: str) -> list[str] | None:
    """The columns of an input's first row, where they can be read ahead cheaply."""
    if fmt == "jsonl":
        first = first_record(path)
        return list(first[0]) if first is not None and isinstance(first[0], dict) else None
    if path == STDIO:
        return None
    if fmt in ("csv", "tsv"):
        import csv

        from cdc.formats.streams import decompressed, open_input

        stream = decompressed(open_input(path), display_name(path))
        try:
            header = stream.readline().decode("utf-8", "replace").lstrip("\ufeff")
        finally:
            stream.close()
        try:
            return next(csv.reader([header], delimiter="\t" if fmt == "tsv" else ","), [])
        except csv.Error:  # the run's reader says what is wrong with the header
            return None
    if fmt == "parquet":
        from cdc.formats.parquet.io import read_schema  # not pyarrow.parquet: it imports pyarrow.compute

        try:
            return list(read_schema(path).names)
        except Exception:  # noqa: BLE001 - a bad file: the run itself says what is wrong with it
            return None
    return None


def container_of(path: str, named: str = "auto") -> str:
    """How the events of an input are held: ``kcat`` records, ``kafka-console`` lines, or as
    they are (``auto``), told by the first record where it can be read ahead."""
    from cdc.formats.kafka import is_kcat, looks_like_console

    if named != "auto":
        return named
    first = first_record(path)
    if first is not None:
        return "kcat" if is_kcat(first[0]) else "auto"
    line = first_line(path)
    return "kafka-console" if line is not None and looks_like_console(line) else "auto"


def first_line(path: str) -> bytes | None:
    """The first line of an input that is not blank (stdin: when it can be read ahead)."""
    if path == STDIO:
        import sys

        peek = getattr(sys.stdin.buffer, "peek", None)
        data = peek(1 << 16) if peek is not None else b""
        lines = data[: data.rfind(b"\n")].split(b"\n") if b"\n" in data else []
    else:
        from cdc.formats.streams import decompressed, open_input

        stream = decompressed(open_input(path), display_name(path))
        try:
            lines = [stream.readline() for _ in range(20)]
        finally:
            stream.close()
    return next((line for line in lines if line.strip()), None)


def _decided(spec: DecodeSpec, path: str) -> DecodeSpec:
    """``--envelope auto``: the envelope of the first record, when it can be read ahead; and the
    Kafka dump the events are in, if any."""
    if spec.container == "auto":
        spec = replace(spec, container=container_of(path))
    if spec.envelope != "auto":
        return spec
    first = first_record(path) if spec.container != "kafka-console" else None
    if first is None:
        return spec  # stdin that cannot be read ahead: the decoder decides at the first event
    event = first[0]
    if spec.container == "kcat":
        from cdc.formats.jsonl import loads
        from cdc.formats.kafka import is_kcat

        payload = event.get("payload") if is_kcat(event) else None
        try:
            event = loads(payload.encode()) if isinstance(payload, str) else payload
        except ValueError:
            return spec
        if event is None or type(event) is not dict:
            return spec  # a tombstone first: the decoder decides at the first event
    try:
        envelope = choose_envelope("auto", event)
    except InputError as err:
        raise err.located(Location(display_name(path), first[1])) from None
    return replace(spec, envelope=envelope)


def _not_an_envelope(paths: tuple[str, ...], formats: list[str]) -> None:
    """from-changelog reads flattened rows: a Canal/Maxwell/OGG/Debezium message is not one."""
    for path, fmt in zip(paths, formats, strict=True):
        if fmt != "jsonl":
            continue
        first = first_record(path)
        found = looks_like_envelope(first[0]) if first is not None else None
        if found is not None:
            assert first is not None
            raise InputError(
                envelope_message(found),
                where=Location(display_name(path), first[1]),
                hint=f"cdc decode --envelope {found} decodes it (or --input-format {found} for commands "
                "that read changelog rows)",
            )


def first_record(path: str, lines: int = 100) -> tuple[Any, int] | None:
    """The first record of a JSON-lines input that is not blank or ``null``, with its line;
    None when there is none among the first lines, or stdin cannot be read ahead."""
    from cdc.formats.jsonl import loads

    if path == STDIO:
        import sys

        peek = getattr(sys.stdin.buffer, "peek", None)
        data = peek(1 << 16) if peek is not None else b""
        if data[:2] == b"\x1f\x8b":  # gzip: the first lines decompressed from the bytes peeked
            import zlib

            try:
                data = zlib.decompressobj(wbits=31).decompress(data)
            except zlib.error:
                return None
        if b"\n" not in data:
            return None
        head = data[: data.rfind(b"\n")].split(b"\n")[:lines]
    else:
        from cdc.formats.streams import decompressed, open_input

        stream = decompressed(open_input(path), display_name(path))
        try:
            head = [stream.readline() for _ in range(lines)]
        finally:
            stream.close()
    if head and b"".join(head).lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"[" and may_be_array(path):
        return _first_element(b"".join(head))
    for number, line in enumerate(head, 1):
        text = line.strip().removeprefix(b"\xef\xbb\xbf")
        if not text or text == b"null":
            continue
        try:
            return loads(text), number
        except ValueError:
            return None  # a bad line: the run itself says so, at its place
    return None


def _first_element(head: bytes) -> tuple[Any, int] | None:
    """A JSON array file's first element that is not null, from the head of the file."""
    import io

    from cdc.formats.json_array import Elements
    from cdc.formats.jsonl import loads

    try:
        for text, line in Elements(io.BytesIO(head)):  # type: ignore[arg-type]
            if text != b"null":
                return loads(text), line
    except (InputError, ValueError):  # the head ends inside the array, or a bad element
        return None
    return None


def json_arrays(job: Job, formats: list[str]) -> bool:
    """Whether an input of JSON text is one JSON array (``.json`` exports): the row path's reader
    takes it apart; the paths that split JSON lines do not declare it (job option ``arrays``)."""
    for path, fmt in zip(job.inputs, formats, strict=True):
        if fmt != "jsonl" and fmt not in ENVELOPES or not may_be_array(path):
            continue
        line = first_line(path)
        if line is not None and line.lstrip(b"\xef\xbb\xbf \t")[:1] == b"[":
            return True
    return False


def open_rows(job: Job, reject: Reject, on_bytes: Any, counts: Counts, findings: Any = None) -> RowReader:
    """The job's input rows, every input in order: changelog rows for an envelope input
    (decoded by one decoder, ``counts`` its counts; ``findings`` the command's, where what the
    events say against themselves goes), else the rows as read."""
    if job.rows is not None:
        decoder = decoder_for(job.spec, counts, findings) if job.spec.reads == EVENTS else None
        return IterableReader(job.rows, reject, decoder)
    if job.csv is not None and not any(f in ("csv", "tsv") for f in job.formats):
        raise UsageError(
            "--delimiter, --quote-char, --no-header and --header-names read CSV/TSV: the input is "
            + ", ".join(dict.fromkeys(job.formats)),
            hint="name the format with -i csv",
        )
    readers: dict[str, Any] = {}
    schemas = job.avro.open() if job.avro else None
    if job.spec.reads == EVENTS:  # events decoded: decode
        events = decoder_for(job.spec, counts, findings)
        readers = dict.fromkeys(job.formats, events.reader)
        if AVRO in job.formats:
            from cdc.formats.avro import reader_factory

            readers[AVRO] = reader_factory(events, schemas)
    else:
        envelope = next((f for f in job.formats if f in ENVELOPES), "debezium" if AVRO in job.formats else None)
        if envelope is None and getattr(job.spec, "tables", None):
            raise UsageError(
                "--table-include/--database-include pick tables of change events: the input is "
                + ", ".join(dict.fromkeys(job.formats)),
                hint="read the events with -i debezium|canal|maxwell|ogg",
            )
        if envelope is not None:  # changelog rows decoded on the way in (-i debezium)
            decode = events_spec(job.spec, envelope, job.container)
            # its rows are counted once, by the command; its notes (tombstones) are the command's
            decoder = decoder_for(decode, Counts(notes=counts.notes, tables=counts.tables), findings)
            kafka = decoder if isinstance(decoder, KafkaDecoder) else None
            inner = kafka.inner if kafka is not None else decoder
            if not isinstance(inner, Gated):  # the tables read are listed all the same (inspect)
                inner = Gated(inner, decode, counts)
                if kafka is not None:
                    kafka.inner = inner
                else:
                    decoder = inner
            readers[envelope] = decoder.reader
            if AVRO in job.formats:
                from cdc.formats.avro import reader_factory

                readers[AVRO] = reader_factory(decoder, schemas)
    return open_inputs(job.inputs, job.formats, reject, on_bytes, readers, job.csv)


def events_spec(spec: Any, envelope: str, container: str = "auto") -> DecodeSpec:
    """How a command that reads changelog rows decodes envelope inputs (``-i debezium``): the
    command's key rebuilds partial before images too (REPLICA IDENTITY DEFAULT); a command that
    keeps state keeps the live rows (a snapshot re-read of a live row is found), under its policy,
    and reads one table only (a stream of several is refused, never merged; inspect lists them);
    its table patterns pick that table."""
    from cdc.core.state import Policy

    tables = getattr(spec, "tables", None) or Tables()
    return DecodeSpec(
        envelope,
        spec.kind_column,
        key=getattr(spec, "key", ()),
        database_include=tables.database_include,
        table_include=tables.table_include,
        policy=getattr(spec, "policy", Policy.warn),
        live_rows=not spec.stateless,
        one_table=not spec.stateless and not lookup(LISTS_TABLES, spec),
        container=container,
    )


class IterableReader(RowReader):
    """Rows a caller hands over (the Python API): each a fresh dict, located by its index;
    with a decoder, they are change events (None a tombstone) and their rows come out."""

    def __init__(self, rows: Iterable[Row | None], reject: Reject, decoder: Any = None):
        super().__init__("<rows>", reject)
        self._rows = rows
        self._decoder = decoder
        self._last: Row | None = None

    def __iter__(self) -> Iterator[Row]:
        decoder = self._decoder
        for row in self._rows:
            self.records += 1
            self._last = row
            if type(row) is not dict and not (row is None and decoder is not None):
                self.bad_record(InputError(f"expected a row (a dict), found {type(row).__name__}"))
                continue
            if decoder is None:
                yield dict(row)  # type: ignore[arg-type]
                continue
            try:
                yield from decoder.decode(row)
            except InputError as err:
                self.bad_record(err)

    def location(self) -> Location:
        return Location(self.source, row=self.records)

    def raw(self) -> str:
        return repr(self._last)


def line_chunks(
    job: Job, on_bytes: Any, size: int | None = None, examples: Any = None
) -> Iterator[tuple[bytes, int, str]]:
    """``(chunk, first line, input name)`` of every JSON-lines input of ``job`` in turn: line-aligned
    chunks (``read_chunks``; stdin and compressed inputs read and decompressed ahead on a thread,
    ``prefetched_chunks``), each file closed once read (stdin stays open). With
    ``examples`` (``empty.Examples``), the first changes are kept on the way, for an empty result."""
    from cdc.formats.jsonl import BOM, CHUNK_BYTES, read_chunks
    from cdc.formats.prefetch import prefetched_chunks
    from cdc.formats.streams import decompressed, open_input

    for path in job.inputs:
        name = display_name(path)
        raw = open_input(path, on_bytes)
        stream = decompressed(raw, name)
        chunks: Any  # a generator, closed below
        if stream is raw and path != STDIO:  # a plain file gives full chunks, read as they are taken
            chunks = read_chunks(stream, size or CHUNK_BYTES, count_lines)
        else:  # a pipe's reads are small, a decompressor is work: both on a thread of their own
            chunks = prefetched_chunks(stream, size or CHUNK_BYTES, count_lines, BOM)
        try:
            for chunk, first in chunks:
                if examples is not None:
                    examples.add_lines(chunk)
                yield chunk, first, name
        finally:
            chunks.close()  # stops a reader thread
            if path != STDIO:
                stream.close()
