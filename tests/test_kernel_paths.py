"""The C kernel against the general row conversion it stands in for, chunk by chunk.

For any input — odd spacing, escapes, nested objects, big numbers, bad codes, tombstones — a
chunk converted with the kernel must give the rows, counts, rejects and errors of the general
way, and the bytes must not depend on where the input was cut into chunks. (tests/test_paths.py
holds whole runs of every path to the row path.)
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.core.convert import FromChangelogRow, ToChangelogRow
from cdc.core.mapping import DEFAULT_FROM_MAPPING, DEFAULT_TO_MAPPING
from cdc.core.specs import DecodeSpec, FromChangelogSpec, ToChangelogSpec
from cdc.core.stats import Counts
from cdc.engine.paths.lines import ChunkResult, Converter, convert_chunk
from cdc.engine.paths.native.kernel import available, debezium_kernel, from_changelog_kernel, to_changelog_kernel
from cdc.formats.debezium import DebeziumDecoder

pytestmark = pytest.mark.skipif(not available(), reason="the C kernel was not built (no C compiler at install)")

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["1.10", "4.6e-06", "1E5", "-0.0"]).map(lambda t: _Literal(t)),
    st.text(max_size=8),
    st.sampled_from(["op", "kind", '"op":"INSERT"', "{", "a\\u0070", "é", "\n", "/", "名前"]),
)
values = st.one_of(scalars, st.dictionaries(st.sampled_from(["op", "x"]), scalars, max_size=2))
plain_values = st.one_of(
    st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False), st.text("ab é", max_size=3)
)
columns = st.sampled_from(["id", "name", "n", "kind", "DISGUISED", "x y", "é"])


class _Literal(str):
    """A number written with exactly these characters."""


def _dumps(value: Any, compact: bool, ascii_only: bool) -> str:
    return _text(value, compact, ascii_only).replace('"DISGUISED"', '"o\\u0070"')  # the key "op", escaped


def _text(value: Any, compact: bool, ascii_only: bool) -> str:
    if isinstance(value, _Literal):
        return str(value)
    if isinstance(value, dict):
        sep = ("," if compact else ", ", ":" if compact else ": ")
        inner = sep[0].join(
            json.dumps(k, ensure_ascii=ascii_only) + sep[1] + _text(v, compact, ascii_only) for k, v in value.items()
        )
        return "{" + inner + "}"
    return json.dumps(value, ensure_ascii=ascii_only)


@st.composite
def lines(draw: st.DrawFn, column: str, codes: list[str]) -> bytes:
    out = []
    clean = draw(st.booleans())  # half the examples are well-formed rows, which the kernel takes
    for _ in range(draw(st.integers(1, 12))):
        shape = "row" if clean else draw(st.sampled_from(["row"] * 8 + ["blank", "null", "garbage", "array"]))
        if shape != "row":
            out.append({"blank": "", "null": "null", "garbage": "{oops", "array": "[1]"}[shape])
            continue
        row: dict[str, Any] = draw(
            st.dictionaries(st.sampled_from(["id", "name", "n"]), plain_values, max_size=3)
            if clean
            else st.dictionaries(columns, values, max_size=4)
        )
        bad_codes = st.sampled_from([None, 7, "UPSERT"]) | st.just(_Missing)
        code = draw(st.sampled_from(codes) if clean else st.sampled_from(codes) | bad_codes)
        items = list(row.items())
        if code is not _Missing:
            items.insert(draw(st.integers(0, len(items))), (column, code))
        text = _dumps(dict(items), draw(st.booleans()), draw(st.booleans()))
        out.append(draw(st.sampled_from(["", " "])) + text + draw(st.sampled_from(["", " ", "\r"])))
    return ("\n".join(out) + "\n").encode()


_Missing = object()


def _run(converter: Converter, data: bytes, cuts: list[int], skip: bool) -> tuple[bytes, int, Counts, ChunkResult]:
    """Convert ``data`` cut into chunks after the given line indexes; results joined."""
    lines_ = data.split(b"\n")[:-1]
    bounds = sorted({c % (len(lines_) + 1) for c in cuts} | {0, len(lines_)})
    out, records, counts, last = b"", 0, Counts(), ChunkResult(b"", 0)
    for start, end in zip(bounds, bounds[1:], strict=False):
        chunk = b"".join(line + b"\n" for line in lines_[start:end])
        last = convert_chunk(converter, chunk, start + 1, skip)
        out += last.data
        records += last.records
        counts.by_kind.update(last.by_kind)
        counts.dropped += last.dropped
        counts.notes.update(last.notes)
        for line, message, _, _ in last.rejects:
            counts.notes[f"reject {line}: {message}"] += 1
        if last.error is not None:
            counts.notes[f"error {last.error[0]}: {last.error[1]}"] += 1
            break
    return out, records, counts, last


def _same(fast: Converter, general: Converter, data: bytes, cuts: list[int], skip: bool) -> None:
    one = _run(fast, data, [], skip)
    cut = _run(fast, data, cuts, skip)
    plain = _run(general, data, [], skip)
    assert one[0] == cut[0]  # bytes independent of the chunking
    assert one[1:3] == plain[1:3]  # records, counts, rejects, errors
    assert [json.loads(x) for x in one[0].splitlines()] == [json.loads(x) for x in plain[0].splitlines()]
    assert [list(json.loads(x)) for x in one[0].splitlines()] == [list(json.loads(x)) for x in plain[0].splitlines()]


@SETTINGS
@given(data=lines("op", list(DEFAULT_FROM_MAPPING)), cuts=st.lists(st.integers(0, 20), max_size=3), skip=st.booleans())
def test_from_changelog_kernel_equals_the_row_conversion(data: bytes, cuts: list[int], skip: bool) -> None:
    spec = FromChangelogSpec(op_column="op", mapping=DEFAULT_FROM_MAPPING)
    counts, plain_counts = Counts(), Counts()
    args = (spec.op_column, spec.kind_column, spec.mapping, spec.drop, counts)
    _same(
        Converter(FromChangelogRow(spec, counts), counts, kernel=from_changelog_kernel(*args)),
        Converter(FromChangelogRow(spec, plain_counts), plain_counts),
        data,
        cuts,
        skip,
    )


@SETTINGS
@given(
    data=lines("kind", ["+I", "-U", "+U", "-D", "INSERT", "DELETE"]),
    cuts=st.lists(st.integers(0, 20), max_size=3),
    skip=st.booleans(),
)
def test_to_changelog_kernel_equals_the_row_conversion(data: bytes, cuts: list[int], skip: bool) -> None:
    spec = ToChangelogSpec(mapping=DEFAULT_TO_MAPPING, kind_column="kind", op_column="op")
    counts, plain_counts = Counts(), Counts()
    args = (spec.kind_column, spec.op_column, spec.mapping, spec.drop, counts)
    _same(
        Converter(ToChangelogRow(spec, counts), counts, kernel=to_changelog_kernel(*args)),
        Converter(ToChangelogRow(spec, plain_counts), plain_counts),
        data,
        cuts,
        skip,
    )


images = st.one_of(st.none(), st.dictionaries(columns, values, max_size=4), st.text(max_size=3))


def _schema(*columns: dict[str, Any]) -> dict[str, Any]:
    """A Debezium envelope schema whose before and after structs hold these columns."""
    image = [{"type": "int32", "field": "id"}, {"type": "string", "field": "name"}, *columns]
    return {
        "type": "struct",
        "fields": [{"type": "struct", "field": part, "fields": image} for part in ("before", "after")],
        "name": "dbserver1.inventory.customers.Envelope",
    }


PLAIN_SCHEMA = _schema({"type": "double", "field": "n"})  # nothing to convert: the kernel copies
DATE_SCHEMA = _schema({"type": "int32", "name": "io.debezium.time.Date", "field": "n"})  # converted
schemas = st.sampled_from([None, PLAIN_SCHEMA, DATE_SCHEMA])


@st.composite
def events(draw: st.DrawFn) -> bytes:
    out = []
    clean = draw(st.booleans())  # half the examples hold only events the kernel takes
    for _ in range(draw(st.integers(1, 10))):
        shape = (
            "event"
            if clean
            else draw(st.sampled_from(["event"] * 8 + ["blank", "null", "envelope", "garbage", "dates"]))
        )
        if shape in ("blank", "null", "garbage"):
            out.append({"blank": "", "null": "null", "garbage": "{"}[shape])
            continue
        if shape == "dates":  # a run of events whose schema converts a value: one general batch
            for _ in range(draw(st.integers(2, 4))):
                row = {
                    "id": draw(st.integers(0, 9)),
                    "name": "x",
                    "n": draw(st.integers(0, 30000)),
                    "r": _Literal("1.10"),
                }
                op = draw(st.sampled_from("cudx"))
                payload = {"before": None if op == "c" else row, "after": None if op == "d" else row, "op": op}
                line = _dumps({"schema": DATE_SCHEMA, "payload": payload}, True, False)
                # The run's schema is parsed once and only each line's payload, when the line is
                # exactly {"schema":S,"payload":P}; every other shape must decode as if parsed whole.
                shape = draw(st.sampled_from(["envelope"] * 4 + ["no payload", "more", "spaced", "crlf", "bad"]))
                if shape == "no payload":  # a plain event with a stray field, not an envelope
                    line = _dumps({"schema": DATE_SCHEMA, **payload}, True, False)
                elif shape == "more":  # a member after the payload
                    line = line[:-1] + ',"x":1}'
                elif shape == "spaced":
                    line = line[:-1] + " }"
                elif shape == "crlf":
                    line += "\r"
                elif shape == "bad":
                    line = line[:-1] + ",}"
                out.append(line)
            continue
        if clean:
            row = draw(st.dictionaries(st.sampled_from(["id", "name", "n"]), plain_values, min_size=1, max_size=3))
            op = draw(st.sampled_from("cdu"))
            before, after = (None if op == "c" else row), (None if op == "d" else row)
            clean_event: dict[str, Any] = {"before": before, "after": after, "op": op}
            if draw(st.booleans()):  # as Kafka Connect's JSON converter writes it: schema and payload
                clean_event = {"schema": draw(st.sampled_from([None, PLAIN_SCHEMA])), "payload": clean_event}
            out.append(_dumps(clean_event, draw(st.booleans()), draw(st.booleans())))
            continue
        after = draw(images)
        before = draw(st.one_of(images, st.just(after)))
        if isinstance(before, dict) and draw(st.booleans()):
            before = {**before, "extra": 1}
        if isinstance(after, dict) and draw(st.integers(0, 9)) == 0:
            after = {**after, "x": "__debezium_unavailable_value"}
        event: dict[str, Any] = {"before": before, "after": after, "op": draw(st.sampled_from("ccrudddtmx"))}
        if shape == "envelope":
            event = {"schema": draw(schemas), "payload": event}
        out.append(_dumps(event, draw(st.booleans()), draw(st.booleans())))
    return ("\n".join(out) + "\n").encode()


@SETTINGS
@given(data=events(), cuts=st.lists(st.integers(0, 20), max_size=3), skip=st.booleans())
def test_debezium_kernel_equals_the_decoder(data: bytes, cuts: list[int], skip: bool) -> None:
    counts, plain_counts = Counts(), Counts()
    decoder = DebeziumDecoder(DecodeSpec(), counts)  # as debezium-decode builds it
    kernel = debezium_kernel("op", counts, True, decoder.plain_schema)
    fast = Converter(decoder.fast_decode(), counts, True, kernel=kernel)
    general = Converter(DebeziumDecoder(DecodeSpec(), plain_counts).fast_decode(), plain_counts, True)
    _same(fast, general, data, cuts, skip)


def test_a_kernel_row_is_compact_op_first_and_keeps_its_number_literals() -> None:
    counts = Counts()
    kernel = from_changelog_kernel("op", "op", DEFAULT_FROM_MAPPING, frozenset(), counts)
    assert kernel is not None
    chunk = (
        b'{"id": 1, "price": 1.10, "op": "INSERT", "big": 123456789012345678901234567890}\n{"op": "DELETE", "id": 2}\n'
    )
    expected = b'{"op":"+I","id":1,"price":1.10,"big":123456789012345678901234567890}\n{"op":"-D","id":2}\n'
    assert kernel(chunk, 0) == (expected, len(chunk), 2)
    assert dict(counts.by_kind) == {"+I": 1, "-D": 1}


@st.composite
def mutated_lines(draw: st.DrawFn) -> bytes:
    """Valid rows with a few bytes changed: most are no longer JSON, or no longer UTF-8."""
    out = []
    for _ in range(draw(st.integers(1, 6))):
        row = draw(st.dictionaries(columns, values, max_size=3))
        code = draw(st.sampled_from(list(DEFAULT_FROM_MAPPING)))
        line = bytearray(_dumps({**row, "op": code}, draw(st.booleans()), draw(st.booleans())).encode())
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(line)))
            action = draw(st.sampled_from(["insert", "delete", "replace"]))
            byte = draw(
                st.sampled_from(list(b'{}[]",:\\u0eE.-+ 9\t\r\x00\x1f\x7f') + [0x80, 0xC3, 0xE2, 0xED, 0xF0, 0xFF])
            )
            if action == "insert":
                line.insert(at, byte)
            elif line and at < len(line):
                if action == "delete":
                    del line[at]
                else:
                    line[at] = byte
        out.append(bytes(line).replace(b"\n", b" "))
    return b"\n".join(out) + b"\n"


@SETTINGS
@given(data=mutated_lines(), skip=st.just(True))
def test_the_kernel_accepts_only_what_orjson_accepts(data: bytes, skip: bool) -> None:
    spec = FromChangelogSpec(op_column="op", mapping=DEFAULT_FROM_MAPPING)
    counts, plain_counts = Counts(), Counts()
    kernel = from_changelog_kernel(spec.op_column, spec.kind_column, spec.mapping, spec.drop, counts)
    _same(
        Converter(FromChangelogRow(spec, counts), counts, kernel=kernel),
        Converter(FromChangelogRow(spec, plain_counts), plain_counts),
        data,
        [],
        skip,
    )


@SETTINGS
@given(data=st.binary(max_size=100).map(lambda b: b.replace(b"\x00", b"\n")))
def test_the_kernel_counts_lines_as_bytes_count_does(data: bytes) -> None:
    from cdc.engine.paths.native import _kernel

    # Line numbers of every later chunk in error messages depend on it.
    assert _kernel.count_lines(data) == data.count(b"\n")
    assert _kernel.count_lines(data * 9) == data.count(b"\n") * 9
