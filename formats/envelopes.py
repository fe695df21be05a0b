"""Change events of every envelope, as the engine reads them: one decoder per run that turns a
parsed event into changelog rows (kind column first) and counts what it skips.

Debezium's decoder lives in ``formats.debezium`` (its schema block is Kafka Connect's); Canal,
Maxwell and OGG are ``core.envelopes``. ``auto`` is decided from the first record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, BinaryIO

from cdc.core.envelopes.base import EnvelopeOptions
from cdc.core.envelopes.detect import check_envelope, choose_envelope
from cdc.core.errors import InputError
from cdc.core.model import Reject, Row
from cdc.core.specs import DecodeSpec
from cdc.core.stats import Counts

ENVELOPES = ("debezium", "canal", "maxwell", "ogg")


def decoder_for(spec: DecodeSpec, counts: Counts, findings: Any = None) -> Any:
    """The decoder of ``spec.envelope``; for ``auto``, one that decides at the first event.
    ``findings``: a command's state findings, where a Debezium decoder reports what it finds."""
    if spec.envelope == "auto":
        return AutoDecoder(spec, counts, findings)
    if spec.envelope == "debezium":
        from cdc.formats.debezium import DebeziumDecoder

        return DebeziumDecoder(spec, counts, findings)
    choose_envelope(spec.envelope, None)  # an unknown name is a usage error
    return CoreDecoder(spec, counts)


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

    @property
    def stateless(self) -> bool:
        return self.spec.stateless

    def decode(self, event: Row | None, raw: bytes = b"") -> list[Row]:
        if self.chosen is None:
            if event is None:
                self.counts.notes["tombstones"] += 1
                return []
            envelope = choose_envelope("auto", event)
            from dataclasses import replace

            self.chosen = decoder_for(replace(self.spec, envelope=envelope), self.counts, self.findings)
        rows: list[Row] = self.chosen.decode(event, raw)
        return rows

    def fast_decode(self) -> Callable[[Row | None, bytes], list[Row]]:
        return self.decode

    def arrow_fields(self) -> Any:
        return self.chosen.arrow_fields() if self.chosen is not None else None

    def reader(self, stream: BinaryIO, source: str, reject: Reject | None = None) -> Any:
        from cdc.formats.debezium import EnvelopeReader

        return EnvelopeReader(stream, source, reject, self)
