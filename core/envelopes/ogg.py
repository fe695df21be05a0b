"""Oracle GoldenGate JSON (the GoldenGate for Big Data JSON formatter) → changes, as Flink's
``ogg-json`` reads them.

Flink (``OggJsonDeserializationSchema``):

- an empty message is skipped;
- ``op_type`` ``I``: ``+I(after)``; ``U``: ``-U(before)``, ``+U(after)``; ``D``: ``-D(before)``;
  ``U``/``D`` with a null ``before`` fail (the message speaks of REPLICA IDENTITY);
- ``T`` (truncate) and anything else fail ("Unknown "op_type" value");
- columns an image leaves out become NULL.

cdc differs where Flink fails or gives wrong rows:

- ``T`` follows ``on_truncate`` (fail | skip | delete) like Debezium's ``t``;
- GoldenGate without full supplemental logging sends partial images: a before image with the
  key and the changed columns only (or ``"before": {}``, FLINK-32712), an after image with the
  key and the changed columns (compressed updates). Flink turns the absent columns into NULLs,
  so its ``-U``/``-D`` match no row. cdc completes an after image from the event's own before
  image (absent = unchanged), and with ``key`` rebuilds a partial or missing before image from
  the last row seen for the key; without one a partial before image is an error with a hint.

``table`` is ``SCHEMA.TABLE`` (or ``CATALOG.SCHEMA.TABLE``): ``table_include`` matches it whole,
``database_include`` matches what stands before the last dot.
"""

from __future__ import annotations

from typing import Any, ClassVar

from cdc.core.envelopes.base import EnvelopeDecoder, Getter, utc_text
from cdc.core.envelopes.images import ImageTexts, what_is
from cdc.core.errors import InputError
from cdc.core.model import Change, Row


class OggDecoder(EnvelopeDecoder):
    name = "ogg"
    label = "Oracle GoldenGate"
    message = "a GoldenGate record"
    METADATA: ClassVar[dict[str, tuple[str, str]]] = {
        "table": ("STRING NULL", "the 'table' field (SCHEMA.TABLE)"),
        "primary-keys": ("ARRAY<STRING> NULL", "the 'primary_keys' field"),
        "ingestion-timestamp": ("TIMESTAMP_LTZ(6) NULL", "the 'current_ts' field: when GoldenGate wrote the record"),
        "event-timestamp": ("TIMESTAMP_LTZ(6) NULL", "the 'op_ts' field: when the change was committed"),
    }
    TEXTS = ImageTexts(
        "GoldenGate sends full before images only with full supplemental logging "
        "(ADD TRANDATA … ALLCOLS) and GETUPDATEBEFORES, NOCOMPRESSUPDATES, NOCOMPRESSDELETES",
        "give --key COLS to rebuild the before image from the last row seen for that key, "
        "or have the extract log full before images",
    )

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._plain = self.state is None and not self.meta
        self._shapes: dict[Any, Row] = {}  # table → its last insert's image (the columns it has)

    def _getter(self, key: str) -> Getter:
        if key == "table":
            return lambda e: e.get("table")
        if key == "primary-keys":
            return lambda e: e.get("primary_keys")
        field_name = "current_ts" if key == "ingestion-timestamp" else "op_ts"
        if self.options.raw_values:
            return lambda e: e.get(field_name)
        return lambda e: utc_text(e.get(field_name), field_name)

    def _excluded(self, event: Row) -> bool:
        table = event.get("table")
        schema = table.rpartition(".")[0] if isinstance(table, str) else table
        return self._filtered_out(schema, table)

    def _decode(self, event: Row) -> list[Change]:  # noqa: C901 - one branch per op
        op = event.get("op_type")
        before, after = event.get("before"), event.get("after")
        table = event.get("table")
        live = None if self.state is None else self.state.of(table)
        if op == "I":
            if type(after) is not dict:
                after = self._image(after, "after", "an insert (I)", event)
            if live is None:
                self._shapes[table] = after
            changes = [("+I", after)]
        elif op == "U":
            if type(after) is not dict:
                after = self._image(after, "after", "an update (U)", event)
            if live is not None:
                before = live.complete_before(before, after, "an update (U)")
                after = live.complete_after(after, before)
            else:
                shape = self._shapes.get(table)
                if not (
                    type(before) is dict
                    and before.keys() >= after.keys()
                    and (shape is None or before.keys() >= shape.keys())
                    and before
                ):
                    before = self._whole(before, after, shape, "an update (U)")
                if before.keys() != after.keys():  # a compressed after image: the rest is unchanged
                    after = {**before, **after}
            changes = [("-U", before), ("+U", after)]
        elif op == "D":
            if live is not None:
                before = live.complete_before(before, None, "a delete (D)")
            else:
                shape = self._shapes.get(table)
                if not (type(before) is dict and before and (shape is None or before.keys() >= shape.keys())):
                    before = self._whole(before, None, shape, "a delete (D)")
            changes = [("-D", before)]
        elif op == "T":
            return self._truncate(event, event.get("table"))
        elif "op_type" not in event:
            raise self._bad("not a GoldenGate record: no 'op_type' field", event)
        else:
            raise self._bad(f"unknown GoldenGate op_type {op!r}; expected I, U, D or T", event)
        if self._plain:
            kc = self.kind_column
            for _, image in changes:
                if kc in image:
                    return self._finish(changes, event, None)  # raises the collision error
            return changes
        return self._finish(changes, event, event.get("table"))

    def _whole(self, before: Any, after: Row | None, shape: Row | None, what: str) -> Row:
        """Why a before image is not whole: it must have every column of the after image and of
        the table's last insert (``shape``). Without --key nothing can fill the gaps."""
        texts = self.TEXTS
        if type(before) is not dict or not before:
            shown = "empty" if type(before) is dict else what_is(before)
            raise InputError(f'the "before" image of {what} is {shown}; {texts.cause}', hint=texts.hint)
        gaps = [c for c in (after or ()) if c not in before]
        gaps += [c for c in (shape or ()) if c not in before and c not in gaps]
        missing = ", ".join(gaps)
        raise InputError(
            f'the "before" image of {what} is incomplete (missing {missing}); {texts.cause}', hint=texts.hint
        )

    def _image(self, image: Any, field_name: str, what: str, event: Row) -> Row:
        if type(image) is dict:
            return image
        raise self._bad(f"the {field_name!r} image of {what} is {what_is(image)}; expected the row object", event)
