"""What every reader and writer offers the engine."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from cdc.core.errors import InputError, Location
from cdc.core.model import Reject, Row, fail_on_bad


@dataclass(frozen=True)
class CsvDialect:
    """CSV as people have it: the field delimiter, the quote character, and whether the first
    line is a header (``names``: the columns of a file without one, or new names for the header's)."""

    delimiter: str | None = None  # None: the format's (``,`` for CSV, tab for TSV)
    quote: str = '"'
    header: bool = True
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from cdc.core.errors import UsageError

        for option, char in (("--delimiter", self.delimiter), ("--quote-char", self.quote)):
            if char is not None and (len(char) != 1 or char in "\r\n"):
                raise UsageError(f"{option} takes one character (not a line break); got {char!r}")
        if self.delimiter is not None and self.delimiter == self.quote:
            raise UsageError("--delimiter and --quote-char must differ")
        if not self.header and not self.names:
            raise UsageError("--no-header needs the columns' names: --header-names a,b,c")
        if len(set(self.names)) != len(self.names):
            raise UsageError(f"--header-names: a name given twice in {', '.join(self.names)}")


class RowReader:
    """Yields the rows of one input and knows where the last one came from.

    A bad record goes to ``reject`` with its location and raw text (which raises under
    ``--on-error fail``); ``records`` counts every record read, good or bad.
    """

    arrow_schema: Any = None  # a pyarrow schema when the input has one (Parquet)
    columns: list[str] | None = None  # the columns, when the input declares them (CSV header, Parquet)

    def __init__(self, source: str, reject: Reject | None = None):
        self.source = source
        self.reject: Reject = reject or fail_on_bad
        self.records = 0

    def __iter__(self) -> Iterator[Row]:
        raise NotImplementedError

    def location(self) -> Location:
        return Location(self.source)

    def raw(self) -> str:
        """The last record as it stood in the input (for rejects files)."""
        return ""

    def bad_record(self, err: InputError) -> None:
        """Raise, or set aside under ``--on-error skip``."""
        self.reject(err.located(self.location()), self.raw())

    def close(self) -> None:
        pass


class RowWriter(Protocol):
    def write_rows(self, rows: Iterable[Row]) -> None: ...

    def close(self) -> None: ...


class ChainedReader(RowReader):
    """Several inputs read in order as one stream."""

    def __init__(self, openers: list[Callable[[], RowReader]]):
        super().__init__("<inputs>")
        self._openers = openers
        self.current: RowReader | None = None
        self._done = 0  # records of the inputs already read
        self._schema: Any = None  # the last input's, once it is open (Parquet output keeps its types)
        self._columns: list[str] | None = None

    def __iter__(self) -> Iterator[Row]:
        for open_reader in self._openers:
            reader = open_reader()
            self.current = reader
            try:
                yield from reader
            finally:
                self._schema, self._columns = reader.arrow_schema, reader.columns
                self._done += reader.records
                self.current = None
                reader.close()

    @property  # type: ignore[override]
    def records(self) -> int:
        return self._done + (self.current.records if self.current is not None else 0)

    @records.setter
    def records(self, value: int) -> None:
        pass  # counted by the readers it chains

    @property  # type: ignore[override]
    def arrow_schema(self) -> Any:
        return self.current.arrow_schema if self.current is not None else self._schema

    @property  # type: ignore[override]
    def columns(self) -> list[str] | None:
        return self.current.columns if self.current is not None else self._columns

    @columns.setter
    def columns(self, value: list[str] | None) -> None:
        pass

    def location(self) -> Location:
        return self.current.location() if self.current is not None else Location(self.source)

    def raw(self) -> str:
        return self.current.raw() if self.current is not None else ""
