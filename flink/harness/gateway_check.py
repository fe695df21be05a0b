"""Every case of flink/harness/cases.py run both ways: cdc locally, and `cdc … --on-flink URL` on a running
Flink 2.3 cluster (flink/harness/cluster.sh up) at parallelism 1 and 4; the two outputs compared table for
table (in order at parallelism 1; at 4 in order, else per key, else as a multiset, as the detail
says). Writes flink/harness/gateway-results.md.

    flink/harness/cluster.sh up
    .venv/bin/python flink/harness/gateway_check.py [--only COMMAND|INPUT] [--parallelism N] [--part K/N]

Runs with cdc's own environment (no PyFlink): the cluster is reached only through --on-flink. Cases
that write to a sink (--sql-sink) or read Kafka are not run here (the rows stay on the cluster's
side); flink/harness/flink_check.py runs those in PyFlink's mini-cluster.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import Case, all_cases  # noqa: E402
from flink_check import (  # noqa: E402
    REPO,
    Result,
    Rows,
    _cell,
    compare,
    first_line,
    multiset,
    net,
    refusals,
    run_cdc,
    summary,
)  # noqa: E402

WORK = HERE / ".work"
URL = "http://127.0.0.1:8083"


def probes(work: Path) -> list[Case]:
    """Inputs written here for issue #28's classes: a value past any sampling window, a column null
    at first, CSV sums, a stale before image, upsert rows with deletes."""
    work.mkdir(parents=True, exist_ok=True)

    def jsonl(name: str, rows: list[dict[str, object]]) -> Path:
        path = work / name
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path

    late = jsonl(
        "late-fraction.jsonl",
        [{"op": "INSERT", "id": i, "price": i} for i in range(3000)] + [{"op": "INSERT", "id": 3000, "price": 19.99}],
    )
    nulls = jsonl(
        "null-first.jsonl",
        [{"op": "+I", "id": i, "note": None} for i in range(500)] + [{"op": "+I", "id": 500, "note": "late"}],
    )
    sales = work / "sales.csv"
    sales.write_text("cat,price,qty\n" + "a,5,2\n" * 150 + "b,19.99,3\na,1.50,\n")
    stale = jsonl(
        "stale-before.jsonl",
        [
            {"before": None, "after": {"id": 1, "v": "a"}, "op": "c", "ts_ms": 1},
            {"before": {"id": 1, "v": "STALE"}, "after": {"id": 1, "v": "b"}, "op": "u", "ts_ms": 2},
            {"before": {"id": 1, "v": "OLD"}, "after": None, "op": "d", "ts_ms": 3},
        ],
    )
    g = "probes"
    return [
        Case(g, "late-fraction.jsonl", "from-changelog", [late]),
        Case(g, "null-first.jsonl", "materialize", [nulls], output="table"),
        Case(
            g,
            "sales.csv",
            "aggregate",
            [sales],
            [
                "--input-mode",
                "append",
                "-g",
                "cat",
                "-a",
                "total=SUM(price)",
                "-a",
                "n=SUM(qty)",
                "-a",
                "mean=AVG(price)",
                "-a",
                "top=MAX(price)",
            ],
            keys=["cat"],
        ),
        Case(
            g,
            "stale-before.jsonl",
            "decode",
            [stale],
            ["--key", "id"],
            keys=["id"],
            note="the -U is the stored row, a no-op update kept: in cdc and in the script (ChangelogNormalize)",
        ),
        Case(
            g,
            "customers.jsonl",
            "materialize",
            [HERE.parent.parent / "samples" / "customers.jsonl"],
            ["--key", "id"],
            output="table",
            keys=["id"],
        ),
    ]


def rows_of(case: Case, stdout: bytes) -> Rows:
    out: Rows = []
    for line in stdout.decode().splitlines():
        if not line.strip():
            continue
        row = json.loads(line, parse_float=Decimal)
        if case.output == "changelog" and isinstance(row, dict) and "op" in row:
            out.append((str(row.pop("op")), row))
        else:
            out.append(("+I", row))
    return out


def check(case: Case, url: str, parallelisms: Sequence[int]) -> list[Result]:
    t = time.monotonic()
    local = run_cdc([*case.argv(), "-f", "jsonl"])
    results = []
    for p in parallelisms:
        t = time.monotonic()
        remote = run_cdc([*case.argv(), "-f", "jsonl", "--on-flink", f"{url}?parallelism.default={p}"])
        seconds = time.monotonic() - t
        if remote.returncode == 2 and local.returncode != 2:
            results.append(Result(case, None, "refused", first_line(remote.stderr), seconds))
            break
        if local.returncode != 0 or remote.returncode != 0:
            if local.returncode != 0 and remote.returncode != 0:
                detail = f"both fail: cdc «{first_line(local.stderr)}», flink «{first_line(remote.stderr)}»"
                results.append(Result(case, p, "match", detail, seconds))
            else:
                side = first_line(remote.stderr if remote.returncode else local.stderr)
                detail = f"exit cdc {local.returncode}, --on-flink {remote.returncode}: {side}"
                results.append(Result(case, p, "FAIL", detail, seconds))
            continue
        want, got = rows_of(case, local.stdout), rows_of(case, remote.stdout)
        ok, detail = compare(case, want, got, p)
        if not ok and p > 1 and case.keys and case.output == "changelog":
            # Keyed state in front of a GROUP BY (upsert rows normalized by key): at parallelism > 1
            # the keys reach the aggregate interleaved otherwise, so its update log differs; the
            # table it describes must not.
            w, g = net(want, case.keys), net(got, case.keys)
            if multiset(w) == multiset(g):
                ok = True
                detail = (
                    f"the same table by {','.join(case.keys)} ({len(w)} rows); the update log differs at "
                    f"parallelism {p} (cdc {len(want)} changes, flink {len(got)}: keys interleave otherwise)"
                )
        results.append(Result(case, p, "match" if ok else "FAIL", detail, seconds))
    return results


def report(results: list[Result], seconds: float, parallelisms: Sequence[int], skipped: int) -> str:
    counts = Counter(r.status for r in results)
    ncases = len({id(r.case) for r in results})
    lines = [
        "# Gateway check: `cdc … --on-flink` on a Flink 2.3 cluster against cdc's local run",
        "",
        f"A standalone Flink 2.3.0 cluster from PyFlink's wheel (`flink/harness/cluster.sh up`: a JobManager, one "
        f"TaskManager with 4 slots, the SQL Gateway, on loopback); parallelism {' and '.join(map(str, parallelisms))} "
        f"(`--on-flink 'http://127.0.0.1:8083?parallelism.default=N'`). {ncases} cases, {len(results)} results: "
        f"{counts['match']} runs match, {counts['refused']} cases refused (exit 2, with the reason), "
        f"{counts['FAIL']} failed; {skipped} sink/Kafka cases not run here. Wall time {seconds:.0f} s.",
        "",
        "Reproduce: `bash flink/harness/setup.sh && flink/harness/cluster.sh up && "
        ".venv/bin/python flink/harness/gateway_check.py`.",
        "",
        "## By command",
        "",
        *summary(results, parallelisms),
        "",
        "## Refusals by reason",
        "",
        *refusals(results),
        "",
        "## Every case",
        "",
        "| input | command line | parallelism | result | seconds | detail |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        c = r.case
        shown = [c.command, *(f"'{f}'" if (not f or " " in f) else f for f in c.flags)]
        p = "-" if r.parallelism is None else str(r.parallelism)
        detail = _cell(r.detail.replace(str(REPO) + "/", "")) + (f" ({_cell(c.note)})" if c.note else "")
        lines.append(
            f"| {_cell(c.label)} | `{_cell(' '.join(shown))}` | {p} | {r.status} | {r.seconds:.1f} | {detail} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--url", default=URL)
    ap.add_argument("--parallelism", type=int, action="append", help="default: 1 and 4")
    ap.add_argument("--only", action="append", default=[], help="cases whose command is this, or whose input has it")
    ap.add_argument("--part", help="K/N: every N-th case from the K-th")
    ap.add_argument("--output", default=str(HERE / "gateway-results.md"))
    args = ap.parse_args(argv)
    parallelisms = args.parallelism or [1, 4]
    WORK.mkdir(exist_ok=True)
    cases = all_cases(WORK) + probes(WORK / "probes")
    runnable = [c for c in cases if not c.sql_flags and c.kafka is None and c.output != "events"]
    skipped = len(cases) - len(runnable)
    if args.only:
        runnable = [c for c in runnable if any(o == c.command or o in c.label for o in args.only)]
    if args.part:
        k, n = map(int, args.part.split("/"))
        runnable = [c for i, c in enumerate(runnable) if i % n == k - 1]
    start = time.monotonic()
    results: list[Result] = []
    for case in runnable:
        for r in check(case, args.url, parallelisms):
            results.append(r)
            p = "-" if r.parallelism is None else r.parallelism
            line = f"{r.status:7} p={p} {r.seconds:5.1f}s {case.command} {case.label} {' '.join(case.flags)}"
            print(f"{line}: {r.detail[:160]}", flush=True)
    seconds = time.monotonic() - start
    Path(args.output).write_text(report(results, seconds, parallelisms, skipped))
    counts = Counter(r.status for r in results)
    print(f"{counts['match']} match, {counts['refused']} refused, {counts['FAIL']} failed in {seconds:.0f} s")
    return 0 if counts["FAIL"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
