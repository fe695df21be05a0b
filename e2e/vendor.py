"""Turn a kept e2e run (run.sh --keep) into conformance cases for the quick test suite.

    python3 e2e/vendor.py WORKDIR [--seed N] [--changes N] [--lines 300]

For each case (database × table × connector/converter setting) it takes the prefix of the event
file that ends at the checkpoint whose prefix is closest to ``--lines`` events, the database's
dump taken at that checkpoint (the expected table, as the database wrote it: row_to_json /
JSON_OBJECT), and writes tests/conformance/debezium-real/<case>/{events.jsonl.gz, expected.jsonl,
case.json}. case.json holds the decode flags, the column types and settings compare.py needs, and
the findings (e2e/findings/NN-*) that make the case fail today, so the test can mark it xfail.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import compare  # noqa: E402
import workload as W  # noqa: E402

OUT = REPO / "tests" / "conformance" / "debezium-real"

# case → (database, table, variant, converter file suffix, decode with --key, modes)
CASES = {
    "postgres-default-identity": ("postgres", "items_default", "main", "schema", True, {}),
    "postgres-full-identity": ("postgres", "items_full", "main", "schema", False, {}),
    "postgres-full-identity-numeric": ("postgres", "items_full", "main", "numeric", False, {}),
    "postgres-full-identity-string-connect": (
        "postgres",
        "items_full",
        "string-connect",
        "schema",
        False,
        {"decimal": "string", "time": "connect"},
    ),
    "postgres-full-identity-double-nanos": (
        "postgres",
        "items_full",
        "double-nanos",
        "schema",
        False,
        {"decimal": "double", "time": "nanoseconds"},
    ),
    "mariadb": ("mariadb", "items", "main", "schema", False, {}),
    "mariadb-numeric": ("mariadb", "items", "main", "numeric", False, {}),
    "mariadb-string-connect": (
        "mariadb",
        "items",
        "string-connect",
        "schema",
        False,
        {"decimal": "string", "time": "connect"},
    ),
}


def types_for(db: str) -> dict[str, str]:
    return dict(W.PG_TYPES) if db == "postgres" else dict(W.MARIA_TYPES, u="bigunsigned")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir", type=Path)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--changes", type=int, required=True)
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--cdc", default=str(REPO / ".venv" / "bin" / "cdc"))
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for case, (db, table, variant, conv, key, modes) in CASES.items():
        run = args.workdir / db
        if not run.exists():
            print(f"skip {case}: no {run}")
            continue
        events = run / f"events-{variant}" / f"{table}.{conv}.jsonl"
        checkpoints = [
            json.loads(x)
            for x in (run / f"events-{variant}" / "checkpoints.jsonl").read_text().splitlines()
            if x.strip()
        ]
        firsts: dict[int, dict[str, int]] = {}
        for c in checkpoints:
            firsts.setdefault(c["n"], c["lines"])

        def rows_at(n: int, run: Path = run, table: str = table) -> int:
            return sum(
                1 for x in (run / f"expected-{n}-{table}.jsonl").read_text(encoding="utf-8").split("\n") if x.strip()
            )

        # the checkpoint closest to --lines events whose table is not empty (not just after a TRUNCATE)
        n, lines = min(
            ((n, c.get(f"{table}.{conv}.jsonl", 0)) for n, c in firsts.items() if n > 0 and rows_at(n)),
            key=lambda nl: abs(nl[1] - args.lines),
        )
        dest = OUT / case
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir()
        with open(events, "rb") as f, gzip.open(dest / "events.jsonl.gz", "wb", compresslevel=9) as g:
            for i, line in enumerate(f):
                if i >= lines:
                    break
                g.write(line)
        shutil.copy(run / f"expected-{n}-{table}.jsonl", dest / "expected.jsonl")
        decode = ["--on-truncate", "delete", *(["--key", "id"] if key else [])]
        spec = {
            "database": db,
            "table": table,
            "variant": variant,
            "converter": conv,
            "checkpoint": n,
            "events": lines,
            "decode_args": decode,
            "materialize_args": ["--key", "id"],
            "modes": modes,
            "types": types_for(db),
        }
        # Which findings make it fail today (the test marks such a case xfail, strict).
        proc = subprocess.run(
            [
                "bash",
                "-o",
                "pipefail",
                "-c",
                f"{args.cdc} debezium-decode {dest / 'events.jsonl.gz'} {' '.join(decode)} | "
                f"{args.cdc} materialize --key id",
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            findings = ["05"] if "__debezium_unavailable_value" in proc.stderr else ["?"]
            diffs = [proc.stderr.strip()]
        else:
            got = [json.loads(x, parse_float=compare.Decimal) for x in proc.stdout.split("\n") if x.strip()]
            want = [
                json.loads(x, parse_float=compare.Decimal)
                for x in (dest / "expected.jsonl").read_text(encoding="utf-8").split("\n")
                if x.strip()
            ]
            diffs = compare.compare_tables(want, got, spec["types"], modes, db, limit=1_000_000)
            findings = (
                sorted(diffs[-1].split(": ")[1].split(", "))
                if diffs and diffs[-1].startswith("known findings")
                else (["?"] if diffs else [])
            )
        spec["known_findings"] = findings
        (dest / "case.json").write_text(json.dumps(spec, indent=2) + "\n")
        print(
            f"{case}: {lines} events up to checkpoint {n}, "
            f"findings {findings or 'none'}" + (f"; first difference: {diffs[0][:200]}" if diffs else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
