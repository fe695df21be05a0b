"""What every reader and writer offers the commands."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from cdc.core.errors import InputError, Location

Row = dict[str, Any]
Reject = Callable[[InputError], None]


class RowReader:
    """Yields the rows of one input and knows where the last one came from."""

    arrow_schema: Any = None  # a pyarrow schema when the input has one (Parquet)

    def __init__(self, source: str, reject: Reject | None = None):
        self.source = source
        self.reject = reject
        self.records = 0  # records read, good or bad: the "read" side of the accounting

    def __iter__(self) -> Iterator[Row]:
        raise NotImplementedError

    def location(self) -> Location:
        return Location(self.source)

    def raw(self) -> str:
        """The last record as it stood in the input (for rejects files)."""
        return ""

    def bad_record(self, err: InputError) -> None:
        """Raise, or hand to ``--on-error skip``'s reject callback."""
        err.located(self.location())
        if self.reject is None:
            raise err
        self.reject(err)


class RowWriter(Protocol):
    def write_rows(self, rows: Iterable[Row]) -> None: ...

    def close(self) -> None: ...


class ChainedReader(RowReader):
    """Several inputs read in order as one stream."""

    def __init__(self, openers: list[Callable[[], RowReader]]):
        super().__init__("<inputs>")
        self._openers = openers
        self.current: RowReader | None = None
        self._done = 0
        self._finished = False

    def __iter__(self) -> Iterator[Row]:
        for open_reader in self._openers:
            reader = open_reader()
            self.current = reader
            self._finished = False
            try:
                yield from reader
            finally:
                self._done += reader.records
                self._finished = True
                close = getattr(reader, "close", None)
                if close is not None:
                    close()

    @property  # type: ignore[override]
    def records(self) -> int:
        now = self.current.records if self.current is not None and not self._finished else 0
        return self._done + now

    @records.setter
    def records(self, value: int) -> None:
        pass

    @property
    def arrow_schema(self) -> Any:  # type: ignore[override]
        return self.current.arrow_schema if self.current is not None else None

    def location(self) -> Location:
        return self.current.location() if self.current is not None else Location(self.source)

    def raw(self) -> str:
        return self.current.raw() if self.current is not None else ""
