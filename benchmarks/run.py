"""Run cdc and its peers side by side on the same files; print a table of wall time, rows/s,
peak memory (PSS of the whole process tree, so forked workers are not double counted) and the
ratio to the DuckDB CLI.

    pip install -e '.[bench]'              # the DuckDB CLI from PyPI; jq is used where installed
    python benchmarks/run.py 300000 1000000  # sizes (Debezium events); writes benchmarks/results/

Each command runs `--repeat` times in rotation (cdc, then each peer) and the median counts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent

ORJSON_DECODE = """
import sys, orjson
out = open(sys.argv[2], "wb")
with open(sys.argv[1], "rb") as f:
    for line in f:
        e = orjson.loads(line)
        op = e["op"]
        if op in ("c", "r"):
            out.write(orjson.dumps({"op": "+I", **e["after"]}) + b"\\n")
        elif op == "u":
            out.write(orjson.dumps({"op": "-U", **e["before"]}) + b"\\n")
            out.write(orjson.dumps({"op": "+U", **e["after"]}) + b"\\n")
        elif op == "d":
            out.write(orjson.dumps({"op": "-D", **e["before"]}) + b"\\n")
"""
ORJSON_MAP = """
import sys, orjson
kinds = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}
out = open(sys.argv[2], "wb")
with open(sys.argv[1], "rb") as f:
    for line in f:
        r = orjson.loads(line)
        k = kinds[r.pop("op")]
        out.write(orjson.dumps({"op": k, **r}) + b"\\n")
"""
JQ_DECODE = (
    'if .op == "u" then ({op: "-U"} + .before), ({op: "+U"} + .after) '
    'elif .op == "d" then {op: "-D"} + .before else {op: "+I"} + .after end'
)
JQ_MAP = '{op: ({"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}[.op])} + del(.op)'
DUCK_DECODE = (
    "COPY (SELECT e.k AS op, unnest(e.r) FROM (SELECT unnest(CASE WHEN op IN ('c','r') THEN [{{'k': '+I', "
    "'r': after}}] WHEN op = 'u' THEN [{{'k': '-U', 'r': before}}, {{'k': '+U', 'r': after}}] WHEN op = 'd' "
    "THEN [{{'k': '-D', 'r': before}}] END) AS e FROM read_json('{src}', format='newline_delimited'))) "
    "TO '{dst}' (FORMAT json)"
)
DUCK_MAP = (
    "COPY (SELECT CASE op WHEN 'INSERT' THEN '+I' WHEN 'UPDATE_BEFORE' THEN '-U' WHEN 'UPDATE_AFTER' THEN '+U' "
    "WHEN 'DELETE' THEN '-D' END AS op, * EXCLUDE (op) FROM read_json('{src}', format='newline_delimited')) "
    "TO '{dst}' (FORMAT json)"
)
DUCK_PARQUET = (
    "COPY (SELECT CASE op WHEN '+I' THEN 'INSERT' WHEN '-U' THEN 'UPDATE_BEFORE' WHEN '+U' THEN 'UPDATE_AFTER' "
    "WHEN '-D' THEN 'DELETE' END AS op, * EXCLUDE (op) FROM '{src}') TO '{dst}' (FORMAT parquet)"
)


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


def measure(cmd: list[str], stdout: Path | None = None) -> tuple[float, int]:
    """Wall seconds and peak tree PSS (KiB) of one run."""
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL  # noqa: SIM115 - closed below
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
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


def cases(data: Path, n: int, tmp: Path) -> list[tuple[str, int, list[tuple[str, list[str], Path | None]]]]:
    cdc = str(BIN / "cdc")
    duck = shutil.which("duckdb", path=str(BIN)) or shutil.which("duckdb")
    jq = shutil.which("jq")
    dbz, flat, parquet = data / f"debezium-{n}.jsonl", data / f"flat-{n}.jsonl", data / f"changelog-{n}.parquet"
    with open(flat, "rb") as fh:
        flat_rows = sum(1 for _ in fh)
    out = []
    decode = [("cdc", [cdc, "debezium-decode", str(dbz), "-o", str(tmp / "cdc.jsonl")], None)]
    mapping = [("cdc", [cdc, "from-changelog", str(flat), "-o", str(tmp / "cdc.jsonl")], None)]
    to_parquet = [("cdc", [cdc, "to-changelog", str(parquet), "-o", str(tmp / "cdc.parquet")], None)]
    if duck:
        decode.append(("duckdb", [duck, "-c", DUCK_DECODE.format(src=dbz, dst=tmp / "duck.jsonl")], None))
        mapping.append(("duckdb", [duck, "-c", DUCK_MAP.format(src=flat, dst=tmp / "duck.jsonl")], None))
        to_parquet.append(("duckdb", [duck, "-c", DUCK_PARQUET.format(src=parquet, dst=tmp / "duck.parquet")], None))
    if jq:
        decode.append(("jq", [jq, "-c", JQ_DECODE, str(dbz)], tmp / "jq.jsonl"))
        mapping.append(("jq", [jq, "-c", JQ_MAP, str(flat)], tmp / "jq.jsonl"))
    decode.append(("orjson loop", [sys.executable, "-c", ORJSON_DECODE, str(dbz), str(tmp / "py.jsonl")], None))
    mapping.append(("orjson loop", [sys.executable, "-c", ORJSON_MAP, str(flat), str(tmp / "py.jsonl")], None))
    out.append((f"debezium-decode JSONL ({n:,} events)", n, decode))
    out.append((f"from-changelog JSONL ({flat_rows:,} rows)", flat_rows, mapping))
    out.append((f"to-changelog Parquet→Parquet ({flat_rows:,} rows)", flat_rows, to_parquet))
    changelog = tmp / "changelog.jsonl"
    subprocess.run([cdc, "from-changelog", str(flat), "-o", str(changelog)], check=True)
    out.append(
        (
            f"materialize --key id vs from-changelog ({flat_rows:,} changes, {n // 10:,} keys)",
            flat_rows,
            [
                (
                    "cdc materialize",
                    [
                        cdc,
                        "materialize",
                        str(changelog),
                        "--key",
                        "id",
                        "-o",
                        str(tmp / "m.jsonl"),
                        "--on-inconsistency",
                        "ignore",
                    ],
                    None,
                ),
                ("cdc from-changelog", mapping[0][1], None),
            ],
        )
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sizes", nargs="*", type=int, default=[300_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--case", action="append", default=[], help="run only cases whose title contains this")
    args = parser.parse_args()
    tmp = args.data / "out"
    tmp.mkdir(parents=True, exist_ok=True)
    # Byte-compile cdc as an install would: with PYTHONDONTWRITEBYTECODE set, every run would
    # otherwise compile its modules again (~70 ms of start-up that users do not pay).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent)], check=False, capture_output=True)
    lines = [
        f"Machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}; median of {args.repeat} runs in rotation.",
        "",
        "| case | tool | wall s | rows/s | peak MB | × first peer |",
        "|---|---|---|---|---|---|",
    ]
    for n in args.sizes:
        if not (args.data / f"changelog-{n}.parquet").exists():
            subprocess.run([sys.executable, str(HERE / "generate.py"), str(n), str(args.data)], check=True)
        for title, rows, tools in cases(args.data, n, tmp):
            if args.case and not any(c in title for c in args.case):
                continue
            runs: dict[str, list[tuple[float, int]]] = {name: [] for name, _, _ in tools}
            for _ in range(args.repeat):
                for name, cmd, stdout in tools:
                    runs[name].append(measure(cmd, stdout))
            walls = {name: statistics.median(w for w, _ in r) for name, r in runs.items()}
            reference = walls[tools[1][0]] if len(tools) > 1 else None
            for name, _, _ in tools:
                wall = walls[name]
                peak = max(p for _, p in runs[name]) / 1024
                ratio = f"{wall / reference:.2f}" if reference else "—"
                lines.append(f"| {title} | {name} | {wall:.2f} | {rows / wall:,.0f} | {peak:.0f} | {ratio} |")
                print(lines[-1], flush=True)
    report = "\n".join(lines) + "\n"
    if not args.case:  # a partial run does not replace the full table
        results = HERE / "results"
        results.mkdir(exist_ok=True)
        (results / "latest.md").write_text(report)
    print("\n" + report)


if __name__ == "__main__":
    main()
