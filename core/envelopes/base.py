"""What the Canal, Maxwell and OGG decoders share: options, filters, metadata, truncates, state."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from cdc.core.envelopes.detect import LABELS, recognise
from cdc.core.envelopes.images import ImageTexts, TableRows
from cdc.core.errors import InputError, UsageError
from cdc.core.model import Change, Row

Getter = Callable[[Row], Any]

TRUNCATE_MODES = ("fail", "skip", "delete")


@dataclass
class EnvelopeOptions:
    """How to read one envelope (the engine handles ignore-parse-errors / ``--on-error``).

    - ``kind_column``: the output's kind column; a data column of that name is an error.
    - ``key``: key columns; with them the decoder keeps the live rows (per table) and rebuilds
      partial or missing before images from the last row seen for the key.
    - ``metadata``: ``[(metadata_key, column_name)]`` — Flink's metadata keys of the envelope,
      appended after the row's columns in the order given.
    - ``database_include`` / ``table_include``: regular expressions that must match the whole
      database / table name (Flink's ``canal-json.database.include``, ``table.include``).
    - ``on_truncate``: ``fail`` | ``skip`` | ``delete`` (one ``-D`` per live row of the table).
    - ``raw_values``: keep values as sent (Canal's strings; metadata timestamps as numbers/text).
    - ``bootstrap``: Maxwell's ``bootstrap-insert`` rows: ``insert`` (``+I``) or ``skip``.
    """

    kind_column: str = "op"
    key: tuple[str, ...] = ()
    metadata: list[tuple[str, str]] = field(default_factory=list)
    database_include: str | None = None
    table_include: str | None = None
    on_truncate: str = "fail"
    raw_values: bool = False
    bootstrap: str = "insert"


def metadata_column(key: str) -> str:
    """The default column name of a metadata key: ``ingestion-timestamp`` → ``ingestion_timestamp``."""
    return re.sub(r"[^0-9A-Za-z_]", "_", key)


def parse_metadata_specs(specs: Sequence[str], known: Collection[str], label: str) -> list[tuple[str, str]]:
    """``['table=src', 'ingestion-timestamp']`` → ``[(key, column), …]``, each key one of
    ``known`` (the envelope's Flink metadata keys)."""
    out = []
    for spec in specs:
        key, _, column = spec.partition("=")
        key = key.strip()
        if key not in known:
            raise UsageError(f"--metadata: {label} has no metadata {key!r}; choose from {', '.join(known)}")
        out.append((key, column.strip() or metadata_column(key)))
    return out


def utc_millis(value: Any) -> Any:
    """Epoch milliseconds → an aware UTC datetime (Flink's TIMESTAMP_LTZ(3)); other values as they are."""
    if type(value) is int:
        return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
    if isinstance(value, str) and value.isdigit():
        return dt.datetime.fromtimestamp(int(value) / 1000, tz=dt.UTC)
    if value is None:
        return None
    raise InputError(f"expected epoch milliseconds, found {value!r}")


def utc_text(value: Any, field_name: str) -> Any:
    """``2020-05-13 15:40:06.000000`` or ``2020-05-13T13:39:35.766000`` → an aware UTC datetime
    (Flink reads these timestamps without a zone as UTC)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"the {field_name!r} field is {type(value).__name__}; expected a timestamp text")
    try:
        stamp = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise InputError(
            f"the {field_name!r} field {value!r} is not a timestamp (yyyy-MM-dd HH:mm:ss.SSSSSS)"
        ) from None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=dt.UTC)


def java_text(value: Any) -> str:
    """What Jackson's ``JsonNode.asText()`` gives, which Flink matches its include patterns against."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def _compile(option: str, pattern: str | None) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"{option}: {pattern!r} is not a regular expression: {exc}") from None


class EnvelopeDecoder:
    """One envelope's decoder: ``decode(event)`` → ``[(kind, image), …]``.

    ``notes`` counts what was read and not written (tombstones, DDL, filtered messages…), so
    that every record is accounted for; pass ``Counts().notes`` to share the command's counter.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    message: ClassVar[str] = "a message"  # how errors name one record: "a Canal message"
    # metadata key → (Flink data type, what it is); the order is Flink's ReadableMetadata order.
    METADATA: ClassVar[dict[str, tuple[str, str]]] = {}
    TEXTS: ClassVar[ImageTexts] = ImageTexts("the source sent no full before image", "give --key COLS")

    def __init__(self, options: EnvelopeOptions | None = None, notes: Counter[str] | None = None):
        self.options = opts = options or EnvelopeOptions()
        self.notes: Counter[str] = notes if notes is not None else Counter()
        self.kind_column = opts.kind_column
        if opts.on_truncate not in TRUNCATE_MODES:
            raise UsageError(f"--on-truncate: {opts.on_truncate!r}; choose one of {', '.join(TRUNCATE_MODES)}")
        self.database_re = _compile("database.include", opts.database_include)
        self.table_re = _compile("table.include", opts.table_include)
        self.filtered = self.database_re is not None or self.table_re is not None
        for key, _ in opts.metadata:
            if key not in self.METADATA:
                raise UsageError(
                    f"--metadata: {self.label} has no metadata {key!r}; choose from {', '.join(self.METADATA)}"
                )
        self.meta: list[tuple[str, Getter]] = [(column, self._getter(key)) for key, column in opts.metadata]
        self.meta_columns = frozenset(column for column, _ in self.meta)
        stateful = bool(opts.key) or opts.on_truncate == "delete"
        self.state: TableRows | None = TableRows(opts.key, self.TEXTS) if stateful else None

    @property
    def stateless(self) -> bool:
        """Every event decodes on its own (no key, no truncate-deletes): safe to run in parallel."""
        return self.state is None

    def decode(self, event: Row | None) -> list[Change]:
        """The changes of one message: a tombstone (``null``) is counted, a message the include
        patterns leave out gives none, anything but an object is an error."""
        if event is None:
            self.notes["tombstones"] += 1
            return []
        if type(event) is not dict:
            raise InputError(f"{self.message} is a JSON object; found {type(event).__name__}")
        try:
            if self.filtered and self._excluded(event):
                return []
            return self._decode(event)
        except TypeError as exc:  # a field of another JSON type than the envelope has: a list as "type"…
            raise InputError(f"{self.message} has a field of an unexpected JSON type ({exc})") from exc

    def _decode(self, event: Row) -> list[Change]:
        raise NotImplementedError

    def _excluded(self, event: Row) -> bool:
        return self._filtered_out(event.get("database"), event.get("table"))

    # -- shared pieces ------------------------------------------------------------------------

    def _getter(self, key: str) -> Getter:
        raise NotImplementedError

    def _metadata(self, event: Row) -> Row:
        return {column: get(event) for column, get in self.meta}

    def _finish(self, changes: list[Change], event: Row, table: Any) -> list[Change]:
        """Check, track and decorate the changes of one message (the slow path: state or metadata)."""
        kc = self.kind_column
        for _, image in changes:
            if kc in image:
                raise InputError(
                    f"column {kc!r} collides with the kind column",
                    hint="rename the kind column with --kind-column NAME",
                )
        if self.state is not None:
            live = self.state.of(table)
            for kind, image in changes:
                live.track(kind, image)
        if not self.meta:
            return changes
        meta = self._metadata(event)
        clash = self.meta_columns.intersection(changes[0][1]) if changes else ()
        if clash:
            raise InputError(
                f"metadata column(s) {', '.join(sorted(clash))} collide with the row's columns",
                hint="name the metadata column: --metadata KEY=COLUMN",
            )
        return [(kind, {**image, **meta}) for kind, image in changes]

    def _filtered_out(self, database: Any, table: Any) -> bool:
        """Flink's include patterns: the whole name must match (``Pattern.matcher(...).matches()``)."""
        if self.database_re is not None and self.database_re.fullmatch(java_text(database)) is None:
            self.notes["filtered messages"] += 1
            return True
        if self.table_re is not None and self.table_re.fullmatch(java_text(table)) is None:
            self.notes["filtered messages"] += 1
            return True
        return False

    def _truncate(self, event: Row, table: Any) -> list[Change]:
        mode = self.options.on_truncate
        if mode == "fail":
            raise InputError(
                f"a truncate ({self.label}): the table was emptied, which no row-level change can say",
                hint="--on-truncate skip ignores it; --on-truncate delete emits -D for every live row",
            )
        self.notes["truncates"] += 1
        if mode == "skip":
            return []
        assert self.state is not None
        rows = self.state.of(table).truncate()
        if not self.meta:
            return [("-D", row) for row in rows]
        meta = self._metadata(event)
        return [("-D", {**row, **meta}) for row in rows]

    def _bad(self, message: str, event: Any, hint: str | None = None) -> InputError:
        """An error for a record this decoder cannot read — naming the envelope it is, if another."""
        other = recognise(event)
        if other is not None and other != self.name:
            return InputError(
                f"this record is a {LABELS[other]} message, but the stream is {self.label} "
                "(mixed envelopes in one input)",
                hint=f"decode each envelope on its own: --envelope {other} for these records",
            )
        return InputError(message, hint=hint)


def rows_of(value: Any, field_name: str, what: str, decoder: EnvelopeDecoder, event: Row) -> list[Row]:
    """A Canal ``data``/``old`` array: a list of row objects."""
    if type(value) is list:
        for row in value:
            if type(row) is not dict:
                break
        else:
            return value
    raise decoder._bad(
        f"the {field_name!r} field of {what} message is {_shape(value)}; expected an array of row objects", event
    )


JSON_NAMES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
}


def json_name(value: Any) -> str:
    """A JSON value's kind, as a user of the input would say it."""
    return "null" if value is None else JSON_NAMES.get(type(value), type(value).__name__)


def _shape(value: Any) -> str:
    if isinstance(value, list):
        return "an array of " + ", ".join(sorted({json_name(v) for v in value}) or {"nothing"})
    return json_name(value)
