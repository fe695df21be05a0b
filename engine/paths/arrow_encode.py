"""``debezium-encode`` on Arrow batches: each change's Debezium event written as JSON text.

As ``formats.debezium.DebeziumEncoder`` does a row at a time: ``+I`` → ``c``, ``-D`` → ``d``,
a ``-U`` and the ``+U`` right after it (of the same key, with ``--key``) → one ``u``; a ``-U``
without its ``+U`` → ``d`` (``--split-updates``: ``-U`` → ``d``, ``+U`` → ``c``). Each row makes
at most one event, at its place, so events come out in input order. The images are JSON objects
of the row's columns (``arrow_json``); ``ts_ms`` is the time column read as the encoder reads it
(epoch milliseconds, or a date-time), per distinct value where the column is not numeric or a
timestamp. A value the encoder refuses is a bad record: that batch goes to the row path.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import orjson

from cdc.core.errors import InputError
from cdc.core.specs import EncodeSpec
from cdc.engine.job import Job, Result
from cdc.engine.paths.arrow_rules import AFTER, BEFORE, DELETE, INSERT, KINDS, ChangeRules, count_codes
from cdc.formats import arrow_compute as pc

OPS = ("c", "u", "d")
SLICE_ROWS = 1 << 17


def _pa() -> Any:
    import pyarrow as pa

    return pa


class Encode(ChangeRules):
    @staticmethod
    def takes_job(job: Job) -> bool:
        """Debezium events are JSON lines: written here as text, never to a caller's rows."""
        return job.sink is None and job.out_format == "jsonl"

    @classmethod
    def takes(cls, spec: EncodeSpec, schema: Any) -> bool:
        tc = spec.time_column
        if tc:
            pa = _pa()
            if tc not in schema.names or tc == spec.kind_column:
                return False
            kind = schema.field(tc).type
            if pa.types.is_timestamp(kind) and kind.unit == "ns":
                return False
        return super().takes(spec, schema)

    def __init__(self, spec: EncodeSpec, schema: Any, result: Result):
        super().__init__(spec, schema, result)
        self.now_ms = int(dt.datetime.now(tz=dt.UTC).timestamp() * 1000)
        self.source = (
            orjson.dumps(dict(spec.source), default=_default, option=orjson.OPT_PASSTHROUGH_DATETIME).decode()
            if spec.source
            else None
        )
        self.times: list[Any] = []  # ts_ms of each regular batch not yet applied
        self.pending: Any = None  # a -U at the end of the last chunk: (1-row table, its ts)

    def regular(self, batch: Any) -> bool:
        if not super().regular(batch):
            return False
        times = self._times(batch)
        if times is None:
            return False
        self.times.append(times)
        return True

    def _times(self, batch: Any) -> Any:
        """ts_ms per row as the encoder reads the time column; None when it refuses a value."""
        pa = _pa()
        tc = self.spec.time_column
        if not tc:
            return pa.repeat(pa.scalar(self.now_ms, pa.int64()), len(batch))
        column = batch.column(tc)
        kind = column.type
        if column.null_count:
            return None
        if pa.types.is_integer(kind):
            return pc.cast(column, pa.int64())
        if pa.types.is_timestamp(kind):
            # int(stamp.timestamp() * 1000): microseconds / 1e6 as a double, times 1000, truncated
            micros = pc.cast(pc.cast(column, pa.timestamp("us", kind.tz)), pa.int64())
            seconds = pc.call("divide", pc.cast(micros, pa.float64()), 1e6)
            return _truncated(pc.call("multiply", seconds, 1000.0))
        from cdc.engine.paths.arrow_time import distinct
        from cdc.formats.debezium import _epoch_millis

        values, index = distinct(column)
        try:
            millis = [_epoch_millis(v) for v in values]
        except (InputError, ValueError, OverflowError):
            return None
        if any(not -(2**63) <= m < 2**63 for m in millis):
            return None
        return pc.take(pa.array(millis, pa.int64()), index)

    def apply(self, table: Any, offset: int, sink: Any) -> bool:
        """The chunk's events, a slice at a time (the JSON texts of a million rows are a few
        hundred megabytes)."""
        pa = _pa()
        times = pa.concat_arrays(self.times) if self.times else pa.array([], pa.int64())
        self.times = []
        assert len(times) == len(table)
        codes = self.kinds(table)
        for start in range(0, len(table), SLICE_ROWS):
            part = (table.slice(start, SLICE_ROWS), times.slice(start, SLICE_ROWS), codes.slice(start, SLICE_ROWS))
            self._encode(*part, sink)
        return True

    def _encode(self, table: Any, times: Any, kinds: Any, sink: Any) -> None:
        from cdc.engine.paths.arrow_json import lines_of, object_texts

        pa = _pa()
        int8 = pa.int8()
        for kind, n in zip(KINDS, count_codes(kinds), strict=True):
            if n:
                self.result.counts.by_kind[kind] += n
        if self.pending is not None:  # the -U the chunk before ended with
            last, last_time = self.pending
            self.pending = None
            table = pa.concat_tables([last.cast(table.schema), table]).combine_chunks()
            times = pa.concat_arrays([last_time, times])
            kinds = pa.concat_arrays([pa.array([BEFORE], int8), kinds])
        n = len(table)
        split = self.spec.split_updates
        is_before, is_after = pc.equal(kinds, BEFORE), pc.equal(kinds, AFTER)
        if split or n == 0:
            paired_with_next = pa.repeat(False, n)
        else:  # a -U whose next row is its +U
            follows = pa.concat_arrays([is_after.slice(1), pa.array([False])])
            paired_with_next = pc.and_(is_before, follows)
            if self.spec.key and pc.any(paired_with_next).as_py():
                from cdc.engine.paths.arrow_rules import arange, shifted_equal

                same_key = shifted_equal(table, arange(n), list(self.spec.key))
                paired_with_next = pc.and_(paired_with_next, pa.concat_arrays([same_key.slice(1), pa.array([False])]))
            if n and not split and pc.equal(kinds, BEFORE)[n - 1].as_py():  # its +U may be in the next chunk
                self.pending = (table.slice(n - 1), times.slice(n - 1))
                table, times, kinds = table.slice(0, n - 1), times.slice(0, n - 1), kinds.slice(0, n - 1)
                paired_with_next = paired_with_next.slice(0, n - 1)
                is_before, is_after = is_before.slice(0, n - 1), is_after.slice(0, n - 1)
                n -= 1
        if n == 0:
            return
        paired_with_previous = pa.concat_arrays([pa.array([False]), paired_with_next.slice(0, n - 1)])
        # Each row's event: none for a -U waiting for its +U
        silent = paired_with_next
        u = pa.scalar(1, int8)
        op = pc.take(pa.array([0, 2, 0 if split else 1, 2], int8), kinds)  # +I c, -U d, +U c|u, -D d
        op = pc.if_else(paired_with_previous, u, op)
        images = object_texts([(name, table.column(name).combine_chunks()) for name in self.images], n)
        null = pa.scalar("null")
        previous_image = pa.concat_arrays([pa.array(["null"]), images.slice(0, n - 1)])
        has_before = pc.or_(pc.equal(kinds, BEFORE), pc.equal(kinds, DELETE))
        before = pc.if_else(paired_with_previous, previous_image, pc.if_else(has_before, images, null))
        has_after = pc.or_(pc.equal(kinds, INSERT), is_after)
        after = pc.if_else(has_after, images, null)
        op_text = pc.take(pa.array(['"c"', '"u"', '"d"']), op)
        parts = ['{"before":', before, ',"after":', after]
        if self.source is not None:
            parts += [',"source":' + self.source]
        parts += [',"op":', op_text, ',"ts_ms":', pc.cast(times, pa.string()), ',"transaction":null}']
        events = pc.binary_join_element_wise(*parts, "")
        keep = pc.invert(silent)
        events = pc.filter(events, keep)
        ops = pc.filter(op, keep)
        notes = self.result.counts.notes
        for i, n_op in enumerate(count_codes(ops)[:3]):
            if n_op:
                notes[f"events {OPS[i]}"] += n_op
        sink.texts(lines_of(events), len(events))

    def hand_over(self, steps_for: Callable[..., Any], where: Any) -> Any:
        steps = steps_for(self.spec, self.result, where)
        encoder = steps.step.__self__  # the row path's DebeziumEncoder
        encoder.now_ms = self.now_ms
        if self.pending is not None:
            last, _ = self.pending
            encoder.pending = last.select(self.images).to_pylist()[0]
            self.pending = None
        self.times = []
        return steps

    def finish(self, sink: Any) -> None:
        from cdc.formats.debezium import DebeziumEncoder

        if self.pending is not None:  # a last lone -U: a d event, as the encoder's finish
            encoder = DebeziumEncoder(self.spec, self.result.counts)
            encoder.now_ms = self.now_ms
            encoder.pending = self.pending[0].select(self.images).to_pylist()[0]
            sink.rows(encoder.finish())
            self.pending = None


def _truncated(values: Any) -> Any:
    """Doubles to int64 toward zero (Python's int())."""
    pa = _pa()
    from pyarrow._compute import CastOptions

    return pc.call("cast", pc.call("trunc", values), options=CastOptions(pa.int64(), allow_float_truncate=True))


def _default(value: Any) -> Any:
    from cdc.formats.jsonl import encode_default

    return encode_default(value)
