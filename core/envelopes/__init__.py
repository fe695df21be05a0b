"""CDC envelopes → changes: Canal, Maxwell and Oracle GoldenGate JSON as Flink reads them.

The Debezium decoder lives in ``cdc.formats.debezium``; this package knows its name so that
``recognise`` can tell all four apart from one record (``cdc decode --envelope auto``).
"""

from __future__ import annotations

from collections import Counter

from cdc.core.envelopes.base import EnvelopeDecoder, EnvelopeOptions, metadata_column
from cdc.core.envelopes.canal import CanalDecoder
from cdc.core.envelopes.images import ImageTexts, LiveRows, TableRows
from cdc.core.envelopes.maxwell import MaxwellDecoder
from cdc.core.envelopes.ogg import OggDecoder
from cdc.core.envelopes.recognise import ENVELOPES, LABELS, envelope_message, looks_like_envelope, recognise
from cdc.core.errors import InputError, UsageError
from cdc.core.model import Change

DECODERS: dict[str, type[EnvelopeDecoder]] = {
    "canal": CanalDecoder,
    "maxwell": MaxwellDecoder,
    "ogg": OggDecoder,
}

# Flink's format name for each envelope (the DDL --print-sql writes).
FLINK_FORMATS = {"debezium": "debezium-json", "canal": "canal-json", "maxwell": "maxwell-json", "ogg": "ogg-json"}


def decoder_for(
    name: str, options: EnvelopeOptions | None = None, notes: Counter[str] | None = None
) -> EnvelopeDecoder:
    """The decoder of a core envelope (``canal``, ``maxwell``, ``ogg``)."""
    try:
        cls = DECODERS[name]
    except KeyError:
        raise UsageError(f"--envelope: no core decoder for {name!r}; choose one of {', '.join(DECODERS)}") from None
    return cls(options, notes)


def parse_metadata(envelope: str, specs: list[str]) -> list[tuple[str, str]]:
    """``['table=src', 'ingestion-timestamp']`` → ``[(key, column), …]``, checked against the
    envelope's Flink metadata keys."""
    known = DECODERS[envelope].METADATA
    out = []
    for spec in specs:
        key, _, column = spec.partition("=")
        key = key.strip()
        if key not in known:
            raise UsageError(f"--metadata: {LABELS[envelope]} has no metadata {key!r}; choose from {', '.join(known)}")
        out.append((key, column.strip() or metadata_column(key)))
    return out


def choose_envelope(requested: str, first: object) -> str:
    """The envelope to decode with: ``requested``, or for ``auto`` the one the first record is.

    ``first`` is the first parsed record that is not a tombstone. Fails with a hint naming
    ``--envelope`` when ``auto`` cannot tell.
    """
    if requested != "auto":
        if requested not in ENVELOPES:
            raise UsageError(f"--envelope: {requested!r}; choose auto or one of {', '.join(ENVELOPES)}")
        return requested
    found = recognise(first)
    if found is None:
        raise InputError(
            "cannot tell which CDC envelope this record is (no 'op', 'type' with 'data', or 'op_type' field)",
            hint="name it: --envelope debezium|canal|maxwell|ogg",
        )
    return found


def check_envelope(expected: str, event: object) -> None:
    """Fail when ``event`` plainly is another envelope than ``expected`` (a mixed input).

    The decoders do this themselves on any record they cannot read; call this only where a
    record could be read by both (e.g. to vet every record of ``--envelope auto`` cheaply)."""
    found = recognise(event, strict=True)
    if found is not None and found != expected:
        raise InputError(
            f"this record is a {LABELS[found]} message, but the stream is {LABELS[expected]} "
            "(recognised from its first record): mixed envelopes in one input",
            hint=f"decode each envelope on its own: --envelope {found} for these records",
        )


__all__ = [
    "DECODERS",
    "ENVELOPES",
    "FLINK_FORMATS",
    "LABELS",
    "CanalDecoder",
    "Change",
    "EnvelopeDecoder",
    "EnvelopeOptions",
    "ImageTexts",
    "LiveRows",
    "MaxwellDecoder",
    "OggDecoder",
    "TableRows",
    "check_envelope",
    "choose_envelope",
    "decoder_for",
    "envelope_message",
    "looks_like_envelope",
    "parse_metadata",
    "recognise",
]
