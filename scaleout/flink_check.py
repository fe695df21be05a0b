"""The proof of ``--print-sql``: run every printed script in Flink 2.3 and hold its rows against cdc's.

    bash scaleout/setup.sh                                   # once: PyFlink venv + Maven jars
    scaleout/.flink-venv/bin/python scaleout/flink_check.py  # all cases, parallelism 1 and 4
    scaleout/.flink-venv/bin/python scaleout/flink_check.py --only from_ --parallelism 1
    scaleout/.flink-venv/bin/python scaleout/flink_check.py --kafka   # + the Kafka end-to-end cases

For each case: ``cdc COMMAND INPUT FLAGS --print-sql`` gives the script (exit 2: the case is
*refused*, with cdc's reason); the script runs in PyFlink's local mini-cluster, statement by
statement as ``sql-client.sh -f`` runs it (``flinkrun.py``; the base configuration is batch mode,
so a script that does not set streaming itself fails); ``cdc COMMAND INPUT FLAGS`` gives cdc's
rows. Flink's rows (kind + values) must equal cdc's: at parallelism 1 in order, at parallelism 4
as a multiset (the order of rows from parallel instances is not defined; the table says when the
order was the same anyway) or, for keyed results, in order per key. Values: numbers numerically
(1e-6 relative, for Flink FLOAT), times as instants, the rest as equal text. Where cdc fails on
the input (exit 3), Flink's job must fail too. Builder cases call ``cdc.core.flinksql`` directly
(for commands whose CLI has no ``--print-sql`` yet) and compare with cdc's command, or with rows
written down by hand from the documented semantics where cdc has no such command yet.

Writes ``scaleout/results.md``; exit 0 only when every case matches or is refused.
"""

from __future__ import annotations

import argparse
import csv
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from flinkrun import Outcome, run_script  # noqa: E402

ORACLE = REPO / "tests" / "conformance" / "flink-oracle"
SAMPLES = REPO / "samples"
WORK = HERE / ".work"
Rows = list[tuple[str, dict[str, Any]]]


@dataclass
class Case:
    name: str
    command: str  # the cdc command (its first argument)
    inputs: list[Path]
    flags: list[str] = field(default_factory=list)
    # "changelog": rows with a kind column; "append": every row +I; "table": a materialized table
    output: str = "changelog"
    kind_column: str = "op"
    keys: list[str] = field(default_factory=list)  # "table": net by key (an upsert sink); else multiset
    builder: Callable[[], str] | None = None  # builder cases: the SQL, from cdc.core.flinksql directly
    cdc_args: list[str] | None = None  # builder cases: the cdc command to compare with
    expected: Rows | None = None  # builder cases without a cdc command: rows by hand
    note: str = ""
    kafka: Callable[[Any], str] | None = None  # Kafka cases: produce the input, return the SQL
    defect: str = ""
    sink_dir: Path | None = None  # the script writes files here: read them back as Flink's rows


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
    """The table a changelog leaves: by key (an upsert sink: +I/+U put, -D removes, -U ignored)
    or, without keys, a multiset (+I/+U add one, -U/-D remove one equal row)."""
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
        counts[text] += 1 if kind in ("+I", "+U") else -1
    return [("+I", first[t]) for t, n in counts.items() for _ in range(max(n, 0))]


# ------------------------------------------------------------------------------------- cdc side


def cdc_rows(case: Case, stdout: bytes) -> Rows:
    out: Rows = []
    for line in stdout.decode().splitlines():
        if not line.strip():
            continue
        row = json.loads(line, parse_float=Decimal)
        if case.output == "events":
            out.append((row["op"], {"before": row["before"], "after": row["after"]}))
        elif case.output == "changelog":
            kind = row.pop(case.kind_column)
            out.append((kind, row))
        else:
            out.append(("+I", row))
    return out


def read_back(case: Case, outcome: Outcome) -> None:
    """The rows a sink wrote (JSON lines in its folder; hidden files are in-progress parts)."""
    assert case.sink_dir is not None
    rows: Rows = []
    for path in sorted(case.sink_dir.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            rows += [("+I", json.loads(x, parse_float=Decimal)) for x in path.read_text().splitlines() if x.strip()]
    if case.output == "events":
        rows = [(r["op"], {"before": r["before"], "after": r["after"]}) for _, r in rows]
        outcome.columns = ["before", "after"]
    else:
        outcome.columns = list(rows[0][1]) if rows else []
    outcome.rows = rows


def flink_rows(case: Case, outcome: Outcome) -> Rows:
    """Flink's rows; a result that carries the kind in a column (an encoded changelog, as cdc
    writes it) is read back as a changelog."""
    rows = outcome.rows
    encoded = outcome.columns[:1] == [case.kind_column] and all(k == "+I" for k, _ in rows)
    if case.output == "changelog" and encoded:
        decoded: Rows = []
        for _, row in rows:
            r = dict(row)
            decoded.append((r.pop(case.kind_column), r))
        return decoded
    return rows


def compare(case: Case, want: Rows, got: Rows, parallelism: int) -> tuple[bool, str]:
    if case.output == "table":
        got = net(got, case.keys)
        ok = multiset(want) == multiset(got)
        how = f"table netted {'by key ' + ','.join(case.keys) if case.keys else 'as a multiset'}"
        return ok, f"{how}, {len(want)} rows" if ok else diff(want, got, how)
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


# ------------------------------------------------------------------------------------- cases


def csv_copy(src: Path, name: str) -> Path:
    """A conformance input as a CSV file with a header line (values as text, null as empty)."""
    rows = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    columns = list(dict.fromkeys(c for r in rows for c in r))
    path = WORK / f"{name}.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow(["" if r.get(c) is None else _text(r[c]) for c in columns])
    return path


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


def conformance_cases() -> list[Case]:
    cases = []
    for d in sorted(ORACLE.iterdir()):
        if not d.is_dir():
            continue
        args = json.loads((d / "args.json").read_text())
        command, flags = args["command"], list(args["flags"])
        output = "append" if command == "to-changelog" else "changelog"
        cases.append(Case(d.name, command, [d / "input.jsonl"], flags, output))
        if command in ("from-changelog", "to-changelog") and not d.name.startswith("from_err"):
            cases.append(
                Case(
                    d.name + ".csv",
                    command,
                    [csv_copy(d / "input.jsonl", d.name)],
                    flags,
                    output,
                    defect="5 (CSV header)",
                )
            )
    dbz_schema = ORACLE / "dbz_schema_0" / "input.jsonl"
    cases.append(
        Case(
            "dbz_schema_0.to-changelog",
            "to-changelog",
            [dbz_schema],
            ["--input-format", "debezium"],
            "append",
            defect="3 (schema-include)",
        )
    )
    return cases


def sample_cases() -> list[Case]:
    s = SAMPLES
    cases = []
    for command, output in (
        ("from-changelog", "changelog"),
        ("to-changelog", "append"),
        ("debezium-decode", "changelog"),
    ):
        for path in sorted(s.iterdir()):
            cases.append(Case(f"{path.name}", command, [path], [], output))
    cases += [
        Case(
            "flat-cdc.jsonl --preset debezium --key id",
            "from-changelog",
            [s / "flat-cdc.jsonl"],
            ["--preset", "debezium", "--key", "id"],
            defect="1 (PARTITION BY)",
        ),
        Case(
            "flat-cdc.jsonl retract mapping --key id",
            "from-changelog",
            [s / "flat-cdc.jsonl"],
            [
                "--op",
                "__op",
                "-m",
                "c, r=INSERT",
                "-m",
                "x=UPDATE_BEFORE",
                "-m",
                "u=UPDATE_AFTER",
                "-m",
                "d=DELETE",
                "--key",
                "id",
            ],
            defect="1 (PARTITION BY)",
        ),
        # decode and aggregate: the CLI has --print-sql for them now
        Case("canal-products.jsonl", "decode", [s / "canal-products.jsonl"], [], defect="(several tables)"),
        Case(
            "canal-products.jsonl --table-include products --on-error skip",
            "decode",
            [s / "canal-products.jsonl"],
            ["--table-include", "products", "--on-error", "skip"],
        ),
        Case("maxwell-products.jsonl", "decode", [s / "maxwell-products.jsonl"], []),
        Case(
            "maxwell-products.jsonl --bootstrap skip --on-error skip",
            "decode",
            [s / "maxwell-products.jsonl"],
            ["--bootstrap", "skip", "--on-error", "skip"],
        ),
        Case("ogg-products.jsonl", "decode", [s / "ogg-products.jsonl"], []),
        Case(
            "mysql-inventory.jsonl --raw-values --on-error skip",
            "decode",
            [s / "mysql-inventory.jsonl"],
            ["--raw-values", "--on-error", "skip"],
        ),
        Case(
            "clicks.jsonl COUNT(*) per user",
            "aggregate",
            [s / "clicks.jsonl"],
            ["--input-mode", "append", "-g", "user", "-a", "cnt=COUNT(*)"],
            keys=["user"],
        ),
        Case(
            "clicks.jsonl COUNT(*) per user --where",
            "aggregate",
            [s / "clicks.jsonl"],
            ["--input-mode", "append", "-g", "user", "-a", "cnt=COUNT(*)", "--where", "url <> './home'"],
            keys=["user"],
        ),
        Case(
            "product-prices.jsonl changelog SUM/MIN/MAX",
            "aggregate",
            [s / "product-prices.jsonl"],
            ["-g", "product_name", "-a", "n=COUNT(*)", "-a", "lo=MIN(price)", "-a", "hi=MAX(price)"],
            keys=["product_name"],
        ),
        Case(
            "flat-cdc.jsonl upsert COUNT per plan",
            "aggregate",
            [s / "flat-cdc.jsonl"],
            ["--input-mode", "upsert", "--key", "id", "-g", "plan", "-a", "n=COUNT(*)"],
            keys=["plan"],
        ),
        Case(
            "delta-cdf-orders.csv --preset delta-cdf",
            "from-changelog",
            [s / "delta-cdf-orders.csv"],
            ["--preset", "delta-cdf"],
            defect="5 (CSV header)",
        ),
        Case(
            "delta-cdf-orders.csv, the mapping without the preset (no pairing)",
            "from-changelog",
            [s / "delta-cdf-orders.csv"],
            [
                "--op",
                "_change_type",
                "-m",
                "insert=INSERT",
                "-m",
                "update_preimage=UPDATE_BEFORE",
                "-m",
                "update_postimage=UPDATE_AFTER",
                "-m",
                "delete=DELETE",
            ],
            defect="5 (CSV header)",
        ),
        Case(
            "ducklake-changes.csv --preset ducklake",
            "from-changelog",
            [s / "ducklake-changes.csv"],
            ["--preset", "ducklake"],
            defect="5 (CSV header)",
        ),
        Case(
            "orders-bad-op.jsonl --on-error skip",
            "from-changelog",
            [s / "orders-bad-op.jsonl"],
            ["--on-error", "skip"],
            defect="2 (SKIP)",
        ),
        Case(
            "orders-bad-op.jsonl --on-error skip --drop INSERT",
            "from-changelog",
            [s / "orders-bad-op.jsonl"],
            ["--on-error", "skip", "--drop", "INSERT"],
            defect="2 (SKIP)",
        ),
        Case(
            "product-prices.jsonl --drop UPDATE_BEFORE",
            "to-changelog",
            [s / "product-prices.jsonl"],
            ["--drop", "UPDATE_BEFORE"],
            "append",
        ),
        Case(
            "product-prices.jsonl deletion flag",
            "to-changelog",
            [s / "product-prices.jsonl"],
            ["--op", "deleted", "-m", "INSERT, UPDATE_AFTER=false", "-m", "DELETE=true"],
            "append",
        ),
        Case(
            "mysql-inventory.jsonl",
            "to-changelog",
            [s / "mysql-inventory.jsonl"],
            ["--input-format", "debezium"],
            "append",
            defect="3/4 (Decimal)",
        ),
        Case(
            "mysql-inventory.jsonl --raw-values",
            "debezium-decode",
            [s / "mysql-inventory.jsonl"],
            ["--raw-values"],
            defect="4 (null lines)",
        ),
        Case(
            "mysql-inventory.jsonl --raw-values --on-error skip",
            "debezium-decode",
            [s / "mysql-inventory.jsonl"],
            ["--raw-values", "--on-error", "skip"],
            defect="4",
        ),
        Case(
            "postgres-default-identity.jsonl --key id",
            "debezium-decode",
            [s / "postgres-default-identity.jsonl"],
            ["--key", "id"],
            keys=["id"],
        ),
        Case(
            "mysql-inventory.jsonl --metadata source.table=tbl",
            "debezium-decode",
            [s / "mysql-inventory.jsonl"],
            ["--raw-values", "--on-error", "skip", "--metadata", "source.table=tbl"],
        ),
    ]
    for c in cases:
        if c.name.endswith("mysql-inventory.jsonl") and c.command == "debezium-decode" and not c.flags:
            c.defect = "4 (Decimal)"
        if c.name == "orders-ops.csv" and c.command == "from-changelog":
            c.defect = "5 (CSV)"
    return cases


def all_cases(kafka: bool = False) -> list[Case]:
    from builder_cases import builder_cases

    cases = conformance_cases() + sample_cases() + builder_cases(WORK)
    if kafka:
        from kafka_cases import kafka_cases

        cases += kafka_cases(WORK)
    return cases


# ------------------------------------------------------------------------------------- running


def script_of(case: Case) -> tuple[str | None, str]:
    """The SQL, or (None, reason) when cdc refuses."""
    if case.builder is not None:
        from cdc.core.errors import UsageError

        try:
            return case.builder(), ""
        except UsageError as exc:
            return None, str(exc) + (f" / hint: {exc.hint}" if exc.hint else "")
    result = run_cdc([case.command, *case.inputs, *case.flags, "--print-sql"])
    if result.returncode == 2:
        return None, first_line(result.stderr)
    if result.returncode == 3:  # the input itself is wrong for the command, seen while sampling
        return None, "exit 3 (bad input): " + first_line(result.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"--print-sql exit {result.returncode}: {first_line(result.stderr)}")
    return result.stdout.decode(), ""


def check(case: Case, parallelisms: Sequence[int], broker: Any = None) -> list[Result]:
    start = time.monotonic()
    try:
        if case.kafka is not None:
            sql: str | None = case.kafka(broker)
            reason = ""
        else:
            sql, reason = script_of(case)
    except Exception as exc:  # noqa: BLE001 - a case that cannot even print is a failure
        return [Result(case, None, "FAIL", f"printing the SQL: {exc}")]
    if sql is None:
        return [Result(case, None, "refused", reason, time.monotonic() - start)]
    (WORK / "scripts").mkdir(parents=True, exist_ok=True)
    (WORK / "scripts" / (case.name.replace("/", "_").replace(" ", "_") + f".{case.command}.sql")).write_text(sql)
    if case.expected is not None:
        want, cdc_fails, cdc_reason = case.expected, False, ""
    else:
        args = case.cdc_args if case.cdc_args is not None else [case.command, *case.inputs, *case.flags]
        ran = run_cdc(args)
        if ran.returncode not in (0, 3):
            return [Result(case, None, "FAIL", f"cdc exit {ran.returncode}: {first_line(ran.stderr)}")]
        cdc_fails, cdc_reason = ran.returncode == 3, first_line(ran.stderr)
        want = [] if cdc_fails else cdc_rows(case, ran.stdout)
    results = []
    for p in parallelisms:
        t = time.monotonic()
        jars = broker.jars if broker is not None else []
        if case.sink_dir is not None:
            shutil.rmtree(case.sink_dir, ignore_errors=True)
        if case.kafka:
            outcome = run_script(sql, p, jars=jars, idle=4.0, limit=90.0, expect=len(want))
        else:
            outcome = run_script(sql, p, jars=jars)
        if case.sink_dir is not None and not outcome.error:
            read_back(case, outcome)
        seconds = time.monotonic() - t
        if cdc_fails:
            if outcome.error and outcome.phase == "run":
                results.append(
                    Result(case, p, "match", f"both fail: cdc «{cdc_reason}», flink «{outcome.error}»", seconds)
                )
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


def table(results: list[Result], title: str, seconds: float, parallelisms: Sequence[int]) -> str:
    counts = Counter(r.status for r in results)
    lines = [
        f"# {title}",
        "",
        f"Flink 2.3.0 (PyFlink local mini-cluster), parallelism {' and '.join(map(str, parallelisms))}; "
        f"{len({id(r.case) for r in results})} cases, {len(results)} runs: "
        f"{counts['match']} match, {counts['refused']} refused (cdc printed no SQL: exit 2, or exit 3 for "
        f"input the command cannot read), "
        f"{counts['FAIL']} failed. Wall time {seconds:.0f} s.",
        "",
        "Reproduce: `bash scaleout/setup.sh && scaleout/.flink-venv/bin/python scaleout/flink_check.py"
        " [--kafka]`. At parallelism 1 rows are compared in order; at 4 in order when Flink kept it, else per key"
        " (keyed cases) or as a multiset, as the detail says. Defect 6 (streaming mode) is in every run: the base"
        " configuration is batch, the script's SET makes it streaming. Defects are issue #11's numbering.",
        "",
        "| case | command | defect | parallelism | result | detail |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        flags = " ".join(r.case.flags)
        command = f"`{r.case.command}{' ' + flags if flags else ''}`".replace("|", "\\|")
        detail = r.detail.replace("|", "\\|").replace("\n", " ")
        if r.case.note:
            detail += f" ({r.case.note})"
        p = "-" if r.parallelism is None else str(r.parallelism)
        lines.append(f"| {r.case.name} | {command} | {r.case.defect} | {p} | {r.status} | {detail} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parallelism", type=int, action="append", help="default: 1 and 4")
    ap.add_argument("--only", action="append", default=[], help="run cases whose name or command contains this")
    ap.add_argument("--kafka", action="store_true", help="also the Kafka end-to-end cases (starts a local broker)")
    ap.add_argument("--output", default=str(HERE / "results.md"))
    args = ap.parse_args(argv)
    parallelisms = args.parallelism or [1, 4]
    WORK.mkdir(exist_ok=True)
    tempfile.tempdir = str(WORK)
    cases = [c for c in all_cases(args.kafka) if not args.only or any(o in c.name or o == c.command for o in args.only)]
    broker = None
    start = time.monotonic()
    results: list[Result] = []
    try:
        if any(c.kafka for c in cases):
            from kafka_cases import Broker

            broker = Broker(WORK / "kafka")
            broker.start()
        for case in cases:
            for r in check(case, parallelisms, broker):
                results.append(r)
                p = "-" if r.parallelism is None else r.parallelism
                print(f"{r.status:7} p={p} {case.command} {case.name}: {r.detail[:160]}", flush=True)
    finally:
        if broker is not None:
            broker.stop()
    seconds = time.monotonic() - start
    title = "Flink check: cdc's --print-sql scripts run in Flink 2.3"
    Path(args.output).write_text(table(results, title, seconds, parallelisms))
    counts = Counter(r.status for r in results)
    print(f"{counts['match']} match, {counts['refused']} refused, {counts['FAIL']} failed in {seconds:.0f} s")
    return 0 if counts["FAIL"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
