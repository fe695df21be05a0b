"""materialize and inspect: the state engine against Flink's changelogs and the docs' examples."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import CONFORMANCE, SAMPLES, invoke, parse_jsonl, read_jsonl, run_cdc, write_csv, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.core.errors import InconsistencyError
from cdc.core.state import Findings, KeyedState, MultisetState, Policy

ORACLE = CONFORMANCE / "flink-oracle"
DBZ_CASES = sorted(p.name for p in ORACLE.iterdir() if p.name.startswith("dbz_"))


def flink_table(case: Path) -> list[dict[str, Any]]:
    """Apply the changelog Flink emitted with a plain dict (independent of cdc)."""
    table: dict[Any, dict[str, Any]] = {}
    for e in read_jsonl(case / "expected.jsonl"):
        if e["kind"] in ("+I", "+U"):
            table[e["row"]["id"]] = e["row"]
        else:
            table.pop(e["row"]["id"], None)
    return sorted(table.values(), key=lambda r: r["id"])


def flink_bag(case: Path) -> Counter[str]:
    """... and as a multiset with a Counter."""
    bag: Counter[str] = Counter()
    for e in read_jsonl(case / "expected.jsonl"):
        bag[json.dumps(e["row"], sort_keys=True)] += 1 if e["kind"] in ("+I", "+U") else -1
    assert all(n >= 0 for n in bag.values())
    return +bag


@pytest.mark.parametrize("keyed", [True, False], ids=["key", "keyless"])
@pytest.mark.parametrize("name", DBZ_CASES)
def test_materialize_decoded_debezium_matches_flinks_changelog(name: str, keyed: bool) -> None:
    decoded = run_cdc(["debezium-decode", ORACLE / name / "input.jsonl"])
    result = run_cdc(["materialize", "--strict", *(["--key", "id"] if keyed else [])], stdin=decoded.stdout)
    assert result.returncode == 0, result.stderr.decode()
    rows = parse_jsonl(result.stdout)
    if keyed:
        assert sorted(rows, key=lambda r: r["id"]) == flink_table(ORACLE / name)
    else:
        assert Counter(json.dumps(r, sort_keys=True) for r in rows) == flink_bag(ORACLE / name)


def prices_at(t: str) -> list[tuple[str, float]]:
    result = run_cdc(
        [
            "materialize",
            SAMPLES / "product-prices.jsonl",
            "--key",
            "product_id",
            "--as-of",
            t,
            "--time-column",
            "update_time",
        ]
    )
    assert result.returncode == 0, result.stderr.decode()
    return [(r["product_id"], r["price"]) for r in parse_jsonl(result.stdout)]


def test_versioned_table_docs_example() -> None:
    assert prices_at("10:00:00") == [("p_001", 11.11), ("p_002", 23.11)]
    assert prices_at("13:00:00") == [("p_001", 12.99), ("p_002", 19.99)]
    assert prices_at("19:00:00") == [("p_002", 19.99)]
    assert prices_at("00:00:30") == []
    assert prices_at("18:00:00") == [("p_002", 19.99)]  # a delete at T means absent


def test_as_of_compares_numbers_as_numbers(tmp_path: Path) -> None:
    f = write_jsonl(
        tmp_path / "c.jsonl", [{"op": "+I", "id": 1, "v": "a", "ts": 9}, {"op": "+U", "id": 1, "v": "b", "ts": 10}]
    )
    out = run_cdc(["materialize", f, "--key", "id", "--as-of", "9.5", "--time-column", "ts"])
    assert parse_jsonl(out.stdout) == [{"id": 1, "v": "a", "ts": 9}]  # as text, "10" < "9.5"


def test_first_insertion_order_and_sort(tmp_path: Path) -> None:
    f = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"op": "+I", "id": 3, "v": "c"},
            {"op": "+I", "id": 1, "v": "a"},
            {"op": "-U", "id": 3, "v": "c"},
            {"op": "+U", "id": 3, "v": "C"},
            {"op": "+I", "id": 2, "v": "b"},
        ],
    )
    assert [r["id"] for r in parse_jsonl(run_cdc(["materialize", f, "--key", "id"]).stdout)] == [3, 1, 2]
    assert [r["id"] for r in parse_jsonl(run_cdc(["materialize", f, "--key", "id", "--sort"]).stdout)] == [1, 2, 3]


def test_inconsistencies_warn_by_default_and_fail_when_strict(tmp_path: Path) -> None:
    f = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"op": "+I", "id": 1, "v": "a"},
            {"op": "+I", "id": 1, "v": "b"},
            {"op": "-D", "id": 9, "v": "z"},
            {"op": "-U", "id": 1, "v": "zz"},
        ],
    )
    warned = run_cdc(["materialize", f, "--key", "id"])
    err = warned.stderr.decode()
    assert warned.returncode == 0
    assert "3 inconsistent change(s)" in err
    assert f"{f}:2: +I of a key that already exists (id=1)" in err
    assert f"{f}:3: -D of a key that does not exist (id=9)" in err
    assert f'{f}:4: -U image differs from the stored row for id=1: v: stored "b", got "zz"' in err
    strict = run_cdc(["materialize", f, "--key", "id", "--strict"])
    assert strict.returncode == 3 and f"{f}:2: +I of a key that already exists".encode() in strict.stderr
    quiet = run_cdc(["materialize", f, "--key", "id", "--on-inconsistency", "ignore"])
    assert quiet.returncode == 0 and quiet.stderr == b""


def test_keyless_negative_count_is_a_finding(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "c.jsonl", [{"op": "+I", "v": 1}, {"op": "-D", "v": 2}, {"op": "+I", "v": 1}])
    result = run_cdc(["materialize", f])
    assert parse_jsonl(result.stdout) == [{"v": 1}, {"v": 1}]
    assert b"negative multiset count 1" in result.stderr


def test_dedup_drops_redelivered_events(tmp_path: Path) -> None:
    a, b, c = {"id": 1, "v": "a"}, {"id": 1, "v": "b"}, {"id": 2, "v": "c"}
    # at-least-once delivery: an insert, a whole update and a delete arrive twice
    f = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"op": "+I", **a},
            {"op": "+I", **a},
            {"op": "-U", **a},
            {"op": "+U", **b},
            {"op": "-U", **a},
            {"op": "+U", **b},
            {"op": "+I", **c},
            {"op": "-D", **c},
            {"op": "-D", **c},
        ],
    )
    result = run_cdc(["materialize", f, "--key", "id", "--dedup", "--strict", "--stats"])
    assert result.returncode == 0, result.stderr.decode()
    assert parse_jsonl(result.stdout) == [{"id": 1, "v": "b"}]
    assert b"3 duplicate(s) dropped" in result.stderr
    assert run_cdc(["materialize", f, "--key", "id", "--strict"]).returncode == 3


def test_stats_count_messages_as_retract_and_upsert() -> None:
    decoded = run_cdc(["debezium-decode", SAMPLES / "mysql-inventory.jsonl"]).stdout
    result = run_cdc(["materialize", "--key", "id", "--stats"], stdin=decoded)
    assert (
        b"read 9 changes (+I 4, -U 2, +U 2, -D 1); 3 live rows by key id; as retract 9 messages, as upsert 7"
        in result.stderr
    )


def test_outputs_in_any_format(tmp_path: Path) -> None:
    decoded = run_cdc(["debezium-decode", SAMPLES / "mysql-inventory.jsonl"]).stdout
    out = tmp_path / "snapshot.parquet"
    assert run_cdc(["materialize", "--key", "id", "-o", out], stdin=decoded).returncode == 0
    import pyarrow.parquet as pq

    assert pq.read_table(out).column("id").to_pylist() == [101, 103, 104]
    table = invoke(
        [
            "materialize",
            str(SAMPLES / "product-prices.jsonl"),
            "--key",
            "product_id",
            "-f",
            "table",
            "--on-inconsistency",
            "ignore",
        ]
    )
    assert "basketball" in table.stdout and "op" not in table.stdout


# -- --expect ---------------------------------------------------------------------------------


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    f = tmp_path / "changes.jsonl"
    f.write_bytes(run_cdc(["debezium-decode", SAMPLES / "mysql-inventory.jsonl"]).stdout)
    return f


EXPECTED = [
    {
        "id": "101",
        "name": "scooter",
        "price": "329.99",
        "stock": "11",
        "updated_at": "2024-06-01T10:20:00",
        "launched": "2022-01-08",
    },
    {
        "id": "103",
        "name": "drill bits",
        "price": "12.00",
        "stock": "25",
        "updated_at": "2024-06-01T10:35:00",
        "launched": "2022-07-27",
    },
    {
        "id": "104",
        "name": "hammer",
        "price": "24.95",
        "stock": "7",
        "updated_at": "2024-06-01T10:05:00",
        "launched": "2023-05-23",
    },
]


def test_expect_equal_csv_exits_0(inventory: Path, tmp_path: Path) -> None:
    expected = write_csv(tmp_path / "expected.csv", EXPECTED)  # text "12.00" vs JSON 12.0: same value
    result = run_cdc(["materialize", inventory, "--key", "id", "--expect", expected])
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    assert b"result equal: 3 rows" in result.stdout


def test_expect_names_the_changed_cell_and_exits_1(inventory: Path, tmp_path: Path) -> None:
    wrong = [dict(r) for r in EXPECTED]
    wrong[1]["stock"] = "24"
    expected = write_csv(tmp_path / "expected.csv", wrong)
    result = run_cdc(["materialize", inventory, "--key", "id", "--expect", expected])
    out = result.stdout.decode()
    assert result.returncode == 1
    assert "1 changed, 0 only in result, 0 only in expected" in out
    assert "~ id=103: stock: expected '24', got '25'" in out


def test_expect_keyed_rows_only_on_one_side(inventory: Path, tmp_path: Path) -> None:
    expected = write_csv(tmp_path / "expected.csv", [EXPECTED[0], EXPECTED[2], dict(EXPECTED[2], id="105")])
    out = run_cdc(["materialize", inventory, "--key", "id", "--expect", expected]).stdout.decode()
    assert "+ only in result: id=103" in out and "- only in expected: id=105" in out


def test_expect_multiset_without_key(inventory: Path, tmp_path: Path) -> None:
    expected = write_jsonl(
        tmp_path / "expected.jsonl",
        [
            {
                "id": 104,
                "name": "hammer",
                "price": 24.95,
                "stock": 7,
                "updated_at": "2024-06-01T10:05:00",
                "launched": "2023-05-23",
            }
        ]
        * 2,
    )
    result = run_cdc(["materialize", inventory, "--expect", expected])
    out = result.stdout.decode()
    assert result.returncode == 1
    assert "0 changed, 2 only in result, 1 only in expected" in out


def test_expect_missing_file_is_a_usage_error(inventory: Path, tmp_path: Path) -> None:
    assert run_cdc(["materialize", inventory, "--expect", tmp_path / "nope.csv"]).returncode == 2


# -- inspect ----------------------------------------------------------------------------------


def test_inspect_json_for_ci() -> None:
    decoded = run_cdc(["debezium-decode", SAMPLES / "mysql-inventory.jsonl"]).stdout
    report = json.loads(
        run_cdc(["inspect", "--key", "id", "--json", "--time-column", "updated_at"], stdin=decoded).stdout
    )
    assert report["kinds"] == "[I,UB,UA,D]" and report["mode"] == "retract"
    assert report["counts"] == {"+I": 4, "-U": 2, "+U": 2, "-D": 1}
    assert report["key"] == {"columns": ["id"], "distinct": 4, "live": 3}
    assert report["messages"] == {"retract": 9, "upsert": 7}
    assert report["consistency"]["inconsistent_changes"] == 0
    assert report["time"]["min"] == "2024-06-01T10:00:00" and report["time"]["max"] == "2024-06-01T10:35:00"


@pytest.mark.parametrize(
    ("kinds", "mode", "printed"),
    [
        (["+I", "+I"], "append-only", "[I]"),
        (["+I", "+U", "-D"], "upsert", "[I,UA,D]"),
        (["+I", "-U", "+U"], "retract", "[I,UB,UA]"),
    ],
)
def test_inspect_modes(tmp_path: Path, kinds: list[str], mode: str, printed: str) -> None:
    f = write_jsonl(tmp_path / "c.jsonl", [{"op": k, "id": 1} for k in kinds])
    report = json.loads(run_cdc(["inspect", f, "--json"]).stdout)
    assert (report["mode"], report["kinds"]) == (mode, printed)


def test_inspect_plain_text_names_findings() -> None:
    out = run_cdc(["inspect", SAMPLES / "product-prices.jsonl", "--key", "product_id"]).stdout.decode()
    assert "kinds:     [I,UB,UA,D]  (retract)" in out
    assert "update-before differs from the stored row 2" in out


# -- property: the engine equals a plain dict applied in order ---------------------------------


@st.composite
def consistent_changelogs(draw: Any) -> list[tuple[str, dict[str, Any]]]:
    live: dict[int, dict[str, Any]] = {}
    out = []
    for _ in range(draw(st.integers(0, 40))):
        k = draw(st.integers(0, 6))
        row = {"id": k, "v": draw(st.integers(0, 3)), "s": draw(st.sampled_from(["x", "y", None]))}
        if k not in live:
            out.append(("+I", row))
            live[k] = row
        else:
            choice = draw(st.sampled_from(["retract", "upsert", "delete"]))
            if choice == "retract":
                out += [("-U", live[k]), ("+U", row)]
                live[k] = row
            elif choice == "upsert":
                out.append(("+U", row))
                live[k] = row
            else:
                out.append(("-D", live.pop(k)))
    return out


@settings(max_examples=200, deadline=None)
@given(consistent_changelogs())
def test_keyed_state_equals_a_plain_dict(changes: list[tuple[str, dict[str, Any]]]) -> None:
    state = KeyedState(["id"], Findings(Policy.fail))
    plain: dict[int, dict[str, Any]] = {}
    for kind, row in changes:
        state.apply(kind, row)
        if kind in ("+I", "+U"):
            plain[row["id"]] = row
        else:
            plain.pop(row["id"])
    assert sorted(state.rows(), key=lambda r: r["id"]) == sorted(plain.values(), key=lambda r: r["id"])
    assert len(state) == len(plain)


@settings(max_examples=200, deadline=None)
@given(consistent_changelogs())
def test_multiset_state_equals_a_counter(changes: list[tuple[str, dict[str, Any]]]) -> None:
    state = MultisetState(Findings(Policy.fail))
    bag: Counter[str] = Counter()
    for kind, row in changes:
        state.apply(kind, row)
        bag[json.dumps(row, sort_keys=True)] += 1 if kind in ("+I", "+U") else -1
    assert Counter(json.dumps(r, sort_keys=True) for r in state.rows()) == +bag


def test_strict_state_raises_with_location() -> None:
    state = KeyedState(["id"], Findings(Policy.fail))
    with pytest.raises(InconsistencyError, match="-D of a key that does not exist"):
        state.apply("-D", {"id": 1})


def test_keyed_json_lines_out_keep_values_as_written(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"op":"+I","id":1,"price":12.00,"name":"caf\\u00e9"}\n'
        '{"op":"+I","id":2,"price":1E2,"name":"b"}\n'
        '{"op":"-U","id":2,"price":1E2,"name":"b"}\n'
        '{"op":"+U","id":2, "price":3.10 ,"name":"b"}\n'
    )
    result = invoke(["materialize", log, "--key", "id", "--stats"])
    # The scale as the change wrote it, compact, like every JSONL to JSONL conversion (the C
    # kernel also keeps the escape; without it the same string is written as UTF-8).
    assert [line.replace("\\u00e9", "é") for line in result.stdout.splitlines()] == [
        '{"id":1,"price":12.00,"name":"café"}',
        '{"id":2,"price":3.10,"name":"b"}',
    ]
    assert "2 live rows" in result.stderr
    # Sorted, or not JSON lines: rows are values again, and numbers keep their spelling.
    assert invoke(["materialize", log, "--key", "id", "--sort"]).stdout.splitlines()[0] == (
        '{"id":1,"price":12.00,"name":"café"}'
    )
    invoke(["materialize", log, "--key", "id", "-o", tmp_path / "t.csv"])
    assert (tmp_path / "t.csv").read_text().splitlines()[1:] == ["1,12.00,café", "2,3.10,b"]
    assert invoke(["materialize", log, "--key", "id", "-f", "print"]).stdout.splitlines() == [
        "+I[1, 12.00, café]",
        "+I[2, 3.10, b]",
    ]
    # A finding moves the table to the general state: values as parsed, spelled as read.
    log.write_text(log.read_text() + '{"op":"+I","id":1,"price":1.50,"name":"x"}\n')
    result = invoke(["materialize", log, "--key", "id"])
    assert result.stdout.splitlines() == ['{"id":1,"price":1.50,"name":"x"}', '{"id":2,"price":3.10,"name":"b"}']
