"""A job's inputs: their formats (named, by suffix, or sniffed on stdin) and their rows.

Commands that read changelog rows also read change events decoded on the way in
(``--input-format debezium``); commands that decode read the events themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from cdc.core.errors import InputError, Location, UsageError
from cdc.core.model import Reject, Row
from cdc.core.specs import CHANGELOG, EVENTS, DecodeSpec
from cdc.core.stats import Counts
from cdc.formats.base import RowReader
from cdc.formats.engine.job import Job
from cdc.formats.registry import INPUT_FORMATS, format_of, input_format, open_inputs, output_format, sniff_stdin
from cdc.formats.streams import STDIO

ENVELOPES = ("debezium",)
SINK = "rows"  # the output format of a job whose rows go to a caller's sink


def input_choices(spec: Any) -> tuple[str, ...]:
    """The formats a spec's input may be in."""
    if spec.reads == EVENTS:
        return ("jsonl", *ENVELOPES)
    if spec.reads == CHANGELOG:
        return (*INPUT_FORMATS, *ENVELOPES)
    return INPUT_FORMATS


def resolve(job: Job) -> Job:
    """The job with every input's format and the output's format decided."""
    out_format = SINK if job.sink is not None else output_format(job.output, job.output_format)
    if job.rows is not None:
        return job.with_(formats=(SINK,), out_format=out_format)
    choices = input_choices(job.spec)
    formats = []
    for path in job.inputs:
        if job.spec.reads == EVENTS and job.input_format is None:  # events are JSON lines, whatever the name
            fmt = format_of(path) or "jsonl"
        else:
            fmt = input_format(path, job.input_format, choices) or sniff_stdin()  # None: stdin
        if job.spec.reads == EVENTS:
            if fmt not in ("jsonl", job.spec.envelope):
                raise UsageError(f"{job.spec.envelope} events are JSON lines; {fmt} input cannot hold them")
            fmt = job.spec.envelope
        formats.append(fmt)
    return job.with_(formats=tuple(formats), out_format=out_format)


def decoder_for(spec: DecodeSpec, counts: Counts) -> Any:
    """The decoder of an envelope: event → changelog rows, with state that spans all inputs."""
    if spec.envelope != "debezium":
        raise UsageError(f"unknown envelope {spec.envelope!r}; choose one of {', '.join(ENVELOPES)}")
    from cdc.formats.debezium import DebeziumDecoder

    return DebeziumDecoder(spec, counts)


def open_rows(job: Job, reject: Reject, on_bytes: Any, counts: Counts) -> RowReader:
    """The job's input rows, every input in order: changelog rows for an envelope input
    (decoded by one decoder, ``counts`` its counts), else the rows as read."""
    if job.rows is not None:
        decoder = decoder_for(job.spec, counts) if isinstance(job.spec, DecodeSpec) else None
        return IterableReader(job.rows, reject, decoder)
    readers: dict[str, Any] = {}
    envelope = next((f for f in job.formats if f in ENVELOPES), None)
    if envelope is not None:
        spec = job.spec if isinstance(job.spec, DecodeSpec) else DecodeSpec(envelope, job.spec.kind_column)
        decoder = decoder_for(spec, counts)
        readers[envelope] = decoder.reader
    return open_inputs(job.inputs, job.formats, reject, on_bytes, readers)


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


def is_stdin(path: str) -> bool:
    return path == STDIO
