"""Readers and writers: bytes ↔ row dicts, streaming, one format a module."""
