"""The scale run: ``materialize --key``, ``replay --key`` and ``inspect --key`` on changelogs of
1M, 10M and (opt-in) 100M keys, beside the DuckDB CLI doing the nearest SQL on the same file.

    pip install -e '.[bench]'                       # the DuckDB CLI from PyPI
    python benchmarks/scale.py --keys 1M            # generate (when missing) and run every case
    python benchmarks/scale.py --keys 1M --keys 10M --report benchmarks/results/scale.md
    python benchmarks/scale.py --keys 100M --case 'JSONL → Parquet' --repeat 1 --memory-limit 8GB

A changelog of N keys has N inserts, N/2 update pairs (-U then +U) and N/10 deletes — 2.1N rows,
the kind first, then id, name, score, ratio, flag, ts. It is written a line at a time (nothing
held in memory): step i inserts the i-th key, updates the key inserted N/4 steps before (every
other one) and deletes the key inserted N/2 steps before (every tenth, after its update); each
row's values follow from its key and version, so a -U repeats the stored row exactly. The Parquet
copy and the gzip copy are made from the JSON lines by the DuckDB CLI and gzip.

Each command runs ``--repeat`` times (3) in rotation (cdc, DuckDB, cdc, …) when its first run
took under a minute, once otherwise; the median counts. Every run is a fresh process under
``/usr/bin/time -f %M``, which gives its peak RSS (the largest of the process and the children
it waited for). The ratio is cdc's time (or memory) over DuckDB's, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
NAMES = ["alice", "bob", "carol", "dave", "éva", "o'neil", "x,y", "名前"]
T0 = 1_700_000_000_000
SIZES = {"1M": 1_000_000, "10M": 10_000_000, "100M": 100_000_000}

LAST = (
    "SELECT * EXCLUDE (op, seq) FROM (SELECT *, row_number() OVER () AS seq FROM {input}) "
    "QUALIFY row_number() OVER (PARTITION BY id ORDER BY seq DESC) = 1 AND op IN ('+I', '+U')"
)
NO_UB = "SELECT * FROM {input} WHERE op <> '-U'"
COUNTS = (
    "SELECT count(*) FILTER (op = '+I'), count(*) FILTER (op = '-U'), count(*) FILTER (op = '+U'), "
    "count(*) FILTER (op = '-D'), count(DISTINCT id) FROM {input}"
)


# -- the changelog -------------------------------------------------------------------------------
def key_of(i: int) -> int:
    """The i-th key inserted: a scramble of i (a bijection on 32 bits), so keys are not sorted."""
    return (i * 2654435761) & 0xFFFFFFFF


def image(i: int, version: int) -> bytes:
    """The row of the i-th key at a version, as compact JSON after the kind."""
    name = NAMES[(i + version) % 8]
    score = (i * 7 + version * 13) % 1000
    ratio = ((i * 31 + version * 17) % 10000) / 1000
    flag = "true" if (i + version) % 2 else "false"
    ts = T0 + 3 * i + version
    return f',"id":{key_of(i)},"name":"{name}","score":{score},"ratio":{ratio},"flag":{flag},"ts":{ts}}}\n'.encode()


def changelog(n: int):  # type: ignore[no-untyped-def]
    """Chunks of changelog lines: N inserts, N/2 update pairs, N/10 deletes, in a consistent order."""
    lag_u, lag_d = n // 4, n // 2
    out: list[bytes] = []
    for step in range(n + lag_d + 1):
        if step < n:
            out.append(b'{"op":"+I"' + image(step, 0))
        u = step - lag_u
        if 0 <= u < n and u % 2 == 0:
            out.append(b'{"op":"-U"' + image(u, 0))
            out.append(b'{"op":"+U"' + image(u, 1))
        d = step - lag_d
        if 0 <= d < n and d % 10 == 0:
            out.append(b'{"op":"-D"' + image(d, 1))
        if len(out) >= 65536:
            yield b"".join(out)
            out.clear()
    yield b"".join(out)


def generate(n: int, data: Path, duck: str) -> None:
    data.mkdir(parents=True, exist_ok=True)
    jl, pq, gz = (data / f"scale-{n}.{ext}" for ext in ("jsonl", "parquet", "jsonl.gz"))
    if not jl.exists():
        start = time.perf_counter()
        tmp = jl.with_suffix(".part")
        with open(tmp, "wb") as out:
            for chunk in changelog(n):
                out.write(chunk)
        tmp.rename(jl)
        print(f"wrote {jl} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    if not pq.exists():
        tmp = pq.with_suffix(".part")
        sql = (
            f"SET preserve_insertion_order = true; COPY (SELECT * FROM read_json('{jl}', format='newline_delimited', "
            "columns={op: 'VARCHAR', id: 'BIGINT', name: 'VARCHAR', score: 'BIGINT', ratio: 'DOUBLE', "
            f"flag: 'BOOLEAN', ts: 'BIGINT'}})) TO '{tmp}' (FORMAT parquet)"
        )
        subprocess.run([duck, "-c", sql], check=True)
        tmp.rename(pq)
    if not gz.exists():
        tmp = gz.with_suffix(".part")
        with open(jl, "rb") as src, open(tmp, "wb") as out:
            subprocess.run(["gzip", "-1", "-c"], stdin=src, stdout=out, check=True)
        tmp.rename(gz)


# -- runs ----------------------------------------------------------------------------------------
@dataclass
class Run:
    tool: str
    cmd: list[str]
    stdin: Path | None = None
    times: list[float] = field(default_factory=list)
    peaks: list[int] = field(default_factory=list)  # KiB

    def once(self) -> None:
        src = open(self.stdin, "rb") if self.stdin else subprocess.DEVNULL  # noqa: SIM115 - closed below
        try:
            start = time.perf_counter()
            proc = subprocess.run(
                ["/usr/bin/time", "-f", "%M", *self.cmd], stdin=src, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, check=False,
            )  # fmt: skip
            wall = time.perf_counter() - start
        finally:
            if self.stdin:
                src.close()  # type: ignore[union-attr]
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        if proc.returncode != 0:
            raise SystemExit(f"failed: {' '.join(self.cmd)}\n" + "\n".join(err[-20:]))
        self.times.append(wall)
        self.peaks.append(int(err[-1]))

    @property
    def time(self) -> float:
        return statistics.median(self.times)

    @property
    def peak(self) -> int:
        return max(self.peaks)


@dataclass
class Case:
    title: str
    runs: list[Run]


def cases(n: int, data: Path, tmp: Path, extra: list[str]) -> list[Case]:
    cdc, duck = str(BIN / "cdc"), duck_cli()
    jl, pq, gz = (data / f"scale-{n}.{ext}" for ext in ("jsonl", "parquet", "jsonl.gz"))
    jin, pin = f"read_json('{jl}', format='newline_delimited')", f"'{pq}'"
    gzin = f"read_json('{gz}', format='newline_delimited', compression='gzip')"
    size = f"{n // 1_000_000}M keys"

    def duck_copy(query: str, src: str, dst: str) -> Run:
        fmt = "parquet" if dst.endswith(".parquet") else "json"
        return Run("duckdb", [duck, "-c", f"COPY ({query.format(input=src)}) TO '{tmp / dst}' (FORMAT {fmt})"])

    def duck_select(query: str, src: str) -> Run:
        return Run("duckdb", [duck, "-c", query.format(input=src)])

    mat = ["materialize", "--key", "id", *extra]
    out = [
        Case(f"materialize --key id, JSONL → Parquet ({size})",
             [Run("cdc", [cdc, *mat, str(jl), "-o", str(tmp / "cdc.parquet")]), duck_copy(LAST, jin, "duck.parquet")]),
        Case(f"materialize --key id, Parquet → Parquet ({size})",
             [Run("cdc", [cdc, *mat, str(pq), "-o", str(tmp / "cdc.parquet")]), duck_copy(LAST, pin, "duck.parquet")]),
        Case(f"materialize --key id, JSONL → JSONL ({size})",
             [Run("cdc", [cdc, *mat, str(jl), "-o", str(tmp / "cdc.jsonl")]), duck_copy(LAST, jin, "duck.jsonl")]),
        Case(f"materialize --key id, JSONL on stdin → JSONL ({size})",
             [Run("cdc", [cdc, *mat, "-o", str(tmp / "cdc.jsonl")], stdin=jl), duck_copy(LAST, jin, "duck.jsonl")]),
        Case(f"materialize --key id, gzip JSONL on stdin → JSONL ({size})",
             [Run("cdc", [cdc, *mat, "-o", str(tmp / "cdc.jsonl")], stdin=gz), duck_copy(LAST, gzin, "duck.jsonl")]),
        Case(f"replay --key id, JSONL → JSONL ({size})",
             [Run("cdc", [cdc, "replay", "--key", "id", *extra, str(jl), "-o", str(tmp / "cdc.jsonl")]),
              duck_copy(NO_UB, jin, "duck.jsonl")]),
        Case(f"inspect --key id --json, JSONL ({size})",
             [Run("cdc", [cdc, "inspect", "--key", "id", "--json", *extra, str(jl)]), duck_select(COUNTS, jin)]),
    ]  # fmt: skip
    return out


def duck_cli() -> str:
    duck = shutil.which("duckdb", path=str(BIN)) or shutil.which("duckdb")
    if duck is None:
        raise SystemExit("the DuckDB CLI is missing: pip install -e '.[bench]'")
    return duck


def measure(case: Case, repeat: int) -> None:
    for run in case.runs:
        run.once()
    if max(r.times[0] for r in case.runs) < 60:
        for _ in range(repeat - 1):
            for run in case.runs:
                run.once()


def fmt_peak(kib: int) -> str:
    return f"{kib / 1024 / 1024:.2f} GB" if kib >= 1024 * 1024 else f"{kib / 1024:.0f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", action="append", choices=sorted(SIZES), help="1M, 10M or 100M (repeatable)")
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--tmp", type=Path, default=None, help="where outputs go (default: a folder in --data)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--case", action="append", default=[], help="only the cases whose title holds this")
    parser.add_argument("--memory-limit", default=None, help="passed to cdc's --memory-limit")
    parser.add_argument("--report", type=Path, default=HERE / "results" / "scale.md")
    args = parser.parse_args()
    duck = duck_cli()
    tmp = args.tmp or args.data / "scale-out"
    tmp.mkdir(parents=True, exist_ok=True)
    extra = ["--memory-limit", args.memory_limit] if args.memory_limit else []
    load = os.getloadavg()
    rows: list[str] = []
    for size in args.keys or ["1M"]:
        n = SIZES[size]
        generate(n, args.data, duck)
        for case in cases(n, args.data, tmp, extra):
            if args.case and not any(c in case.title for c in args.case):
                continue
            measure(case, args.repeat)
            cdc, peer = case.runs
            row = (
                f"| {case.title} | {cdc.time:.2f} s | {fmt_peak(cdc.peak)} | {peer.time:.2f} s | "
                f"{fmt_peak(peer.peak)} | {cdc.time / peer.time:.2f}× | {cdc.peak / peer.peak:.2f}× |"
            )
            print(row, flush=True)
            rows.append(row)
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    machine = f"{platform.machine()}, {os.cpu_count()} cores, {ram:.0f} GB"
    version = subprocess.run([duck, "--version"], capture_output=True, text=True).stdout.strip()
    text = "\n".join([
        "# Scale: cdc beside the DuckDB CLI",
        "",
        f"`python benchmarks/scale.py {' '.join(sys.argv[1:])}` — {machine}; DuckDB {version}; "
        f"load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after. Median of {args.repeat} "
        "where a run is under a minute; peak RSS by `/usr/bin/time -f %M`.",
        "",
        "| case | cdc | cdc peak | DuckDB | DuckDB peak | time ratio | memory ratio |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ])  # fmt: skip
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(text)
    print(f"wrote {args.report}", file=sys.stderr)


if __name__ == "__main__":
    main()
