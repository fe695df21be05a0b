"""Run cdc and the DuckDB CLI side by side on the same files; print a table of wall time,
peak memory (PSS of the whole process tree, so forked workers are not double counted) and the
ratio to the DuckDB CLI running the nearest SQL.

    pip install -e '.[bench]'                    # the DuckDB CLI from PyPI; jq is used where installed
    python benchmarks/run.py                     # every case at 1M changes / 100k keys
    python benchmarks/run.py --changes 300000    # another size
    python benchmarks/run.py --shapes 6000000    # Parquet → Parquet at scale, several data shapes
    python benchmarks/run.py --case inspect      # only the cases whose title holds this

Each command runs ``--repeat`` times in rotation (cdc, then DuckDB, then cdc …) and the median
counts; the machine's load average is recorded before and after. The full run writes
``benchmarks/results/latest.md``.
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
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent

# -- the nearest SQL (DuckDB), as the issue gives it -------------------------------------------
JSON_IN = "read_json('{src}', format='newline_delimited')"
PARQUET_IN = "'{src}'"
SEQ = "SELECT *, row_number() OVER () AS seq FROM {input}"
LAST_PER_KEY = (
    "COPY (SELECT * EXCLUDE (op, seq, rn) FROM (SELECT *, row_number() OVER (PARTITION BY id ORDER BY seq DESC) "
    "AS rn FROM (" + SEQ + ")) WHERE rn = 1 AND op IN ('+I', '+U')) TO '{dst}' ({fmt})"
)
MULTISET = (
    "COPY (SELECT * EXCLUDE (n) FROM (SELECT * EXCLUDE (op), sum(CASE WHEN op IN ('+I', '+U') THEN 1 ELSE -1 END) "
    "AS n FROM {input} GROUP BY ALL) WHERE n > 0) TO '{dst}' ({fmt})"
)
COUNTS = (
    "SELECT count(*) FILTER (WHERE op = '+I') AS i, count(*) FILTER (WHERE op = '-U') AS ub, "
    "count(*) FILTER (WHERE op = '+U') AS ua, count(*) FILTER (WHERE op = '-D') AS d, "
    "count(DISTINCT id) AS keys FROM {input}"
)
WITHOUT_BEFORE = "COPY (SELECT * FROM {input} WHERE op <> '-U') TO '{dst}' ({fmt})"
IMAGE = "json_object('id', id, 'name', name, 'score', score, 'ratio', ratio, 'flag', flag)"
ENCODE = (
    "COPY (SELECT json_object('before', CASE WHEN op = '-D' THEN " + IMAGE + " END, 'after', CASE WHEN op <> '-D' "
    "THEN " + IMAGE + " END, 'op', CASE op WHEN '+I' THEN 'c' WHEN '+U' THEN 'u' ELSE 'd' END, 'ts_ms', "
    "1700000000000, 'transaction', NULL) FROM {input} WHERE op <> '-U') TO '{dst}' "
    "(FORMAT csv, HEADER false, QUOTE '', ESCAPE '')"
)
COPY = "COPY (SELECT * FROM {input}) TO '{dst}' ({fmt})"
GROUP_BY = (
    "COPY (SELECT id, count(*) AS n, sum(score) AS total, max(score) AS top FROM {input} GROUP BY id) "
    "TO '{dst}' ({fmt})"
)
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
DUCK_TO_CHANGELOG = (
    "COPY (SELECT CASE op WHEN '+I' THEN 'INSERT' WHEN '-U' THEN 'UPDATE_BEFORE' WHEN '+U' THEN 'UPDATE_AFTER' "
    "WHEN '-D' THEN 'DELETE' END AS op, * EXCLUDE (op) FROM '{src}') TO '{dst}' (FORMAT parquet)"
)
FORMATS = {"jsonl": "FORMAT json", "parquet": "FORMAT parquet", "csv": "FORMAT csv"}


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


def measure(cmd: list[str], stdout: Path | None = None, env: dict[str, str] | None = None) -> tuple[float, int]:
    """Wall seconds and peak tree PSS (KiB) of one run."""
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL  # noqa: SIM115 - closed below
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    peak = 0

    def sample() -> None:
        nonlocal peak
        while proc.poll() is None:
            peak = max(peak, tree_pss_kb(proc.pid))
            time.sleep(0.005)

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


@dataclass
class Run:
    tool: str
    cmd: list[str]
    stdout: Path | None = None
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Case:
    title: str
    rows: int
    runs: list[Run]
    note: str = ""


def tools() -> tuple[str, str | None, str | None]:
    cdc = str(BIN / "cdc")
    duck = shutil.which("duckdb", path=str(BIN)) or shutil.which("duckdb")
    return cdc, duck, shutil.which("jq")


def duck_run(duck: str | None, sql: str, stdout: Path | None = None) -> list[Run]:
    return [Run("duckdb", [duck, "-c", sql], stdout)] if duck else []


def state_cases(data: Path, n: int, tmp: Path) -> list[Case]:
    """The issue's table: every stateful path and JSON lines → Parquet, at ``n`` changes."""
    cdc, duck, _ = tools()
    jl, pq = data / f"changes-{n}.jsonl", data / f"changes-{n}.parquet"
    rows_jl, rows_pq = data / f"rows-{n}.jsonl", data / f"rows-{n}.parquet"
    keys = f"{n // 10:,} keys"
    out: list[Case] = []

    def both(
        title: str, args: list[str], sql: str, out_fmt: dict[str, str], inputs: tuple[Path, Path] = (jl, pq)
    ) -> None:
        for fmt, src in zip(("jsonl", "parquet"), inputs, strict=True):
            dst_fmt = out_fmt[fmt]
            label = "JSONL" if fmt == "jsonl" else ("Parquet → Parquet" if dst_fmt == "parquet" else "Parquet → JSONL")
            dst = tmp / f"cdc.{dst_fmt}"
            cmd = [cdc, args[0], str(src), *args[1:]]
            if dst_fmt != "stdout":
                cmd += ["-o", str(dst)]
            source = (JSON_IN if fmt == "jsonl" else PARQUET_IN).format(src=src)
            duck_dst = tmp / f"duck.{dst_fmt}"
            query = sql.format(input=source, dst=duck_dst, fmt=FORMATS.get(dst_fmt, ""))
            stdout = tmp / "stdout.txt" if dst_fmt == "stdout" else None
            case = Case(f"{title}, {label} ({n:,} changes, {keys})", n, [Run("cdc", cmd, stdout)])
            case.runs += duck_run(duck, query, tmp / "duck-stdout.txt" if stdout else None)
            out.append(case)

    same = {"jsonl": "jsonl", "parquet": "parquet"}
    both("materialize --key id", ["materialize", "--key", "id"], LAST_PER_KEY, same)
    both("materialize (multiset)", ["materialize"], MULTISET, same)
    both(
        "inspect --key id --json",
        ["inspect", "--key", "id", "--json"],
        COUNTS,
        {"jsonl": "stdout", "parquet": "stdout"},
    )
    both("replay --key id --emit upsert", ["replay", "--key", "id", "--emit", "upsert"], WITHOUT_BEFORE, same)
    both("debezium-encode", ["debezium-encode"], ENCODE, {"jsonl": "jsonl", "parquet": "jsonl"})
    for fmt in ("parquet",):
        dst = tmp / f"cdc.{fmt}"
        case = Case(
            f"to-changelog JSONL → {fmt.upper()} ({n:,} changes)",
            n,
            [Run("cdc", [cdc, "to-changelog", str(jl), "-o", str(dst)])],
        )
        case.runs += duck_run(
            duck, COPY.format(input=JSON_IN.format(src=jl), dst=tmp / f"duck.{fmt}", fmt=FORMATS[fmt])
        )
        out.append(case)
    agg = [
        "aggregate",
        "--input-mode",
        "append",
        "-g",
        "id",
        "-a",
        "n=COUNT(*)",
        "-a",
        "total=SUM(score)",
        "-a",
        "top=MAX(score)",
    ]
    both("aggregate COUNT(*)/SUM/MAX by id (final GROUP BY for DuckDB)", agg, GROUP_BY, same, (rows_jl, rows_pq))
    for case in out[-2:]:
        case.title = case.title.replace(f"{n:,} changes, {keys}", f"{n:,} rows, {n // 10:,} groups")
    return out


def stateless_cases(data: Path, n: int, tmp: Path) -> list[Case]:
    """The stateless conversions against DuckDB, jq and a plain orjson loop (``n`` events)."""
    cdc, duck, jq = tools()
    dbz, flat, parquet = data / f"debezium-{n}.jsonl", data / f"flat-{n}.jsonl", data / f"changelog-{n}.parquet"
    with open(flat, "rb") as fh:
        flat_rows = sum(1 for _ in fh)
    decode = Case(
        f"debezium-decode JSONL ({n:,} events)",
        n,
        [Run("cdc", [cdc, "debezium-decode", str(dbz), "-o", str(tmp / "cdc.jsonl")])],
    )
    mapping = Case(
        f"from-changelog JSONL ({flat_rows:,} rows)",
        flat_rows,
        [Run("cdc", [cdc, "from-changelog", str(flat), "-o", str(tmp / "cdc.jsonl")])],
    )
    to_pq = Case(
        f"to-changelog Parquet → Parquet ({flat_rows:,} rows)",
        flat_rows,
        [Run("cdc", [cdc, "to-changelog", str(parquet), "-o", str(tmp / "cdc.parquet")])],
    )
    decode.runs += duck_run(duck, DUCK_DECODE.format(src=dbz, dst=tmp / "duck.jsonl"))
    mapping.runs += duck_run(duck, DUCK_MAP.format(src=flat, dst=tmp / "duck.jsonl"))
    to_pq.runs += duck_run(duck, DUCK_TO_CHANGELOG.format(src=parquet, dst=tmp / "duck.parquet"))
    if jq:
        decode.runs.append(Run("jq", [jq, "-c", JQ_DECODE, str(dbz)], tmp / "jq.jsonl"))
        mapping.runs.append(Run("jq", [jq, "-c", JQ_MAP, str(flat)], tmp / "jq.jsonl"))
    return [decode, mapping, to_pq]


JQ_DECODE = (
    'if .op == "u" then ({op: "-U"} + .before), ({op: "+U"} + .after) '
    'elif .op == "d" then {op: "-D"} + .before else {op: "+I"} + .after end'
)
JQ_MAP = '{op: ({"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}[.op])} + del(.op)'


def shape_cases(data: Path, n: int, tmp: Path) -> list[Case]:
    """to-changelog Parquet → Parquet on several shapes of ``n`` rows."""
    from generate import SHAPES

    cdc, duck, _ = tools()
    out = []
    for shape, what in SHAPES.items():
        src = data / f"shape-{shape}-{n}.parquet"
        case = Case(
            f"to-changelog Parquet → Parquet, {shape} ({n:,} rows, {src.stat().st_size / 1e6:.0f} MB)",
            n,
            [Run("cdc", [cdc, "to-changelog", str(src), "-o", str(tmp / "cdc.parquet")])],
            note=what,
        )
        case.runs += duck_run(duck, DUCK_TO_CHANGELOG.format(src=src, dst=tmp / "duck.parquet"))
        out.append(case)
    return out


def start_up_cases(tmp: Path) -> list[Case]:
    """A command on a 3-line JSON-lines file and on a tiny Parquet file: start-up alone."""
    cdc, duck, _ = tools()
    small = tmp / "small.jsonl"
    small.write_text("".join(f'{{"op":"+I","id":{i},"name":"a"}}\n' for i in range(3)))
    tiny = tmp / "tiny.parquet"
    subprocess.run([cdc, "to-changelog", str(small), "-o", str(tiny)], check=True)
    cases = [
        Case(
            "start-up: from-changelog, 3-line JSONL",
            3,
            [Run("cdc", [cdc, "to-changelog", str(small)], tmp / "s.jsonl")],
        ),
        Case(
            "start-up: to-changelog, tiny Parquet → Parquet",
            3,
            [Run("cdc", [cdc, "from-changelog", str(tiny), "-o", str(tmp / "s.parquet")])],
        ),
    ]
    cases[0].runs += duck_run(duck, f"COPY (SELECT * FROM read_json('{small}')) TO '{tmp / 'd.jsonl'}' (FORMAT json)")
    cases[1].runs += duck_run(duck, f"COPY (SELECT * FROM '{tiny}') TO '{tmp / 'd.parquet'}' (FORMAT parquet)")
    return cases


def state_memory(data: Path, n: int, tmp: Path, repeat: int) -> list[str]:
    """Bytes per live key: the peak of materialize over ``n`` inserts of distinct keys, less the
    peak of the same command over the first change only (start-up, libraries), per key."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cdc, _, _ = tools()
    lines = []
    src = data / f"inserts-{n}.parquet"
    jl = data / f"inserts-{n}.jsonl"
    if not src.exists():
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
        pq.write_table(table, src)
        with open(jl, "w") as fh:
            for row in table.to_pylist():
                fh.write(
                    f'{{"op":"+I","id":{row["id"]},"name":"{row["name"]}","score":{row["score"]},'
                    f'"ratio":{row["ratio"]!r},"flag":{str(row["flag"]).lower()}}}\n'
                )
    one = tmp / "one.parquet"
    pq.write_table(pq.read_table(src).slice(0, 1), one)
    one_jl = tmp / "one.jsonl"
    one_jl.write_text(jl.open().readline())
    for label, args, env in (
        ("keyed (materialize --key id), Parquet", ["--key", "id"], {}),
        ("multiset (materialize), Parquet", [], {}),
        ("keyed, JSONL (C kernel's table)", ["--key", "id"], {}),
        ("keyed, JSONL (rows in Python, CDC_PATH=rows)", ["--key", "id"], {"CDC_PATH": "rows"}),
    ):
        # JSON lines in, JSON lines out: the kernel's table writes its rows' bytes as they are
        big, small, out = (jl, one_jl, "m.jsonl") if "JSONL" in label else (src, one, "m.parquet")
        peaks = []
        for path in (big, small):
            runs = [
                measure([cdc, "materialize", str(path), *args, "-o", str(tmp / out)], env=env) for _ in range(repeat)
            ]
            peaks.append(max(p for _, p in runs) * 1024)
        per_key = (peaks[0] - peaks[1]) / n
        lines.append(f"| {label} | {n:,} | {peaks[0] / 2**20:.0f} | {per_key:.0f} |")
        print(lines[-1], flush=True)
    return lines


def run_cases(cases: list[Case], repeat: int, only: list[str]) -> list[str]:
    lines = []
    for case in cases:
        if only and not any(c in case.title for c in only):
            continue
        results: dict[str, list[tuple[float, int]]] = {r.tool: [] for r in case.runs}
        for _ in range(repeat):
            for r in case.runs:
                results[r.tool].append(measure(r.cmd, r.stdout, r.env))
        walls = {tool: statistics.median(w for w, _ in runs) for tool, runs in results.items()}
        peaks = {tool: max(p for _, p in runs) / 1024 for tool, runs in results.items()}
        duck = walls.get("duckdb")
        cdc = walls["cdc"]
        ratio = f"{cdc / duck:.2f}" if duck else "—"
        others = ", ".join(f"{t} {w:.2f} s" for t, w in walls.items() if t not in ("cdc", "duckdb"))
        duck_text = f"{duck:.2f}" if duck else "—"
        duck_peak = f"{peaks['duckdb']:.0f}" if duck else "—"
        line = f"| {case.title} | {cdc:.2f} | {duck_text} | **{ratio}** | {peaks['cdc']:.0f} | {duck_peak} |"
        if others:
            line += f" {others} |"
        lines.append(line)
        print(line, flush=True)
    return lines


HEADER = ["| case | cdc s | DuckDB s | × DuckDB | cdc peak MB | DuckDB peak MB |", "|---|---|---|---|---|---|"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=1_000_000, help="changes (and rows) of the state cases")
    parser.add_argument("--events", type=int, default=1_000_000, help="Debezium events of the stateless cases")
    parser.add_argument("--shapes", type=int, default=0, help="rows of the Parquet → Parquet shapes (0: skip)")
    parser.add_argument("--memory", type=int, default=1_000_000, help="live keys of the state memory cases (0: skip)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--case", action="append", default=[], help="run only cases whose title contains this")
    args = parser.parse_args()
    tmp = args.data / "out"
    tmp.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))
    # Byte-compile cdc as an install would: with PYTHONDONTWRITEBYTECODE set, every run would
    # otherwise compile its modules again (~70 ms of start-up that users do not pay).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent)], check=False, capture_output=True)
    generate = [sys.executable, str(HERE / "generate.py")]
    if not (args.data / f"changes-{args.changes}.parquet").exists():
        subprocess.run([*generate, "--changes", str(args.changes), str(args.data)], check=True)
    if args.events and not (args.data / f"changelog-{args.events}.parquet").exists():
        subprocess.run([*generate, str(args.events), str(args.data)], check=True)
    if args.shapes:
        subprocess.run([*generate, "--shapes", str(args.shapes), str(args.data)], check=True)
    load = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M")
    cases = start_up_cases(tmp) + state_cases(args.data, args.changes, tmp)
    if args.events:
        cases += stateless_cases(args.data, args.events, tmp)
    if args.shapes:
        cases += shape_cases(args.data, args.shapes, tmp)
    lines = run_cases(cases, args.repeat, args.case)
    memory = state_memory(args.data, args.memory, tmp, 1) if args.memory and not args.case else []
    after = os.getloadavg()
    report = [
        f"Machine: {os.cpu_count()} cores; {started}; median of {args.repeat} runs in rotation (cdc, DuckDB, …); "
        f"load average {load[0]:.2f} before, {after[0]:.2f} after.",
        "",
        *HEADER,
        *lines,
    ]
    if memory:
        report += ["", "| state | live keys | peak MB | bytes per live key |", "|---|---|---|---|", *memory]
    text = "\n".join(report) + "\n"
    if not args.case:  # a partial run does not replace the full table
        results = HERE / "results"
        results.mkdir(exist_ok=True)
        (results / "latest.md").write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
