"""``--rejects FILE``: every record skipped under ``--on-error skip``, as JSON lines."""

from __future__ import annotations

import orjson

from cdc.core.errors import InputError
from cdc.formats.base import RowReader
from cdc.formats.streams import Output


class Rejects:
    """Counts skipped records and, when a path is given, writes each one with its reason."""

    def __init__(self, path: str | None):
        self.count = 0
        self.reader: RowReader | None = None
        self.first: InputError | None = None
        self._output = Output(path) if path else None

    def add(self, err: InputError, raw: str) -> None:
        """A skipped record whose location and raw text the caller knows (the chunk path)."""
        self.count += 1
        if self.first is None:
            self.first = err
        if self._output is not None:
            where = err.where
            record = {
                "file": where.source if where else None,
                "line": where.number if where else None,
                "error": err.message,
                "raw": raw,
            }
            self._output.stream.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))

    def __call__(self, err: InputError) -> None:
        self.count += 1
        if self.reader is not None:
            err.located(self.reader.location())
        if self.first is None:
            self.first = err
        if self._output is None:
            return
        reader = self.reader
        where = err.where
        record = {
            "file": where.source if where else None,
            "line": where.number if where else None,
            "error": err.message,
            "raw": reader.raw() if reader else "",
        }
        self._output.stream.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))

    def commit(self) -> None:
        if self._output is not None:
            self._output.commit()

    def abort(self) -> None:
        if self._output is not None:
            self._output.abort()
