"""Format names, suffixes, and opening a reader or writer for a path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

from cdc.core.errors import UsageError
from cdc.core.model import Reject
from cdc.formats.base import ChainedReader, RowReader, RowWriter
from cdc.formats.streams import (
    PARQUET_MAGIC,
    STDIO,
    OnBytes,
    check_input_exists,
    decompressed,
    display_name,
    open_input,
)

INPUT_FORMATS = ("jsonl", "csv", "tsv", "parquet")
OUTPUT_FORMATS = ("jsonl", "csv", "tsv", "parquet", "print", "table")
SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".avro": "avro",  # Debezium events in an Avro container file (formats.avro)
}
DELIMITERS = {"csv": ",", "tsv": "\t"}
AVRO = "avro"  # Debezium events in Avro, in any of its forms (formats.avro)


def format_of(path: str) -> str | None:
    """The format a file name implies, looking through ``.gz``/``.zst``."""
    name = path.lower()
    for compressed in (".gz", ".zst", ".zstd"):
        if name.endswith(compressed):
            name = name[: -len(compressed)]
    for suffix, fmt in SUFFIXES.items():
        if name.endswith(suffix):
            return fmt
    return None


def input_format(path: str, explicit: str | None, choices: Sequence[str] = INPUT_FORMATS) -> str | None:
    """The format to read ``path`` with; None for stdin without ``--input-format`` (sniffed)."""
    if explicit:
        if explicit not in choices:
            raise UsageError(f"--input-format: unknown format {explicit!r}; choose one of {', '.join(choices)}")
        return explicit
    if path == STDIO:
        return None
    fmt = format_of(path)
    if fmt is None:
        raise UsageError(
            f"cannot tell the format of {path!r} from its name",
            hint="name it with --input-format " + "|".join(choices),
        )
    return fmt


def output_format(path: str, explicit: str | None) -> str:
    if explicit:
        if explicit not in OUTPUT_FORMATS and explicit not in ("avro", "avro-confluent"):
            raise UsageError(f"--output-format: unknown format {explicit!r}; choose one of {', '.join(OUTPUT_FORMATS)}")
        return explicit
    if path == STDIO:
        return "jsonl"
    fmt = format_of(path)
    if fmt is None:
        raise UsageError(
            f"cannot tell the output format of {path!r} from its name",
            hint="name it with --output-format " + "|".join(OUTPUT_FORMATS),
        )
    return fmt


def open_reader(
    path: str,
    fmt: str | None,
    reject: Reject | None = None,
    on_bytes: OnBytes | None = None,
    readers: dict[str, Callable[..., RowReader]] | None = None,
    dialect: Any = None,
) -> RowReader:
    """Open one input. ``readers`` adds readers of JSON lines by format name (envelopes);
    ``dialect`` (``formats.base.CsvDialect``) says how CSV/TSV is written."""
    source = display_name(path)
    if fmt == "parquet" and path != STDIO:  # pyarrow reads the file itself (memory-mapped)
        from cdc.formats.parquet import ParquetReader

        check_input_exists(path)
        return ParquetReader(None, source, reject, path=path)
    raw = open_input(path, on_bytes)
    if fmt is None:  # stdin: Parquet by its magic, else JSON lines
        fmt = "parquet" if raw.peek(4)[:4] == PARQUET_MAGIC else "jsonl"
    if fmt == "parquet":  # stdin: buffered whole, a Parquet footer is at the end
        from cdc.formats.parquet import ParquetReader

        return ParquetReader(raw, source, reject)
    stream = decompressed(raw, source)
    if fmt in DELIMITERS:
        from cdc.formats.delimited import DelimitedReader

        plain = path != STDIO and stream is raw
        return DelimitedReader(stream, source, DELIMITERS[fmt], reject, path=path if plain else None, dialect=dialect)
    if readers and fmt in readers:
        return readers[fmt](stream, source, reject)
    from cdc.formats.jsonl import JsonlReader

    return JsonlReader(stream, source, reject)


def open_inputs(
    paths: Sequence[str],
    formats: Sequence[str | None],
    reject: Reject | None = None,
    on_bytes: OnBytes | None = None,
    readers: dict[str, Callable[..., RowReader]] | None = None,
    dialect: Any = None,
) -> ChainedReader:
    """Several inputs read in order as one stream, each in its format."""
    for path in paths:
        check_input_exists(path)
    return ChainedReader(
        [
            lambda p=p, f=f: open_reader(p, f, reject, on_bytes, readers, dialect)  # type: ignore[misc]
            for p, f in zip(paths, formats, strict=True)
        ]
    )


def avro_form(path: str, fmt: str | None) -> str | None:
    """Where Debezium events may be in Avro (``-i debezium``, ``.avro``, a change-event input of
    any name): the Avro form they are in (``formats.avro``: container, framed or bare wire-format
    messages, kcat -J, Avro JSON, Parquet envelopes), told by the input's first bytes; else None."""
    if fmt not in (None, "jsonl", "debezium", "avro", "parquet"):
        return None
    check_input_exists(path)
    head = _head(path)
    form = None
    if _may_be_avro(head):  # formats.avro is imported only for what may be Avro
        from cdc.formats.avro import form_of

        form = form_of(head)
    if fmt == "avro" and form is None:
        raise UsageError(
            f"{display_name(path)}: not Debezium events in Avro (no container file, wire-format message, "
            "kcat -J record or Avro JSON)",
            hint="JSON change events are read with -i debezium",
        )
    return form


# What the first line of Avro in JSON holds: a union's branch (Debezium's ts_ms is ["null", "long"],
# Flink's op ["null", "string"]), an image's record name, kcat's schema id or a wire message's magic.
_AVRO_JSON_MARKS = (b'{"long":', b'{"string":', b'{"int":', b'.Value":{', b'"value_schema_id"', b'"payload":"\\u0000')


def _may_be_avro(head: bytes) -> bool:
    if head[:4] in (b"Obj\x01", PARQUET_MAGIC) or head[:1] in (b"\x00", b"\xff"):
        return True
    line = head.split(b"\n", 1)[0]
    return any(mark in line for mark in _AVRO_JSON_MARKS)


def _head(path: str, size: int = 1 << 16) -> bytes:
    """An input's first bytes, decompressed (stdin: those its buffer can peek)."""
    if path == STDIO:
        import sys

        peek = getattr(sys.stdin.buffer, "peek", None)
        return bytes(peek(size)[:size]) if peek is not None else b""
    stream = decompressed(open_input(path), display_name(path))
    try:
        return stream.read(size)
    finally:
        stream.close()


def sniff_stdin() -> str:
    """stdin's format when none is named: Parquet by its magic, else JSON lines."""
    import sys

    peek = getattr(sys.stdin.buffer, "peek", None)
    return "parquet" if peek is not None and peek(4)[:4] == PARQUET_MAGIC else "jsonl"


def open_writer(
    stream: BinaryIO,
    fmt: str,
    columns: Sequence[str] | None = None,
    kind_column: str | None = None,
    type_hints: dict[str, Any] | None = None,
) -> RowWriter:
    if fmt == "jsonl":
        from cdc.formats.jsonl import JsonlWriter

        return JsonlWriter(stream)
    if fmt in DELIMITERS:
        from cdc.formats.delimited import DelimitedWriter

        return DelimitedWriter(stream, DELIMITERS[fmt], columns)
    if fmt == "parquet":
        from cdc.formats.parquet import ParquetWriter

        return ParquetWriter(stream, columns, type_hints)
    if fmt == "print":
        from cdc.formats.printed import PrintWriter

        return PrintWriter(stream, kind_column)
    raise UsageError(f"unknown output format {fmt!r}")
