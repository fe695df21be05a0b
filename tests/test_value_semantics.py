"""Value equality, defined once: the row path's. A JSON value is what ``formats.jsonl.loads``
reads (``int`` of any size, ``float``, an exact ``Decimal`` past a double, ``str``, ``bool``,
``None``, lists and dicts), and two values (or rows) are the same when Python's ``==`` says so:
``1 == 1.0 == 1e0 == true``, ``"é" == "\\u00e9"``, ``0.0 == -0.0``, and a key is one key under
every spelling. The C kernel decides equality from the text (canonical texts, values.c) and
the Arrow paths from typed columns; both are held to that definition here:

- the kernel's key identity (parse_records' canonical key texts) is Python equality of the keys,
  and its row identity (a multiset's key) is dict equality, wherever the kernel decides;
- materialize (keyed and multiset) and replay on the kernel paths write, exit and warn as the row
  path does for changelogs whose keys and values come in many spellings of equal values;
- on Parquet input, the Arrow paths do the same for typed values (signed zeros, NaN, infinities,
  big integers, strings).
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from helpers import invoke, write_parquet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.engine.paths.native.kernel import _kernel
from cdc.formats.jsonl import loads

pytestmark = pytest.mark.skipif(_kernel is None, reason="the C kernel is not built: no C compiler at install")

SPELLINGS = tuple((orjson.dumps(t), i) for i, t in enumerate(("+I", "-U", "+U", "-D")))
FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- spellings of JSON values ---------------------------------------------------------------


def _int_spellings(n: int) -> list[str]:
    """An integer as JSON can write it: as an integer, and as numbers with a fraction or exponent."""
    text = str(n)
    out = [text, f"{text}.0", f"{text}e0", f"{text}.00E+0", f"{text}0e-1"]
    if n == 0:
        out += ["-0", "-0.0", "0e5", "0.000"]
    if abs(n) < 2**53:
        out.append(repr(float(n)))
    return out


def _float_spellings(x: float) -> list[str]:
    out = [repr(x), f"{x:.17g}", f"{x:.15g}", f"{x:e}", f"{x:.3E}"]
    return [s for s in out if "inf" not in s and "nan" not in s]


def _string_spellings(s: str) -> list[str]:
    ascii_ = json.dumps(s)
    return [ascii_, json.dumps(s, ensure_ascii=False), ascii_.replace("/", "\\/")]


def _spellings(value: Any) -> list[str]:
    """Every spelling this test writes of a value (each one reads back as an equal value)."""
    if value is None:
        return ["null"]
    if isinstance(value, bool):
        return ["true" if value else "false", *_int_spellings(int(value))]
    if isinstance(value, int):
        return _int_spellings(value)
    if isinstance(value, float):
        return _float_spellings(value)
    if isinstance(value, str):
        return _string_spellings(value)
    if isinstance(value, list):
        return ["[" + ",".join(_spellings(v)[0] for v in value) + "]", "[ " + " , ".join(map(_last, value)) + " ]"]
    items = list(value.items())
    return [
        "{" + ",".join(f"{json.dumps(k)}:{_spellings(v)[0]}" for k, v in items) + "}",
        "{ " + ", ".join(f"{json.dumps(k)} : {_last(v)}" for k, v in reversed(items)) + " }",
    ]


def _last(value: Any) -> str:
    return _spellings(value)[-1]


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(-(10**30), 10**30),
    st.integers(2**53 - 2, 2**53 + 2),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.1, 0.3, 1.5, -2.5, 1e15, 1e16, 1e-5, 123456.789, 0.30000000000000004]),
    st.text(max_size=6),
    st.sampled_from(["é", "/", '"', "\\", "\u2028", "😀", "a\nb"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abc"), inner, max_size=3)),
    max_leaves=5,
)


@st.composite
def spelled(draw: Any, values: Any = VALUES) -> str:
    """One spelling of a value."""
    return str(draw(st.sampled_from(_spellings(draw(values)))))


@st.composite
def two_spellings(draw: Any, values: Any = VALUES) -> tuple[str, str]:
    """Two spellings: of one value (equal values spelled apart) half the time, else of two."""
    if draw(st.booleans()):
        options = _spellings(draw(values))
        return draw(st.sampled_from(options)), draw(st.sampled_from(options))
    return draw(spelled(values)), draw(spelled(values))


def _value(text: str) -> Any:
    """The Python definition's value of a spelling: what the row path reads."""
    return loads(b'{"v":' + text.encode() + b"}")["v"]


# -- the kernel, called directly ----------------------------------------------------------------


def _record_key(line: bytes, key: tuple[bytes, ...]) -> bytes | None:
    """The key parse_records gives a line (canonical text), or None when it declines the line."""
    packed, _, taken = _kernel.parse_records(line + b"\n", 0, b'"op"', SPELLINGS, key, ())
    if taken != 1:
        return None
    (length,) = struct.unpack_from("=I", packed, 9)
    return bytes(packed[13 : 13 + length])


@FAST
@given(two_spellings())
def test_the_kernel_takes_two_keys_for_one_exactly_when_python_finds_them_equal(pair: tuple[str, str]) -> None:
    a, b = pair
    key_a = _record_key(f'{{"op":"+I","k":{a},"v":1}}'.encode(), (b'"k"',))
    key_b = _record_key(f'{{"op":"+I","k":{b},"v":1}}'.encode(), (b'"k"',))
    if key_a is None or key_b is None:  # undecided from the text: the line goes the general way
        return
    assert (key_a == key_b) == (_value(a) == _value(b)), (a, b, key_a, key_b)


@FAST
@given(two_spellings(), two_spellings())
def test_the_kernel_takes_two_rows_for_one_exactly_when_python_finds_them_equal(
    first: tuple[str, str], second: tuple[str, str]
) -> None:
    """A multiset's identity is the whole row: members in any order, values in any spelling."""
    row_a = f'{{"op":"+I","x":{first[0]},"y":{second[0]}}}'.encode()
    row_b = f'{{"y":{second[1]},"op":"+I","x":{first[1]}}}'.encode()
    key_a, key_b = _record_key(row_a, ()), _record_key(row_b, ())
    if key_a is None or key_b is None:
        return
    python = (_value(first[0]), _value(second[0])) == (_value(first[1]), _value(second[1]))
    assert (key_a == key_b) == python, (row_a, row_b)


def test_spellings_the_kernel_decides_are_the_python_definitions_equal_values() -> None:
    """The cases that matter by name: numbers of every spelling, escapes, booleans as numbers."""
    equal = [("1", "1.0"), ("1", "1e0"), ("1", "10E-1"), ("1", "true"), ("0", "-0"), ("0", "-0.0"), ("0", "false"),
             ('"é"', '"\\u00e9"'), ('"/"', '"\\/"'), ('"😀"', '"\\ud83d\\ude00"'), ("100", "1E2"), ("0.1", "1e-1"),
             ("123456789012345678901234567890", "123456789012345678901234567890.0e0")]  # fmt: skip
    unequal = [("1", '"1"'), ("0", "null"), ("9007199254740993", "9007199254740992"), ('"a"', '"A"'), ("0.1", "0.2")]
    for a, b in equal + unequal:
        assert (_value(a) == _value(b)) == ((a, b) in equal)
        keys = [_record_key(f'{{"op":"+I","k":{t}}}'.encode(), (b'"k"',)) for t in (a, b)]
        if None not in keys:
            assert (keys[0] == keys[1]) == ((a, b) in equal), (a, b, keys)


# -- the commands, kernel and Arrow paths against the row path -----------------------------


def _run(args: list[str], path: str | None) -> tuple[int, str, str, str]:
    """(exit code, output, stderr without the path line, the path taken). ``-o FILE``: the
    output is the file's (the Arrow paths write to a file, not to CliRunner's stdout)."""
    env = {"CDC_PATH": path} if path else {}
    out = Path(args[args.index("-o") + 1]) if "-o" in args else None
    if out is not None and out.exists():
        out.unlink()
    with mock.patch.dict(os.environ, env):
        if not path:
            os.environ.pop("CDC_PATH", None)
        result = invoke([*args, "--verbose"])
    lines = result.stderr.split("\n")
    taken = [line for line in lines if ": path " in line]
    rest = "\n".join(line for line in lines if ": path " not in line)
    output = out.read_text(encoding="utf-8") if out is not None and out.exists() else result.stdout
    return result.exit_code, output, rest, taken[0].split(": path ")[1] if taken else ""


def _same_as_rows(args: list[str], fast: str | None) -> str:
    """The command's outcome on the path the planner picks is the row path's, and that path is
    ``fast`` (perhaps handing over to the row semantics on the way); the path taken."""
    auto = _run(args, None)
    rows = _run(args, "rows")
    assert fast is None or auto[3].startswith(fast), (args, auto[3])
    assert auto[:3] == rows[:3], args
    return auto[3]


@SLOW
@given(key=two_spellings(), value=two_spellings())
def test_materialize_and_replay_on_the_kernel_treat_spellings_as_the_row_path_does(
    key: tuple[str, str], value: tuple[str, str], tmp_path_factory: Any
) -> None:
    a, b = key
    x, y = value
    changelog = tmp_path_factory.mktemp("values") / "changes.jsonl"
    changelog.write_text(
        f'{{"op":"+I","k":{a},"v":{x}}}\n'
        f'{{"op":"-U","k":{b},"v":{y}}}\n'  # the stored row, when a == b and x == y
        f'{{"op":"+U","k":{b},"v":{y}}}\n'  # a no-op update for replay, when x == y
        f'{{"op":"+I","k":1,"v":{x}}}\n'
        f'{{"op":"-D","k":{a},"v":{x}}}\n',
        encoding="utf-8",
    )
    _same_as_rows(["materialize", str(changelog), "--key", "k"], "keyed-kernel")
    _same_as_rows(["materialize", str(changelog)], "state-kernel")
    _same_as_rows(["replay", str(changelog), "--key", "k"], "state-kernel")
    _same_as_rows(["replay", str(changelog), "--key", "k", "--emit", "retract"], "state-kernel")


# A column of nulls only has no type the Arrow paths take (the row path runs it): not drawn.
TYPED = st.one_of(
    st.lists(
        st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, 1, -1])), min_size=4, max_size=4
    ),
    st.lists(
        st.one_of(st.none(), st.floats(allow_nan=False), st.sampled_from([0.0, -0.0, 1.0, float("inf")])),
        min_size=4,
        max_size=4,
    ),
    st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "é", "e\u0301", "A"])), min_size=4, max_size=4),
).filter(lambda column: any(v is not None for v in column))  # a column of nulls: no type for Arrow


# Key columns the Arrow paths take (a key column of doubles goes to the row path).
KEYS = TYPED.filter(lambda column: not any(type(v) is float for v in column))


def _parquet(tmp: Path, keys: list[Any], values: list[Any]) -> Path:
    kinds = ["+I", "+U", "-D", "+I"]
    return write_parquet(
        tmp / "changes.parquet", [{"op": o, "k": k, "v": v} for o, k, v in zip(kinds, keys, values, strict=True)]
    )


@SLOW
@given(keys=KEYS, values=TYPED)
def test_materialize_on_arrow_treats_typed_values_as_the_row_path_does(
    keys: list[Any], values: list[Any], tmp_path_factory: Any
) -> None:
    changelog = _parquet(tmp_path_factory.mktemp("typed"), keys, values)
    out = ["-o", str(changelog.with_suffix(".jsonl"))]
    _same_as_rows(["materialize", str(changelog), "--key", "k", *out], None)  # Arrow, where it takes them
    _same_as_rows(["materialize", str(changelog), *out], None)


@SLOW
@given(keys=KEYS, values=TYPED.filter(lambda vs: not any(v == 0.0 and type(v) is float for v in vs)))
def test_replay_on_arrow_treats_typed_values_as_the_row_path_does(
    keys: list[Any], values: list[Any], tmp_path_factory: Any
) -> None:
    changelog = _parquet(tmp_path_factory.mktemp("typed"), keys, values)
    _same_as_rows(["replay", str(changelog), "--key", "k", "-o", str(changelog.with_suffix(".jsonl"))], None)


def test_the_typed_changelogs_above_run_on_the_arrow_path(tmp_path: Path) -> None:
    """The typed cases are no row path against itself: such changelogs go to Arrow."""
    out = ["-o", str(tmp_path / "out.jsonl")]
    # (a key column of doubles goes to the row path: Arrow takes integer and string keys)
    for keys, values in (
        ([1, 2, 1, 3], [0.5, 1.5, 0.5, 2.0]),
        (["a", "é", "e\u0301", "a"], ["é", "a", "a", "e\u0301"]),
    ):
        changelog = _parquet(tmp_path, keys, values)
        _same_as_rows(["materialize", str(changelog), "--key", "k", *out], "arrow-state")
        _same_as_rows(["materialize", str(changelog), *out], "arrow-state")
    changelog = _parquet(tmp_path, [1, 2, 1, 3], [5, 6, 7, 8])
    _same_as_rows(["replay", str(changelog), "--key", "k", *out], "arrow-state")


def test_replay_on_arrow_writes_a_deletes_stored_row_even_when_it_differs_only_in_a_zeros_sign(
    tmp_path: Path,
) -> None:
    changelog = write_parquet(
        tmp_path / "changes.parquet", [{"op": "+I", "k": 1, "v": 0.0}, {"op": "-D", "k": 1, "v": -0.0}]
    )
    _same_as_rows(["replay", str(changelog), "--key", "k", "-o", str(tmp_path / "out.jsonl")], None)
