"""Change feeds whose images arrive out of order within a commit (core/commits.py), against the
tables Delta, DuckLake and Iceberg show (tests/conformance/change-feeds)."""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFORMANCE, SAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.core.commits import CommitPairing, identity_columns, row_identity, same_row, strip
from cdc.core.errors import InputError
from cdc.core.presets import PRESETS
from cdc.core.rowstore import hashable

FEEDS = CONFORMANCE / "change-feeds"
CASES = json.loads((FEEDS / "cases.json").read_text())
Change = tuple[str, dict[str, Any]]


def read_csv(path: Path) -> list[dict[str, Any]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def changes_of(path: Path, preset: str) -> list[Change]:
    """from-changelog with a preset: the op column mapped to a kind and removed."""
    chosen = PRESETS[preset]
    out = []
    for row in read_csv(path):
        code = row.pop(chosen.op_column)
        out.append((chosen.mapping[code].value, row))
    return out


def materialize(changes: list[Change], key: tuple[str, ...], metadata: frozenset[str]) -> list[tuple[Any, ...]]:
    """The table a changelog describes, strictly: a retraction must find its row."""
    if key:
        table: dict[Any, dict[str, Any]] = {}
        for kind, row in changes:
            k = tuple(row[c] for c in key)
            if kind in ("+I", "+U"):
                assert kind == "+U" or k not in table, f"insert of a live key {k}"
                table[k] = row
            else:
                assert k in table and same_row(table[k], row, metadata), (
                    f"{kind} of {row} does not match {table.get(k)}"
                )
                del table[k]
        rows = list(table.values())
    else:
        bag: Counter[Any] = Counter()
        kept: dict[Any, dict[str, Any]] = {}
        for kind, row in changes:
            ident = row_identity(row, metadata)
            if kind in ("+I", "+U"):
                bag[ident] += 1
                kept[ident] = row
            else:
                assert bag[ident] > 0, f"{kind} of a row that is not in the table: {row}"
                bag[ident] -= 1
        rows = [kept[i] for i, n in bag.items() for _ in range(n)]
    return sorted(tuple(sorted(strip(r, metadata).items())) for r in rows)


def expected_table(path: Path) -> list[tuple[Any, ...]]:
    return sorted(tuple(sorted(r.items())) for r in read_csv(path))


def pair(changes: list[Change], commit_columns: tuple[str, ...], key: tuple[str, ...]) -> list[Change]:
    return list(CommitPairing(commit_columns, key).run(changes))


def up_to(changes: list[Change], column: str, as_of: str) -> list[Change]:
    return [(k, r) for k, r in changes if float(r[column]) <= float(as_of)]


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_feed_gives_the_table_the_source_shows(case: dict[str, Any]) -> None:
    preset = PRESETS[case["preset"]]
    metadata = frozenset(preset.commit_columns)
    key = tuple(case["key"])
    changes = changes_of(FEEDS / case["feed"], case["preset"])
    paired = pair(changes, preset.commit_columns, key or preset.pair_key)
    if "as_of" in case:
        paired = up_to(paired, case["time_column"], case["as_of"])
    assert materialize(paired, key, metadata) == expected_table(FEEDS / case["expected"])


@pytest.mark.parametrize("case", [c for c in CASES if c["case"] in ("delta-cdf", "ducklake", "iceberg")])
def test_file_order_alone_loses_rows(case: dict[str, Any]) -> None:
    """Why the pairing exists: applied in file order the -U deletes the key its +U wrote."""
    changes = changes_of(FEEDS / case["feed"], case["preset"])
    with pytest.raises(AssertionError):
        materialize(changes, tuple(case["key"]), frozenset(PRESETS[case["preset"]].commit_columns))


def test_each_pre_image_comes_right_before_its_post_image() -> None:
    out = pair(changes_of(FEEDS / "ducklake" / "changes.csv", "ducklake"), ("snapshot_id",), ("rowid",))
    for i, (kind, row) in enumerate(out):
        if kind == "-U":
            assert out[i + 1][0] == "+U" and out[i + 1][1]["rowid"] == row["rowid"]
    assert [k for k, _ in out] == ["+I", "+I", "-D", "-U", "+U", "+I", "+I", "-U", "+U", "-U", "+U"]


def test_a_commit_emits_deletes_then_updates_then_inserts_each_in_file_order() -> None:
    rows = [
        ("+I", {"v": 1, "id": "a"}),
        ("+U", {"v": 1, "id": "u2"}),
        ("-D", {"v": 1, "id": "d1"}),
        ("-U", {"v": 1, "id": "u1"}),
        ("+I", {"v": 1, "id": "b"}),
        ("-U", {"v": 1, "id": "u2"}),
        ("+U", {"v": 1, "id": "u1"}),
        ("-D", {"v": 1, "id": "d2"}),
    ]
    out = pair(rows, ("v",), ("id",))
    assert [(k, r["id"]) for k, r in out] == [
        ("-D", "d1"),
        ("-D", "d2"),
        ("-U", "u2"),
        ("+U", "u2"),
        ("-U", "u1"),
        ("+U", "u1"),
        ("+I", "a"),
        ("+I", "b"),
    ]


def test_without_a_key_a_commits_retractions_come_before_its_additions() -> None:
    # Which pre-image belongs to which post-image cannot be told without a key (and a file may
    # list them in any order): every -U first, then every +U, each in file order.
    rows = [
        ("+U", {"v": 1, "x": "B"}),
        ("+U", {"v": 1, "x": "D"}),
        ("-U", {"v": 1, "x": "A"}),
        ("-U", {"v": 1, "x": "C"}),
    ]
    assert [(k, r["x"]) for k, r in pair(rows, ("v",), ())] == [("-U", "A"), ("-U", "C"), ("+U", "B"), ("+U", "D")]


def test_an_update_that_changes_the_key_pairs_by_order_and_is_counted() -> None:
    pairing = CommitPairing(("v",), ("id",))
    rows = [
        ("+U", {"v": 1, "id": 101}),
        ("+U", {"v": 1, "id": 7}),
        ("-U", {"v": 1, "id": 1}),
        ("-U", {"v": 1, "id": 7}),
    ]
    out = list(pairing.run(rows))
    assert [(k, r["id"]) for k, r in out] == [("-U", 1), ("+U", 101), ("-U", 7), ("+U", 7)]
    assert pairing.notes == {"updates paired by order (the key changed)": 1}


def test_unmatched_images_are_kept_and_counted() -> None:
    pairing = CommitPairing(("v",))
    out = list(pairing.run([("-U", {"v": 1, "x": 1}), ("-U", {"v": 1, "x": 2}), ("+U", {"v": 1, "x": 3})]))
    assert [k for k, _ in out] == ["-U", "-U", "+U"]
    assert pairing.notes == {"update images without a partner": 1}


def test_memory_is_one_commit() -> None:
    pairing = CommitPairing(("_commit_version",), ("c1",))
    sizes = []
    for kind, row in changes_of(FEEDS / "delta-cdf" / "feed.csv", "delta-cdf"):
        emitted = pairing.push(kind, row)
        if emitted:  # a commit ended: only the row that opened the next one is held
            assert pairing.buffered == 1
        assert all(r["_commit_version"] == row["_commit_version"] for _, r in pairing.buffer)
        sizes.append(pairing.buffered)
    assert max(sizes) == 4 and len(pairing.finish()) == 1 and pairing.buffered == 0
    assert (pairing.commits, pairing.largest) == (4, 4)


def test_a_feed_out_of_commit_order_is_an_error_with_a_hint() -> None:
    pairing = CommitPairing(("_commit_version",))
    pairing.push("+I", {"_commit_version": 1})
    pairing.push("+I", {"_commit_version": 2})
    with pytest.raises(InputError, match="not in commit order") as err:
        pairing.push("+I", {"_commit_version": 1})
    assert err.value.hint == "sort the feed by _commit_version first (ORDER BY _commit_version)"


@pytest.mark.parametrize(
    ("row", "kind", "message"),
    [
        ({"id": 1}, "+I", "commit column 'snapshot_id' does not exist"),
        ({"snapshot_id": None}, "+I", "is null"),
        ({"snapshot_id": 1}, "UPSERT", "unknown row kind"),
    ],
)
def test_bad_rows_fail_where_they_are(row: dict[str, Any], kind: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        CommitPairing(("snapshot_id",)).push(kind, row)


def test_commit_columns_can_be_dropped_after_pairing() -> None:
    rows = changes_of(FEEDS / "delta-cdf" / "feed.csv", "delta-cdf")
    out = list(CommitPairing(("_commit_version", "_commit_timestamp"), ("c1",), drop=True).run(rows))
    assert all(set(r) == {"c1", "c2"} for _, r in out)
    kept = pair(rows, ("_commit_version", "_commit_timestamp"), ("c1",))
    assert all("_commit_version" in r and "_commit_timestamp" in r for _, r in kept)


def test_metadata_is_not_part_of_a_rows_identity() -> None:
    a = {"c1": 1, "c2": "x", "_commit_version": 1}
    b = {"_commit_version": 3, "c2": "x", "c1": 1}
    meta = frozenset(PRESETS["delta-cdf"].commit_columns)
    assert row_identity(a, meta) == row_identity(b, meta) and row_identity(a) != row_identity(b)
    assert same_row(a, b, meta) and not same_row(a, b)
    assert identity_columns(b, meta) == ["c2", "c1"] and identity_columns(a, ["c1"]) == ["c2", "_commit_version"]
    assert strip(a, ["nothing"]) is a


def test_presets_name_their_commit_columns() -> None:
    assert PRESETS["delta-cdf"].commit_columns == ("_commit_version", "_commit_timestamp")
    assert PRESETS["ducklake"].commit_columns == ("snapshot_id",) and PRESETS["ducklake"].pair_key == ("rowid",)
    assert PRESETS["iceberg"].commit_columns == ("_change_ordinal", "_commit_snapshot_id")
    assert PRESETS["debezium"].commit_columns == () and PRESETS["canal"].pair_key == ()


# -- shuffled commits: the table does not depend on the order within a commit --------------------


def simulate(seed: int, keyed: bool) -> tuple[list[Change], list[tuple[Any, ...]]]:
    """A random table history as a change feed (one list per commit), and the final table."""
    rng = random.Random(seed)
    live: list[dict[str, Any]] = []
    next_id = 0
    feed: list[Change] = []
    for version in range(1, rng.randint(2, 8)):
        touched: set[int] = set()
        commit: list[Change] = []
        for _ in range(rng.randint(1, 6)):
            choice = rng.random()
            candidates = [r for r in live if r["id"] not in touched]
            if choice < 0.4 or not candidates:
                row = {"id": next_id if keyed else rng.randint(0, 2), "val": rng.choice("abc"), "v": version}
                next_id += 1
                live.append(row)
                touched.add(row["id"])
                commit.append(("+I", row))
            elif choice < 0.75:
                old = rng.choice(candidates)
                new = {**old, "val": old["val"] + rng.choice("xyz"), "v": version}
                live[live.index(old)] = new
                touched.add(old["id"])
                commit += [("-U", {**old, "v": version}), ("+U", new)]
            else:
                old = rng.choice(candidates)
                live.remove(old)
                touched.add(old["id"])
                commit.append(("-D", {**old, "v": version}))
        rng.shuffle(commit)
        feed += commit
    table = sorted(tuple(sorted(strip(r, ["v"]).items())) for r in live)
    return feed, table


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32), keyed=st.booleans(), order=st.randoms(use_true_random=False))
def test_shuffling_rows_within_each_commit_leaves_the_table_unchanged(seed: int, keyed: bool, order: Any) -> None:
    feed, table = simulate(seed, keyed)
    commits: dict[Any, list[Change]] = {}
    for change in feed:
        commits.setdefault(change[1]["v"], []).append(change)
    shuffled: list[Change] = []
    for rows in commits.values():
        rows = list(rows)
        order.shuffle(rows)
        shuffled += rows
    key = ("id",) if keyed else ()
    out = pair(shuffled, ("v",), key)
    assert materialize(out, key, frozenset({"v"})) == table
    assert Counter(hashable(r) for _, r in out) == Counter(hashable(r) for _, r in feed)  # nothing lost or made up


@pytest.mark.parametrize(
    ("sample", "preset", "key", "expected"),
    [
        (
            "delta-cdf-orders.csv",
            "delta-cdf",
            ("order_id",),
            [("1001", "shipped"), ("1002", "delivered"), ("1004", "placed")],
        ),
        (
            "ducklake-changes.csv",
            "ducklake",
            ("rowid",),
            [("1", "DuckLakeDuckLakeDuckLake"), ("2", "QUACK"), ("3", "LAKE")],
        ),
    ],
)
def test_samples(sample: str, preset: str, key: tuple[str, ...], expected: list[tuple[str, str]]) -> None:
    chosen = PRESETS[preset]
    changes = pair(changes_of(SAMPLES / sample, preset), chosen.commit_columns, key)
    table = [dict(r) for r in materialize(changes, key, frozenset(chosen.commit_columns))]
    column = "val" if preset == "ducklake" else "status"
    assert sorted((r[key[0]], r[column]) for r in table) == expected
