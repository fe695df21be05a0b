"""The Canal, Maxwell and OGG decoders by name, and their metadata flags."""

from __future__ import annotations

from collections import Counter

from cdc.core.envelopes.base import EnvelopeDecoder, EnvelopeOptions, parse_metadata_specs
from cdc.core.envelopes.canal import CanalDecoder
from cdc.core.envelopes.detect import LABELS
from cdc.core.envelopes.maxwell import MaxwellDecoder
from cdc.core.envelopes.ogg import OggDecoder
from cdc.core.errors import UsageError

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
    return parse_metadata_specs(specs, DECODERS[envelope].METADATA, LABELS[envelope])
