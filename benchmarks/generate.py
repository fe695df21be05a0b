"""Benchmark inputs: Debezium events, flat op-coded rows, changelogs and plain rows.

    python benchmarks/generate.py 300000 benchmarks/data          # the stateless cases' files
    python benchmarks/generate.py --changes 1000000 benchmarks/data  # the state engine's files
    python benchmarks/generate.py --shapes 5000000 benchmarks/data   # Parquet → Parquet at scale

Rows look like the spec's reference (its events: 333 bytes; these: about 390): a customers table
with five columns, MySQL source block, c/u/d mixed over a key space of a tenth of the events. JSON
is written as Debezium's JSON converter (Jackson) writes it: compact, UTF-8.

``--changes N`` writes ``changes-N.{jsonl,parquet}``: N changelog rows (``+I -U +U -D``, the kind
first) over N/10 keys, every change consistent with the ones before it; and ``rows-N.{jsonl,
parquet}``: N plain rows over N/10 groups (the aggregate case). ``--shapes N`` writes Parquet
changelogs of N rows in several shapes (row-group sizes, dictionary-heavy and high-cardinality
columns, nested types) for the Parquet → Parquet cases.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

NAMES = ["alice", "bob", "carol", "dave", "éva", "o'neil", "x,y", "名前"]
SHORT = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}


def row(rng: random.Random, key: int) -> dict[str, object]:
    return {
        "id": key,
        "name": rng.choice(NAMES),
        "score": rng.randint(0, 1000),
        "ratio": round(rng.random() * 10, 3),
        "flag": rng.random() < 0.5,
    }


def events(n: int, seed: int = 7, keys: int | None = None):  # type: ignore[no-untyped-def]
    """(op, before, after) in a consistent order: updates and deletes only of live keys."""
    rng = random.Random(seed)
    keys = keys or max(n // 10, 1)
    live: dict[int, dict[str, object]] = {}
    for _ in range(n):
        key = rng.randrange(keys)
        old = live.get(key)
        if old is None:
            new = row(rng, key)
            live[key] = new
            yield "c", None, new
        elif rng.random() < 0.8:
            new = row(rng, key)
            live[key] = new
            yield "u", old, new
        else:
            del live[key]
            yield "d", old, None


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def write_events(n: int, out: Path) -> None:
    """``debezium-N.jsonl`` (N events), ``flat-N.jsonl`` and ``changelog-N.parquet`` (their rows)."""
    source = {
        "version": "2.7.0.Final",
        "connector": "mysql",
        "name": "dbserver1",
        "ts_ms": 1700000000000,
        "snapshot": "false",
        "db": "inventory",
        "table": "customers",
        "server_id": 223344,
        "file": "mysql-bin.000003",
        "pos": 154,
    }
    kinds = {"c": ("INSERT",), "u": ("UPDATE_BEFORE", "UPDATE_AFTER"), "d": ("DELETE",)}
    with (
        open(out / f"debezium-{n}.jsonl", "w", encoding="utf-8") as dbz,
        open(out / f"flat-{n}.jsonl", "w", encoding="utf-8") as flat,
    ):
        changelog = []
        for i, (op, before, after) in enumerate(events(n)):
            dbz.write(
                dumps(
                    {
                        "before": before,
                        "after": after,
                        "source": {**source, "pos": 154 + i},
                        "op": op,
                        "ts_ms": 1700000000100 + i,
                        "transaction": None,
                    }
                )
                + "\n"
            )
            images = {"c": [after], "u": [before, after], "d": [before]}[op]
            for kind, image in zip(kinds[op], images, strict=True):
                flat.write(dumps({**image, "op": kind}) + "\n")  # type: ignore[dict-item]
                changelog.append({"op": SHORT[kind], **image})  # type: ignore[dict-item]
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(changelog), out / f"changelog-{n}.parquet")
    for name in (f"debezium-{n}.jsonl", f"flat-{n}.jsonl", f"changelog-{n}.parquet"):
        print(f"{out / name}: {(out / name).stat().st_size / 1e6:.1f} MB")


def changes(n: int, keys: int, seed: int = 11) -> list[dict[str, object]]:
    """``n`` changelog rows over ``keys`` keys, each consistent with those before it."""
    out: list[dict[str, object]] = []
    for op, before, after in events(n, seed, keys):
        if op == "c":
            out.append({"op": "+I", **after})  # type: ignore[dict-item]
        elif op == "u":
            if len(out) + 2 > n:
                break
            out.append({"op": "-U", **before})  # type: ignore[dict-item]
            out.append({"op": "+U", **after})  # type: ignore[dict-item]
        else:
            out.append({"op": "-D", **before})  # type: ignore[dict-item]
        if len(out) >= n:
            break
    return out


def write_changes(n: int, out: Path) -> None:
    """``changes-N`` (N changes over N/10 keys) and ``rows-N`` (N plain rows over N/10 groups)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    log = changes(n, max(n // 10, 1))
    rng = random.Random(13)
    groups = max(n // 10, 1)
    rows = [row(rng, rng.randrange(groups)) for _ in range(n)]
    for name, data in ((f"changes-{n}", log), (f"rows-{n}", rows)):
        with open(out / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(dumps(r) + "\n" for r in data)
        pq.write_table(pa.Table.from_pylist(data), out / f"{name}.parquet")
        for suffix in (".jsonl", ".parquet"):
            print(f"{out / name}{suffix}: {(out / (name + suffix)).stat().st_size / 1e6:.1f} MB")


# Parquet → Parquet shapes: (name, what it stresses)
SHAPES = {
    "issue": "six columns as in the issue (op, id, name, score, ratio, flag), 1M-row row groups",
    "small-groups": "the same rows in 64k-row row groups",
    "dictionary": "low-cardinality text columns (8-50 distinct values): dictionary pages do the work",
    "high-cardinality": "unique text ids, random doubles and timestamps: plain pages, no dictionary",
    "nested": "a struct column and a list column besides flat ones",
}


def _shape_table(shape: str, n: int, seed: int) -> Any:
    """One slice of a shape's rows as an Arrow table (built with Arrow, not Python rows)."""
    import pyarrow as pa

    rng = random.Random(seed)
    kinds = pa.array(rng.choices(["+I", "-U", "+U", "-D"], weights=[4, 3, 3, 1], k=n), pa.string())
    ids = pa.array([rng.randrange(n * 4) for _ in range(n)], pa.int64())
    if shape in ("issue", "small-groups"):
        return pa.table(
            {
                "op": kinds,
                "id": ids,
                "name": pa.array(rng.choices(NAMES, k=n), pa.string()),
                "score": pa.array([rng.randint(0, 1000) for _ in range(n)], pa.int64()),
                "ratio": pa.array([round(rng.random() * 10, 3) for _ in range(n)], pa.float64()),
                "flag": pa.array([rng.random() < 0.5 for _ in range(n)], pa.bool_()),
            }
        )
    if shape == "dictionary":
        cities = [f"city-{i}" for i in range(50)]
        return pa.table(
            {
                "op": kinds,
                "id": ids,
                "country": pa.array(rng.choices(["DE", "FR", "US", "JP", "BR", "IN", "NG", "AU"], k=n)),
                "city": pa.array(rng.choices(cities, k=n)),
                "status": pa.array(rng.choices(["new", "paid", "shipped", "returned"], k=n)),
                "channel": pa.array(rng.choices(["web", "app", "store"], k=n)),
                "qty": pa.array([rng.randint(1, 9) for _ in range(n)], pa.int32()),
            }
        )
    if shape == "high-cardinality":
        return pa.table(
            {
                "op": kinds,
                "id": ids,
                "uuid": pa.array([f"{rng.getrandbits(128):032x}" for _ in range(n)]),
                "amount": pa.array([rng.random() * 1e6 for _ in range(n)], pa.float64()),
                "at": pa.array([1_700_000_000_000_000 + rng.getrandbits(40) for _ in range(n)], pa.timestamp("us")),
                "note": pa.array([f"note {rng.getrandbits(48)} of {rng.choice(NAMES)}" for _ in range(n)]),
            }
        )
    if shape == "nested":
        return pa.table(
            {
                "op": kinds,
                "id": ids,
                "name": pa.array(rng.choices(NAMES, k=n)),
                "address": pa.array(
                    [{"city": rng.choice(NAMES), "zip": rng.randrange(10_000, 99_999)} for _ in range(n)],
                    pa.struct([("city", pa.string()), ("zip", pa.int32())]),
                ),
                "tags": pa.array([rng.sample(NAMES, rng.randint(0, 3)) for _ in range(n)], pa.list_(pa.string())),
                "score": pa.array([rng.randint(0, 1000) for _ in range(n)], pa.int64()),
            }
        )
    raise ValueError(shape)


def write_shapes(n: int, out: Path) -> None:
    """``shape-NAME-N.parquet`` for each shape, written slice by slice (memory stays flat)."""
    import pyarrow.parquet as pq

    step = 500_000
    for shape in SHAPES:
        path = out / f"shape-{shape}-{n}.parquet"
        if path.exists():
            continue
        group = 65_536 if shape == "small-groups" else 1024 * 1024
        writer = None
        for i, start in enumerate(range(0, n, step)):
            table = _shape_table(shape, min(step, n - start), seed=i)
            if writer is None:
                writer = pq.ParquetWriter(str(path) + ".tmp", table.schema)
            writer.write_table(table, row_group_size=group)
        assert writer is not None
        writer.close()
        # pyarrow starts a row group per write_table call: rewrite with groups of the shape's size
        table = pq.read_table(str(path) + ".tmp")
        pq.write_table(table, path, row_group_size=group)
        Path(str(path) + ".tmp").unlink()
        print(f"{path}: {path.stat().st_size / 1e6:.1f} MB")


def main() -> None:
    args = sys.argv[1:]
    mode = "events"
    if args and args[0] in ("--changes", "--shapes"):
        mode = args.pop(0)[2:]
    n = int(args[0]) if args else 300_000
    out = Path(args[1] if len(args) > 1 else "benchmarks/data")
    out.mkdir(parents=True, exist_ok=True)
    {"events": write_events, "changes": write_changes, "shapes": write_shapes}[mode](n, out)


if __name__ == "__main__":
    main()
