"""replay: ChangelogNormalize semantics, versioned views, windows and the net change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import SAMPLES, parse_jsonl, run_cdc, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.core.replay import replay
from cdc.core.specs import ReplaySpec
from cdc.core.state import Findings, KeyedState, Policy


def printed(stdout: bytes) -> list[str]:
    return stdout.decode().splitlines()


def test_currency_rates_versioned_view_upsert() -> None:
    result = run_cdc(
        [
            "replay",
            SAMPLES / "currency-rates.csv",
            "--input-mode",
            "upsert",
            "--key",
            "currency",
            "--emit",
            "upsert",
            "-f",
            "print",
        ]
    )
    assert printed(result.stdout) == [
        "+I[09:00:00, Yen, 102]",
        "+I[09:00:00, Euro, 114]",
        "+I[09:00:00, USD, 1]",
        "+U[11:15:00, Euro, 119]",
        "+I[11:45:00, Pounds, 107]",
        "+U[11:49:00, Pounds, 108]",
    ]


def test_currency_rates_versioned_view_retract() -> None:
    result = run_cdc(
        [
            "replay",
            SAMPLES / "currency-rates.csv",
            "--input-mode",
            "upsert",
            "--key",
            "currency",
            "--emit",
            "retract",
            "-f",
            "print",
        ]
    )
    assert printed(result.stdout) == [
        "+I[09:00:00, Yen, 102]",
        "+I[09:00:00, Euro, 114]",
        "+I[09:00:00, USD, 1]",
        "-U[09:00:00, Euro, 114]",
        "+U[11:15:00, Euro, 119]",
        "+I[11:45:00, Pounds, 107]",
        "-U[11:45:00, Pounds, 107]",
        "+U[11:49:00, Pounds, 108]",
    ]


def test_late_row_with_order_by_does_not_change_state(tmp_path: Path) -> None:
    rows = [
        {"update_time": "09:00:00", "currency": "Euro", "rate": 114},
        {"update_time": "11:15:00", "currency": "Euro", "rate": 119},
        {"update_time": "10:00:00", "currency": "Euro", "rate": 100},
    ]  # arrives late
    f = write_jsonl(tmp_path / "rates.jsonl", rows)
    args = ["replay", f, "--input-mode", "upsert", "--key", "currency", "--emit", "upsert"]
    ordered = run_cdc([*args, "--order-by", "update_time", "--stats"])
    assert [r["rate"] for r in parse_jsonl(ordered.stdout)] == [114, 119]
    assert b"1 late row(s) ignored" in ordered.stderr
    unordered = run_cdc(args)
    assert [r["rate"] for r in parse_jsonl(unordered.stdout)] == [114, 119, 100]


def test_upsert_input_with_delete_flag_emits_full_deletes() -> None:
    result = run_cdc(
        [
            "replay",
            SAMPLES / "flat-cdc.jsonl",
            "--input-mode",
            "upsert",
            "--key",
            "id",
            "--delete-when",
            "__deleted=true",
        ]
    )
    rows = parse_jsonl(result.stdout)
    assert [(r["op"], r["id"]) for r in rows] == [
        ("+I", 1),
        ("+I", 2),
        ("+I", 3),
        ("-U", 1),
        ("+U", 1),
        ("-D", 2),
        ("-U", 3),
        ("+U", 3),
        ("+I", 4),
    ]
    assert rows[5]["__op"] == "r"  # the -D carries the stored image, not the delete event's row


CHANGES = [
    {"op": "+I", "id": 1, "v": "a"},
    {"op": "+I", "id": 2, "v": "x"},
    {"op": "-U", "id": 1, "v": "a"},
    {"op": "+U", "id": 1, "v": "b"},
    {"op": "-U", "id": 2, "v": "x"},
    {"op": "+U", "id": 2, "v": "x"},  # a no-op update
    {"op": "-D", "id": 1, "v": "b"},
]


def test_retract_upsert_retract_rebuilds_the_log_minus_noops(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "c.jsonl", CHANGES)
    upsert = run_cdc(["replay", f, "--key", "id", "--emit", "upsert"])
    assert [r["op"] for r in parse_jsonl(upsert.stdout)] == ["+I", "+I", "+U", "-D"]
    upsert_with_key_only_delete = upsert.stdout.replace(b'{"op":"-D","id":1,"v":"b"}', b'{"op":"-D","id":1}')
    back = run_cdc(["replay", "--key", "id", "--emit", "retract"], stdin=upsert_with_key_only_delete)
    assert parse_jsonl(back.stdout) == CHANGES[:4] + CHANGES[6:]


def test_keep_noop(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "c.jsonl", CHANGES)
    kept = run_cdc(["replay", f, "--key", "id", "--keep-noop"])
    assert [r["op"] for r in parse_jsonl(kept.stdout)] == ["+I", "+I", "-U", "+U", "-U", "+U", "-D"]


TIMED = [
    {"op": "+I", "id": 1, "v": "a", "ts": 1},
    {"op": "+I", "id": 2, "v": "x", "ts": 2},
    {"op": "+U", "id": 1, "v": "b", "ts": 3},
    {"op": "+I", "id": 3, "v": "n", "ts": 4},
    {"op": "-D", "id": 2, "v": "x", "ts": 5},
    {"op": "+U", "id": 1, "v": "c", "ts": 6},
]


def test_since_until_window(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "c.jsonl", TIMED)
    result = run_cdc(["replay", f, "--key", "id", "--time-column", "ts", "--since", "2", "--until", "5"])
    assert [(r["op"], r["id"], r["v"]) for r in parse_jsonl(result.stdout)] == [
        ("-U", 1, "a"),
        ("+U", 1, "b"),
        ("+I", 3, "n"),
        ("-D", 2, "x"),
    ]


def test_net_change_between_two_times(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "c.jsonl", TIMED)
    result = run_cdc(["replay", f, "--key", "id", "--time-column", "ts", "--since", "2", "--until", "6", "--net"])
    assert [(r["op"], r["id"], r["v"]) for r in parse_jsonl(result.stdout)] == [
        ("-U", 1, "a"),
        ("+U", 1, "c"),
        ("-D", 2, "x"),
        ("+I", 3, "n"),
    ]


def test_usage_errors() -> None:
    assert run_cdc(["replay", "--emit", "upsert"], stdin=b"").returncode == 2  # no --key
    assert b"--net needs both" in run_cdc(["replay", "--key", "id", "--net", "--time-column", "t"], stdin=b"").stderr
    assert b"--since/--until need --time-column" in run_cdc(["replay", "--key", "id", "--since", "1"], stdin=b"").stderr


def test_live_refuses_when_stdout_is_not_a_terminal() -> None:
    result = run_cdc(
        ["replay", SAMPLES / "currency-rates.csv", "--input-mode", "upsert", "--key", "currency", "--live"]
    )
    assert result.returncode == 2 and b"not one" in result.stderr and b"Traceback" not in result.stderr


# -- properties ---------------------------------------------------------------------------------


@st.composite
def logs(draw: Any) -> list[dict[str, Any]]:
    live: dict[int, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for t in range(draw(st.integers(0, 30))):
        k = draw(st.integers(0, 5))
        row = {"id": k, "v": draw(st.integers(0, 2)), "ts": t}
        if k not in live:
            out.append({"op": "+I", **row})
            live[k] = row
        elif draw(st.booleans()):
            # a retraction carries the time of the change, as in Flink's versioned-table example
            old = {**live[k], "ts": t}
            out += [{"op": "-U", **old}, {"op": "+U", **row}] if draw(st.booleans()) else [{"op": "+U", **row}]
            live[k] = row
        else:
            out.append({"op": "-D", **live.pop(k), "ts": t})
    return out


def materialize(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    state = KeyedState(["id"], Findings(Policy.ignore))
    for change in log:
        state.apply(change["op"], {k: v for k, v in change.items() if k != "op"})
    return sorted(state.rows(), key=lambda r: r["id"])


def as_log(changes: Any) -> list[dict[str, Any]]:
    return [{"op": kind, **image} for kind, image in changes]


def split(log: list[dict[str, Any]]) -> Any:
    return ((c["op"], {k: v for k, v in c.items() if k != "op"}) for c in log)


@settings(max_examples=200, deadline=None)
@given(logs(), st.sampled_from(["retract", "upsert"]))
def test_materialize_of_replay_equals_materialize(log: list[dict[str, Any]], emit: str) -> None:
    replayed = as_log(replay(split(log), ReplaySpec(("id",), emit=emit)))
    assert materialize(replayed) == materialize(log)
    if emit == "upsert":
        assert all(c["op"] != "-U" for c in replayed)


@settings(max_examples=200, deadline=None)
@given(logs(), st.integers(0, 30), st.integers(0, 30), st.sampled_from(["retract", "upsert"]))
def test_net_applied_to_state_at_t1_gives_state_at_t2(log: list[dict[str, Any]], a: int, b: int, emit: str) -> None:
    t1, t2 = min(a, b), max(a, b)
    net = as_log(replay(split(log), ReplaySpec(("id",), emit=emit, time_column="ts", since=t1, until=t2, net=True)))
    at_t1 = materialize([c for c in log if c["ts"] <= t1])
    at_t2 = materialize([c for c in log if c["ts"] <= t2])
    state = KeyedState(["id"], Findings(Policy.fail))
    for row in at_t1:
        state.apply("+I", row)
    for change in net:
        state.apply(change["op"], {k: v for k, v in change.items() if k != "op"})
    assert sorted(state.rows(), key=lambda r: r["id"]) == at_t2


def test_replay_retract_output_is_consistent_for_strict_materialize(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "c.jsonl", CHANGES)
    replayed = run_cdc(["replay", f, "--key", "id"]).stdout
    strict = run_cdc(["materialize", "--key", "id", "--strict"], stdin=replayed)
    assert strict.returncode == 0 and json.loads(strict.stdout) == {"id": 2, "v": "x"}


@pytest.mark.parametrize("mode", ["append"])
def test_append_mode_reads_plain_rows_as_inserts(tmp_path: Path, mode: str) -> None:
    f = write_jsonl(tmp_path / "c.jsonl", [{"id": 1, "v": "a"}, {"id": 1, "v": "b"}])
    rows = parse_jsonl(run_cdc(["replay", f, "--input-mode", mode, "--key", "id", "--emit", "upsert"]).stdout)
    assert [(r["op"], r["v"]) for r in rows] == [("+I", "a"), ("+U", "b")]
