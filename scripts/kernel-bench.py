"""Micro-benchmark of the C kernel's entry points, called directly (no CLI, no process start-up).

    python scripts/kernel-bench.py                                # the installed extension
    python scripts/kernel-bench.py --so old.so --so new.so        # two builds, run in turns
    python scripts/kernel-bench.py --events 100000 --repeat 9

Prints MB/s of input per entry point (CPU time, best of --repeat runs): the usual inputs (the benchmark
generator's Debezium events and changelog rows, and rows of 20 and 60 columns) and crafted
adversarial lines (member names that collide under an unkeyed hash, long names with a common
prefix, before/after images in opposite orders), which must not be much slower per byte than
the usual ones. With two builds, their runs alternate (the machine's load hits both alike) and
the last column is the second's speed over the first's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from generate import dumps, envelopes, events  # noqa: E402

KINDS = ("+I", "-U", "+U", "-D")
LONG = ("INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE")


def load(so: str | None, n: int) -> ModuleType:
    if so is None:
        from cdc.engine.paths.native import _kernel

        return _kernel
    spec = importlib.util.spec_from_file_location(f"build{n}._kernel", so)  # PyInit__kernel of that file
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs(n: int) -> dict[str, bytes]:
    dbz, flat, changelog = [], [], []
    others: dict[str, list[str]] = {"canal": [], "maxwell": [], "ogg": []}
    for i, (op, before, after) in enumerate(events(n)):
        dbz.append(dumps({"before": before, "after": after, "source": {"connector": "mysql", "pos": 1}, "op": op}))
        for name, event in envelopes(i, op, before, after).items():
            if name in others:
                others[name].append(dumps(event))
        images = {"c": [after], "u": [before, after], "d": [before]}[op]
        names = {"c": ("INSERT",), "u": ("UPDATE_BEFORE", "UPDATE_AFTER"), "d": ("DELETE",)}[op]
        for name, image in zip(names, images, strict=True):
            flat.append(dumps({**image, "op": name}))
            changelog.append(dumps({"op": KINDS[LONG.index(name)], **image}))
    return {
        "debezium": ("\n".join(dbz) + "\n").encode(),
        "flat": ("\n".join(flat) + "\n").encode(),
        "changelog": ("\n".join(changelog) + "\n").encode(),
        **{name: ("\n".join(lines) + "\n").encode() for name, lines in others.items()},
    }


def fnv_colliding_names(count: int, prefix_len: int) -> list[str]:
    """Names of one length whose 32-bit FNV-1a hash agrees in the low 11 bits (the old kernel's
    table mask), with a long common prefix so that each comparison reads the whole name."""
    prefix = "k" * prefix_len
    h0 = 2166136261
    for c in b'"' + prefix.encode():  # the kernel hashes a name with its quotes
        h0 = ((h0 ^ c) * 16777619) & 0xFFFFFFFF
    rng = random.Random(1)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    found: set[str] = set()
    while len(found) < count:
        suffix = "".join(rng.choice(alphabet) for _ in range(5))
        h = h0
        for c in suffix.encode() + b'"':
            h = ((h ^ c) * 16777619) & 0xFFFFFFFF
        if h & 2047 == 0:
            found.add(suffix)
    return [prefix + s for s in sorted(found)]


def crafted() -> dict[str, bytes]:
    colliding = fnv_colliding_names(510, 2000)
    line = "{" + ",".join(f'"{name}":1' for name in colliding) + ',"op":"INSERT"}'
    long32 = ["p" * 30000 + f"{i:04d}" for i in range(31)]
    line32 = "{" + ",".join(f'"{name}":1' for name in long32) + ',"op":"INSERT"}'
    names = ["q" * 2000 + f"{i:04d}" for i in range(500)]
    before = "{" + ",".join(f'"{name}":1' for name in names) + "}"
    after = "{" + ",".join(f'"{name}":2' for name in reversed(names)) + "}"
    event = f'{{"before":{before},"after":{after},"op":"u"}}'
    usual = [f"{i:04d}" + "k" * 2000 for i in range(510)]
    line_usual = "{" + ",".join(f'"{name}":1' for name in usual) + ',"op":"INSERT"}'
    return {
        "colliding names (510 x 2 KB)": (line + "\n").encode(),
        "distinct names (510 x 2 KB)": (line_usual + "\n").encode(),
        "31 long names (30 KB)": (line32 + "\n").encode(),
        "update, images in opposite order": (event + "\n").encode(),
    }


def wide(n: int, columns: int) -> bytes:
    """Changelog rows of many columns (col_00, col_01, ...): names of one length, one prefix."""
    rng = random.Random(columns)
    rows = []
    for i in range(n):
        row = {"op": LONG[i % 4], "id": i, **{f"col_{c:02d}": rng.randrange(1000) for c in range(columns)}}
        rows.append(dumps(row))
    return ("\n".join(rows) + "\n").encode()


def calls(k: ModuleType) -> dict[str, Callable[[bytes], Any]]:
    """Each kind of call, over a whole chunk (a declined line is skipped, as Python would take it)."""
    from_codes = tuple(
        (json.dumps(n).encode(), i, b'"op":' + json.dumps(KINDS[i]).encode()) for i, n in enumerate(LONG)
    )
    to_codes = tuple((json.dumps(c).encode(), i, b'"op":' + json.dumps(LONG[i]).encode()) for i, c in enumerate(KINDS))
    firsts = tuple(b'"op":' + json.dumps(c).encode() for c in KINDS)
    spellings = tuple((json.dumps(t).encode(), i) for i, t in enumerate(KINDS)) + tuple(
        (json.dumps(t).encode(), i) for i, t in enumerate(LONG)
    )
    keys = (b'"id"',)

    def keyed(chunk: bytes) -> None:
        position, table = 0, k.Table()
        while position < len(chunk):
            position = k.keyed(chunk, position, b'"op"', spellings, keys, table)[0]
            position = chunk.find(b"\n", position) + 1 or len(chunk)

    def split(chunk: bytes) -> None:
        packed, position, _ = k.parse_changes(chunk, 0, b'"op"', spellings, keys)
        assert position == len(chunk), position
        k.apply_changes(packed, k.Table())

    def columns(chunk: bytes, codes: Any) -> None:
        position = 0
        while position < len(chunk):
            position = k.columns(chunk, position, b'"op"', b"", codes)[1]
            position = chunk.find(b"\n", position) + 1 or len(chunk)

    def debezium(chunk: bytes) -> None:
        position = 0
        while position < len(chunk):
            position = k.debezium(chunk, position, b'"op"', firsts, False, set())[1]
            position = chunk.find(b"\n", position) + 1 or len(chunk)

    def state(chunk: bytes, command: int, flags: int, key: tuple[bytes, ...]) -> None:
        packed, position, _ = k.parse_records(chunk, 0, b'"op"', spellings, key, ())
        assert position == len(chunk), position
        k.State(command, flags, 0, firsts).apply(packed, 0, lambda *_: 1)

    def encode(chunk: bytes) -> None:
        position, pending = 0, None
        while position < len(chunk):
            _, position, _, _, _, pending = k.encode(
                chunk, position, b'"op"', spellings, keys, b"", b"", b"0", False, pending
            )
            position = chunk.find(b"\n", position) + 1 or len(chunk)

    def walk(chunk: bytes, entry: Callable[[bytes, int], Any]) -> None:
        position = 0
        while position < len(chunk):
            position = entry(chunk, position)[1]
            position = chunk.find(b"\n", position) + 1 or len(chunk)

    return {
        "state-dedup": lambda c: state(c, 1, 1, keys),  # materialize --key id --dedup
        "state-multiset": lambda c: state(c, 0, 0, ()),  # materialize without a key
        "state-replay": lambda c: state(c, 2, 0, keys),  # replay --key id
        "encode": encode,
        "canal": lambda c: walk(c, lambda chunk, at: k.canal(chunk, at, b'"op"', firsts, False)),
        "maxwell": lambda c: walk(c, lambda chunk, at: k.maxwell(chunk, at, b'"op"', firsts, False)),
        "ogg": lambda c: walk(c, lambda chunk, at: k.ogg(chunk, at, b'"op"', firsts, (), True)),
        "from": lambda c: columns(c, from_codes),
        "to": lambda c: columns(c, to_codes),
        "debezium": debezium,
        "keyed": keyed,
        "split": split,
        "count": lambda c: k.count_lines(c),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--so", action="append", default=[], help="a build of the extension (give two to compare)")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    builds = [calls(load(so, n)) for n, so in enumerate(args.so or [None])]
    data = inputs(args.events)
    lines = crafted()
    cases = [
        ("columns (from-changelog)", data["flat"], "from"),
        ("columns (to-changelog)", data["changelog"], "to"),
        ("debezium", data["debezium"], "debezium"),
        ("keyed", data["changelog"], "keyed"),
        ("parse_changes + apply_changes", data["changelog"], "split"),
        ("count_lines", data["debezium"], "count"),
        ("parse_records + State (materialize --dedup)", data["changelog"], "state-dedup"),
        ("parse_records + State (multiset)", data["changelog"], "state-multiset"),
        ("parse_records + State (replay)", data["changelog"], "state-replay"),
        ("encode (debezium-encode)", data["changelog"], "encode"),
        ("canal", data["canal"], "canal"),
        ("maxwell", data["maxwell"], "maxwell"),
        ("ogg", data["ogg"], "ogg"),
        ("columns: rows of 20 columns", wide(args.events // 2, 20), "from"),
        ("columns: rows of 60 columns", wide(args.events // 5, 60), "from"),
        ("keyed: rows of 20 columns", wide(args.events // 2, 20).replace(b'"INSERT"', b'"+I"'), "keyed"),
    ]
    for title in ("colliding names (510 x 2 KB)", "distinct names (510 x 2 KB)", "31 long names (30 KB)"):
        cases.append((f"columns: {title}", lines[title] * 20, "from"))
    cases.append(
        ("debezium: update, images in opposite order", lines["update, images in opposite order"] * 20, "debezium")
    )
    print(
        f"{'case':<52} {'MB':>7}"
        + "".join(f" {'MB/s':>9}" for _ in builds)
        + (" {:>7}".format("ratio") if len(builds) == 2 else "")
    )
    for title, chunk, name in cases:
        best = [float("inf")] * len(builds)
        for _ in range(args.repeat):  # in turns
            for i, build in enumerate(builds):
                t = time.thread_time()  # CPU time: the other sessions' load does not count
                build[name](chunk)
                best[i] = min(best[i], time.thread_time() - t)
        speeds = [len(chunk) / 1e6 / b for b in best]
        ratio = f" {speeds[1] / speeds[0]:7.2f}" if len(speeds) == 2 else ""
        print(f"{title:<52} {len(chunk) / 1e6:7.1f}" + "".join(f" {v:9.1f}" for v in speeds) + ratio, flush=True)


if __name__ == "__main__":
    main()
