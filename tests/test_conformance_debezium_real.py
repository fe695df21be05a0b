"""Real Debezium events (3.6.1.Final, embedded engine) from real PostgreSQL 15 and MariaDB 10.11,
recorded by e2e/run.sh: ``cdc debezium-decode … | cdc materialize --key id`` must give the table the
database itself returned at that point (tests/conformance/debezium-real/PROVENANCE.md).

Values are compared the way the e2e harness compares them (e2e/compare.py: decimals by value,
timestamps as instants, JSON documents parsed, bytes as bytes). The bugs the harness found on the
way are in e2e/findings/ (each now fixed, with a test of its own in tests/test_debezium_cli.py).
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from helpers import CONFORMANCE, REPO, run_cdc

sys.path.insert(0, str(REPO / "e2e"))
import compare  # noqa: E402

CASES = sorted(p for p in (CONFORMANCE / "debezium-real").iterdir() if (p / "case.json").exists())


def _rows(data: str) -> list[dict]:
    return [json.loads(line, parse_float=Decimal) for line in data.split("\n") if line.strip()]


@pytest.mark.parametrize("case", CASES, ids=[p.name for p in CASES])
def test_real_debezium_events_materialize_to_the_database_table(case: Path) -> None:
    spec = json.loads((case / "case.json").read_text())
    decoded = run_cdc(["debezium-decode", case / "events.jsonl.gz", *spec["decode_args"]])
    assert decoded.returncode == 0, decoded.stderr.decode()
    table = run_cdc(["materialize", *spec["materialize_args"]], stdin=decoded.stdout)
    assert table.returncode == 0, table.stderr.decode()
    expected = _rows((case / "expected.jsonl").read_text(encoding="utf-8"))
    diffs = compare.compare_tables(
        expected, _rows(table.stdout.decode()), spec["types"], spec["modes"], spec["database"]
    )
    assert not diffs, "\n".join(diffs)


def test_every_case_has_its_provenance() -> None:
    assert CASES, "no vendored cases"
    assert (CONFORMANCE / "debezium-real" / "PROVENANCE.md").exists()
    for case in CASES:
        spec = json.loads((case / "case.json").read_text())
        assert spec["events"] > 0 and (case / "expected.jsonl").stat().st_size > 0
