"""Benchmark inputs for ``benchmarks/run.py``: change events in four envelopes, flat op-coded
rows, changelogs, plain rows and inserts of distinct keys.

    python benchmarks/generate.py 300000 benchmarks/data             # the stateless and decode cases' files
    python benchmarks/generate.py --changes 1000000 benchmarks/data  # the state engine's files
    python benchmarks/generate.py --shapes 5000000 benchmarks/data   # Parquet → Parquet at scale
    python benchmarks/generate.py --inserts 1000000 benchmarks/data  # the state memory cases' files

Rows look like the spec's reference (its events: 333 bytes; these: about 390): a customers table
(id, name, score, ratio, flag and ts, an epoch-ms time that grows with the event), MySQL source
block, c/u/d mixed over a key space of a tenth of the events. JSON is written as Debezium's JSON
converter (Jackson) writes it: compact, UTF-8.

One generator, ``events``, gives both kinds of input. ``N`` writes ``debezium-N.jsonl`` (N events)
and the same events as Canal, Maxwell and Oracle GoldenGate JSON (``canal-N``, ``maxwell-N``,
``ogg-N.jsonl``: the envelope decode cases compare them with debezium-decode on the same rows),
and their rows as ``flat-N.jsonl`` and ``changelog-N.parquet``. ``--changes N`` writes
``changes-N.{jsonl,parquet}``: N changelog rows (``+I -U +U -D``, the kind first, then id, name,
score, ratio, flag, ts) over N/10 keys, every change consistent with the ones before it; and
``rows-N.{jsonl,parquet}``: N plain rows (no ts) over N/10 groups (the append aggregate case).
``--shapes N`` writes Parquet changelogs of N rows in several shapes (row-group sizes,
dictionary-heavy and high-cardinality columns, nested types) for the Parquet → Parquet cases.
``--inserts N`` writes ``inserts-N.{jsonl,parquet}``: N inserts of distinct keys.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

NAMES = ["alice", "bob", "carol", "dave", "éva", "o'neil", "x,y", "名前"]
SHORT = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}
T0 = 1_700_000_000_000  # epoch ms of the first event; event i happens at T0 + i


def row(rng: random.Random, key: int, ts: int | None = None) -> dict[str, object]:
    """A customer row; with ``ts``, its time column last."""
    out: dict[str, object] = {
        "id": key,
        "name": rng.choice(NAMES),
        "score": rng.randint(0, 1000),
        "ratio": round(rng.random() * 10, 3),
        "flag": rng.random() < 0.5,
    }
    if ts is not None:
        out["ts"] = ts
    return out


def events(n: int, seed: int = 7, keys: int | None = None):  # type: ignore[no-untyped-def]
    """(op, before, after) in a consistent order: updates and deletes only of live keys; event i's
    new row has ``ts`` T0 + i."""
    rng = random.Random(seed)
    keys = keys or max(n // 10, 1)
    live: dict[int, dict[str, object]] = {}
    for i in range(n):
        key = rng.randrange(keys)
        old = live.get(key)
        if old is None:
            new = row(rng, key, T0 + i)
            live[key] = new
            yield "c", None, new
        elif rng.random() < 0.8:
            new = row(rng, key, T0 + i)
            live[key] = new
            yield "u", old, new
        else:
            del live[key]
            yield "d", old, None


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


SOURCE = {"version": "2.7.0.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": T0, "snapshot": "false",
          "db": "inventory", "table": "customers", "server_id": 223344, "file": "mysql-bin.000003",
          "pos": 154}  # fmt: skip
SQL_TYPES = {"id": 4, "name": 12, "score": 4, "ratio": 3, "flag": -6, "ts": -5}
MYSQL_TYPES = {"id": "int", "name": "varchar(64)", "score": "int", "ratio": "decimal(10,3)", "flag": "tinyint(1)",
               "ts": "bigint"}  # fmt: skip
ENVELOPES = ("debezium", "canal", "maxwell", "ogg")


def _canal_text(image: dict[str, Any]) -> dict[str, str]:
    """Canal sends every value as text (booleans as 1/0)."""
    return {k: (("1" if v else "0") if isinstance(v, bool) else str(v)) for k, v in image.items()}


def envelopes(i: int, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    """Event ``i`` as Debezium, Canal, Maxwell and OGG JSON would carry it."""
    ts = T0 + i
    image: dict[str, Any] = after if after is not None else before  # type: ignore[assignment]
    changed = {k: v for k, v in before.items() if after[k] != v} if before and after else None
    debezium = {"before": before, "after": after, "source": {**SOURCE, "pos": 154 + i}, "op": op,
                "ts_ms": ts + 100, "transaction": None}  # fmt: skip
    canal = {"data": [_canal_text(image)], "database": "inventory", "es": ts, "id": i, "isDdl": False,
             "mysqlType": MYSQL_TYPES, "old": [_canal_text(changed)] if changed is not None else None,
             "pkNames": ["id"], "sql": "", "sqlType": SQL_TYPES, "table": "customers", "ts": ts + 100,
             "type": {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[op]}  # fmt: skip
    maxwell: dict[str, Any] = {"database": "inventory", "table": "customers",
                               "type": {"c": "insert", "u": "update", "d": "delete"}[op],
                               "ts": ts // 1000, "xid": 8000 + i, "commit": True, "data": image}  # fmt: skip
    if changed is not None:
        maxwell["old"] = changed
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts // 1000))
    ogg: dict[str, Any] = {"table": "INVENTORY.CUSTOMERS", "op_type": {"c": "I", "u": "U", "d": "D"}[op],
                           "op_ts": f"{stamp}.000000", "current_ts": f"{stamp}.100000".replace(" ", "T"),
                           "pos": f"{i:020d}", "primary_keys": ["id"]}  # fmt: skip
    if before is not None:
        ogg["before"] = before
    if after is not None:
        ogg["after"] = after
    return {"debezium": debezium, "canal": canal, "maxwell": maxwell, "ogg": ogg}


def event_files(n: int) -> list[str]:
    """The names ``write_events(n, …)`` writes."""
    return [*(f"{name}-{n}.jsonl" for name in ENVELOPES), f"flat-{n}.jsonl", f"changelog-{n}.parquet"]


def write_events(n: int, out: Path) -> None:
    """``debezium-N.jsonl`` (N events), the same events as ``canal-N``, ``maxwell-N`` and
    ``ogg-N.jsonl``, and their rows as ``flat-N.jsonl`` and ``changelog-N.parquet``."""
    kinds = {"c": ("INSERT",), "u": ("UPDATE_BEFORE", "UPDATE_AFTER"), "d": ("DELETE",)}
    files = {name: open(out / f"{name}-{n}.jsonl", "w", encoding="utf-8") for name in (*ENVELOPES, "flat")}  # noqa: SIM115
    try:
        changelog = []
        for i, (op, before, after) in enumerate(events(n)):
            for name, event in envelopes(i, op, before, after).items():  # type: ignore[arg-type]
                files[name].write(dumps(event) + "\n")
            images = {"c": [after], "u": [before, after], "d": [before]}[op]
            for kind, image in zip(kinds[op], images, strict=True):
                files["flat"].write(dumps({**image, "op": kind}) + "\n")  # type: ignore[dict-item]
                changelog.append({"op": SHORT[kind], **image})  # type: ignore[dict-item]
    finally:
        for fh in files.values():
            fh.close()
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(changelog), out / f"changelog-{n}.parquet")
    for name in event_files(n):
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


def change_files(n: int) -> list[str]:
    """The names ``write_changes(n, …)`` writes."""
    return [f"{name}-{n}{suffix}" for name in ("changes", "rows") for suffix in (".jsonl", ".parquet")]


def write_changes(n: int, out: Path) -> None:
    """``changes-N`` (N changes over N/10 keys, with ts) and ``rows-N`` (N plain rows over N/10
    groups)."""
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


def insert_files(n: int) -> list[str]:
    """The names ``write_inserts(n, …)`` writes."""
    return [f"inserts-{n}.parquet", f"inserts-{n}.jsonl"]


def write_inserts(n: int, out: Path) -> None:
    """``inserts-N.{parquet,jsonl}``: N inserts of distinct keys (the state memory cases)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "op": pa.array(["+I"] * n),
            "id": pa.array(range(n), pa.int64()),
            "name": pa.array([("alice", "bob", "carol")[i % 3] for i in range(n)]),
            "score": pa.array([i % 1000 for i in range(n)], pa.int64()),
            "ratio": pa.array([(i % 10_000) / 1000 for i in range(n)], pa.float64()),
            "flag": pa.array([i % 2 == 0 for i in range(n)]),
        }
    )
    pq.write_table(table, out / f"inserts-{n}.parquet")
    with open(out / f"inserts-{n}.jsonl", "w") as fh:
        for r in table.to_pylist():
            fh.write(
                f'{{"op":"+I","id":{r["id"]},"name":"{r["name"]}","score":{r["score"]},'
                f'"ratio":{r["ratio"]!r},"flag":{str(r["flag"]).lower()}}}\n'
            )
    for name in insert_files(n):
        print(f"{out / name}: {(out / name).stat().st_size / 1e6:.1f} MB")


WRITERS = {"events": write_events, "changes": write_changes, "shapes": write_shapes, "inserts": write_inserts}


def main() -> None:
    args = sys.argv[1:]
    mode = "events"
    if args and args[0] in ("--events", "--changes", "--shapes", "--inserts"):
        mode = args.pop(0)[2:]
    n = int(args[0]) if args else 300_000
    out = Path(args[1] if len(args) > 1 else "benchmarks/data")
    out.mkdir(parents=True, exist_ok=True)
    WRITERS[mode](n, out)


if __name__ == "__main__":
    main()
