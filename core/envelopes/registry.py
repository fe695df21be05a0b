"""The Canal, Maxwell and OGG decoders by name, and their metadata flags."""

from __future__ import annotations

from collections import Counter

from cdc.core.envelopes.base import EnvelopeDecoder, EnvelopeOptions, metadata_column
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
    known = DECODERS[envelope].METADATA
    out = []
    for spec in specs:
        key, _, column = spec.partition("=")
        key = key.strip()
        if key not in known:
            raise UsageError(f"--metadata: {LABELS[envelope]} has no metadata {key!r}; choose from {', '.join(known)}")
        out.append((key, column.strip() or metadata_column(key)))
    return out
