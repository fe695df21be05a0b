"""materialize --key through the C kernel (engine/paths/native/keyed.py) against the row path.

Random changelogs — inserts of stored keys, retractions of absent ones, -U images unlike the
stored row, float and boolean keys, bad lines — must leave the same table (rows and order), the
same counts and the same findings at the same lines, however the input is cut into chunks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.core.convert import split_change
from cdc.core.errors import CdcError, InputError
from cdc.core.state import Findings, KeyedState, Policy
from cdc.engine.paths.native.keyed import KeyedLines, available
from cdc.formats.jsonl import JsonlReader

pytestmark = pytest.mark.skipif(not available(), reason="the C kernel was not built (no C compiler at install)")

keys = st.one_of(st.integers(0, 3), st.sampled_from(["a", "b", 1.0, 2.5, True, None, "é"]))
values = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y", 1.10, "caf\u00e9"]))


@st.composite
def changelog(draw: st.DrawFn) -> bytes:
    """Half the logs are consistent (what the kernel takes) with an odd line or two at the end."""
    out = _consistent(draw) if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0 if out else 1, 3 if out else 25))):
        shape = draw(st.sampled_from(["change"] * 12 + ["blank", "garbage", "badkind", "nokey"]))
        if shape != "change":
            out.append(
                {"blank": "", "garbage": "{", "badkind": '{"op":"UPSERT","id":1}', "nokey": '{"op":"+I"}'}[shape]
            )
            continue
        row: dict[str, Any] = {"op": draw(st.sampled_from(["+I", "-U", "+U", "-D", "INSERT", "DELETE"]))}
        row["id"] = draw(keys)
        row.update(draw(st.dictionaries(st.sampled_from(["v", "w"]), values, max_size=2)))
        text = json.dumps(
            row, ensure_ascii=draw(st.booleans()), separators=draw(st.sampled_from([(",", ":"), (", ", ": ")]))
        )
        out.append(text)
    return ("\n".join(out) + "\n").encode()


def _consistent(draw: st.DrawFn) -> list[str]:
    """Changes a table could have made: inserts of new keys, -U/+U pairs, deletes of live keys."""
    live: dict[Any, dict[str, Any]] = {}
    out = []
    for _ in range(draw(st.integers(1, 30))):
        key = draw(st.sampled_from([0, 1, 2, 3, "a", "b", "é", 12345678901234567890123]))
        row = {"id": key, **draw(st.dictionaries(st.sampled_from(["v", "w"]), values, max_size=2))}
        if key not in live:
            changes = [("+I", row)]
            live[key] = row
        elif draw(st.booleans()):
            changes = [("-U", live[key]), ("+U", row)]
            live[key] = row
        else:
            changes = [("-D", live.pop(key))]
        for kind, image in changes:
            out.append(json.dumps({"op": kind, **image}, ensure_ascii=False, separators=(",", ":")))
    return out


def _row_path(data: bytes, policy: Policy, skip: bool) -> tuple[Any, ...]:
    state = KeyedState(["id"], Findings(policy))
    rejected: list[str] = []
    reader = JsonlReader(_stream(data), "log.jsonl")

    def reject(err: InputError, raw: str) -> None:
        if not skip:
            raise err
        rejected.append(str(err.located(reader.location())))

    reader.reject = reject
    try:
        for row in reader:
            try:
                kind, image = split_change(row, "op")
                state.apply(kind, image, reader.location)
            except InputError as err:  # a bad kind or key, or a finding under fail: a bad record
                reject(err, reader.raw())
        error = None
    except CdcError as err:  # a bad record under fail, or a finding under fail
        error = str(err.located(reader.location()))
    return _outcome(state, reader.records if error is None else None, rejected, error)


def _kernel_path(data: bytes, cuts: list[int], policy: Policy, skip: bool, as_texts: bool) -> tuple[Any, ...]:
    state = KeyedState(["id"], Findings(policy))
    lines = KeyedLines(state, "op", keep_texts=as_texts)
    rejected: list[str] = []

    def reject(err: InputError, raw: str) -> None:
        if not skip:
            raise err
        rejected.append(str(err))

    all_lines = data.split(b"\n")[:-1]
    bounds = sorted({c % (len(all_lines) + 1) for c in cuts} | {0, len(all_lines)})
    try:
        for start, end in zip(bounds, bounds[1:], strict=False):
            chunk = b"".join(line + b"\n" for line in all_lines[start:end])
            lines.feed(chunk, "log.jsonl", start + 1, reject)
        lines.finish()
        error = None
    except CdcError as err:
        error = str(err)
    texts = lines.texts() if error is None else None
    if as_texts and texts is not None:  # the table never left the kernel: rows as written
        assert len(state) == 0
        rows = [json.loads(text) for text in texts]
        return _outcome(state, lines.records, rejected, error, rows)
    assert texts is None or error is not None
    return _outcome(state, lines.records if error is None else None, rejected, error)


def _stream(data: bytes) -> Any:
    import io

    return io.BytesIO(data)


def _outcome(
    state: KeyedState, records: int | None, rejected: list[str], error: str | None, rows: Any = None
) -> tuple[Any, ...]:
    if error is not None:
        return (error, rejected)
    findings = (dict(state.findings.counts), [str(f) for f in state.findings.examples])
    return (
        [json.dumps(r, sort_keys=False) for r in (state.rows() if rows is None else rows)],
        dict(state.by_kind),
        state.retract_messages,
        state.upsert_messages,
        findings,
        records,
        rejected,
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=changelog(),
    cuts=st.lists(st.integers(0, 30), max_size=3),
    policy=st.sampled_from([Policy.warn, Policy.fail]),
    skip=st.booleans(),
    as_texts=st.booleans(),
)
def test_the_kernel_table_equals_the_row_path(
    data: bytes, cuts: list[int], policy: Policy, skip: bool, as_texts: bool
) -> None:
    assert _kernel_path(data, cuts, policy, skip, as_texts) == _row_path(data, policy, skip)


def test_a_table_that_grows_and_drops_deleted_rows_keeps_order() -> None:
    # Thousands of keys, long and short, inserted, updated and deleted again and again: the C
    # table grows and rebuilds its entries many times over; a re-inserted key goes last.
    import random

    chance = random.Random(7)
    live: dict[Any, int] = {}
    lines = []
    for _ in range(20000):
        k = chance.randrange(3000)
        key: Any = k if k % 3 else f"k{k}-" + "x" * (k % 40)
        if key not in live:
            live[key] = chance.randrange(100)
            lines.append({"op": "+I", "id": key, "v": live[key]})
        elif chance.random() < 0.4:
            lines.append({"op": "-D", "id": key, "v": live.pop(key)})
        else:
            lines.append({"op": "-U", "id": key, "v": live[key]})
            live[key] = chance.randrange(100)
            lines.append({"op": "+U", "id": key, "v": live[key]})
    data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()
    for as_texts in (False, True):
        kernel = _kernel_path(data, [5000, 11000], Policy.fail, False, as_texts)
        assert kernel == _row_path(data, Policy.fail, False)
    assert len(kernel[0]) == len(live)
