"""Change events of every envelope, as the engine reads them: one decoder per run that turns a
parsed event into changelog rows (kind column first) and counts what it skips.

Debezium's decoder lives in ``formats.debezium`` (its schema block is Kafka Connect's); Canal,
Maxwell and OGG are ``core.envelopes``. ``auto`` is decided from the first record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, BinaryIO

from cdc.core.envelopes.base import EnvelopeOptions
from cdc.core.envelopes.detect import check_envelope, choose_envelope
from cdc.core.errors import InputError
from cdc.core.model import Reject, Row
from cdc.core.specs import DecodeSpec
from cdc.core.stats import Counts

ENVELOPES = ("debezium", "canal", "maxwell", "ogg")


def decoder_for(spec: DecodeSpec, counts: Counts, findings: Any = None) -> Any:
    """The decoder of ``spec.envelope``; for ``auto``, one that decides at the first event. Table
    patterns (Debezium's) and the one-table rule of a stateful command wrap it (``Gated``); Kafka
    records (kcat, console-consumer) are taken apart around it (``formats.kafka``). ``findings``:
    a command's state findings, where a Debezium decoder reports what it finds."""
    from cdc.formats.kafka import KafkaDecoder, split_metadata

    own, kafka = split_metadata(spec.metadata)
    if kafka or spec.container != "auto" or own != spec.metadata:
        inner = decoder_for(replace(spec, metadata=own, container="auto"), counts, findings)
        return KafkaDecoder(inner, kafka, counts, console=spec.container == "kafka-console")
    if spec.envelope == "auto":
        return AutoDecoder(spec, counts, findings)
    decoder: Any
    if spec.envelope == "debezium":
        from cdc.formats.debezium import DebeziumDecoder

        decoder = DebeziumDecoder(spec, counts, findings)
    else:
        choose_envelope(spec.envelope, None)  # an unknown name is a usage error
        decoder = CoreDecoder(spec, counts)
    if spec.envelope == "debezium" and (spec.database_include or spec.table_include):
        return Gated(decoder, spec, counts)
    if spec.key or spec.on_truncate == "delete" or spec.one_table:
        return Gated(decoder, spec, counts)
    return decoder


class Gated:
    """A decoder behind a ``TableGate``: the events of the included tables (Debezium), and one table
    only for a command that keeps state; the tables read are listed in ``counts.tables``."""

    def __init__(self, inner: Any, spec: DecodeSpec, counts: Counts):
        from cdc.core.envelopes.tables import TableGate

        self.inner = inner
        self.counts = counts
        self.gate = TableGate(
            spec.envelope,
            spec.database_include,
            spec.table_include,
            one_table=spec.one_table or bool(spec.key) or spec.on_truncate == "delete",
            filter_here=spec.envelope == "debezium",
        )
        self.gate.tables = counts.tables  # the command's: inspect lists them

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def stateless(self) -> bool:
        return bool(self.inner.stateless) and not self.gate.one_table

    def decode(self, event: Row | None, raw: bytes = b"") -> list[Row]:
        if not self.gate.admits(event, self.counts.notes):
            return []
        rows: list[Row] = self.inner.decode(event, raw)
        return rows

    def fast_decode(self) -> Callable[[Row | None, bytes], Any]:
        inner, admits, notes = self.inner.fast_decode(), self.gate.admits, self.counts.notes

        def decode(event: Row | None, raw: bytes = b"") -> Any:
            if not admits(event, notes):
                return []
            return inner(event, raw)

        return decode

    def reader(self, stream: BinaryIO, source: str, reject: Reject | None = None) -> Any:
        from cdc.formats.debezium import EnvelopeReader

        reader = EnvelopeReader(stream, source, reject, self)
        self.gate.where = reader.location
        return reader


class CoreDecoder:
    """A Canal, Maxwell or OGG decoder (``core.envelopes``) with the engine's decoder surface."""

    def __init__(self, spec: DecodeSpec, counts: Counts):
        self.name = spec.envelope
        self.counts = counts
        self.kind_column = spec.kind_column
        from cdc.core.envelopes.registry import decoder_for as core_decoder
        from cdc.core.envelopes.registry import parse_metadata

        options = EnvelopeOptions(
            kind_column=spec.kind_column,
            key=spec.key,
            metadata=parse_metadata(spec.envelope, list(spec.metadata)),
            database_include=spec.database_include,
            table_include=spec.table_include,
            on_truncate=spec.on_truncate,
            raw_values=spec.raw_values,
            bootstrap=spec.bootstrap,
        )
        self.inner = core_decoder(spec.envelope, options, counts.notes)

    @property
    def stateless(self) -> bool:
        return self.inner.stateless

    def decode(self, event: Row | None, raw: bytes = b"") -> list[Row]:
        try:
            changes = self.inner.decode(event)
        except InputError:
            check_envelope(self.name, event)  # a record of another envelope says so
            raise
        kc, by_kind = self.kind_column, self.counts.by_kind
        rows = []
        for kind, image in changes:
            by_kind[kind] += 1
            rows.append({kc: kind, **image})
        return rows

    def fast_decode(self) -> Callable[[Row | None, bytes], list[Row]]:
        return self.decode

    def arrow_fields(self) -> Any:
        return None

    def reader(self, stream: BinaryIO, source: str, reject: Reject | None = None) -> Any:
        from cdc.formats.debezium import EnvelopeReader

        return EnvelopeReader(stream, source, reject, self)


class AutoDecoder:
    """``--envelope auto`` where it could not be decided before reading (stdin): the first
    event that is not a tombstone names the envelope; every later one must be of it."""

    def __init__(self, spec: DecodeSpec, counts: Counts, findings: Any = None):
        self.spec = spec
        self.counts = counts
        self.findings = findings
        self.chosen: Any = None
        self.where: Any = None

    @property
    def stateless(self) -> bool:
        return self.spec.stateless

    def decode(self, event: Row | None, raw: bytes = b"") -> list[Row]:
        if self.chosen is None:
            if event is None:
                self.counts.notes["tombstones"] += 1
                return []
            envelope = choose_envelope("auto", event)
            self.chosen = decoder_for(replace(self.spec, envelope=envelope), self.counts, self.findings)
            if isinstance(self.chosen, Gated) and self.where is not None:
                self.chosen.gate.where = self.where
        rows: list[Row] = self.chosen.decode(event, raw)
        return rows

    def fast_decode(self) -> Callable[[Row | None, bytes], list[Row]]:
        return self.decode

    def arrow_fields(self) -> Any:
        return self.chosen.arrow_fields() if self.chosen is not None else None

    def reader(self, stream: BinaryIO, source: str, reject: Reject | None = None) -> Any:
        from cdc.formats.debezium import EnvelopeReader

        reader = EnvelopeReader(stream, source, reject, self)
        self.where = reader.location
        return reader
