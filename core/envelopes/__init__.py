"""CDC envelopes → changes: Canal, Maxwell and Oracle GoldenGate JSON as Flink reads them.

The Debezium decoder lives in ``cdc.formats.debezium``; ``recognise`` tells all four apart from
one record (``cdc decode --envelope auto``). The decoders load only when one is asked for
(``registry``): commands that only recognise an envelope stay quick to start.
"""

from __future__ import annotations

from typing import Any

_WHERE = {
    "DECODERS": "registry",
    "FLINK_FORMATS": "registry",
    "decoder_for": "registry",
    "parse_metadata": "registry",
    "EnvelopeDecoder": "base",
    "EnvelopeOptions": "base",
    "metadata_column": "base",
    "CanalDecoder": "canal",
    "MaxwellDecoder": "maxwell",
    "OggDecoder": "ogg",
    "ImageTexts": "images",
    "LiveRows": "images",
    "TableRows": "images",
    "ENVELOPES": "detect",
    "LABELS": "detect",
    "check_envelope": "detect",
    "choose_envelope": "detect",
    "envelope_message": "detect",
    "looks_like_envelope": "detect",
    "recognise": "detect",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'cdc.core.envelopes' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"cdc.core.envelopes.{_WHERE[name]}"), name)
