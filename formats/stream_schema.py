"""A JSON-lines stream that carries its schema: an optional first line

    {"__cdc_schema": {"version": 1, "columns": {"price": "decimal(10,2)", "ts": "timestamp"}, "metadata": ["ts"]}}

``columns`` gives the logical type of each typed column (``decimal(p,s)``, ``decimal`` without a
declared precision, ``timestamp``,
``timestamp_tz``, ``date``, ``time``) — JSON has no such types, so without it a decimal becomes a
double and a timestamp a string one pipe later; ``metadata`` names the columns that are not part of
a row's identity (``--metadata`` columns, a change feed's commit columns): materialize, replay and
inspect leave them out when a ``-U``/``-D`` is matched.

A writer of JSON lines emits the line only where a cdc command reads them (its stdout is a pipe
whose reader is ``cdc``: ``cdc debezium-decode x | cdc materialize``), or when ``CDC_SCHEMA_LINE``
is ``always`` (``never`` turns it off); a file, a terminal, ``| jq`` and ``| head`` see the rows only.
Every cdc reader of JSON lines takes the line for the schema, never for a row.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, BinaryIO

from cdc.core.errors import InputError
from cdc.core.model import Row

KEY = "__cdc_schema"
BUFFER_ROWS = 1000  # rows looked at for the columns' types before the first is written
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "busybox", "fish"}
_DECIMAL = re.compile(r"decimal\((\d+),\s*(-?\d+)\)")


def is_schema_line(row: Any) -> bool:
    return type(row) is dict and len(row) == 1 and KEY in row


class StreamSchema:
    def __init__(self, columns: dict[str, str], metadata: Sequence[str] = ()):
        self.columns = columns
        self.metadata = tuple(metadata)

    @classmethod
    def of(cls, row: Row) -> StreamSchema:
        body = row.get(KEY)
        if type(body) is not dict:
            raise InputError(f"{KEY}: expected an object")
        columns = body.get("columns") or {}
        metadata = body.get("metadata") or []
        if type(columns) is not dict or type(metadata) is not list:
            raise InputError(f"{KEY}: 'columns' is an object of types, 'metadata' a list of names")
        return cls({str(k): str(v) for k, v in columns.items()}, [str(m) for m in metadata])

    def line(self) -> Row:
        return {KEY: {"version": 1, "columns": self.columns, "metadata": list(self.metadata)}}

    def arrow_schema(self) -> Any:
        """The typed columns as pyarrow fields (Parquet output's hints)."""
        import pyarrow as pa

        fields = []
        for name, text in self.columns.items():
            kind = arrow_type(text)
            if kind is not None:
                fields.append(pa.field(name, kind))
        return pa.schema(fields) if fields else None

    def converter(self) -> Any:
        """row → the row with its typed columns' JSON values as Python values again."""
        casts = {name: cast for name, text in self.columns.items() if (cast := _cast(text)) is not None}
        if not casts:
            return None

        def convert(row: Row) -> Row:
            for name, cast in casts.items():
                value = row.get(name)
                if value is not None:
                    try:
                        row[name] = cast(value)
                    except (ValueError, TypeError, InvalidOperation):
                        pass  # a value its type cannot hold (a MySQL TIME past 24h): as written
            return row

        return convert


def arrow_type(text: str) -> Any:
    import pyarrow as pa

    m = _DECIMAL.fullmatch(text)
    if m is not None:
        p, s = int(m.group(1)), int(m.group(2))
        return pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)
    return {
        "timestamp": pa.timestamp("us"),
        "timestamp_tz": pa.timestamp("us", tz="UTC"),
        "date": pa.date32(),
        "time": pa.time64("us"),
    }.get(text)


def _cast(text: str) -> Any:
    m = _DECIMAL.fullmatch(text)
    if m is not None:
        scale = int(m.group(2))
        quantum = Decimal(1).scaleb(-scale)

        def decimal(v: Any) -> Decimal:
            number = v if isinstance(v, Decimal) else Decimal(str(v))
            return number.quantize(quantum) if number.is_finite() else number

        return decimal
    if text == "decimal":
        return lambda v: v if isinstance(v, Decimal) else Decimal(str(v))
    if text in ("timestamp", "timestamp_tz"):
        return lambda v: v if isinstance(v, dt.datetime) else dt.datetime.fromisoformat(v)
    if text == "date":
        return lambda v: v if isinstance(v, dt.date) else dt.date.fromisoformat(v)
    if text == "time":
        return lambda v: v if isinstance(v, dt.time) else dt.time.fromisoformat(v)
    return None


def type_of(value: Any, hint: Any = None) -> str | None:
    """The logical type a Python value of a typed source stands for (None: plain JSON)."""
    if isinstance(value, Decimal):
        if hint is not None and hasattr(hint, "precision"):
            return f"decimal({hint.precision},{hint.scale})"
        return "decimal"  # no declared precision (PostgreSQL NUMERIC): exact, its type the writer's
    if isinstance(value, dt.datetime):
        return "timestamp_tz" if value.tzinfo is not None else "timestamp"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, dt.time):
        return "time"
    return None


# -- when to write it -----------------------------------------------------------------------------


def wanted(to_stdout: bool) -> bool:
    choice = os.environ.get("CDC_SCHEMA_LINE", "auto").lower()
    if choice == "always":
        return True
    if choice == "never" or not to_stdout:
        return False
    return reader_is_cdc()


def reader_is_cdc(fd: int = 1, wait: float = 0.2) -> bool:
    """Whether the pipe on ``fd`` is read by a ``cdc`` process (Linux ``/proc``; elsewhere no).
    A reader still a shell (forked, not yet exec'd) is looked at again for up to ``wait`` s."""
    import time

    try:
        info = os.fstat(fd)
    except OSError:
        return False
    if not stat.S_ISFIFO(info.st_mode) or not os.path.isdir("/proc/self/fd"):
        return False
    target = f"pipe:[{info.st_ino}]"
    deadline = time.monotonic() + wait
    while True:
        pending = False
        for args in _readers(target):
            if _is_cdc(args):
                return True
            if args and os.path.basename(args[0].decode("utf-8", "replace")) in SHELLS:
                pending = True
        if not pending or time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def _readers(target: str) -> Iterator[list[bytes]]:
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if os.readlink(f"/proc/{name}/fd/0") != target:
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                yield [a for a in f.read().split(b"\0") if a]
        except OSError:
            continue


def _is_cdc(args: list[bytes]) -> bool:
    names = [os.path.basename(a.decode("utf-8", "replace")) for a in args[:3]]
    if names and names[0] == "cdc":
        return True
    python = len(names) > 1 and names[0].startswith("python")
    return python and (names[1] == "cdc" or args[1:3] == [b"-m", b"cdc"])


class SchemaJsonlWriter:
    """JSON lines with the schema line first: the first rows are held until their types are
    known (``BUFFER_ROWS``), then the line, then every row as the plain writer writes it."""

    def __init__(self, stream: BinaryIO, inner: Any, metadata: Sequence[str] = (), hints: Any = None):
        self._stream = stream
        self._inner = inner
        self._metadata = tuple(metadata)
        self._hints_of = hints  # the reader's Arrow schema (Debezium's decimals), asked at the start
        self._hints: dict[str, Any] = {}
        self._held: list[Row] = []
        self._started = False

    def write_rows(self, rows: Iterable[Row]) -> None:
        it = iter(rows)
        if not self._started:
            for row in it:
                self._held.append(row)
                if len(self._held) >= BUFFER_ROWS:
                    self._start()
                    break
            else:
                return
        self._inner.write_rows(it)

    def _start(self) -> None:
        self._started = True
        hints = self._hints_of() if callable(self._hints_of) else self._hints_of
        self._hints = {f.name: f.type for f in hints} if hints is not None else {}
        columns: dict[str, str] = {}
        mixed: set[str] = set()  # a column whose values are not all of one type stays untyped
        for row in self._held:
            for name, value in row.items():
                if value is None or name in mixed:
                    continue
                kind = type_of(value, self._hints.get(name))
                seen = columns.setdefault(name, kind) if kind is not None else None
                both_decimal = kind is not None and seen is not None and "decimal" in kind and "decimal" in seen
                if both_decimal and seen != kind:
                    columns[name] = "decimal"  # precisions differ: exact all the same
                if kind is None or (seen != kind and not both_decimal):
                    mixed.add(name)
        for name in mixed:
            columns.pop(name, None)
        for name, kind in self._hints.items():  # declared by the source, null in the rows looked at
            if name not in columns and hasattr(kind, "precision"):
                columns[name] = f"decimal({kind.precision},{kind.scale})"
        if columns or self._metadata:
            self._inner.write_rows([StreamSchema(columns, self._metadata).line()])
        held, self._held = self._held, []
        self._inner.write_rows(held)

    def close(self) -> None:
        if not self._started:
            self._start()
        self._inner.close()
