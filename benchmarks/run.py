"""Run cdc and the DuckDB CLI side by side on the same files; print a table of wall time,
peak memory (PSS of the whole process tree, so forked workers are not double counted) and the
ratio to the DuckDB CLI running the nearest SQL.

    pip install -e '.[bench]'                    # the DuckDB CLI from PyPI; jq is used where installed
    python benchmarks/run.py                     # every case at 1M changes / 100k keys, 1M events
    python benchmarks/run.py --changes 300000 --events 300000   # another size
    python benchmarks/run.py --shapes 6000000    # also Parquet → Parquet at scale, several data shapes
    python benchmarks/run.py --case replay       # only the cases whose title holds this (repeatable)
    python benchmarks/run.py --changes 20000 --events 20000 --memory 0 --repeat 1 \
        --data /tmp/bench-small --report /tmp/bench-small.md   # a quick check that every case runs
    python benchmarks/run.py --paths --report benchmarks/results/paths.md   # each case on every path

The cases: start-up; every stateful path on the changelog (``--changes``: materialize with a key,
with --dedup and as a multiset; inspect with a key, with -t ts and as a multiset; replay --emit
upsert, retract, --order-by ts and --since/--until --net; debezium-encode; to-changelog; aggregate
over plain rows and over the changelog), the issue's ones on JSON lines and on Parquet, the others
on JSON lines; the stateless conversions (``--events``: debezium-decode, from-changelog,
to-changelog) also against jq; Parquet shapes (``--shapes``); and the bytes per live key of the
state (``--memory``). The envelope decoders (``decode --envelope canal|maxwell|ogg``) have a table
of their own: their ratio is to cdc's debezium-decode on the same rows (target: ≤ 1.5×), not to
DuckDB. Inputs are written by ``benchmarks/generate.py`` into ``--data`` when missing.

Each command runs ``--repeat`` times in rotation (cdc, then DuckDB, then cdc …) and the median
counts — timed without sampling its memory; one more run of each samples the peak PSS; a command
that exits non-zero stops the run with its error. The machine's load average is recorded before and
after. A full run (no ``--case``) writes its table to ``--report``, by default
``benchmarks/results/latest.md``: give a small run another path.

``--paths``: what each engine path earns. Every cdc command of the cases above runs on every
path that takes its job (``CDC_PATH=NAME``, in the planner's order: the first is the one it
chooses), in rotation, timed by wall clock and by CPU time (user + system of the process and its
workers; under load the steadier of the two, but a path that works on both cores spends more of
it). Each path's time is set against the next path the planner would choose if it were gone.
"""

from __future__ import annotations

import argparse
import os
import resource
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
IMAGE = "json_object('id', id, 'name', name, 'score', score, 'ratio', ratio, 'flag', flag, 'ts', ts)"
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
# the state engine's other paths over JSON lines
TO_JSON = "COPY ({query}) TO '{dst}' (FORMAT json)"
LAST_PER_KEY_QUALIFY = (
    "SELECT * EXCLUDE (op, seq) FROM (SELECT *, row_number() OVER () AS seq FROM {input}) "
    "QUALIFY row_number() OVER (PARTITION BY id ORDER BY seq DESC) = 1 AND op IN ('+I', '+U')"
)
COUNTS_BY_KIND = (
    "SELECT count(*) FILTER (op = '+I'), count(*) FILTER (op = '-U'), count(*) FILTER (op = '+U'), "
    "count(*) FILTER (op = '-D'), count(DISTINCT id){extra} FROM {input}"
)
NO_UB = "SELECT * FROM {input} WHERE op <> '-U'"
RETRACT_GROUP_BY = (
    "SELECT id, sum(s) AS n, sum(s * score) AS total, max(score) AS hi, min(score) AS lo, "
    "sum(s * score) / sum(s) AS mean FROM "
    "(SELECT *, CASE WHEN op IN ('+I', '+U') THEN 1 ELSE -1 END AS s FROM {input}) GROUP BY id HAVING sum(s) > 0"
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


def measure(
    cmd: list[str], stdout: Path | None = None, env: dict[str, str] | None = None, sampled: bool = True
) -> tuple[float, int]:
    """Wall seconds and peak tree PSS (KiB) of one run (``sampled=False``: the time alone — reading
    /proc/*/smaps_rollup every 5 ms slows a process that maps much memory: 0.69 s → 0.88 s measured
    for a 400 MB aggregate, while a 50 MB DuckDB barely notices)."""
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL  # noqa: SIM115 - closed below
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    peak = 0

    def sample() -> None:
        nonlocal peak
        while sampled and proc.poll() is None:
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


def measure_cpu(cmd: list[str], stdout: Path | None = None, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the process and the workers it waited for) of
    one run; ``(0, 0)`` with the reason on stderr when the path does not take the job (exit 2)."""
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL  # noqa: SIM115 - closed below
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if stdout:
        out.close()  # type: ignore[union-attr]
    if proc.returncode == 2 and b"does not take this job" in proc.stderr:
        return 0.0, 0.0
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.decode()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_paths(cases: list[Case], repeat: int, only: list[str]) -> list[str]:
    """Each case's cdc command on every path that takes it (see the module's doc)."""
    from cdc.engine.plan import PATHS

    lines = []
    for case in cases:
        if only and not any(c in case.title for c in only):
            continue
        cdc = next(r for r in case.runs if r.tool == "cdc")
        taken = [p for p in PATHS if measure_cpu(cdc.cmd, cdc.stdout, {**cdc.env, "CDC_PATH": p}) != (0.0, 0.0)]
        timings: dict[str, list[tuple[float, float]]] = {p: [] for p in taken}
        for _ in range(repeat):  # in rotation
            for p in taken:
                timings[p].append(measure_cpu(cdc.cmd, cdc.stdout, {**cdc.env, "CDC_PATH": p}))
        wall = {p: statistics.median(w for w, _ in runs) for p, runs in timings.items()}
        cpu = {p: statistics.median(c for _, c in runs) for p, runs in timings.items()}
        for i, p in enumerate(taken):
            following = taken[i + 1] if i + 1 < len(taken) else None
            against = (
                f"{following} | {wall[following] / wall[p]:.2f} | {cpu[following] / cpu[p]:.2f}"
                if following
                else "— | — | —"
            )
            chosen = " (chosen)" if i == 0 else ""
            line = f"| {case.title} | {p}{chosen} | {wall[p]:.2f} | {cpu[p]:.2f} | {against} |"
            lines.append(line)
            print(line, flush=True)
    return lines


PATHS_HEADER = [
    "| case | path | wall s | CPU s | next path | its wall ÷ this | its CPU ÷ this |",
    "|---|---|---|---|---|---|---|",
]


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
    peer: str = "duckdb"  # the run whose time the ratio divides by


def tools() -> tuple[str, str | None, str | None]:
    cdc = str(BIN / "cdc")
    duck = shutil.which("duckdb", path=str(BIN)) or shutil.which("duckdb")
    return cdc, duck, shutil.which("jq")


def duck_run(duck: str | None, sql: str, stdout: Path | None = None) -> list[Run]:
    return [Run("duckdb", [duck, "-c", sql], stdout)] if duck else []


def state_cases(data: Path, n: int, tmp: Path) -> list[Case]:
    """The issue's table: every stateful path and JSON lines → Parquet, at ``n`` changes; the
    paths beyond the issue's (--dedup, -t, retract, --order-by, --since/--until, a retracting
    aggregate) on JSON lines only."""
    from generate import T0

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

    def jsonl(title: str, args: list[str], query: str, report: bool = False) -> None:
        """A case on the JSON-lines changelog only; DuckDB runs ``query`` (a SELECT) on it."""
        cmd = [cdc, args[0], str(jl), *args[1:]]
        query = query.format(input=JSON_IN.format(src=jl), extra="")
        if report:  # both print a report: to the same file
            case = Case(f"{title}, JSONL ({n:,} changes, {keys})", n, [Run("cdc", cmd, tmp / "report.json")])
            case.runs += duck_run(duck, query, tmp / "report.json")
        else:
            case = Case(
                f"{title}, JSONL ({n:,} changes, {keys})", n, [Run("cdc", [*cmd, "-o", str(tmp / "cdc.jsonl")])]
            )
            case.runs += duck_run(duck, TO_JSON.format(query=query, dst=tmp / "duck.jsonl"))
        out.append(case)

    same = {"jsonl": "jsonl", "parquet": "parquet"}
    both("materialize --key id", ["materialize", "--key", "id"], LAST_PER_KEY, same)
    both("materialize (multiset)", ["materialize"], MULTISET, same)
    jsonl("materialize --key id --dedup", ["materialize", "--key", "id", "--dedup"], LAST_PER_KEY_QUALIFY)
    both(
        "inspect --key id --json",
        ["inspect", "--key", "id", "--json"],
        COUNTS,
        {"jsonl": "stdout", "parquet": "stdout"},
    )
    jsonl(
        "inspect --key id -t ts --json",
        ["inspect", "--key", "id", "-t", "ts", "--json"],
        COUNTS_BY_KIND.replace("{extra}", ", min(ts), max(ts)"),
        report=True,
    )
    jsonl("inspect (multiset) --json", ["inspect", "--json"], COUNTS_BY_KIND, report=True)
    both("replay --key id --emit upsert", ["replay", "--key", "id", "--emit", "upsert"], WITHOUT_BEFORE, same)
    jsonl("replay --key id (retract)", ["replay", "--key", "id"], NO_UB)
    jsonl("replay --key id --order-by ts", ["replay", "--key", "id", "--order-by", "ts"], NO_UB)
    since, until = T0 + n // 4, T0 + n // 2
    window = ["-t", "ts", "--since", str(since), "--until", str(until), "--net"]
    jsonl("replay --key id --since/--until --net", ["replay", "--key", "id", *window], LAST_PER_KEY_QUALIFY)
    both("debezium-encode", ["debezium-encode"], ENCODE, {"jsonl": "jsonl", "parquet": "jsonl"})
    # JSON lines in, Parquet out of a keyed table: the winning rows' texts parsed once (texts_parquet)
    case = Case(
        f"materialize --key id, JSONL → Parquet ({n:,} changes, {keys})",
        n,
        [Run("cdc", [cdc, "materialize", str(jl), "--key", "id", "-o", str(tmp / "cdc.parquet")])],
    )
    case.runs += duck_run(
        duck, LAST_PER_KEY.format(input=JSON_IN.format(src=jl), dst=tmp / "duck.parquet", fmt=FORMATS["parquet"])
    )
    out.append(case)
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
    retract_agg = ["aggregate", "-g", "id", "-a", "n=COUNT(*)", "-a", "total=SUM(score)", "-a", "hi=MAX(score)",
                   "-a", "lo=MIN(score)", "-a", "mean=AVG(score)"]  # fmt: skip
    jsonl("aggregate COUNT(*)/SUM/MAX/MIN/AVG by id over the changelog (retracting)", retract_agg, RETRACT_GROUP_BY)
    return out


def envelope_cases(data: Path, n: int, tmp: Path) -> list[Case]:
    """decode --envelope canal|maxwell|ogg against debezium-decode on the same ``n`` events' rows
    (the target: within 1.5× of debezium-decode); the ratio is to debezium-decode, not DuckDB."""
    cdc, _, _ = tools()
    dbz = Run(
        "debezium-decode", [cdc, "debezium-decode", str(data / f"debezium-{n}.jsonl"), "-o", str(tmp / "dbz.jsonl")]
    )
    return [
        Case(
            f"decode --envelope {name} vs debezium-decode, JSONL ({n:,} events)",
            n,
            [
                Run(
                    "cdc",
                    [cdc, "decode", "--envelope", name, str(data / f"{name}-{n}.jsonl"), "-o", str(tmp / "cdc.jsonl")],
                ),
                dbz,
            ],
            peer="debezium-decode",
        )
        for name in ("canal", "maxwell", "ogg")
    ] + avro_cases(data, n, tmp, dbz)


def avro_cases(data: Path, n: int, tmp: Path, dbz: Run) -> list[Case]:
    """debezium-decode of the same ``n`` events in Avro (a container file; length-prefixed
    wire-format messages with --schemas DIR), made once by cdc's own encoder, against the JSONL."""
    cdc, _, _ = tools()
    container, framed, schemas = data / f"debezium-{n}.avro", data / f"debezium-{n}.wire.bin", data / f"schemas-{n}"
    if not container.exists() or not framed.exists():
        schemas.mkdir(exist_ok=True)
        changelog = subprocess.run(
            [cdc, "debezium-decode", str(data / f"debezium-{n}.jsonl")], capture_output=True, check=True
        ).stdout
        for fmt, out, extra in (("avro", container, []), ("avro-confluent", framed, ["--schemas", str(schemas)])):
            encode = [cdc, "debezium-encode", "--format", fmt, *extra, "-o", str(out)]
            subprocess.run(encode, input=changelog, capture_output=True, check=True)
    runs = {
        "an Avro container file": [str(container)],
        "Avro wire-format messages": [str(framed), "--schemas", str(schemas)],
    }
    return [
        Case(
            f"debezium-decode, {what} vs JSONL ({n:,} events)",
            n,
            [Run("cdc", [cdc, "debezium-decode", *args, "-o", str(tmp / "avro.jsonl")]), dbz],
            peer="debezium-decode",
        )
        for what, args in runs.items()
    ]


def stateless_cases(data: Path, n: int, tmp: Path) -> list[Case]:
    """The stateless conversions against DuckDB and jq (``n`` events)."""
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
    import pyarrow.parquet as pq

    cdc, _, _ = tools()
    lines = []
    src = data / f"inserts-{n}.parquet"
    jl = data / f"inserts-{n}.jsonl"
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


def generate_inputs(data: Path, changes: int, events: int, shapes: int, memory: int) -> None:
    """Write (in a child process, so this one stays small) the inputs a case lacks. Files written
    before the rows had a ``ts`` column are written again."""
    import generate

    def run(mode: str, n: int, names: list[str], first: str | None = None) -> None:
        paths = [data / name for name in names]
        stale = False
        if first is not None and (data / first).exists():
            with open(data / first, "rb") as fh:
                stale = b'"ts":' not in fh.readline()
        if stale or not all(p.exists() for p in paths):
            subprocess.run([sys.executable, str(HERE / "generate.py"), f"--{mode}", str(n), str(data)], check=True)

    run("changes", changes, generate.change_files(changes), f"changes-{changes}.jsonl")
    if events:
        run("events", events, generate.event_files(events), f"debezium-{events}.jsonl")
    if shapes:
        run("shapes", shapes, [f"shape-{shape}-{shapes}.parquet" for shape in generate.SHAPES])
    if memory:
        run("inserts", memory, generate.insert_files(memory))


def run_cases(cases: list[Case], repeat: int, only: list[str]) -> list[str]:
    lines = []
    for case in cases:
        if only and not any(c in case.title for c in only):
            continue
        results: dict[str, list[tuple[float, int]]] = {r.tool: [] for r in case.runs}
        for _ in range(repeat):  # timed runs, in rotation
            for r in case.runs:
                results[r.tool].append(measure(r.cmd, r.stdout, r.env, sampled=False))
        walls = {tool: statistics.median(w for w, _ in runs) for tool, runs in results.items()}
        peaks = {r.tool: measure(r.cmd, r.stdout, r.env)[1] / 1024 for r in case.runs}  # one sampled run each
        duck = walls.get(case.peer)
        cdc = walls["cdc"]
        ratio = f"{cdc / duck:.2f}" if duck else "—"
        others = ", ".join(f"{t} {w:.2f} s" for t, w in walls.items() if t not in ("cdc", case.peer))
        duck_text = f"{duck:.2f}" if duck else "—"
        duck_peak = f"{peaks[case.peer]:.0f}" if duck else "—"
        line = f"| {case.title} | {cdc:.2f} | {duck_text} | **{ratio}** | {peaks['cdc']:.0f} | {duck_peak} |"
        if others:
            line += f" {others} |"
        lines.append(line)
        print(line, flush=True)
    return lines


HEADER = ["| case | cdc s | DuckDB s | × DuckDB | cdc peak MB | DuckDB peak MB |", "|---|---|---|---|---|---|"]
ENVELOPE_HEADER = [
    "Envelope decoders against cdc's own debezium-decode on the same rows (not DuckDB); target: ≤ 1.5×.",
    "",
    "| case | decode s | debezium-decode s | × debezium-decode | decode peak MB | debezium-decode peak MB |",
    "|---|---|---|---|---|---|",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=1_000_000, help="changes (and rows) of the state cases")
    parser.add_argument("--events", type=int, default=1_000_000, help="Debezium events of the stateless cases")
    parser.add_argument("--shapes", type=int, default=0, help="rows of the Parquet → Parquet shapes (0: skip)")
    parser.add_argument("--memory", type=int, default=1_000_000, help="live keys of the state memory cases (0: skip)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--case", action="append", default=[], help="run only cases whose title contains this")
    parser.add_argument("--paths", action="store_true", help="each cdc command on every path that takes it")
    parser.add_argument(
        "--report", type=Path, default=HERE / "results" / "latest.md", help="where a full run writes its table"
    )
    args = parser.parse_args()
    tmp = args.data / "out"
    tmp.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))
    # Byte-compile cdc as an install would: with PYTHONDONTWRITEBYTECODE set, every run would
    # otherwise compile its modules again (~70 ms of start-up that users do not pay).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent)], check=False, capture_output=True)
    memory = args.memory if not args.case and not args.paths else 0  # a partial run skips the state memory cases
    generate_inputs(args.data, args.changes, args.events, args.shapes, memory)
    load = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M")
    cases = start_up_cases(tmp) + state_cases(args.data, args.changes, tmp)
    if args.events:
        cases += stateless_cases(args.data, args.events, tmp)
    if args.shapes:
        cases += shape_cases(args.data, args.shapes, tmp)
    if args.paths:
        if args.events:
            cases += envelope_cases(args.data, args.events, tmp)
        run_path_report(args, cases, load, started)
        return
    lines = run_cases(cases, args.repeat, args.case)
    envelope_lines = (
        run_cases(envelope_cases(args.data, args.events, tmp), args.repeat, args.case) if args.events else []
    )
    memory_lines = state_memory(args.data, memory, tmp, 1) if memory else []
    after = os.getloadavg()
    report = [
        f"Machine: {os.cpu_count()} cores; {started}; median of {args.repeat} unsampled runs in rotation "
        "(cdc, DuckDB, …), peak memory from one more run each; "
        f"load average {load[0]:.2f} before, {after[0]:.2f} after.",
        "",
        *HEADER,
        *lines,
    ]
    if envelope_lines:
        report += ["", *ENVELOPE_HEADER, *envelope_lines]
    if memory_lines:
        report += ["", "| state | live keys | peak MB | bytes per live key |", "|---|---|---|---|", *memory_lines]
    text = "\n".join(report) + "\n"
    if not args.case:  # a partial run does not replace the full table
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(text)
    print("\n" + text)


def run_path_report(args: argparse.Namespace, cases: list[Case], load: tuple[float, ...], started: str) -> None:
    lines = run_paths(cases, args.repeat, args.case)
    after = os.getloadavg()
    text = "\n".join(
        [
            f"Machine: {os.cpu_count()} cores; {started}; every path that takes each case's job (CDC_PATH), median of "
            f"{args.repeat} runs in rotation; load average {load[0]:.2f} before, {after[0]:.2f} after.",
            "",
            *PATHS_HEADER,
            *lines,
        ]
    )
    if args.report != HERE / "results" / "latest.md":  # the paths' table never replaces the main one
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(text + "\n")
    print("\n" + text)


if __name__ == "__main__":
    main()
