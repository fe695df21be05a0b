"""The change-feed pipelines of issue #10 through the real command, on the vendored feeds
(tests/conformance/change-feeds/): the table the source system shows, with each commit's rows in
the order the source wrote them and shuffled within their commit, from CSV and from Parquet."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFORMANCE, run_cdc, write_parquet

FEEDS = CONFORMANCE / "change-feeds"
CASES = json.loads((FEEDS / "cases.json").read_text())


def _shuffled(feed: Path, commit_column: str, seed: int, out: Path) -> Path:
    """The feed with the rows of each commit in a random order (commits stay in order)."""
    with feed.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    rng = random.Random(seed)
    commits: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        commits.setdefault(row[commit_column], []).append(row)
    for group in commits.values():
        rng.shuffle(group)
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(row for group in commits.values() for row in group)
    return out


def _materialize(feed: Path, case: dict[str, Any]) -> Any:
    changes = run_cdc(["from-changelog", "--preset", case["preset"], feed])
    assert changes.returncode == 0, changes.stderr.decode()
    args = ["materialize", "--expect", FEEDS / case["expected"]]
    if case["key"]:
        args += ["--key", ",".join(case["key"])]
    if "as_of" in case:
        args += ["--as-of", case["as_of"], "--time-column", case["time_column"]]
    return run_cdc(args, stdin=changes.stdout)


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_the_feed_gives_the_source_systems_table(case: dict[str, Any], tmp_path: Path) -> None:
    feed = FEEDS / case["feed"]
    commit_column = {"delta-cdf": "_commit_version", "ducklake": "snapshot_id", "iceberg": "_change_ordinal"}[
        case["preset"]
    ]
    result = _materialize(feed, case)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    for seed in range(3):
        shuffled = _shuffled(feed, commit_column, seed, tmp_path / f"shuffled-{seed}.csv")
        result = _materialize(shuffled, case)
        assert result.returncode == 0, (seed, result.stdout.decode())


def test_a_parquet_feed_pairs_its_commits_too(tmp_path: Path) -> None:
    case = next(c for c in CASES if c["case"] == "delta-cdf")
    with (FEEDS / case["feed"]).open(newline="", encoding="utf-8") as fh:
        rows = [{**r, "_commit_version": int(r["_commit_version"])} for r in csv.DictReader(fh)]
    feed = write_parquet(tmp_path / "feed.parquet", rows)
    result = _materialize(feed, case)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()


def test_commit_columns_are_kept_for_as_of_or_dropped_on_request() -> None:
    feed = FEEDS / "delta-cdf" / "feed.csv"
    kept = run_cdc(["from-changelog", "--preset", "delta-cdf", feed, "-f", "csv"]).stdout.decode()
    dropped = run_cdc(["from-changelog", "--preset", "delta-cdf", feed, "-f", "csv", "--drop-commit-columns"])
    assert "_commit_version" in kept.splitlines()[0]
    assert "_commit_version" not in dropped.stdout.decode().splitlines()[0]
    assert run_cdc(["from-changelog", "--preset", "delta-cdf", feed, "--commit-columns", ""]).returncode == 0


def test_read_in_file_order_the_feed_loses_rows() -> None:
    # Without the pairing (no commit columns), the -U after its +U deletes the key: why it exists.
    feed = FEEDS / "delta-cdf" / "feed.csv"
    changes = run_cdc(["from-changelog", "--preset", "delta-cdf", feed, "--commit-columns", ""])
    table = run_cdc(
        ["materialize", "--key", "c1", "--expect", FEEDS / "delta-cdf" / "expected.csv"], stdin=changes.stdout
    )
    assert table.returncode == 1
