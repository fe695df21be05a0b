"""Print the outputs shown in docs-drafts/aggregate.md, computed by cdc.core.aggregate and
written by cdc's own writers, after checking them against Flink's logs in
tests/conformance/flink-aggregate. Run from the repository root with the project installed:

    .venv/bin/python docs-drafts/aggregate_examples.py

(Until ``cdc aggregate`` is wired into the CLI, this stands in for the commands the draft shows;
afterwards the README test runs the commands themselves.)
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cdc.core.aggregate import AggregateQuery, GroupAggregate
from cdc.formats.jsonl import JsonlWriter
from cdc.formats.printed import PrintWriter

REPO = Path(__file__).resolve().parent.parent
ORACLE = REPO / "tests" / "conformance" / "flink-aggregate"


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def aggregate(changes: list[tuple[str, dict[str, Any]]], group_by: str, agg: str, **kw: Any) -> list[dict[str, Any]]:
    spec = AggregateQuery.parse([group_by], [agg], **kw)
    return [{"op": kind, **row} for kind, row in GroupAggregate(spec).run(changes)]


def flink(case: str) -> list[dict[str, Any]]:
    return [{"op": e["kind"], **e["row"]} for e in rows_of(ORACLE / case / "expected.jsonl")]


def as_changes(log: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(r["op"], {k: v for k, v in r.items() if k != "op"}) for r in log]


def printed(log: list[dict[str, Any]]) -> str:
    out = io.BytesIO()
    writer = PrintWriter(out, "op")
    writer.write_rows(log)
    writer.close()
    return out.getvalue().decode()


def jsonl(log: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    writer = JsonlWriter(out)
    writer.write_rows(log)
    writer.close()
    return out.getvalue()


def table(log: list[dict[str, Any]]) -> str:
    """``-f table`` as the README test sees it: not a terminal, COLUMNS=100."""
    code = (
        "import json, sys\nfrom cdc.cli.table import TableWriter\n"
        "w = TableWriter('op')\nw.write_rows(json.loads(sys.stdin.read()))\nw.close()\n"
    )
    env = dict(os.environ, COLUMNS="100")
    result = subprocess.run([sys.executable, "-c", code], input=json.dumps(log).encode(), capture_output=True, env=env)
    return result.stdout.decode()


def materialize(log: list[dict[str, Any]], key: str) -> str:
    cdc = Path(sys.executable).parent / "cdc"
    result = subprocess.run([str(cdc), "materialize", "--key", key], input=jsonl(log), capture_output=True)
    return result.stdout.decode()


def main() -> None:
    clicks = [("+I", r) for r in rows_of(REPO / "samples" / "clicks.jsonl")]
    continued = [("+I", r) for r in rows_of(REPO / "samples" / "clicks-continued.jsonl")]

    retract = aggregate(clicks, "user", "cnt=COUNT(url)", retractions=False)
    upsert = aggregate(clicks, "user", "cnt=COUNT(url)", emit="upsert", retractions=False)
    inner = aggregate(continued, "user", "cnt=COUNT(url)", retractions=False)
    counts = aggregate(as_changes(inner), "cnt", "freq=COUNT(*)")
    assert retract == flink("clicks_count")
    assert upsert == flink("clicks_count_upsert")
    assert inner == flink("continued_count")
    assert counts == flink("continued_count_of_counts")

    print("== retract, -f table\n" + table(retract))
    print("== upsert, -f print\n" + printed(upsert))
    print("== retract | materialize --key user\n" + materialize(retract, "user"))
    print("== count of counts, -f print\n" + printed(counts))
    print("== the result table after each click")
    state: dict[str, int] = {}
    for (_, click), (kind, row) in zip(clicks, [(r["op"], r) for r in retract if r["op"] != "-U"], strict=True):
        state[row["user"]] = row["cnt"]
        print(f"| {click['user']} {click['url']} | {kind} | " + ", ".join(f"{u} {n}" for u, n in state.items()) + " |")


if __name__ == "__main__":
    main()
