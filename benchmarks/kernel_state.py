"""The state engine and the envelope decoders against the DuckDB CLI, side by side.

    pip install -e '.[bench]'                           # the DuckDB CLI from PyPI
    python benchmarks/kernel_state.py                   # 1M changes over 100k keys, median of 3
    python benchmarks/kernel_state.py --changes 300000 --events 300000 --repeat 5 --case replay

Inputs (written once to --data, like benchmarks/generate.py's): a changelog of consistent changes
(inserts of new keys, -U/+U pairs, deletes of live keys; op first, then id, name, score, ratio,
flag, ts), and one stream of change events per envelope (Debezium, Canal, Maxwell, OGG) carrying
the same rows. Each case runs cdc and the DuckDB CLI (the nearest SQL, issue #12) in rotation as
whole processes, `--repeat` times; the median wall time counts; peak memory is the PSS of the
process tree. The decode cases compare each envelope with debezium-decode on the same rows (the
target of issue #10 is 1.5×). The load average is sampled before each case: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
NAMES = ["alice", "bob", "carol", "dave", "éva", "o'neil", "x,y", "名前"]
T0 = 1_700_000_000_000


def _row(rng: random.Random, key: int, ts: int) -> dict[str, Any]:
    return {
        "id": key,
        "name": rng.choice(NAMES),
        "score": rng.randint(0, 1000),
        "ratio": round(rng.random() * 10, 3),
        "flag": rng.random() < 0.5,
        "ts": ts,
    }


def changes(n: int, keys: int, seed: int = 7) -> Iterator[tuple[str, dict[str, Any] | None, dict[str, Any] | None]]:
    """Events (c/u/d, before, after) whose changelog has about ``n`` changes over ``keys`` keys."""
    rng = random.Random(seed)
    live: dict[int, dict[str, Any]] = {}
    made = 0
    i = 0
    while made < n:
        i += 1
        key = rng.randrange(keys)
        old = live.get(key)
        if old is None:
            new = _row(rng, key, T0 + i)
            live[key] = new
            made += 1
            yield "c", None, new
        elif rng.random() < 0.8:
            new = _row(rng, key, T0 + i)
            live[key] = new
            made += 2
            yield "u", old, new
        else:
            del live[key]
            made += 1
            yield "d", old, None


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def write_changelog(path: Path, n: int, keys: int) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for op, before, after in changes(n, keys):
            images = {"c": [("+I", after)], "u": [("-U", before), ("+U", after)], "d": [("-D", before)]}[op]
            for kind, image in images:
                out.write(_dumps({"op": kind, **image}) + "\n")  # type: ignore[dict-item]


SOURCE = {"version": "2.7.0.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": T0, "snapshot": "false",
          "db": "inventory", "table": "customers", "server_id": 223344, "file": "mysql-bin.000003",
          "pos": 154}  # fmt: skip
SQL_TYPES = {"id": 4, "name": 12, "score": 4, "ratio": 3, "flag": -6, "ts": -5}
MYSQL_TYPES = {"id": "int", "name": "varchar(64)", "score": "int", "ratio": "decimal(10,3)", "flag": "tinyint(1)",
               "ts": "bigint"}  # fmt: skip


def _canal_text(row: dict[str, Any]) -> dict[str, str]:
    return {k: (("1" if v else "0") if isinstance(v, bool) else str(v)) for k, v in row.items()}


def write_events(data: Path, n: int) -> dict[str, Path]:
    """The same rows as Debezium, Canal, Maxwell and OGG change events (``n`` events each)."""
    paths = {name: data / f"{name}-{n}.jsonl" for name in ("debezium", "canal", "maxwell", "ogg")}
    files = {name: open(path, "w", encoding="utf-8") for name, path in paths.items()}  # noqa: SIM115
    try:
        rng = random.Random(11)
        live: dict[int, dict[str, Any]] = {}
        keys = max(n // 10, 1)
        for i in range(n):
            key = rng.randrange(keys)
            before = live.get(key)
            if before is None:
                op, after = "c", _row(rng, key, T0 + i)
                live[key] = after
            elif rng.random() < 0.8:
                op, after = "u", _row(rng, key, T0 + i)
                live[key] = after
            else:
                op, after = "d", None
                del live[key]
            ts = T0 + i
            files["debezium"].write(
                _dumps(
                    {
                        "before": before,
                        "after": after,
                        "source": {**SOURCE, "pos": 154 + i},
                        "op": op,
                        "ts_ms": ts + 100,
                        "transaction": None,
                    }
                )
                + "\n"  # fmt: skip
            )
            canal_type = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[op]
            canal: dict[str, Any] = {"data": [_canal_text(after if after is not None else before)],  # type: ignore[arg-type]
                                     "database": "inventory", "es": ts, "id": i, "isDdl": False,
                                     "mysqlType": MYSQL_TYPES}  # fmt: skip
            if op == "u":
                assert before is not None and after is not None
                canal["old"] = [_canal_text({k: v for k, v in before.items() if after[k] != v})]
            else:
                canal["old"] = None
            canal.update(pkNames=["id"], sql="", sqlType=SQL_TYPES, table="customers", ts=ts + 100, type=canal_type)
            files["canal"].write(_dumps(canal) + "\n")
            maxwell: dict[str, Any] = {"database": "inventory", "table": "customers",
                                       "type": {"c": "insert", "u": "update", "d": "delete"}[op],
                                       "ts": ts // 1000, "xid": 8000 + i, "commit": True,
                                       "data": after if after is not None else before}  # fmt: skip
            if op == "u":
                assert before is not None and after is not None
                maxwell["old"] = {k: v for k, v in before.items() if after[k] != v}
            files["maxwell"].write(_dumps(maxwell) + "\n")
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts // 1000))
            ogg: dict[str, Any] = {"table": "INVENTORY.CUSTOMERS", "op_type": {"c": "I", "u": "U", "d": "D"}[op],
                                   "op_ts": f"{stamp}.000000", "current_ts": f"{stamp}.100000".replace(" ", "T"),
                                   "pos": f"{i:020d}", "primary_keys": ["id"]}  # fmt: skip
            if before is not None:
                ogg["before"] = before
            if after is not None:
                ogg["after"] = after
            files["ogg"].write(_dumps(ogg) + "\n")
    finally:
        for fh in files.values():
            fh.close()
    return paths


# -- measuring ---------------------------------------------------------------------------------


def tree_pss_kb(pid: int) -> int:
    """PSS of a process and its descendants, in KiB (shared pages counted once in total)."""
    total = 0
    pending = [pid]
    while pending:
        p = pending.pop()
        try:
            rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
            total += next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        pending.extend(int(c) for c in children)
    return total


def measure(cmd: list[str], stdout: Path | None) -> tuple[float, int]:
    """Wall seconds and peak tree PSS (KiB) of one run."""
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL  # noqa: SIM115 - closed below
    start = time.perf_counter()
    proc = subprocess.Popen(["nice", "-n", "5", *cmd], stdout=out, stderr=subprocess.PIPE)
    peak = 0

    def sample() -> None:
        nonlocal peak
        while proc.poll() is None:
            peak = max(peak, tree_pss_kb(proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    sampler.join()
    if stdout:
        out.close()  # type: ignore[union-attr]
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err.decode()}")
    return wall, peak


def _read_json(path: Path) -> str:
    return f"read_json('{path}', format='newline_delimited')"


def _json_object(columns: list[str]) -> str:
    return "json_object(" + ", ".join(f"'{c}', {c}" for c in columns) + ")"


def cases(data: Path, n: int, events: int, tmp: Path) -> list[tuple[str, list[str], list[str], Path | None]]:
    """(title, cdc command, peer command, stdout file of both)."""
    cdc = str(BIN / "cdc")
    duck = shutil.which("duckdb", path=str(BIN)) or shutil.which("duckdb")
    if duck is None:
        raise SystemExit("the DuckDB CLI is not installed: pip install -e '.[bench]'")
    log = data / f"changelog-{n}.jsonl"
    src = _read_json(log)
    cols = ["id", "name", "score", "ratio", "flag", "ts"]
    out = str(tmp / "cdc.jsonl")
    duck_out = tmp / "duck.jsonl"
    until = T0 + n // 2
    since = T0 + n // 4

    def sql(query: str) -> list[str]:
        return [duck, "-c", query]

    copy = f"COPY ({{}}) TO '{duck_out}' (FORMAT json)"
    last_per_key = (
        f"SELECT * EXCLUDE (op, seq) FROM (SELECT *, row_number() OVER () AS seq FROM {src}) "
        "QUALIFY row_number() OVER (PARTITION BY id ORDER BY seq DESC) = 1 AND op IN ('+I', '+U')"
    )
    multiset = (
        f"SELECT {', '.join(cols)} FROM (SELECT {', '.join(cols)}, "
        f"sum(CASE WHEN op IN ('+I', '+U') THEN 1 ELSE -1 END) AS n FROM {src} GROUP BY ALL) WHERE n > 0"
    )
    counts = (
        "SELECT count(*) FILTER (op = '+I'), count(*) FILTER (op = '-U'), count(*) FILTER (op = '+U'), "
        f"count(*) FILTER (op = '-D'), count(DISTINCT id){{}} FROM {src}"
    )
    no_ub = f"SELECT * FROM {src} WHERE op <> '-U'"
    image = _json_object(cols)
    encode = (
        f"SELECT json_object('before', CASE WHEN op = '-D' THEN {image} END, "
        f"'after', CASE WHEN op <> '-D' THEN {image} END, "
        "'op', CASE op WHEN '+I' THEN 'c' WHEN '+U' THEN 'u' ELSE 'd' END, 'ts_ms', ts, 'transaction', NULL) AS e "
        f"FROM {src} WHERE op <> '-U'"
    )
    final_group_by = (
        "SELECT id, sum(s) AS n, sum(s * score) AS total, max(score) AS hi, min(score) AS lo, "
        "sum(s * score) / sum(s) AS mean FROM "
        f"(SELECT *, CASE WHEN op IN ('+I', '+U') THEN 1 ELSE -1 END AS s FROM {src}) GROUP BY id HAVING sum(s) > 0"
    )
    agg = ["-a", "n=COUNT(*)", "-a", "total=SUM(score)", "-a", "hi=MAX(score)", "-a", "lo=MIN(score)",
           "-a", "mean=AVG(score)"]  # fmt: skip
    report = tmp / "report.json"
    table = [
        ("materialize --key id", [cdc, "materialize", str(log), "--key", "id", "-o", out],
         sql(copy.format(last_per_key)), None),
        ("materialize (multiset)", [cdc, "materialize", str(log), "-o", out], sql(copy.format(multiset)), None),
        ("materialize --key id --dedup", [cdc, "materialize", str(log), "--key", "id", "--dedup", "-o", out],
         sql(copy.format(last_per_key)), None),
        ("inspect --key id --json", [cdc, "inspect", str(log), "--key", "id", "--json"],
         sql(counts.format("")), report),
        ("inspect --key id -t ts --json", [cdc, "inspect", str(log), "--key", "id", "-t", "ts", "--json"],
         sql(counts.format(", min(ts), max(ts)")), report),
        ("inspect (multiset) --json", [cdc, "inspect", str(log), "--json"], sql(counts.format("")), report),
        ("replay --key id --emit upsert", [cdc, "replay", str(log), "--key", "id", "--emit", "upsert", "-o", out],
         sql(copy.format(no_ub)), None),
        ("replay --key id (retract)", [cdc, "replay", str(log), "--key", "id", "-o", out],
         sql(copy.format(no_ub)), None),
        ("replay --key id --order-by ts", [cdc, "replay", str(log), "--key", "id", "--order-by", "ts", "-o", out],
         sql(copy.format(no_ub)), None),
        ("replay --since/--until --net", [cdc, "replay", str(log), "--key", "id", "-t", "ts", "--since", str(since),
                                          "--until", str(until), "--net", "-o", out],
         sql(copy.format(last_per_key)), None),
        ("debezium-encode", [cdc, "debezium-encode", str(log), "-o", out], sql(copy.format(encode)), None),
        ("aggregate -g id COUNT/SUM/MAX/MIN/AVG", [cdc, "aggregate", str(log), "-g", "id", *agg, "-o", out],
         sql(copy.format(final_group_by)), None),
    ]  # fmt: skip
    rows = [(f"{title}, {n / 1e6:g}M changes", c, d, s) for title, c, d, s in table]
    paths = {name: data / f"{name}-{events}.jsonl" for name in ("debezium", "canal", "maxwell", "ogg")}
    dbz = [cdc, "debezium-decode", str(paths["debezium"]), "-o", out]
    for name in ("canal", "maxwell", "ogg"):
        rows.append(
            (
                f"decode {name} vs debezium-decode, {events / 1e6:g}M events",
                [cdc, "decode", "--envelope", name, str(paths[name]), "-o", out],
                dbz,
                None,
            )  # fmt: skip
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=0, help="default: a tenth of --changes")
    parser.add_argument("--events", type=int, default=1_000_000, help="events per envelope for the decode cases")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--case", action="append", default=[], help="run only cases whose title contains this")
    args = parser.parse_args()
    n, events = args.changes, args.events
    keys = args.keys or max(n // 10, 1)
    args.data.mkdir(parents=True, exist_ok=True)
    tmp = args.data / "out"
    tmp.mkdir(exist_ok=True)
    log = args.data / f"changelog-{n}.jsonl"
    if not log.exists():
        write_changelog(log, n, keys)
    if not (args.data / f"ogg-{events}.jsonl").exists():
        write_events(args.data, events)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent)], check=False, capture_output=True)
    lines = [
        f"Machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; median of {args.repeat} runs in "
        f"rotation; changelog {log.stat().st_size / 1e6:.0f} MB ({n:,} changes, {keys:,} keys).",
        "",
        "| case | cdc s | peer s | × peer | cdc peak MB | peer peak MB | load |",
        "|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for title, cdc_cmd, peer_cmd, stdout in cases(args.data, n, events, tmp):
        if args.case and not any(c in title for c in args.case):
            continue
        load = os.getloadavg()[0]
        runs: dict[str, list[tuple[float, int]]] = {"cdc": [], "peer": []}
        for _ in range(args.repeat):
            runs["cdc"].append(measure(cdc_cmd, stdout))
            runs["peer"].append(measure(peer_cmd, stdout))
        cdc_s = statistics.median(w for w, _ in runs["cdc"])
        peer_s = statistics.median(w for w, _ in runs["peer"])
        cdc_mb = max(p for _, p in runs["cdc"]) / 1024
        peer_mb = max(p for _, p in runs["peer"]) / 1024
        ratio = cdc_s / peer_s
        lines.append(
            f"| {title} | {cdc_s:.2f} | {peer_s:.2f} | {ratio:.2f} | {cdc_mb:.0f} | {peer_mb:.0f} | {load:.1f} |"
        )
        print(lines[-1], flush=True)


if __name__ == "__main__":
    main()
