"""The proof of ``--print-sql``: run every printed script in Flink 2.3 and hold its rows against cdc's.

    bash flink/harness/setup.sh                                   # once: PyFlink venv + Maven jars
    flink/harness/.flink-venv/bin/python flink/harness/flink_check.py  # every case, parallelism 1 and 4
    flink/harness/.flink-venv/bin/python flink/harness/flink_check.py --only aggregate --parallelism 1
    flink/harness/.flink-venv/bin/python flink/harness/flink_check.py --kafka   # + the Kafka end-to-end cases
    flink/harness/.flink-venv/bin/python flink/harness/flink_check.py --kafka --only kafka   # those alone
    for k in 1 2 3; do flink/harness/.flink-venv/bin/python flink/harness/flink_check.py --kafka --part $k/3; done
        # the same full run in three parts; results.md gathers every part run so far

Every case is a cdc command line (``cases.py``): ``cdc COMMAND INPUT FLAGS --print-sql [SQL
FLAGS]`` gives the script — exit 2 means the case is *refused*, with cdc's reason — and ``cdc
COMMAND INPUT FLAGS`` gives cdc's own output. The script runs in PyFlink's local mini-cluster,
statement by statement as ``sql-client.sh -f`` runs it (``flinkrun.py``; the base configuration
is batch mode, so a script that does not set streaming itself fails). Flink's rows are the last
SELECT's rows with their kinds, or what the script's INSERT wrote into its sink (files read back;
Kafka topics consumed). They must equal cdc's:

- changelog output (from-changelog, decode, debezium-decode, replay, aggregate): kind + values,
  at parallelism 1 in order; at 4 in order, else in order per key (keyed results), else as a
  multiset — the detail says which held;
- to-changelog: the rows with their op codes, the same way;
- materialize: the table — Flink's changelog applied as the SQL client's table view applies it
  (a retraction removes one equal row; keyed: the last row per key, as an upsert sink keeps it);
- debezium-encode: the events' ``op``, ``before`` and ``after`` (Flink writes no ``ts_ms``/``source``).

Values: numbers numerically (1e-6 relative, for Flink FLOAT), times as instants, the rest as equal
text. Where cdc fails on the input (exit 3), Flink's job must fail too.

Writes ``flink/harness/results.md``; exit 0 only when every case matches or is refused.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
from cases import COMMANDS, Case, all_cases  # noqa: E402
from flinkrun import Outcome, run_script  # noqa: E402

WORK = HERE / ".work"
Rows = list[tuple[str, dict[str, Any]]]


@dataclass
class Result:
    case: Case
    parallelism: int | None
    status: str  # match | refused | FAIL
    detail: str
    seconds: float = 0.0


def cdc_bin() -> list[str]:
    here = Path(sys.executable).parent / "cdc"
    return [str(here)] if here.exists() else [sys.executable, "-m", "cdc"]


def run_cdc(args: Sequence[str]) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, NO_COLOR="1", COLUMNS="200")
    return subprocess.run([*cdc_bin(), *map(str, args)], capture_output=True, timeout=300, env=env)


def first_line(text: bytes) -> str:
    lines = [line.strip() for line in text.decode(errors="replace").splitlines() if line.strip()]
    return " / ".join(lines[:2]).removeprefix("cdc: error: ")


# ------------------------------------------------------------------------------------- values


def _number(v: Any) -> Decimal | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float | Decimal):
        return Decimal(str(v)) if not isinstance(v, float) or math.isfinite(v) else None
    return None


def _instant(v: Any) -> dt.datetime | dt.date | dt.time | None:
    if isinstance(v, dt.datetime | dt.date | dt.time):
        return v
    if isinstance(v, str):
        for parse in (dt.datetime.fromisoformat, dt.date.fromisoformat, dt.time.fromisoformat):
            try:
                return parse(v)
            except ValueError:
                continue
    return None


def _utc(v: dt.datetime) -> dt.datetime:
    return v.astimezone(dt.UTC).replace(tzinfo=None) if v.tzinfo else v


def same(a: Any, b: Any) -> bool:
    """cdc's value ``a`` (from JSON) against Flink's ``b`` (from PyFlink)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:
        return na == nb or abs(na - nb) <= Decimal("1e-6") * max(abs(na), abs(nb))
    if isinstance(b, dt.datetime | dt.date | dt.time):
        ia = _instant(a)
        if isinstance(ia, dt.datetime) and isinstance(b, dt.datetime):
            return _utc(ia) == _utc(b)
        return ia == b
    if isinstance(a, str) and isinstance(b, str) and all(c in a + b for c in "-:") and a[:1].isdigit():
        ia, ib = _instant(a), _instant(b)
        if isinstance(ia, dt.datetime) and isinstance(ib, dt.datetime):
            return _utc(ia) == _utc(ib)
    if isinstance(b, dict) and isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(b, list | tuple) and isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(b, bytes | bytearray):
        return str(a) == bytes(b).hex()
    return str(a) == str(b)


def canon(v: Any) -> str:
    """A text that equal values share (for multiset comparison)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return str(v).lower()
    n = _number(v)
    if n is not None:
        return format(round(float(n), 6), ".6g") if n != n.to_integral_value() else str(int(n))
    timeish = not isinstance(v, str) or (v[:1].isdigit() and ("-" in v or ":" in v))
    inst = _instant(v) if timeish else None
    if isinstance(inst, dt.datetime):
        return _utc(inst).isoformat()
    if inst is not None:
        return inst.isoformat()
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}={canon(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list | tuple):
        return "[" + ",".join(canon(x) for x in v) + "]"
    return str(v)


def row_text(kind: str, row: dict[str, Any]) -> str:
    return f"{kind}[" + ", ".join(canon(v) for v in row.values()) + "]"


def rows_equal(a: Rows, b: Rows) -> bool:
    return len(a) == len(b) and all(
        ka == kb and ra.keys() == rb.keys() and all(same(ra[c], rb[c]) for c in ra)
        for (ka, ra), (kb, rb) in zip(a, b, strict=True)
    )


def multiset(rows: Rows) -> Counter[str]:
    return Counter(row_text(k, r) for k, r in rows)


def net(rows: Rows, keys: Sequence[str]) -> Rows:
    """The table a changelog leaves, applied change by change: by key as an upsert sink keeps it
    (+I/+U put the row, -D removes the key, -U changes nothing), or without keys as the SQL
    client's table view does (+I/+U add a row, -U/-D remove one equal row if there is one)."""
    if keys:
        table: dict[tuple[str, ...], dict[str, Any]] = {}
        for kind, row in rows:
            key = tuple(canon(row[k]) for k in keys)
            if kind in ("+I", "+U"):
                table[key] = row
            elif kind == "-D":
                table.pop(key, None)
        return [("+I", r) for r in table.values()]
    counts: Counter[str] = Counter()
    first: dict[str, dict[str, Any]] = {}
    for kind, row in rows:
        text = row_text("+I", row)
        first.setdefault(text, row)
        if kind in ("+I", "+U"):
            counts[text] += 1
        elif counts[text] > 0:
            counts[text] -= 1
    return [("+I", first[t]) for t, n in counts.items() for _ in range(n)]


# ------------------------------------------------------------------------------------- both sides


def cdc_rows(case: Case, stdout: bytes) -> Rows:
    out: Rows = []
    for line in stdout.decode().splitlines():
        if not line.strip():
            continue
        row = json.loads(line, parse_float=Decimal)
        if case.output == "events":
            out.append((row["op"], {"before": row["before"], "after": row["after"]}))
        elif case.output == "changelog":
            kind = row.pop("op")
            out.append((kind, row))
        else:
            out.append(("+I", row))
    return out


def read_back(case: Case, outcome: Outcome) -> None:
    """The rows a filesystem sink wrote (JSON lines in its folder; hidden files are in progress)."""
    assert case.sink_dir is not None
    rows: Rows = []
    for path in sorted(case.sink_dir.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            rows += [("+I", json.loads(x, parse_float=Decimal)) for x in path.read_text().splitlines() if x.strip()]
    outcome.rows = rows
    outcome.columns = list(rows[0][1]) if rows else []


def flink_rows(case: Case, outcome: Outcome) -> Rows:
    """Flink's rows as cdc's: Debezium events as (op, images); a changelog written as rows with
    the kind in column ``op`` (cdc's changelog rows, what the scripts' sinks write) decoded."""
    rows = outcome.rows
    if case.output == "events":
        return [(r["op"], {"before": r["before"], "after": r["after"]}) for _, r in rows]
    encoded = outcome.columns[:1] == ["op"] and all(k == "+I" for k, _ in rows)
    if case.output in ("changelog", "table") and encoded and rows:
        decoded: Rows = []
        for _, row in rows:
            r = dict(row)
            decoded.append((r.pop("op"), r))
        return decoded
    return rows


def compare(case: Case, want: Rows, got: Rows, parallelism: int) -> tuple[bool, str]:
    if case.output == "table":
        # The table Flink keeps: keyed only in an upsert sink; the SQL client's table view (and a
        # file of the changelog) is a multiset, whatever cdc's --key.
        keys = case.keys if case.upsert_sink else []
        got = net(got, keys)
        ok = multiset(want) == multiset(got)
        how = f"table (upsert sink keyed by {','.join(keys)})" if keys else "table (a multiset)"
        return ok, f"{how}, {len(want)} rows" if ok else diff(want, got, how)
    if case.upsert_sink:
        # An upsert-kafka sink's topic is a table: the last value per key, a tombstone deleting it.
        w, g = net(want, case.keys), net(got, case.keys)
        how = f"the upsert sink's table by key {','.join(case.keys)} ({len(got)} records)"
        return (True, f"{how}, {len(w)} rows") if multiset(w) == multiset(g) else (False, diff(w, g, how))
    if rows_equal(want, got):
        return True, f"{len(got)} rows, same order"
    if parallelism == 1:
        return False, diff(want, got, "in order")
    if case.keys:
        per_key = {}
        for label, rows in (("want", want), ("got", got)):
            groups: dict[tuple[str, ...], list[str]] = {}
            for kind, row in rows:
                groups.setdefault(tuple(canon(row.get(k)) for k in case.keys), []).append(row_text(kind, row))
            per_key[label] = groups
        if per_key["want"] == per_key["got"]:
            return True, f"{len(got)} rows, same order per key {','.join(case.keys)}"
    if multiset(want) == multiset(got):
        return True, f"{len(got)} rows, as a multiset (order differs)"
    return False, diff(want, got, "as a multiset")


def diff(want: Rows, got: Rows, how: str) -> str:
    w, g = multiset(want), multiset(got)
    only_w = list((w - g).elements())[:3]
    only_g = list((g - w).elements())[:3]
    if not only_w and not only_g:
        return f"{how}: same rows, other order: cdc {[row_text(k, r) for k, r in want[:4]]} flink " + str(
            [row_text(k, r) for k, r in got[:4]]
        )
    return f"{how}: cdc {len(want)} rows, flink {len(got)}; only cdc: {only_w}; only flink: {only_g}"


# ------------------------------------------------------------------------------------- running


def script_of(case: Case, sql_flags: Sequence[str]) -> tuple[str | None, str]:
    """The SQL ``cdc … --print-sql`` prints, or (None, reason) when cdc refuses."""
    result = run_cdc([*case.argv(), "--print-sql", *sql_flags])
    if result.returncode == 2:
        return None, first_line(result.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"--print-sql exit {result.returncode}: {first_line(result.stderr)}")
    return result.stdout.decode(), ""


def script_file(case: Case) -> Path:
    name = f"{case.command}.{case.label}.{' '.join(case.flags)}"
    safe = "".join(c if c.isalnum() or c in ".-_" else "_" for c in name)[:150]
    return WORK / "scripts" / f"{safe}.sql"


def check(case: Case, parallelisms: Sequence[int], broker: Any = None) -> list[Result]:
    start = time.monotonic()
    sql_flags = list(case.sql_flags)
    if case.kafka is not None:
        sql_flags += case.kafka.prepare(broker)
    try:
        sql, reason = script_of(case, sql_flags)
    except Exception as exc:  # noqa: BLE001 - a case that cannot even print is a failure
        return [Result(case, None, "FAIL", f"printing the SQL: {exc}", time.monotonic() - start)]
    if sql is None:
        return [Result(case, None, "refused", reason, time.monotonic() - start)]
    path = script_file(case)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(sql)
    ran = run_cdc(case.argv())
    if ran.returncode not in (0, 3):
        return [Result(case, None, "FAIL", f"cdc exit {ran.returncode}: {first_line(ran.stderr)}")]
    cdc_fails, cdc_reason = ran.returncode == 3, first_line(ran.stderr)
    want = [] if cdc_fails else cdc_rows(case, ran.stdout)
    results = []
    for p in parallelisms:
        t = time.monotonic()
        if case.sink_dir is not None:
            shutil.rmtree(case.sink_dir, ignore_errors=True)
        for _attempt in (1, 2):
            outcome = case.kafka.run(broker, sql, p, len(want)) if case.kafka is not None else run_script(sql, p)
            # The local mini-cluster itself sometimes fails to start on a loaded machine: run again once.
            if not (outcome.error and "MiniCluster is not yet running" in outcome.error):
                break
        if case.sink_dir is not None and not outcome.error:
            read_back(case, outcome)
        seconds = time.monotonic() - t
        if cdc_fails:
            if outcome.error and outcome.phase == "run":
                detail = f"both fail: cdc «{cdc_reason}», flink «{outcome.error}»"
                results.append(Result(case, p, "match", detail, seconds))
            else:
                detail = outcome.error or f"{len(outcome.rows)} rows"
                results.append(Result(case, p, "FAIL", f"cdc fails («{cdc_reason}»), flink: {detail}", seconds))
            continue
        if outcome.error:
            results.append(Result(case, p, "FAIL", f"flink {outcome.phase}: {outcome.error[:300]}", seconds))
            continue
        ok, detail = compare(case, want, flink_rows(case, outcome), p)
        results.append(Result(case, p, "match" if ok else "FAIL", detail, seconds))
    return results


# ------------------------------------------------------------------------------------- report


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def summary(results: list[Result], parallelisms: Sequence[int]) -> list[str]:
    """Per command: cases, and per parallelism how many matched / were refused / failed."""
    head = (
        "| command | cases | " + " | ".join(f"parallelism {p}: match / refused / failed" for p in parallelisms) + " |"
    )
    lines = [head, "|---|---|" + "---|" * len(parallelisms)]
    order = [*COMMANDS, "kafka"]
    by_command: dict[str, list[Result]] = {}
    for r in results:
        by_command.setdefault("kafka" if r.case.kafka else r.case.command, []).append(r)
    total: Counter[tuple[int, str]] = Counter()
    ncases = 0
    for command in sorted(by_command, key=order.index):
        rs = by_command[command]
        cases = {id(r.case) for r in rs}
        refused = sum(1 for r in rs if r.status == "refused")
        cells = []
        for p in parallelisms:
            m = sum(1 for r in rs if r.parallelism == p and r.status == "match")
            f = sum(1 for r in rs if r.parallelism in (p, None) and r.status == "FAIL")
            total[(p, "match")] += m
            total[(p, "FAIL")] += f
            cells.append(f"{m} / {refused} / {f}")
        total[(0, "refused")] += refused
        ncases += len(cases)
        label = "Kafka (`--sql-source`/`--sql-sink` kafka, upsert-kafka)" if command == "kafka" else f"`{command}`"
        lines.append(f"| {label} | {len(cases)} | " + " | ".join(cells) + " |")
    cells = [f"**{total[(p, 'match')]} / {total[(0, 'refused')]} / {total[(p, 'FAIL')]}**" for p in parallelisms]
    lines.append(f"| all | **{ncases}** | " + " | ".join(cells) + " |")
    return lines


def refusals(results: list[Result]) -> list[str]:
    """The reasons cdc gave, each with the cases it was given for."""
    reasons: dict[str, list[str]] = {}
    for r in results:
        if r.status == "refused":
            reason = r.detail.split(" / hint:")[0]
            for path in (str(REPO), "file://"):
                reason = reason.replace(path + "/", "")
            reasons.setdefault(reason, []).append(f"{r.case.command} {r.case.name}")
    lines = ["| reason (cdc's message, exit 2) | cases |", "|---|---|"]
    for reason, cases in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"| {_cell(reason)} | {len(cases)}: {_cell(', '.join(cases))} |")
    return lines


def table(
    results: list[Result], seconds: float, parallelisms: Sequence[int], missing: int = 0, parts: bool = False
) -> str:
    counts = Counter(r.status for r in results)
    ncases = len({id(r.case) for r in results})
    lines = [
        "# Flink check: cdc's --print-sql scripts run in Flink 2.3",
        "",
        f"Flink 2.3.0 (PyFlink local mini-cluster), parallelism {' and '.join(map(str, parallelisms))}; "
        f"{ncases} cases (cdc command lines), {len(results)} results: {counts['match']} runs match, "
        f"{counts['refused']} cases refused (exit 2: cdc printed no SQL and said why), {counts['FAIL']} failed. "
        f"Wall time {seconds:.0f} s"
        + (" (the sum over the runs of `--part K/N` this table gathers)" if parts else "")
        + "."
        + (f" {missing} cases not run yet." if missing else ""),
        "",
        "Reproduce: `bash flink/harness/setup.sh && flink/harness/.flink-venv/bin/python flink/harness/flink_check.py"
        " [--kafka]`. Every case is the command line in the table run twice: with `--print-sql` (and the"
        " case's SQL flags) for the script Flink runs, and as is for cdc's rows. At parallelism 1 rows are"
        " compared in order; at 4 in order when Flink kept it, else per key or as a multiset, as the detail says."
        " Defect 6 (streaming mode) is in every run: the base configuration is batch, the script's SET makes it"
        " streaming. Defects are issue #11's numbering.",
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
        "| input | command line | defect | parallelism | result | detail |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        c = r.case
        shown = [c.command, *(f"'{f}'" if (not f or " " in f) else f for f in c.flags), *c.sql_flags_shown()]
        detail = _cell(r.detail.replace(str(REPO) + "/", ""))
        if c.note:
            detail += f" ({_cell(c.note)})"
        p = "-" if r.parallelism is None else str(r.parallelism)
        lines.append(f"| {_cell(c.label)} | `{_cell(' '.join(shown))}` | {c.defect} | {p} | {r.status} | {detail} |")
    return "\n".join(lines) + "\n"


def case_id(case: Case) -> str:
    return json.dumps([case.label, case.command, case.flags, case.sql_flags_shown(), case.kafka is not None])


Stored = dict[str, tuple[float, list[Result]]]  # case id → (wall seconds of the case, its results)


def load_results(path: Path, cases: Sequence[Case]) -> Stored:
    """Results stored by earlier runs (``--part``), for the cases that still exist."""
    known = {case_id(c): c for c in cases}
    stored: Stored = {}
    if path.exists():
        for cid, entry in json.loads(path.read_text()).items():
            if cid in known:
                rs = [Result(known[cid], e["p"], e["status"], e["detail"], e["seconds"]) for e in entry["results"]]
                stored[cid] = (entry["seconds"], rs)
    return stored


def save_results(path: Path, stored: Stored) -> None:
    data = {
        cid: {
            "seconds": seconds,
            "results": [{"p": r.parallelism, "status": r.status, "detail": r.detail, "seconds": r.seconds} for r in rs],
        }
        for cid, (seconds, rs) in stored.items()
    }
    path.write_text(json.dumps(data, indent=1) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--parallelism", type=int, action="append", help="default: 1 and 4")
    ap.add_argument(
        "--only", action="append", default=[], help="cases whose command is this, or whose input/group contains it"
    )
    ap.add_argument("--kafka", action="store_true", help="also the Kafka end-to-end cases (starts a local broker)")
    ap.add_argument(
        "--part",
        help="K/N: run the K-th of N parts of the cases (every N-th case); results.md then shows every part "
        "run so far (kept in flink/harness/.work/results.json)",
    )
    ap.add_argument("--output", default=str(HERE / "results.md"))
    ap.add_argument("--list", action="store_true", help="list the cases and stop")
    args = ap.parse_args(argv)
    parallelisms = args.parallelism or [1, 4]
    WORK.mkdir(exist_ok=True)
    tempfile.tempdir = str(WORK)
    cases = all_cases(WORK)
    if args.kafka:
        from kafka_cases import kafka_cases

        cases += kafka_cases(WORK)
    everything = list(cases)
    if args.only:
        cases = [
            c
            for c in cases
            if any(o == c.command or o in c.label or (o == "kafka" and c.kafka is not None) for o in args.only)
        ]
    if args.part:
        k, n = map(int, args.part.split("/"))
        cases = [c for i, c in enumerate(cases) if i % n == k - 1]
    if args.list:
        for c in cases:
            print(c.label, "|", " ".join(c.argv()[:1] + c.flags), "|", " ".join(c.sql_flags))
        print(len(cases), "cases")
        return 0
    store = WORK / "results.json"
    stored = load_results(store, everything) if args.part else {}
    broker = None
    start = time.monotonic()
    results: list[Result] = []
    try:
        if any(c.kafka for c in cases):
            from kafka_cases import Broker

            broker = Broker(WORK / "kafka")
            broker.start()
        for case in cases:
            t = time.monotonic()
            rs = check(case, parallelisms, broker)
            stored[case_id(case)] = (time.monotonic() - t, rs)
            for r in rs:
                results.append(r)
                p = "-" if r.parallelism is None else r.parallelism
                line = f"{r.status:7} p={p} {r.seconds:5.1f}s {case.command} {case.label} {' '.join(case.flags)}"
                print(f"{line}: {r.detail[:200]}", flush=True)
            if args.part:
                save_results(store, stored)
    finally:
        if broker is not None:
            broker.stop()
    seconds = time.monotonic() - start
    shown = [r for c in everything for r in stored.get(case_id(c), (0.0, []))[1]] if args.part else results
    missing = sum(1 for c in everything if case_id(c) not in stored) if args.part else 0
    total = sum(t for t, _ in stored.values()) if args.part else seconds
    Path(args.output).write_text(table(shown, total, parallelisms, missing, bool(args.part)))
    counts = Counter(r.status for r in results)
    print("\n".join(summary(results, parallelisms)))
    print(f"{counts['match']} match, {counts['refused']} refused, {counts['FAIL']} failed in {seconds:.0f} s")
    return 0 if counts["FAIL"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
