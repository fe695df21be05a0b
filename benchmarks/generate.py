"""Benchmark inputs: Debezium events, flat op-coded rows and a Parquet changelog.

    python benchmarks/generate.py 300000 benchmarks/data

Rows look like the spec's reference (its events: 333 bytes; these: about 390): a customers table
with five columns, MySQL source block, c/u/d mixed over a key space of a tenth of the events. JSON
is written as Debezium's JSON converter (Jackson) writes it: compact, UTF-8.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

NAMES = ["alice", "bob", "carol", "dave", "éva", "o'neil", "x,y", "名前"]


def row(rng: random.Random, key: int) -> dict[str, object]:
    return {
        "id": key,
        "name": rng.choice(NAMES),
        "score": rng.randint(0, 1000),
        "ratio": round(rng.random() * 10, 3),
        "flag": rng.random() < 0.5,
    }


def events(n: int, seed: int = 7):  # type: ignore[no-untyped-def]
    """(op, before, after) in a consistent order: updates and deletes only of live keys."""
    rng = random.Random(seed)
    keys = max(n // 10, 1)
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


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "benchmarks/data")
    out.mkdir(parents=True, exist_ok=True)
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
                changelog.append(
                    {"op": {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}[kind], **image}
                )  # type: ignore[dict-item]
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(changelog), out / f"changelog-{n}.parquet")
    for name in (f"debezium-{n}.jsonl", f"flat-{n}.jsonl", f"changelog-{n}.parquet"):
        print(f"{out / name}: {(out / name).stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
