"""Debezium JSON change events ↔ changelog rows, the way Flink's ``debezium-json`` reads them.

``c``/``r`` → ``+I(after)``; ``u`` → ``-U(before)``, ``+U(after)``; ``d`` → ``-D(before)``.
Beyond Flink: tombstones and ``m`` are counted, ``t`` follows ``--on-truncate``, logical types are
decoded from the schema block, and with a key the before image is rebuilt from the last row seen.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any, BinaryIO

import orjson

from cdc.core.envelopes.base import parse_metadata_specs
from cdc.core.envelopes.detect import check_envelope
from cdc.core.envelopes.images import ImageTexts, LiveRows
from cdc.core.envelopes.unavailable import DEFAULT, Placeholder
from cdc.core.errors import InconsistencyError, InputError, Location
from cdc.core.model import Reject, Row
from cdc.core.specs import DecodeSpec, EncodeSpec
from cdc.core.state import Findings, Policy
from cdc.core.stats import Counts
from cdc.formats.base import RowReader
from cdc.formats.jsonl import JsonlReader, encode_default
from cdc.formats.logical_types import BadValue, Converter, converter_for, decimal_types

UNAVAILABLE = DEFAULT
# What the decoder finds in a stream and reports (a warning, counted; --strict fails): the names
# the decode command counts them under in --stats.
PLACEHOLDER_KEPT = "unavailable value kept (no --key)"
STALE_BEFORE = "before image differs from the stored row"
SNAPSHOT_REREAD = "snapshot read of a row already present"
FLAT_TOMBSTONE = "tombstone among flattened rows (a delete whose key is not in the dump)"
FINDINGS = (PLACEHOLDER_KEPT, STALE_BEFORE, SNAPSHOT_REREAD, FLAT_TOMBSTONE)
HINT_KEY = "give --key COLS: the last row seen for the key fills it in"
REPLICA_CAUSE = "from PostgreSQL this means the table is not set to REPLICA IDENTITY FULL"
REPLICA_HINT = (
    "PostgreSQL sends no full before image unless the table has REPLICA IDENTITY FULL "
    "(ALTER TABLE … REPLICA IDENTITY FULL); or give --key COLS to rebuild it from the last row seen"
)

# Flink's metadata keys (DebeziumJsonDecodingFormat.ReadableMetadata).
METADATA_KEYS = (
    "schema",
    "ingestion-timestamp",
    "source.timestamp",
    "source.database",
    "source.schema",
    "source.table",
    "source.properties",
)


def parse_metadata(specs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``['source.table=tbl', 'ingestion-timestamp']`` → ``((key, column), …)``."""
    return tuple(parse_metadata_specs(specs, METADATA_KEYS, "Debezium"))


def _utc_millis(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
    return value


def _stringify(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return _json_text(value)


class EnvelopeReader(RowReader):
    """Reads one input of change events (JSON lines) and yields the changelog rows a decoder
    makes of them; a bad event is a bad record at its line."""

    def __init__(self, stream: BinaryIO, source: str, reject: Reject | None, decoder: Any):
        super().__init__(source, reject)
        self.lines = JsonlReader(stream, source, reject=self.reject)
        self.decoder = decoder

    # The line reader's location and raw text are this reader's.
    def location(self) -> Location:
        return self.lines.location()

    def raw(self) -> str:
        return self.lines.raw()

    @property  # type: ignore[override]
    def records(self) -> int:
        return self.lines.records

    @records.setter
    def records(self, value: int) -> None:
        pass

    @property  # type: ignore[override]
    def arrow_schema(self) -> Any:
        """Column types the envelope declares (Debezium decimals), for Parquet output."""
        fields = getattr(self.decoder, "arrow_fields", None)
        return fields() if fields is not None else None

    @arrow_schema.setter
    def arrow_schema(self, value: Any) -> None:
        pass

    def __iter__(self) -> Iterator[Row]:
        decode = self.decoder.decode
        if hasattr(self.decoder, "where"):
            self.decoder.where = self.location  # findings name their line
        lines = self.lines
        for event in lines.parsed(tombstones=True):
            try:
                yield from decode(event, lines.raw_bytes)
            except (InputError, BadValue) as exc:
                err = exc if isinstance(exc, InputError) else InputError(str(exc))
                self.bad_record(err)

    def close(self) -> None:
        self.lines.close()


class DebeziumDecoder:
    """Event → rows, with the state that spans every input of one command (keys, schemas).

    ``findings``: where what the stream says against itself goes (a stale before image, a
    placeholder that cannot be rebuilt, a snapshot re-read of a live row) — the state's, for a
    command that keeps one; else they are counted in the notes (and fail under ``policy`` fail).
    """

    def __init__(
        self, options: DecodeSpec | None = None, counts: Counts | None = None, findings: Findings | None = None
    ):
        self.options = opts = options or DecodeSpec()
        self.metadata = parse_metadata(opts.metadata)
        self.counts = counts if counts is not None else Counts()
        self.findings = findings
        self.where: Callable[[], Location | None] = lambda: None
        self._converters: dict[bytes, dict[str, Converter]] = {}
        self.placeholder = Placeholder(opts.unavailable_placeholder or UNAVAILABLE)
        # The live rows that complete partial images (--key) and make a truncate into -Ds.
        self.live = LiveRows(
            opts.key, ImageTexts(REPLICA_CAUSE, REPLICA_HINT), self.placeholder.text, empty_is_missing=False
        )
        self.tracking = bool(opts.key) or opts.on_truncate == "delete" or opts.live_rows
        self.saw_envelope = False  # a {"schema", "payload"} line was seen (for --print-sql)
        self.streaming = False  # a c, u, d or t was seen: a snapshot read after it re-reads
        self.flattened = False  # ExtractNewRecordState rows were seen
        self._decimals: dict[str, tuple[int, int, bool]] = {}  # column → (precision, scale, array)
        self._deleted: tuple[Any, Row] | None = None  # (transaction, row) of the last event, a d
        self._last_schema: Any = None  # kept alive here, so its identity stands for its value
        self._last_converters: dict[str, Converter] = {}

    def arrow_fields(self) -> Any:
        if not self._decimals:
            return None
        import pyarrow as pa

        fields = []
        for name, (p, s, listed) in self._decimals.items():
            kind = pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)
            fields.append(pa.field(name, pa.list_(kind) if listed else kind))
        return fields

    def reader(self, stream: BinaryIO, source: str, reject: Reject | None = None) -> EnvelopeReader:
        return EnvelopeReader(stream, source, reject, self)

    @property
    def stateless(self) -> bool:
        """Without a key or truncate-deletes every event decodes on its own (parallel-safe)."""
        return not self.tracking

    def decode(self, event: Row | None, raw: bytes = b"") -> list[Row]:
        try:
            return self._decode(event, raw)
        except InconsistencyError:
            raise
        except InputError:
            check_envelope("debezium", event)  # a Canal/Maxwell/OGG record among Debezium events
            raise

    def fast_decode(self) -> Callable[[Row | None, bytes], tuple[Row, ...] | list[Row]]:
        """``decode`` for the plain cases, inlined (the parallel path's hot loop).

        A payload-only event with complete images and no placeholders becomes its rows right
        here; anything else — envelopes, metadata, state, bad events — goes to ``decode``, so
        the results are the same, just cheaper for the bulk of a dump.
        """
        if self.metadata or not self.stateless or self.options.schema_include == "true":
            return self.decode
        kc = self.options.kind_column
        by_kind = self.counts.by_kind
        decode = self.decode
        holds = self.placeholder.matches
        in_line = self.placeholder.in_line

        def clean(image: Row, raw: bytes) -> bool:
            """No placeholder form in the image (the line's bytes say so at C speed)."""
            if raw and not in_line(raw):
                return True
            return not any(v is not None and holds(v) for v in image.values())

        def plain(event: Row | None, raw: bytes = b"") -> tuple[Row, ...] | list[Row]:
            if event is None or "payload" in event:
                return decode(event, raw)
            op = event.get("op")
            before = event.get("before")
            after = event.get("after")
            if type(before) is str or type(after) is str:  # MongoDB: decode says why not
                return decode(event, raw)
            if op == "c" or op == "r":  # the placeholder's text is data here
                if type(after) is dict and kc not in after:
                    by_kind["+I"] += 1
                    return ({kc: "+I", **after},)
            elif op == "u":
                if (
                    type(before) is dict
                    and type(after) is dict
                    and kc not in before
                    and kc not in after
                    and before.keys() >= after.keys()
                    and clean(before, raw)
                    and clean(after, raw)
                ):
                    by_kind["-U"] += 1
                    by_kind["+U"] += 1
                    return ({kc: "-U", **before}, {kc: "+U", **after})
            elif op == "d" and type(before) is dict and kc not in before and clean(before, raw):
                by_kind["-D"] += 1
                return ({kc: "-D", **before},)
            return decode(event, raw)

        return plain

    # -- findings ------------------------------------------------------------------------------

    def _finding(self, what: str, message: str, hint: str = HINT_KEY) -> None:
        findings = self.findings
        if findings is not None:
            if findings.policy == Policy.fail:
                raise InconsistencyError(message, hint=hint)
            findings.add(what, message, self.where)
            return
        if self.options.policy == Policy.fail:
            raise InconsistencyError(message, hint=hint)
        if self.options.policy == Policy.warn:
            self.counts.notes[what] += 1

    # -- one event -------------------------------------------------------------------------

    def _decode(self, event: Row | None, raw: bytes = b"") -> list[Row]:  # noqa: C901 - one branch per op
        opts = self.options
        counts = self.counts
        if event is None:
            return self._tombstone()
        schema: Any = None
        enveloped = opts.schema_include == "true" or (
            opts.schema_include == "auto" and "payload" in event and "op" not in event
        )
        if enveloped:
            self.saw_envelope = True
            if "payload" not in event:
                raise InputError('expected a {"schema", "payload"} envelope (--schema-include true)')
            schema, payload = event.get("schema"), event.get("payload")
            if payload is None:
                return self._tombstone()
        else:
            payload = event
        if not isinstance(payload, dict):
            raise InputError(f"the Debezium payload is not an object: {type(payload).__name__}")
        if "op" not in payload or ("before" not in payload and "after" not in payload and "source" not in payload):
            other = _not_a_change(payload, schema)
            if other is not None:
                counts.notes[other] += 1
                return []
            if _flattened(payload):
                return self._flat(payload, schema)
            if "op" not in payload:
                raise InputError(
                    "not a Debezium change event: no 'op' field, and no field of the ExtractNewRecordState "
                    "transform (__op, __deleted)",
                    hint="flattened rows without __op/__deleted are plain rows: cdc replay --input-mode upsert "
                    "--key COLS reads them",
                )
        op = payload["op"]
        if op == "m":
            counts.notes["messages"] += 1
            return []
        if op == "t":
            self.streaming = True
            return self._truncate()
        before, after = payload.get("before"), payload.get("after")
        if isinstance(before, str) or isinstance(after, str):
            raise InputError(
                "'before'/'after' hold JSON text: this looks like a MongoDB event, which has no fixed columns",
                hint="flatten MongoDB events with Debezium's ExtractNewDocumentState first",
            )
        # The placeholder stands for "unchanged, not sent" only in before images and in the
        # after image of an update; in an insert or a snapshot read it is the column's value.
        # (A line whose bytes hold no form of it needs no look at its values.)
        mark = self.placeholder.marked if not raw or self.placeholder.in_line(raw) else _unmarked
        before = mark(before)
        # ... but for a key change: Debezium's d of the old key and c of the new one, in one
        # transaction (the c's unchanged TOASTed values are placeholders; e2e finding 05).
        key_change = op == "c" and self._key_change(payload)
        if op == "u" or key_change:
            after = mark(after)
        if schema is not None and not opts.raw_values:
            before, after = self._convert(schema, before, after)
        if op in ("c", "r"):
            if not isinstance(after, dict):
                raise InputError(f"the 'after' field of a {op!r} event is {_what(after)}; expected the new row")
            if op == "r" and self.tracking:
                reread = self._snapshot_read(after, payload)
                if reread is not None:
                    return self._emit(reread, payload, schema)
            if op == "c":
                self.streaming = True
            return self._emit([("+I", after)], payload, schema, fill=key_change)
        self.streaming = True
        if op == "u":
            if not isinstance(after, dict):
                raise InputError(f"the 'after' field of an UPDATE event is {_what(after)}; expected the new row")
            before = self._before(before, after, "UPDATE")
            return self._emit([("-U", before), ("+U", after)], payload, schema)
        if op == "d":
            before = self._before(before, None, "DELETE")
            return self._emit([("-D", before)], payload, schema)
        raise InputError(f"unknown Debezium op {op!r}; expected c, r, u, d, t or m")

    def _tombstone(self) -> list[Row]:
        self.counts.notes["tombstones"] += 1
        if self.flattened:  # the transform's delete.tombstone.handling.mode=tombstone: the key is elsewhere
            self._finding(
                FLAT_TOMBSTONE,
                "a tombstone among flattened rows: a delete whose key a dump of values alone does not hold",
                hint="set the transform's delete.tombstone.handling.mode=rewrite (rows with __deleted), "
                "or dump the keys too",
            )
        return []

    def _before(self, before: Any, after: Row | None, what: str) -> Row:
        """The full before image; without a key, placeholders in it are a finding (kept as sent);
        with one, an image that disagrees with the stored row gives way to it (ChangelogNormalize)."""
        live = self.live
        if live.keyed is None:
            held = self.placeholder.columns(before)
            if held and not [c for c in live.missing(before, after) if c not in held]:
                self._placeholder_kept(held, what)
                return before  # type: ignore[no-any-return]
            return live.complete_before(before, after, what)
        stored = live.stored(before) if isinstance(before, dict) else None
        if stored is None and isinstance(before, dict) and after is not None:
            stored = live.stored(after)
        complete = not live.missing(before, after)
        rebuilt = live.complete_before(before, after, what)
        if complete and after is not None and stored is not None and not _same(stored, before):
            self._finding(
                STALE_BEFORE,
                f"{what} before image differs from the row stored for its key "
                f"({_changed(stored, before)}): the stored row is retracted, as Flink's ChangelogNormalize does",
                hint="an at-least-once or out-of-order stream; --strict stops here",
            )
            return stored
        return rebuilt

    def _placeholder_kept(self, columns: list[str], what: str) -> None:
        for column in columns:
            self._finding(
                PLACEHOLDER_KEPT,
                f"column {column!r} of this {what} holds Debezium's unavailable-value placeholder "
                f"({self.placeholder.text!r}): its value was not sent and is kept as the placeholder "
                "(--key rebuilds it from the last row seen)",
            )

    def _snapshot_read(self, after: Row, payload: Row) -> list[tuple[str, Row]] | None:
        """A snapshot read (``r``) of a row already live — an incremental or blocking snapshot
        re-reads rows in the middle of streaming: with a key, an update of the stored row (nothing
        when equal, as ChangelogNormalize); without one, a finding, and the row is not added twice."""
        live = self.live
        if live.keyed is not None:
            stored = live.stored(after)
            if stored is None:
                return None
            if _same(stored, after):
                self.counts.notes["snapshot re-reads unchanged"] += 1
                return []
            return [("-U", stored), ("+U", after)]
        multiset = live.multiset
        source = payload.get("source")
        snapshot = source.get("snapshot") if isinstance(source, dict) else None
        if multiset is None or (snapshot != "incremental" and not self.streaming):
            return None
        from cdc.core.rowstore import row_identity

        if row_identity(after) in multiset.rows:
            self._finding(
                SNAPSHOT_REREAD,
                f"a snapshot read (source.snapshot={snapshot!r}) of a row already in the table: not added twice "
                "(--key reads a re-read as an update of its key)",
                hint="give --key COLS to read a re-read as an update of its key",
            )
            return []
        self._finding(
            SNAPSHOT_REREAD,
            f"a snapshot read (source.snapshot={snapshot!r}) during streaming: if it re-reads a row changed "
            "since, that row is now in the table twice (--key reads a re-read as an update of its key)",
            hint="give --key COLS to read a re-read as an update of its key",
        )
        return None

    def _key_change(self, payload: Row) -> bool:
        deleted = self._deleted
        return self.live.keyed is not None and deleted is not None and deleted[0] == _transaction_of(payload)

    def _emit(self, images: list[tuple[str, Row]], payload: Row, schema: Any, fill: bool = False) -> list[Row]:
        opts = self.options
        kc = opts.kind_column
        meta = self._metadata(payload, schema) if self.metadata else None
        by_kind = self.counts.by_kind
        tracking = self.tracking
        placeholder = self.placeholder.text
        rows = []
        retracted: Row | None = None  # the -U image of the update, whose values the +U did not change
        for kind, image in images:
            if (kind == "+U" or fill) and placeholder in image.values():
                image = self._complete_after(image, payload, retracted)
            if kind == "-U":
                retracted = image
            if kc in image:
                raise InputError(
                    f"column {kc!r} collides with the kind column",
                    hint="rename the kind column with --kind-column NAME",
                )
            row = {kc: kind, **image}
            if meta:
                row.update(meta)
            rows.append(row)
            by_kind[kind] += 1
            if tracking:
                self.live.track(kind, image)
        if self.live.keyed is not None and images:  # a d just before a c of its transaction may be a key change
            self._deleted = (_transaction_of(payload), images[0][1]) if images[0][0] == "-D" else None
        return rows

    def _complete_after(self, image: Row, payload: Row, before: Row | None = None) -> Row:
        """TOAST: an unchanged value Debezium could not read comes from the update's own before
        image (REPLICA IDENTITY FULL) or from state, never out. A primary-key change is a d of the
        old key and a c of the new one in the same transaction: the c's placeholders come from the
        row that d removed."""
        live = self.live
        text = self.placeholder.text
        if before is not None and text not in before.values() and before.keys() >= image.keys():
            return live.complete_after(image, before=before)
        deleted = self._deleted
        fallback = deleted[1] if deleted is not None and deleted[0] == _transaction_of(payload) else None
        if live.keyed is None:
            self._placeholder_kept([c for c, v in image.items() if v == text], "UPDATE")
            return image
        return live.complete_after(image, fallback=fallback)

    # -- flattened rows (ExtractNewRecordState) -------------------------------------------------

    def _flat(self, payload: Row, schema: Any) -> list[Row]:
        """A row of Debezium's ExtractNewRecordState transform: the after image (the before image
        of a delete under ``rewrite``) with ``__op``, ``__deleted``, ``__source_*``… fields. It has
        no before image: with a key the stored row is it (an upsert, as ChangelogNormalize reads
        it), and placeholders come from it."""
        self.flattened = True
        live = self.live
        if live.keyed is None:
            raise InputError(
                "a flattened row (Debezium's ExtractNewRecordState: fields "
                f"{', '.join(c for c in payload if c.startswith('__'))}) carries no before image",
                hint="give --key COLS to read flattened rows as upserts of their key "
                "(or cdc replay --input-mode upsert --key COLS --delete-when __deleted=true)",
            )
        op = payload.get("__op")
        deleted = op == "d" or str(payload.get("__deleted")).lower() == "true"
        image = {c: v for c, v in payload.items() if not c.startswith("__")}
        # The placeholder is one in a delete's image and an update's; without __op, a row of a
        # live key is an update. A c right after a delete (of its transaction, where the rows say)
        # is a key change, whose unchanged values are placeholders too.
        key_change = (
            op == "c"
            and self._deleted is not None
            and _flat_transaction(payload) == _flat_transaction(self._deleted[0] or {})
        )
        # In a c or r row (an insert, a snapshot read) the placeholder's text is the column's value.
        may_hold = deleted or op == "u" or key_change or (op is None and live.stored(image) is not None)
        if may_hold:
            image = self.placeholder.marked(image)
        if schema is not None and not self.options.raw_values:
            image = _apply(self._converters_for(schema), image, self.placeholder.text)
        stored = live.stored(image)
        if deleted:
            self.streaming = True
            gone = stored if stored is not None else live.complete_before(image, None, "DELETE")
            rows = self._emit([("-D", gone)], payload, schema)
            self._deleted = (payload, gone)
            return rows
        if op == "r" and stored is not None and _same(stored, image):
            self.counts.notes["snapshot re-reads unchanged"] += 1
            return []
        if op != "r":
            self.streaming = True
        if may_hold and self.placeholder.text in image.values():
            fallback = self._deleted[1] if self._deleted is not None and key_change else None
            if stored is None and fallback is None:
                held = [c for c, v in image.items() if v == self.placeholder.text]
                raise InputError(
                    f"column(s) {', '.join(held)} hold the placeholder {self.placeholder.text!r} (an unchanged "
                    "value not sent) for a key never seen",
                    hint="the stream must start with the row's insert (or a snapshot) for --key to rebuild it",
                )
            image = live.complete_after(image, fallback=fallback)
        if stored is None:
            rows = self._emit([("+I", image)], payload, schema)
        elif _same(stored, image):
            self.counts.notes["no-op updates"] += 1
            rows = []
        else:
            rows = self._emit([("-U", stored), ("+U", image)], payload, schema)
        self._deleted = None
        return rows

    def _truncate(self) -> list[Row]:
        mode = self.options.on_truncate
        if mode == "skip":
            self.counts.notes["truncates"] += 1
            return []
        if mode == "fail":
            raise InputError(
                "a truncate event ('t'): the table was emptied, which no row-level change can say",
                hint="--on-truncate skip ignores it; --on-truncate delete emits -D for every live row",
            )
        self.counts.notes["truncates"] += 1
        rows = [{self.options.kind_column: "-D", **image} for image in self.live.truncate()]
        self.counts.by_kind["-D"] += len(rows)
        return rows

    # -- schema-driven values ----------------------------------------------------------------

    def _convert(self, schema: Any, before: Any, after: Any) -> tuple[Any, Any]:
        # decimal.format=NUMERIC decimals need no second look: a JSON number keeps its literal
        # (core.values), which the Decimal converter reads exactly.
        converters = self._converters_for(schema)
        if not converters:
            return before, after
        text = self.placeholder.text
        return _apply(converters, before, text), _apply(converters, after, text)

    def plain_schema(self, schema: Any) -> bool:
        """No value under this envelope schema needs converting: the images can be copied as
        they are (the C kernel asks once per schema)."""
        return self.options.raw_values or not self._converters_for(schema)

    def _converters_for(self, schema: Any) -> dict[str, Converter]:
        if schema is self._last_schema:  # a run of events sharing one parsed schema (formats.kernel)
            return self._last_converters
        cache_key = _schema_key(schema)
        cached = self._converters.get(cache_key)
        if cached is None:
            fields = _row_fields(schema)
            converters = {name: conv for name, f in fields.items() if (conv := converter_for(f)) is not None}
            cached = converters
            self._converters[cache_key] = cached
            if not self.options.raw_values:
                self._decimals.update(decimal_types(fields))
        self._last_schema, self._last_converters = schema, cached
        return cached

    def _metadata(self, payload: Row, schema: Any) -> Row:
        found = payload.get("source")
        source: Row = found if isinstance(found, dict) else {}
        raw = self.options.raw_values
        values: dict[str, Any] = {
            "schema": None if schema is None else _json_text(schema),
            "ingestion-timestamp": payload.get("ts_ms") if raw else _utc_millis(payload.get("ts_ms")),
            "source.timestamp": source.get("ts_ms") if raw else _utc_millis(source.get("ts_ms")),
            "source.database": source.get("db"),
            "source.schema": source.get("schema"),
            "source.table": source.get("table"),
            "source.properties": {k: _stringify(v) for k, v in source.items()} if source else None,
        }
        return {column: values[key] for key, column in self.metadata}


def _unmarked(image: Any) -> Any:
    return image


def _json_text(value: Any, sort: bool = False) -> str:
    """JSON text of a parsed value (numbers keep their literal: a schema's NUMERIC default)."""
    option = orjson.OPT_SORT_KEYS if sort else 0
    try:
        return orjson.dumps(value, default=encode_default, option=option).decode()
    except TypeError:  # an integer past 64 bits
        import json

        return json.dumps(value, sort_keys=sort, default=str, separators=(",", ":"))


def _schema_key(schema: Any) -> bytes:
    return _json_text(schema, sort=True).encode()


def _same(a: Row, b: Row) -> bool:
    """Two images hold the same row (an absent column reads as null)."""
    return a == b or all(a.get(c) == b.get(c) for c in {*a, *b})


def _changed(stored: Row, image: Row) -> str:
    names = [c for c in dict.fromkeys([*stored, *image]) if stored.get(c) != image.get(c)]
    return ", ".join(f"{c}: stored {stored.get(c)!r}, sent {image.get(c)!r}" for c in names[:3])


# What a record that is not a row change says it is (Debezium writes them to other topics; a dump
# of several topics has them among the changes): counted, skipped.
def _not_a_change(payload: Row, schema: Any) -> str | None:
    name = schema.get("name") if isinstance(schema, dict) else None
    if payload.get("status") in ("BEGIN", "END") and "id" in payload:
        return "transaction markers"
    if "ddl" in payload or "tableChanges" in payload:
        return "schema changes"
    if (isinstance(name, str) and name.endswith("Heartbeat")) or (payload and set(payload) <= {"ts_ms"}):
        return "heartbeats"
    return None


FLAT_FIELDS = ("__op", "__deleted")
FLAT_TRANSACTION = ("__source_txId", "__txId", "__id", "__source_gtid", "__source_file")


def _flat_transaction(payload: Row) -> Any:
    """What names a flattened row's transaction, where the transform added it (else nothing)."""
    return next((payload[f] for f in FLAT_TRANSACTION if f in payload), None)


def _flattened(payload: Row) -> bool:
    return any(f in payload for f in FLAT_FIELDS) and "before" not in payload and "after" not in payload


def _transaction_of(payload: Row) -> Any:
    """What ties the events of one transaction together: PostgreSQL's txId, a MySQL binlog
    position, or the transaction block's id."""
    source = payload.get("source")
    if isinstance(source, dict):
        if source.get("txId") is not None:
            return ("txId", source["txId"])
        if source.get("file") is not None:
            return ("binlog", source.get("file"), source.get("pos"))
    transaction = payload.get("transaction")
    return ("id", transaction.get("id")) if isinstance(transaction, dict) else None


def _what(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _row_fields(schema: Any) -> dict[str, dict[str, Any]]:
    """Column name → field schema, from the envelope's ``after`` (or ``before``) struct — or the
    schema's own fields, for a flattened row (ExtractNewRecordState) whose schema is the row's."""
    if not isinstance(schema, dict):
        return {}
    fields = schema.get("fields") or []
    for part in ("after", "before"):
        for f in fields:
            if isinstance(f, dict) and f.get("field") == part and isinstance(f.get("fields"), list):
                return {c["field"]: c for c in f["fields"] if isinstance(c, dict) and "field" in c}
    if any(isinstance(f, dict) and f.get("field") == "op" and f.get("type") == "string" for f in fields) and any(
        isinstance(f, dict) and f.get("field") == "source" for f in fields
    ):
        return {}  # an envelope without before/after (a truncate's, a message's)
    return {c["field"]: c for c in fields if isinstance(c, dict) and "field" in c}


def _apply(converters: dict[str, Converter], image: Any, placeholder: str = UNAVAILABLE) -> Any:
    if not isinstance(image, dict):
        return image
    out = dict(image)
    for column, convert in converters.items():
        value = out.get(column)
        if value is None or value == placeholder:
            continue
        try:
            out[column] = convert(value)
        except BadValue as exc:
            raise InputError(f"column {column!r}: {exc}") from None
    return out


# -- encoding -------------------------------------------------------------------------------


def _epoch_millis(value: Any) -> int:
    if isinstance(value, bool):
        raise InputError(f"time column value {value!r} is not a time")
    if isinstance(value, int | float | Decimal):
        return int(value)
    if isinstance(value, dt.datetime):
        stamp = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return int(stamp.timestamp() * 1000)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
        try:
            return _epoch_millis(dt.datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            pass
    raise InputError(f"time column value {value!r} is neither epoch milliseconds nor an ISO date-time")


class DebeziumEncoder:
    """Changelog rows → Debezium events, a row at a time: ``step`` returns the events a row
    completes; an adjacent ``-U``/``+U`` pair becomes one ``u`` event, so a ``-U`` waits for the
    next row (``finish`` writes a last lone one as a ``d``)."""

    def __init__(self, spec: EncodeSpec, counts: Counts):
        self.spec = spec
        self.counts = counts
        self.source = dict(spec.source) or None
        self.now_ms = int(dt.datetime.now(tz=dt.UTC).timestamp() * 1000)
        self.pending: Row | None = None  # a -U waiting for its +U

    def _event(self, op: str, before: Row | None, after: Row | None, row: Row) -> Row:
        tc = self.spec.time_column
        if tc:
            if tc not in row:
                raise InputError(f"time column {tc!r} does not exist in this row")
            ts = _epoch_millis(row[tc])
        else:
            ts = self.now_ms
        self.counts.notes[f"events {op}"] += 1
        self.counts.written += 1
        out: Row = {"before": before, "after": after}
        if self.source is not None:
            out["source"] = self.source
        out.update(op=op, ts_ms=ts, transaction=None)
        return out

    def step(self, row: Row) -> list[Row]:
        from cdc.core.convert import read_kind

        spec = self.spec
        kc = spec.kind_column
        kind = read_kind(row, kc).value
        image = {k: v for k, v in row.items() if k != kc}
        self.counts.by_kind[kind] += 1
        out = []
        pending = self.pending
        if pending is not None:
            self.pending = None
            if kind == "+U" and not spec.split_updates and all(pending.get(k) == image.get(k) for k in spec.key):
                return [self._event("u", pending, image, row)]
            out.append(self._event("d", pending, None, pending))
        if kind == "+I":
            out.append(self._event("c", None, image, row))
        elif kind == "-U":
            if spec.split_updates:
                out.append(self._event("d", image, None, row))
            else:
                self.pending = image
        elif kind == "+U":
            # Flink's form writes c; a lone +U (an upsert) is an update whose before image is unknown.
            out.append(self._event("c" if spec.split_updates else "u", None, image, row))
        else:
            out.append(self._event("d", image, None, row))
        return out

    def finish(self) -> list[Row]:
        pending, self.pending = self.pending, None
        return [] if pending is None else [self._event("d", pending, None, pending)]
