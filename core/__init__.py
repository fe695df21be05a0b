"""Changelog semantics with no third-party imports: row kinds, op mappings, errors, state."""
