"""The C kernel (engine/paths/native/*.c) at its trust boundary, called directly.

Everything it is handed crosses from Python: chunks of untrusted bytes, but also the argument
tuples and the packed buffer of ``apply_changes``, which any caller can forge. Each test here
hands it something hostile — out-of-range bytes, lengths and positions, wrong types, failing
allocations, crafted member names — and checks that it answers with a Python exception or a
correct result, never a crash, a wrong counter or a slow path an attacker can pick.

The kernel is optional: where it was not built, these tests skip.
"""

from __future__ import annotations

import importlib.util
import json
import random
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

_kernel: Any
try:
    from cdc.engine.paths.native import _kernel
except ImportError:  # built without a C compiler
    _kernel = None

pytestmark = pytest.mark.skipif(
    _kernel is None, reason="the C kernel (engine/paths/native/*.c) is not built: no C compiler at install"
)

KINDS = ("+I", "-U", "+U", "-D")
LONG = ("INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE")
SPELLINGS = tuple((json.dumps(t).encode(), i) for i, t in enumerate(KINDS)) + tuple(
    (json.dumps(t).encode(), i) for i, t in enumerate(LONG)
)
KEYS = (b'"id"',)
CODES = tuple((json.dumps(t).encode(), i, b'"op":' + json.dumps(KINDS[i]).encode()) for i, t in enumerate(LONG))
FIRSTS = tuple(b'"op":' + json.dumps(k).encode() for k in KINDS)
ROOT = Path(__file__).resolve().parent.parent


def record(kind: int, offset: int, key: bytes, row: bytes) -> bytes:
    """One record of parse_changes' packed buffer: [kind u8][offset u32][key length u32][key]
    [row length u32][row], in the machine's byte order."""
    return struct.pack("=BII", kind, offset, len(key)) + key + struct.pack("=I", len(row)) + row


def changelog(*rows: tuple[str, int, dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps({"op": op, "id": key, **rest}) + b"\n" for op, key, rest in rows)


def isolated(code: str) -> subprocess.CompletedProcess[str]:
    """Run code in a fresh interpreter: a kernel that still has the bug may crash the process."""
    prelude = "from cdc.engine.paths.native import _kernel\nimport struct\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def columns(chunk: bytes, start: int = 0) -> tuple[Any, ...]:
    return _kernel.columns(chunk, start, b'"op"', b"", CODES)  # type: ignore[no-any-return]


# ---------------------------------------------------------------- apply_changes' packed buffer


@pytest.mark.parametrize("kind", [4, 5, 6, 7, 64, 255])
def test_apply_changes_rejects_a_kind_byte_past_3(kind: int) -> None:
    result = isolated(
        f"""
        table = _kernel.Table()
        insert = struct.pack("=BII", 0, 0, 1) + b"1" + struct.pack("=I", 2) + b"{{}}"
        packed = insert + struct.pack("=BII", {kind}, 1, 1) + b"1" + struct.pack("=I", 2) + b"{{}}"
        try:
            print(_kernel.apply_changes(packed, table))
        except ValueError as err:
            print("ValueError", err, len(table))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ValueError") and result.stdout.rstrip().endswith(" 0"), result.stdout


@pytest.mark.parametrize(
    "packed",
    [
        b"\x00",  # shorter than a record header
        record(0, 1, b"1", b"{}")[:-1],  # the row cut short
        record(0, 1, b"1", b"{}") + b"\x00" * 12,  # trailing bytes
        struct.pack("=BII", 0, 1, 0xFFFFFFFF) + b"1" * 8,  # a key length past the buffer (and 32-bit wrap)
        struct.pack("=BII", 0, 1, 0xFFFFFFF7) + b"1" * 8,  # 9 + length wraps to a small number in 32 bits
        struct.pack("=BII", 0, 1, 1) + b"1" + struct.pack("=I", 0xFFFFFFFF) + b"{}",  # a row length past it
        record(0, 5, b"1", b"{}") + record(0, 5, b"2", b"{}"),  # line offsets that do not increase
        record(0, 9, b"1", b"{}") + record(0, 3, b"2", b"{}"),
        record(1, 1, b"1", b"{}") + struct.pack("=BII", 2, 7, 1) + b"1",  # a -U, then a +U cut short
    ],
)
def test_apply_changes_rejects_a_malformed_buffer_and_applies_nothing(packed: bytes) -> None:
    table = _kernel.Table()
    _kernel.apply_changes(record(0, 0, b"0", b'{"a":0}'), table)
    with pytest.raises(ValueError, match="changes"):
        _kernel.apply_changes(record(0, 0, b"x", b'{"a":1}') + packed, table)
    assert table.items() == [(b"0", b'{"a":0}', False)]


def test_apply_changes_rejects_a_key_past_the_limit() -> None:
    limit = _kernel.MAX_KEY_BYTES
    table = _kernel.Table()
    with pytest.raises(ValueError, match="key"):
        _kernel.apply_changes(record(0, 0, b"k" * (limit + 1), b"{}"), table)
    assert len(table) == 0
    assert _kernel.apply_changes(record(0, 0, b"k" * limit, b"{}"), table)[:2] == (-1, 1)
    assert table.items() == [(b"k" * limit, b"{}", False)]


def test_apply_changes_takes_what_parse_changes_packs() -> None:
    chunk = changelog(("+I", 1, {"v": 1}), ("-U", 1, {"v": 1}), ("+U", 1, {"v": 2}), ("-D", 1, {"v": 2}))
    chunk += changelog(("+I", 2, {"v": 3}), ("+I", 2, {"v": 4}))  # a finding: the second insert
    packed, position, lines = _kernel.parse_changes(chunk, 0, b'"op"', SPELLINGS, KEYS)
    assert (position, lines) == (len(chunk), 6)
    table = _kernel.Table()
    stop, records, kinds, retract, upsert = _kernel.apply_changes(packed, table)
    assert chunk[stop:].startswith(b'{"op":"+I","id":2,"v":4}')
    assert (records, kinds, retract, upsert) == (5, (2, 1, 1, 1), 5, 4)
    assert table.items() == [(b"2", b'{"id":2,"v":3}', False)]


@pytest.mark.parametrize("seed", range(4))
def test_apply_changes_survives_random_buffers(seed: int) -> None:
    rng = random.Random(seed)
    good = b"".join(
        record(rng.randrange(4), i, str(rng.randrange(5)).encode(), b'{"v":%d}' % rng.randrange(3)) for i in range(50)
    )
    for _ in range(2000):
        packed = bytearray(good if rng.random() < 0.7 else rng.randbytes(rng.randrange(64)))
        for _ in range(rng.randrange(4)):
            at = rng.randrange(len(packed) + 1)
            if rng.random() < 0.5 and at < len(packed):
                packed[at] = rng.randrange(256)
            else:
                packed[at:at] = rng.randbytes(rng.randrange(1, 5))
        table = _kernel.Table()
        try:
            stop, records, kinds, retract, upsert = _kernel.apply_changes(bytes(packed), table)
        except ValueError:
            assert len(table) == 0
            continue
        assert sum(kinds) == records and len(table) <= records and stop >= -1


# ---------------------------------------------------------------- key lengths


def test_the_key_limit_is_a_documented_constant() -> None:
    assert _kernel.MAX_KEY_BYTES == 1 << 20
    stub = (ROOT / "engine/paths/native/_kernel.pyi").read_text()
    assert "MAX_KEY_BYTES" in stub


@pytest.mark.parametrize("key_columns", [1, 3])
def test_a_key_past_the_limit_is_declined(key_columns: int) -> None:
    """A key repeats its value once per key column: three columns of one value of a third of the
    limit (plus commas) are past it. Declined lines go the general way, which has no limit."""
    limit = _kernel.MAX_KEY_BYTES
    value = "v" * (limit // 3)
    at_limit = "w" * (limit - 2)  # with its quotes, exactly the limit
    chunk = changelog(("+I", 1, {}), ("+I", at_limit, {})) if key_columns == 1 else changelog(("+I", 1, {}))
    long_line = orjson.dumps({"op": "+I", "id": value if key_columns == 3 else "v" * (limit - 1)}) + b"\n"
    chunk += long_line + changelog(("+I", 2, {}))
    keys = KEYS * key_columns
    declined_at = len(chunk) - len(long_line) - len(changelog(("+I", 2, {})))
    table = _kernel.Table()
    position, lines = _kernel.keyed(chunk, 0, b'"op"', SPELLINGS, keys, table)[:2]
    assert position == declined_at
    packed, position, lines2 = _kernel.parse_changes(chunk, 0, b'"op"', SPELLINGS, keys)
    assert (position, lines2) == (declined_at, lines)
    if key_columns == 1:
        assert any(len(key) == limit for key, _, _ in table.items())


# ---------------------------------------------------------------- argument types


class Index:
    """An int-like object: its __index__ would run Python code inside the kernel."""

    def __index__(self) -> int:
        return 0


BAD_CODES: list[Any] = [
    ((b'"INSERT"', 0, object()),),  # a member that is not bytes
    ((b'"INSERT"', 0, 12345),),
    ((b'"INSERT"', 0, bytearray(b'"op":"+I"')),),
    ((b'"INSERT"', 0, "text"),),
    (("INSERT", 0, b'"op":"+I"'),),  # a code that is not bytes
    ((b'"INSERT"', 1.0, b'"op":"+I"'),),  # a kind that is not an int
    ((b'"INSERT"', Index(), b'"op":"+I"'),),
    ((b'"INSERT"', 4, b'"op":"+I"'),),  # a kind past 3
    ((b'"INSERT"', -1, b'"op":"+I"'),),
    ((b'"INSERT"', 2**70, b'"op":"+I"'),),
    ((b'"INSERT"', 0),),  # a short entry
    ([b'"INSERT"', 0, None],),  # a list, not a tuple
    (None,),
    CODES * 20,  # more codes than kept
]


@pytest.mark.parametrize("codes", BAD_CODES)
def test_columns_checks_every_code_before_use(codes: Any) -> None:
    with pytest.raises((TypeError, ValueError, OverflowError), match="codes|kind|too many"):
        _kernel.columns(b'{"op":"INSERT"}\n', 0, b'"op"', b"", codes)


@pytest.mark.parametrize(
    "firsts",
    [(b"a", b"b", b"c"), (b"a", b"b", b"c", 4), (b"a", b"b", b"c", bytearray(b"d")), (b"a", b"b", b"c", object())],
)
def test_debezium_checks_its_first_members(firsts: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="first members"):
        _kernel.debezium(b'{"op":"c","after":{"a":1}}\n', 0, b'"op"', firsts, False, set())


@pytest.mark.parametrize(
    ("spellings", "keys"),
    [
        (((b'"+I"', 4),), KEYS),
        (((b'"+I"', 1.5),), KEYS),
        (((b'"+I"', Index()),), KEYS),
        (((b'"+I"',),), KEYS),
        ((("+I", 0),), KEYS),
        ((object(),), KEYS),
        (SPELLINGS * 3, KEYS),
        (SPELLINGS, ()),
        (SPELLINGS, ("id",)),
        (SPELLINGS, KEYS * 17),
    ],
)
def test_keyed_and_parse_changes_check_their_spec(spellings: Any, keys: Any) -> None:
    chunk = changelog(("+I", 1, {}))
    with pytest.raises((TypeError, ValueError), match="spellings|key columns"):
        _kernel.keyed(chunk, 0, b'"op"', spellings, keys, _kernel.Table())
    with pytest.raises((TypeError, ValueError), match="spellings|key columns"):
        _kernel.parse_changes(chunk, 0, b'"op"', spellings, keys)


def test_parse_changes_takes_only_an_immutable_chunk() -> None:
    """It parses without the GIL: another thread could change a bytearray while it reads."""
    chunk = changelog(("+I", 1, {}))
    with pytest.raises(TypeError, match="read-only"):
        _kernel.parse_changes(bytearray(chunk), 0, b'"op"', SPELLINGS, KEYS)
    assert _kernel.parse_changes(memoryview(chunk), 0, b'"op"', SPELLINGS, KEYS)[1:] == (len(chunk), 1)


@pytest.mark.parametrize("buffer", [bytearray, memoryview, lambda b: memoryview(bytearray(b))])
def test_count_lines_takes_any_contiguous_buffer(buffer: Callable[[bytes], Any]) -> None:
    data = b"a\nbb\n\nccc" * 7
    assert _kernel.count_lines(buffer(data)) == data.count(b"\n")
    with pytest.raises(BufferError):
        _kernel.count_lines(memoryview(data)[::2])
    with pytest.raises(TypeError):
        _kernel.count_lines("a\n")


# ---------------------------------------------------------------- start positions


def _calls(chunk: bytes) -> list[Callable[[int], Any]]:
    return [
        lambda start: columns(chunk, start),
        lambda start: _kernel.debezium(chunk, start, b'"op"', FIRSTS, True, set()),
        lambda start: _kernel.keyed(chunk, start, b'"op"', SPELLINGS, KEYS, _kernel.Table()),
        lambda start: _kernel.parse_changes(chunk, start, b'"op"', SPELLINGS, KEYS),
    ]


@pytest.mark.parametrize("entry", range(4))
def test_a_start_outside_the_chunk_is_rejected(entry: int) -> None:
    chunk = changelog(("+I", 1, {}))
    call = _calls(chunk)[entry]
    for start in (-1, -(2**62), len(chunk) + 1, 2**62):
        with pytest.raises(ValueError, match="start"):
            call(start)
    assert call(len(chunk)) is not None  # the end: nothing left to do
    with pytest.raises(OverflowError):
        call(2**64)


# ---------------------------------------------------------------- failing allocations


def _has_testcapi() -> bool:
    return importlib.util.find_spec("_testcapi") is not None


@pytest.mark.skipif(not _has_testcapi(), reason="_testcapi (CPython's test module) is not installed")
def test_results_survive_every_failing_allocation() -> None:
    """Counts past 256 are not cached small ints: building each one allocates. A NULL from any
    allocation must become a MemoryError, never a tuple with a hole in it."""
    result = isolated(
        """
        import _testcapi
        chunk = b'{"op":"INSERT","id":1}\\n' * 300 + b'{"op":"DELETE","id":1}\\n' * 300
        spellings = ((b'"+I"', 0), (b'"-D"', 3), (b'"INSERT"', 0), (b'"DELETE"', 3))
        codes = ((b'"INSERT"', 0, b'"op":"+I"'), (b'"DELETE"', 3, b'"op":"-D"'))
        firsts = (b'"op":"+I"', b'"op":"-U"', b'"op":"+U"', b'"op":"-D"')
        dbz = b'{"op":"c","after":{"id":1}}\\n' * 300
        calls = [
            lambda: _kernel.columns(chunk, 0, b'"op"', b"", codes),
            lambda: _kernel.debezium(dbz, 0, b'"op"', firsts, False, set()),
            lambda: _kernel.keyed(chunk.replace(b"INSERT", b"+I").replace(b"DELETE", b"-D"), 0, b'"op"',
                                  spellings, (b'"id"',), _kernel.Table()),
            lambda: _kernel.parse_changes(chunk, 0, b'"op"', spellings, (b'"id"',)),
            lambda: _kernel.count_lines(b"\\n" * 1000),
            lambda: _kernel.Table().items(),
        ]
        failed = 0
        for call in calls:
            for n in range(40):
                _testcapi.set_nomemory(n, n + 1)
                try:
                    out = call()
                except MemoryError:
                    failed += 1
                    continue
                finally:
                    _testcapi.remove_mem_hooks()
                repr(out)  # walks every item: a NULL in a tuple crashes here
        print("ok", failed)
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ok"), result.stdout


@pytest.mark.skipif(not _has_testcapi(), reason="_testcapi (CPython's test module) is not installed")
def test_the_table_stays_whole_when_growing_it_fails() -> None:
    """The table is full (1,024 entries, ten deleted): the next insert compacts and grows it.
    Whichever allocation fails, every live key must still be found, in its order."""
    result = isolated(
        """
        import _testcapi

        def rec(kind, offset, key, row):
            return struct.pack("=BII", kind, offset, len(key)) + key + struct.pack("=I", len(row)) + row

        keys = [b"key-%04d-" % i + b"x" * 30 for i in range(1024)]  # longer than kept inline
        for n in range(30):
            table = _kernel.Table()
            _kernel.apply_changes(b"".join(rec(0, i, k, b'{"v":%d}' % i) for i, k in enumerate(keys)), table)
            _kernel.apply_changes(b"".join(rec(3, i, k, b"") for i, k in enumerate(keys[:10])), table)
            _testcapi.set_nomemory(n, n + 1)
            try:
                _kernel.apply_changes(rec(0, 0, b"new", b"{}"), table)
            except MemoryError:
                pass
            finally:
                _testcapi.remove_mem_hooks()
            live = [k for k, _, _ in table.items()]
            assert live[:1014] == keys[10:], n
            assert live[1014:] in ([], [b"new"]), n
            # every live row found again by its key: -U with the stored row is accepted
            check = b"".join(rec(1, i, k, b'{"v":%d}' % (i + 10)) for i, k in enumerate(keys[10:]))
            stop, records = _kernel.apply_changes(check, table)[:2]
            assert (stop, records) == (-1, 1014), (n, stop, records)
            # and a deleted key is not: inserting it again is no finding
            assert _kernel.apply_changes(rec(0, 0, keys[0], b"{}"), table)[:2] == (-1, 1), n
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ok"), result.stdout


# ---------------------------------------------------------------- member names


def _object_line(names: list[str], op: str = "INSERT") -> bytes:
    members = [json.dumps(n, ensure_ascii=False).encode() + b":1" for n in names]
    return b"{" + b",".join([*members, b'"op":' + json.dumps(op).encode()]) + b"}"


@pytest.fixture(params=["keyed hash", "sorted fallback"])
def name_index(request: pytest.FixtureRequest) -> Any:
    """Each way of finding repeated names: the keyed hash index, and the sort it falls back to
    when probing takes too long (forced here by a probe budget of 0)."""
    previous = _kernel._set_probe_budget(0 if request.param == "sorted fallback" else -1)
    yield request.param
    _kernel._set_probe_budget(previous)


@pytest.mark.parametrize("seed", range(6))
def test_repeated_member_names_are_found(name_index: str, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        n = rng.choice([1, 2, 8, 9, 16, 17, 31, 32, 33, 100, 300, 511])
        pool = [f"c{i}" for i in range(n)] + ["x" * rng.randrange(0, 40), "a", "ab", "é"]
        names = [rng.choice(pool) if rng.random() < 0.1 else f"c{i}" for i in range(n)]
        line = _object_line(names)
        position = columns(line + b"\n")[1]
        repeated = len(set(names)) < len(names) or "op" in names
        assert position == (0 if repeated else len(line) + 1), (names, name_index)


@pytest.mark.parametrize("seed", range(4))
def test_an_update_needs_every_after_name_in_its_before_image(name_index: str, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        n = rng.choice([1, 5, 40, 200, 500])
        before = [f"col{i}" for i in range(n)]
        after = rng.sample(before, rng.randrange(1, n + 1))
        if rng.random() < 0.5:
            rng.shuffle(before)
        missing = rng.random() < 0.3
        if missing:
            after.append("missing")
        event = {"before": dict.fromkeys(before, 1), "after": dict.fromkeys(after, 2), "op": "u"}
        line = orjson.dumps(event) + b"\n"
        position = _kernel.debezium(line, 0, b'"op"', FIRSTS, False, set())[1]
        assert position == (0 if missing else len(line)), name_index


def _fnv_colliding_names(count: int, length: int) -> list[str]:
    """Names whose 32-bit FNV-1a hash (with quotes, as the old kernel hashed them) agrees in the
    low 11 bits: all in one slot of the old unkeyed table. One length, one long prefix: each
    comparison reads the whole name."""
    prefix = "k" * (length - 4)
    h0 = 2166136261
    for c in b'"' + prefix.encode():
        h0 = ((h0 ^ c) * 16777619) & 0xFFFFFFFF
    rng = random.Random(3)
    found: set[str] = set()
    while len(found) < count:
        suffix = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(4))
        h = h0
        for c in suffix.encode() + b'"':
            h = ((h ^ c) * 16777619) & 0xFFFFFFFF
        if h & 2047 == 0:
            found.add(suffix)
    return [prefix + s for s in sorted(found)]


def _best_seconds(call: Callable[[], Any], repeat: int = 5) -> float:
    """CPU time of this thread, best of ``repeat``: the machine's other load does not count."""
    best = float("inf")
    for _ in range(repeat):
        t = time.thread_time()
        call()
        best = min(best, time.thread_time() - t)
    return best


def test_crafted_member_names_do_not_slow_the_kernel() -> None:
    """Names built to collide in an unkeyed hash cost about what other names cost (the old
    kernel: 40x slower); measured on lines of the same size."""
    crafted = _object_line(_fnv_colliding_names(500, 1000)) + b"\n"
    usual = _object_line([f"{i:04d}" + "k" * 996 for i in range(500)]) + b"\n"
    assert len(crafted) == len(usual)
    assert columns(crafted)[1] == len(crafted) and columns(usual)[1] == len(usual)
    ratio = _best_seconds(lambda: columns(crafted * 8)) / _best_seconds(lambda: columns(usual * 8))
    assert ratio < 4, ratio


def test_images_in_opposite_orders_do_not_slow_the_kernel() -> None:
    """An update whose after image lists the before image's names in reverse order, names with a
    long common prefix: each is looked up, not compared with every other (the old kernel: 20x)."""
    names = ["q" * 1000 + f"{i:04d}" for i in range(500)]

    def update(after_names: list[str]) -> bytes:
        return orjson.dumps({"before": dict.fromkeys(names, 1), "after": dict.fromkeys(after_names, 2), "op": "u"})

    crafted, usual = update(names[::-1]) + b"\n", update(names) + b"\n"

    def run(line: bytes) -> None:
        assert _kernel.debezium(line * 4, 0, b'"op"', FIRSTS, False, set())[1] == len(line) * 4

    ratio = _best_seconds(lambda: run(crafted)) / _best_seconds(lambda: run(usual))
    assert ratio < 4, ratio


def test_without_a_random_hash_key_the_kernel_is_not_loaded() -> None:
    """The key is drawn from os.urandom at import; if that fails, the import fails as an
    ImportError (the Python side then runs without the kernel), not with another exception."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os\n"
            "def fail(n): raise OSError('no entropy')\n"
            "os.urandom = fail\n"
            "from cdc.engine.paths.native import kernel\n"
            "print(kernel.available())\n",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


# ---------------------------------------------------------------- the table


@pytest.mark.parametrize("seed", range(3))
def test_the_table_matches_a_dict_through_growth_and_compaction(seed: int) -> None:
    """Random changes (many deletes, so entries are compacted and the table grows) applied to a
    Table and to a plain model; items() and len() agree after each batch."""
    rng = random.Random(seed)
    table = _kernel.Table()
    model: dict[bytes, tuple[bytes, bool]] = {}
    offset = 0
    for _ in range(40):
        batch = []
        for _ in range(rng.randrange(1, 400)):
            key = b"k%d" % rng.randrange(3000) + (b"-long-key-kept-on-the-heap" if rng.random() < 0.3 else b"")
            kind = rng.choice([0, 0, 0, 3, 3, 1, 2])
            stored = model.get(key)
            row = stored[0] if kind == 1 and stored else b'{"v":%d}' % rng.randrange(10)
            batch.append(record(kind, offset, key, row))
            offset += 1
        packed = b"".join(batch)
        while packed:
            stop, records = _kernel.apply_changes(packed, table)[:2]
            # replay the applied records on the model; the one declined is skipped
            at = 0
            for _ in range(records):
                kind, _, klen = struct.unpack_from("=BII", packed, at)
                key = packed[at + 9 : at + 9 + klen]
                (rlen,) = struct.unpack_from("=I", packed, at + 9 + klen)
                row = packed[at + 13 + klen : at + 13 + klen + rlen]
                at += 13 + klen + rlen
                if kind in (0, 2):
                    model[key] = (row, False)
                elif kind == 1:
                    model[key] = (model[key][0], True)
                else:
                    del model[key]
            if stop < 0:
                break
            kind, _, klen = struct.unpack_from("=BII", packed, at)
            (rlen,) = struct.unpack_from("=I", packed, at + 9 + klen)
            packed = packed[at + 13 + klen + rlen :]
        assert len(table) == len(model)
        assert {k: (r, b) for k, r, b in table.items()} == model
        assert table.texts() == [r for _, r, b in table.items() if not b]


def test_table_takes_no_arguments() -> None:
    with pytest.raises(TypeError):
        _kernel.Table(1)
    with pytest.raises(TypeError):
        _kernel.Table(rows=1)
    with pytest.raises(TypeError):
        _kernel.apply_changes(b"", {})
    with pytest.raises(TypeError):
        _kernel.keyed(b"", 0, b'"op"', SPELLINGS, KEYS, object())


# ---------------------------------------------------------------- the fuzz, briefly


def test_a_short_seeded_fuzz_of_every_entry_point_finds_nothing() -> None:
    """A few thousand executions of scripts/kernel-fuzz.py (the campaigns run millions, under
    the sanitizers: scripts/kernel-sanitize.sh --fuzz N)."""
    spec = importlib.util.spec_from_file_location("kernel_fuzz", ROOT / "scripts" / "kernel-fuzz.py")
    assert spec and spec.loader
    fuzz = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fuzz  # its dataclass looks itself up there
    try:
        spec.loader.exec_module(fuzz)
        report = fuzz.run(seed=20240601, executions=6000, kernel=_kernel)
    finally:
        del sys.modules[spec.name]
    assert report.findings == [], report.findings[:5]
    assert set(report.executions) == set(fuzz.ENTRIES), report.executions
    assert sum(report.accepted_lines.values()) > 1000, report.accepted_lines


# ---------------------------------------------------------------- the state engine, the envelopes

FIRSTS4 = tuple(b'"op":' + json.dumps(k).encode() for k in KINDS)


def state_record(kind: int, line: int, offset: int, key: bytes, row: bytes, *extras: bytes | None) -> bytes:
    """One record of parse_records' buffer: [kind u8][line u32][offset u32][key length u32][key]
    [row length u32][row] then per extra [length u32][value] (0xFFFFFFFF: missing)."""
    out = struct.pack("=BIII", kind, line, offset, len(key)) + key + struct.pack("=I", len(row)) + row
    for extra in extras:
        out += struct.pack("=I", 0xFFFFFFFF) if extra is None else struct.pack("=I", len(extra)) + extra
    return out


def _parse(chunk: bytes, keys: tuple[bytes, ...] = KEYS, extras: tuple[bytes, ...] = (), flags: int = 0) -> bytes:
    return _kernel.parse_records(chunk, 0, b'"op"', SPELLINGS, keys, extras, flags)[0]  # type: ignore[no-any-return]


def _answer(*args: Any) -> int:
    return 1


@pytest.mark.parametrize(
    "args",
    [
        (b"{}", 0, b'"op"', SPELLINGS, KEYS, (b'"t"',) * 17),  # more than 16 extra columns
        (b"{}", 0, b'"op"', SPELLINGS, KEYS, (), 8),  # an unknown flag
        (b"{}", 0, b'"op"', SPELLINGS, KEYS, ("t",)),  # an extra column that is not bytes
        (b"{}", 0, b'"op"', ((b'"+I"', 9),), KEYS, ()),  # a kind index past 3
        (b"{}", 0, b'"op"', SPELLINGS, KEYS * 17, ()),  # more than 16 key columns
    ],
)
def test_parse_records_checks_its_spec(args: tuple[Any, ...]) -> None:
    with pytest.raises((TypeError, ValueError)):
        _kernel.parse_records(*args)


def test_parse_records_takes_only_an_immutable_chunk_and_a_start_within_it() -> None:
    chunk = changelog(("+I", 1, {}))
    with pytest.raises(TypeError, match="read-only"):
        _kernel.parse_records(bytearray(chunk), 0, b'"op"', SPELLINGS, KEYS, ())
    for start in (-1, len(chunk) + 1, 2**62):
        with pytest.raises(ValueError, match="start"):
            _kernel.parse_records(chunk, start, b'"op"', SPELLINGS, KEYS, ())


def test_parse_records_keys_are_equal_where_python_finds_the_values_equal() -> None:
    lines = [b'{"op":"+I","id":1}', b'{"op":"+I","id":1.0}', b'{"op":"+I","id":true}', b'{"op":"+I","id":10e-1}',
             b'{"op":"+I","id":"\\u00e9"}', '{"op":"+I","id":"é"}'.encode(), b'{"op":"+I","id":2}',
             b'{"op":"+I","id":0.30000000000000004}']  # fmt: skip
    packed, position, done = _kernel.parse_records(b"\n".join(lines) + b"\n", 0, b'"op"', SPELLINGS, KEYS, ())
    assert done == 7 and position < len(b"\n".join(lines))  # the float of 17 digits is declined
    keys = []
    at = 0
    while at < len(packed):
        key_len = struct.unpack_from("=I", packed, at + 9)[0]
        keys.append(packed[at + 13 : at + 13 + key_len])
        row_len = struct.unpack_from("=I", packed, at + 13 + key_len)[0]
        at += 17 + key_len + row_len
    assert keys[0] == keys[1] == keys[2] == keys[3] and keys[4] == keys[5] and len(set(keys)) == 3


@pytest.mark.parametrize(
    "args",
    [
        (3, 0, 0, FIRSTS4),  # an unknown command
        (0, 4096, 0, FIRSTS4),  # an unknown flag
        (0, 0, 17, FIRSTS4),  # more than 16 extras
        (0, 0, 0, FIRSTS4[:3]),  # three first members
        (0, 0, 0, ("a", "b", "c", "d")),  # first members not bytes
        (2, 8, 0, FIRSTS4),  # --order-by without its extra column
    ],
)
def test_state_checks_its_arguments(args: tuple[Any, ...]) -> None:
    with pytest.raises((TypeError, ValueError)):
        _kernel.State(*args)


@pytest.mark.parametrize(
    "packed",
    [
        b"\x00",  # shorter than a record header
        state_record(0, 1, 1, b"1", b"{}")[:-1],  # the row cut short
        state_record(4, 1, 1, b"1", b"{}"),  # a kind past 3
        struct.pack("=BIII", 0, 1, 1, 0xFFFFFFFF) + b"1" * 8,  # a key length past the buffer
        struct.pack("=BIII", 0, 1, 1, (1 << 20) + 1) + b"k" * ((1 << 20) + 1) + struct.pack("=I", 2) + b"{}",
        state_record(0, 5, 5, b"1", b"{}") + state_record(0, 5, 6, b"2", b"{}"),  # lines that do not increase
        state_record(0, 5, 9, b"1", b"{}") + state_record(0, 6, 3, b"2", b"{}"),  # offsets that do not
        state_record(0, 1, 1, b"1", b"{}") + b"\x00" * 3,  # trailing bytes
    ],
)
def test_a_state_refuses_a_malformed_buffer_and_stays_as_it_was(packed: bytes) -> None:
    for command, keys in ((0, ()), (1, KEYS), (2, KEYS)):
        state = _kernel.State(command, 0, 0, FIRSTS4)
        state.apply(_parse(changelog(("+I", 0, {"a": 0})), keys), 0, _answer)
        before = state.counters(), state.items()
        with pytest.raises(ValueError, match="records"):
            state.apply(state_record(0, 0, 0, b"x", b'{"a":1}') + packed, 0, _answer)
        assert (state.counters(), state.items()) == before


def test_a_state_takes_records_only_read_only_and_from_a_record_start() -> None:
    state = _kernel.State(1, 0, 0, FIRSTS4)
    packed = _parse(changelog(("+I", 1, {}), ("+I", 2, {})))
    with pytest.raises(TypeError, match="read-only"):
        state.apply(bytearray(packed), 0, _answer)
    with pytest.raises(ValueError, match="no record starts"):
        state.apply(packed, 1, _answer)
    for start in (-1, len(packed) + 1):
        with pytest.raises(ValueError, match="start"):
            state.apply(packed, start, _answer)
    with pytest.raises(TypeError, match="callable"):
        state.apply(packed, 0, None)
    first = len(state_record(0, 0, 0, b"1", b'{"id":1}'))
    state.apply(packed, first, _answer)  # the second record alone
    assert [row for _, row, _, _ in state.items()] == [b'{"id":2}']


def test_a_state_handle_that_fails_or_calls_back_leaves_it_whole() -> None:
    state = _kernel.State(1, 0, 0, FIRSTS4)
    packed = _parse(changelog(("+I", 1, {"v": 1}), ("+I", 1, {"v": 2}), ("-D", 9, {}), ("+I", 3, {})))
    calls: list[str] = []

    def reenter(*args: Any) -> int:
        for method in (state.texts, state.items, lambda: state.apply(packed, 0, reenter), lambda: state.net(reenter)):
            try:
                method()
            except RuntimeError:
                calls.append("refused")
            except ValueError:
                calls.append("refused")
        raise KeyError("the handle fails")

    with pytest.raises(KeyError):
        state.apply(packed, 0, reenter)  # +I of a stored key asks: the handle calls back, then fails
    assert calls == ["refused"] * 4
    assert [row for _, row, _, _ in state.items()] == [b'{"id":1,"v":1}']  # the records before it
    with pytest.raises(TypeError, match="int"):
        state.apply(packed, 0, lambda *args: "yes")
    with pytest.raises(ValueError, match="int"):
        state.apply(packed, 0, lambda *args: -2)
    state.apply(_parse(changelog(("+I", 4, {}))), 0, _answer)  # usable after each
    assert len(state.texts()) >= 2


def test_encode_checks_its_arguments() -> None:
    chunk = changelog(("+I", 1, {}))
    args: list[Any] = [chunk, 0, b'"op"', SPELLINGS, (), b"", b"", b"123", False, None]
    assert _kernel.encode(*args)[2] == 1
    for at, wrong in ((7, b"12.5"), (7, b""), (9, "x"), (9, 1), (1, len(chunk) + 1), (4, KEYS * 17)):
        bad = list(args)
        bad[at] = wrong
        with pytest.raises((TypeError, ValueError)):
            _kernel.encode(*bad)
    # a pending row that is not a plain object is written as it is, never read past its end
    out = _kernel.encode(changelog(("-D", 1, {})), 0, b'"op"', SPELLINGS, (), b"", b"", b"1", False, b'{"a":1,"a":2')
    assert out[0].startswith(b'{"before":{"a":1,"a":2,"after":null')


@pytest.mark.parametrize("entry", ["maxwell", "canal"])
def test_envelope_kernels_check_their_first_members(entry: str) -> None:
    for firsts in (FIRSTS4[:3], ("a", "b", "c", "d"), (b"a", b"b", b"c", 1)):
        with pytest.raises((TypeError, ValueError)):
            getattr(_kernel, entry)(b"{}\n", 0, b'"op"', firsts, False)


@pytest.mark.parametrize(
    "shapes",
    [
        tuple((b'"t%d"' % i, ()) for i in range(17)),  # more than 16 tables
        ((b'"t"', ("id",)),),  # a name that is not bytes
        ((b'"t"',),),  # not a pair
        (("t", ()),),  # a table that is not bytes
        ((b'"t"', (b'"n"',) * 513),),  # more names than a row holds
    ],
)
def test_ogg_checks_the_shapes_it_is_given(shapes: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        _kernel.ogg(b'{"op_type":"I","after":{"id":1}}\n', 0, b'"op"', FIRSTS4, shapes, True)


def test_ogg_reports_the_shapes_it_learns() -> None:
    chunk = b'{"table":"S.T","op_type":"I","after":{"id":1,"v":2}}\n{"table":"S.T","op_type":"D","before":{"id":1}}\n'
    out, position, lines, kinds, _, learnt = _kernel.ogg(chunk, 0, b'"op"', FIRSTS4, (), True)
    assert lines == 1 and learnt == [(b'"S.T"', b'{"id":1,"v":2}')]  # the delete lacks v: declined
    out, position, lines, kinds, _, learnt = _kernel.ogg(chunk, position, b'"op"', FIRSTS4, ((b'"S.T"', ()),), True)
    assert lines == 1 and kinds == (0, 0, 0, 1)


AGG = (7, 1, (b'"id"',), (0, 2), (-1, 1), (b'"n"', b'"s"'), 1, FIRSTS4)


@pytest.mark.skipif(_kernel is not None and not hasattr(_kernel, "Aggregate"), reason="no 128-bit integers")
@pytest.mark.parametrize(
    "at, wrong",
    [(0, 8), (1, 17), (2, ("id",)), (3, (0, 9)), (4, (-1, 0)), (4, (-1, 16)), (3, (0,)), (5, (b'"n"',)),
     (6, 0), (6, 1 << 20), (7, FIRSTS4[:3]), (3, (1,) * 65)],
)  # fmt: skip
def test_aggregate_checks_its_arguments(at: int, wrong: Any) -> None:
    args = list(AGG)
    args[at] = wrong
    if at == 3 and len(wrong) == 65:
        args[4], args[5] = (1,) * 65, (b'"a"',) * 65
    with pytest.raises((TypeError, ValueError)):
        _kernel.Aggregate(*args)


@pytest.mark.skipif(_kernel is not None and not hasattr(_kernel, "Aggregate"), reason="no 128-bit integers")
def test_an_aggregate_refuses_malformed_records_and_stops_where_python_must_take_over() -> None:
    agg = _kernel.Aggregate(*AGG)
    parse = (b'"op"', SPELLINGS, KEYS, (b'"id"', b'"v"'), 4)
    good = _kernel.parse_records(changelog(("+I", 1, {"v": 5}), ("+I", 1, {"v": 7})), 0, *parse)[0]
    out, stop = agg.apply(good, 0, _answer)
    assert stop == -1 and out.count(b"\n") == 3  # +I, then -U/+U
    before = agg.counters(), agg.items()
    for forged in (state_record(4, 0, 0, b"1", b"{}", b"1", b"5"), state_record(0, 0, 0, b"1", b"{}", b"1")):
        with pytest.raises(ValueError, match="records"):
            agg.apply(forged, 0, _answer)
    assert (agg.counters(), agg.items()) == before
    floats = _kernel.parse_records(changelog(("+I", 1, {"v": 1.5}), ("+I", 2, {"v": 1})), 0, *parse)[0]
    out, stop = agg.apply(floats, 0, _answer)  # a float: Python takes the state over from that record
    assert out == b"" and stop == 0 and (agg.counters(), agg.items()) == before
    most = 10**18 - 1  # the largest integer of 18 digits (the kernel's plain ones)
    big = _kernel.parse_records(changelog(*[("+I", 1, {"v": most})] * 10), 0, *parse)[0]
    out, stop = agg.apply(big, 0, _answer)  # sums past 64 bits are kept exactly
    assert stop == -1 and b'"s":' + str(12 + 10 * most).encode() in out
    (values, count, slots, old, tracker) = agg.items()[0]
    assert values == b"[1]" and count == 12 and slots[1] == (12 + 10 * most, 12) and tracker[1] == 0


@pytest.mark.skipif(not _has_testcapi(), reason="_testcapi (CPython's test module) is not installed")
def test_the_state_engine_survives_every_failing_allocation() -> None:
    result = isolated(
        """
        import _testcapi
        spellings = ((b'"+I"', 0), (b'"-U"', 1), (b'"+U"', 2), (b'"-D"', 3))
        firsts = (b'"op":"+I"', b'"op":"-U"', b'"op":"+U"', b'"op":"-D"')
        log = b"".join(b'{"op":"+I","id":%d,"v":%d,"t":%d}\\n{"op":"-U","id":%d,"v":%d,"t":%d}\\n'
                       b'{"op":"+U","id":%d,"v":1,"t":9}\\n' % (i, i, i, i, i, i, i) for i in range(300))
        keyed = _kernel.parse_records(log, 0, b'"op"', spellings, (b'"id"',), (b'"t"',))[0]
        plain = _kernel.parse_records(log, 0, b'"op"', spellings, (), ())[0]
        agg = _kernel.parse_records(log, 0, b'"op"', spellings, (b'"id"',), (b'"id"', b'"v"'), 4)[0]
        calls = [
            lambda: _kernel.parse_records(log, 0, b'"op"', spellings, (b'"id"',), (b'"t"',)),
            lambda: _kernel.State(0, 1, 0, firsts).apply(plain, 0, lambda *a: 1),
            lambda: _kernel.State(1, 6, 1, firsts).apply(keyed, 0, lambda *a: 1),
            lambda: _kernel.State(2, 256 | 8, 1, firsts).apply(keyed, 0, lambda *a: 1),
            lambda: _kernel.encode(log, 0, b'"op"', spellings, (), b'"t"', b"", b"1", False, None),
            lambda: _kernel.maxwell(b'{"type":"insert","data":{"id":1}}\\n' * 300, 0, b'"op"', firsts, True),
            lambda: _kernel.ogg(b'{"op_type":"I","after":{"id":1}}\\n' * 300, 0, b'"op"', firsts, (), True),
            lambda: _kernel.canal(b'{"type":"INSERT","data":[{"id":"1"}],"sqlType":{"id":4}}\\n' * 300,
                                  0, b'"op"', firsts, False),
        ]
        if hasattr(_kernel, "Aggregate"):
            calls.append(lambda: _kernel.Aggregate(7, 1, (b'"id"',), (0, 2, 4), (-1, 1, 1),
                                                   (b'"n"', b'"s"', b'"m"'), 1, firsts).apply(agg, 0, lambda *a: 1))
        failed = 0
        for call in calls:
            for n in range(60):
                _testcapi.set_nomemory(n, n + 1)
                try:
                    out = call()
                except MemoryError:
                    failed += 1
                    continue
                finally:
                    _testcapi.remove_mem_hooks()
                repr(out)
        print("ok", failed)
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ok"), result.stdout
