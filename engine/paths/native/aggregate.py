"""``aggregate`` over JSON lines in the C kernel (``_kernel.Aggregate``).

The kernel keeps the state the generated code of ``core.aggregate`` keeps — per group the record
count, each aggregate's slots (a running sum and its count, MIN/MAX with their map value → count),
the operands' multiset that tells a retraction of a row never accumulated — and writes Flink's
update log as bytes. It takes COUNT(*), COUNT, SUM, AVG, MIN and MAX (no DISTINCT, no --where)
over changelog rows or appended rows, while the values it sums and compares are integers. A
record it cannot take so (a float, text, a number past 64 bits, a group value it cannot compare)
stops it: the core's ``GroupAggregate`` is given the kernel's groups, slot for slot, and takes
that record and every one after. Findings are the core's own: the kernel asks, the core says.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import orjson

from cdc.core.aggregate import AggregateCounts, GroupAggregate, UpsertWatch
from cdc.core.convert import split_change
from cdc.core.errors import InputError, Location
from cdc.core.model import Row
from cdc.core.specs import AggregateSpec
from cdc.core.state import Findings, Policy
from cdc.engine.job import Job, Result
from cdc.engine.paths.native.base import H_ABSENT, Chunk, Engine, _row, _spellings
from cdc.engine.paths.native.kernel import KINDS, _kernel
from cdc.engine.session import Session
from cdc.formats.jsonl import loads

FUNCS = {"COUNT": 1, "SUM": 2, "AVG": 3, "MIN": 4, "MAX": 5}  # AG_* of _kernel.c; COUNT(*) is 0
AG_RETRACTING, AG_TRACK, AG_EMIT_RETRACT = 1, 2, 4
H_COLUMNS, H_UNMATCHED = 11, 12
R_NO_KEY, R_NO_KIND, R_MISSING_NULL = 1, 2, 4
MAX_COLUMNS = 16  # the kernel's extras: group-by and argument columns


def takes(spec: AggregateSpec) -> bool:
    """COUNT(*), COUNT, SUM, AVG, MIN, MAX without DISTINCT or --where, over changelog rows or
    appended rows; with findings kept, the aggregates read one column at most (the operands'
    multiset is of single values in the kernel)."""
    query = spec.query
    if getattr(_kernel, "Aggregate", None) is None or query.where is not None:
        return False
    if spec.input_mode not in ("changelog", "append") or any(a.distinct or a.func not in FUNCS for a in query.aggs):
        return False
    args = _arg_columns(spec)
    if len(query.group_by) + len(args) > MAX_COLUMNS:
        return False
    if spec.kind_column in (*query.columns, *query.input_columns) and spec.input_mode == "changelog":
        return False
    return not (_tracks(spec) and len(args) != 1)


def _arg_columns(spec: AggregateSpec) -> list[str]:
    return list(dict.fromkeys(a.arg for a in spec.query.aggs if a.arg is not None))


def _tracks(spec: AggregateSpec) -> bool:
    """Whether the generated code keeps the operands' multiset (see core.aggregate.generate)."""
    return spec.policy != Policy.ignore and spec.query.retractions and bool(_arg_columns(spec))


class KernelAggregate:
    """What the aggregate reports when the kernel kept it to the end: its counts, its findings."""

    def __init__(self, counts: AggregateCounts, findings: Findings):
        self.counts = counts
        self.findings = findings


class AggregateEngine(Engine):
    def __init__(self, spec: AggregateSpec, out: BinaryIO):
        from cdc.formats.jsonl import JsonlWriter

        self.spec = spec
        query = spec.query
        self.out = out
        self.writer = JsonlWriter(out)
        self.group = GroupAggregate(query, Findings(spec.policy))
        self.upserts = UpsertWatch(self.group.findings) if spec.input_mode == "changelog" else None
        kc = orjson.dumps(spec.kind_column)
        befores = (orjson.dumps("-U"), orjson.dumps("UPDATE_BEFORE"))
        self.befores = tuple(kc + sep + b for b in befores for sep in (b":", b": "))
        self.afters = (orjson.dumps("+U"), orjson.dumps("UPDATE_AFTER"))
        self.append = spec.input_mode == "append"
        self.kind_column = None if self.append else spec.kind_column
        self.by_kind: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.detail: Any = None
        args = _arg_columns(spec)
        extras = (*query.group_by, *args)
        index = {c: len(query.group_by) + i for i, c in enumerate(args)}
        funcs = tuple(0 if a.arg is None else FUNCS[a.func] for a in query.aggs)
        places = tuple(-1 if a.arg is None else index[a.arg] for a in query.aggs)
        flags = (AG_RETRACTING if query.retractions else 0) | (AG_EMIT_RETRACT if query.emit == "retract" else 0)
        track = -1
        if _tracks(spec):
            flags |= AG_TRACK
            track = index[args[0]]
        kc = orjson.dumps(spec.kind_column)
        self.kernel = _kernel.Aggregate(
            flags,
            len(query.group_by),
            tuple(orjson.dumps(c) for c in query.group_by),
            funcs,
            places,
            tuple(orjson.dumps(a.name) for a in query.aggs),
            track,
            tuple(kc + b":" + orjson.dumps(kind) for kind in KINDS),
        )
        # the records' key: the group values' canonical texts (a column a row lacks is null)
        flags = R_MISSING_NULL | (0 if query.group_by else R_NO_KEY) | (R_NO_KIND if self.append else 0)
        group_keys = tuple(orjson.dumps(c) for c in query.group_by)
        self.parse_args = (kc, _spellings(), group_keys, tuple(orjson.dumps(c) for c in extras), flags)

    def hands_over(self, chunk: bytes) -> bool:
        """While no -U has come: a chunk with a +U before any -U goes the general way, which
        tells an upsert stream at its row (a +U spelled in another column costs only speed)."""
        if self.upserts is None or not self.upserts.watching:
            return super().hands_over(chunk)
        after = min((i for i in (chunk.find(a) for a in self.afters) if i >= 0), default=-1)
        if after < 0:
            return super().hands_over(chunk)
        before = min((i for i in (chunk.find(b) for b in self.befores) if i >= 0), default=-1)
        if 0 <= before < after:
            self.upserts.watching = False  # a retract stream
            return super().hands_over(chunk)
        return True

    def apply(self, packed: bytes, at: Chunk) -> int | None:
        group = self.group

        def handle(code: int, line: int, offset: int, kind: int, a: bytes | None, b: bytes | None) -> int:
            row, where = _row(b), at.where(line)
            try:
                if code == H_COLUMNS:
                    group._check(row, lambda: where)
                elif code == H_ABSENT:
                    group._absent(KINDS[kind], row, lambda: where)
                elif code == H_UNMATCHED:
                    group._unmatched(KINDS[kind], row, lambda: where)
                else:
                    raise AssertionError(f"the kernel asked {code}")
            except InputError as err:  # --strict (or the first row's columns): a bad record
                at.bad(err, line, offset)
                return 0
            return 1

        out, stop = self.kernel.apply(packed, 0, handle)
        if out:
            self.out.write(out)
        return None if stop < 0 else int(stop)

    def _counts(self) -> tuple[int, ...]:
        counts: tuple[int, ...] = self.kernel.counters()
        return counts

    def _kernel_kinds(self) -> None:
        inserted, updated, deleted = self._counts()[:3]
        self.by_kind["+I"] += inserted
        self.by_kind["+U"] += updated
        self.by_kind["-U"] += updated if self.spec.query.emit == "retract" else 0
        self.by_kind["-D"] += deleted

    def hand_over(self) -> None:
        """The kernel's groups become the generated code's: ``s = [result, count, *slots, tracker]``."""
        query, group = self.spec.query, self.group
        counts = self._counts()
        group._c[:] = counts[:6]
        if counts[7]:
            group._checked = True
            group.apply = group._fast_apply
        names = [a.name for a in query.aggs]
        for values, count, slots, old, tracker in self.kernel.items():
            key_values = loads(values)
            result: Row = dict(zip(query.group_by, key_values, strict=True))
            result.update(zip(names, old, strict=True))
            s: list[Any] = [result, count]
            for call, slot in zip(query.aggs, slots, strict=True):
                if call.arg is None:
                    continue
                if call.func in ("MIN", "MAX") and query.retractions:
                    s.extend([slot[0], slot[1], dict(slot[2])])
                else:
                    s.extend(slot)
            if tracker is not None:
                pairs, nulls = tracker
                operands: dict[Any, int] = dict(pairs)
                if nulls:
                    operands[None] = nulls
                s.append(operands)
            if len(query.group_by) == 1:
                key: Any = key_values[0]
            else:
                key = tuple(key_values)
            group.groups[key] = s
        self._kernel_kinds()
        self.kernel = None

    def step(self, row: Row, where: Location) -> None:
        kind, image = ("+I", row) if self.append else split_change(row, self.spec.kind_column)
        if self.upserts is not None and self.upserts.watching:
            self.upserts.see(kind, lambda: where)
        kc = self.spec.kind_column
        out = []
        for kind_out, row_out in self.group.apply(kind, image, lambda: where):
            self.by_kind[kind_out] += 1
            out.append({kc: kind_out, **row_out})
        if out:
            self.writer.write_rows(out)

    def finish(self) -> None:
        if self.kernel is not None:
            counts = self._counts()
            inserted, updated, deleted, unchanged, filtered, skipped, groups = counts[:7]
            self.detail = KernelAggregate(
                AggregateCounts(filtered, skipped, unchanged, inserted, updated, deleted, groups, self.spec.query.emit),
                self.group.findings,
            )
            self._kernel_kinds()
            self.kernel = None
        else:
            self.detail = self.group
        self.out.flush()

    def result(self, result: Result, job: Job, current: Session) -> None:
        result.detail = self.detail
        for kind, n in self.by_kind.items():
            if n:
                result.counts.by_kind[kind] = n
        result.counts.written = sum(self.by_kind.values())
