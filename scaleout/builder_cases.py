"""Harness cases that call the SQL builders of ``cdc.core.flinksql`` directly: the commands whose
CLI has no ``--print-sql`` yet (materialize, replay, debezium-encode, decode of Canal / Maxwell /
OGG, aggregate) and the sinks. Each is compared with cdc's own command where cdc has it, with
cdc's core decoder for Canal / Maxwell / OGG (no CLI yet), else with rows written down by hand
from the documented semantics (aggregate; the note says which)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from cdc.core import flinksql as fs

S = Path(__file__).resolve().parent.parent / "samples"


def _columns(path: Path, **override: str) -> dict[str, str]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip() and line.strip() != "null"]
    return fs.infer_columns(rows) | override


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _cdc_to_file(args: list[str], out: Path, cdc: list[str]) -> Path:
    out.write_bytes(subprocess.run([*cdc, *args], capture_output=True, check=True).stdout)
    return out


def builder_cases(work: Path) -> list[Any]:
    from flink_check import Case, cdc_bin

    cdc = cdc_bin()
    work.mkdir(parents=True, exist_ok=True)
    changes = _cdc_to_file(["from-changelog", str(S / "orders-ops.csv")], work / "orders-changelog.jsonl", cdc)
    ccols = _columns(changes)
    src = fs.Source(str(changes), "jsonl")
    clicks = fs.Source(str(S / "clicks.jsonl"), "jsonl")
    click_cols = {"user": "STRING", "url": "STRING", "cTime": "TIMESTAMP(3)"}
    cases = [
        Case(
            "materialize multiset",
            "materialize",
            [changes],
            output="table",
            builder=lambda: fs.materialize_sql(src, ccols),
            note="Flink's changelog netted as a multiset",
        ),
        Case(
            "materialize --key order_id",
            "materialize",
            [changes],
            ["--key", "order_id"],
            output="table",
            keys=["order_id"],
            builder=lambda: fs.materialize_sql(src, ccols, keys=["order_id"]),
            note="Flink's changelog netted by key, as an upsert sink keyed by order_id stores it",
        ),
        Case(
            "clicks --order-by cTime",
            "replay",
            [S / "clicks.jsonl"],
            ["--input-mode", "append", "--key", "user", "--order-by", "cTime"],
            keys=["user"],
            builder=lambda: fs.replay_sql(clicks, click_cols, ["user"], input_mode="append", order_by="cTime"),
        ),
        Case(
            "clicks --order-by cTime --emit upsert",
            "replay",
            [S / "clicks.jsonl"],
            ["--input-mode", "append", "--key", "user", "--order-by", "cTime", "--emit", "upsert"],
            keys=["user"],
            builder=lambda: fs.replay_sql(
                clicks, click_cols, ["user"], input_mode="append", order_by="cTime", emit="upsert"
            ),
        ),
        Case(
            "orders changelog → filesystem sink",
            "from-changelog",
            [S / "orders-bad-op.jsonl"],
            ["--on-error", "skip"],
            builder=lambda: fs.from_changelog_sql(
                "cdc from-changelog",
                fs.Source(str(S / "orders-bad-op.jsonl"), "jsonl"),
                _columns(S / "orders-bad-op.jsonl"),
                "op",
                {k.name: k for k in fs.ALL_KINDS},
                skip=True,
                sink=fs.Sink("filesystem", path=str(work / "sink-from")),
            ),
            sink_dir=work / "sink-from",
            note="INSERT INTO a filesystem sink; the files read back",
        ),
        Case(
            "orders changelog --split-updates",
            "debezium-encode",
            [changes],
            ["--split-updates"],
            output="events",
            builder=lambda: fs.debezium_encode_sql(
                src, ccols, fs.Sink("filesystem", path=str(work / "sink-dbz")), split_updates=True
            ),
            sink_dir=work / "sink-dbz",
            note="debezium-json files read back; ts_ms/source not compared (Flink writes none)",
        ),
        Case(
            "orders changelog (one u event per update)",
            "debezium-encode",
            [changes],
            builder=lambda: fs.debezium_encode_sql(
                src, ccols, fs.Sink("filesystem", path=str(work / "sink-dbz")), split_updates=False
            ),
        ),
    ]
    cases += envelope_cases(work)
    cases += aggregate_cases(work, clicks)
    return cases


def envelope_cases(work: Path) -> list[Any]:
    from flink_check import Case

    canal = _write(
        work / "canal.jsonl",
        [
            {
                "data": [{"id": "1", "name": "a", "w": "1.5"}, {"id": "2", "name": "b", "w": "2.5"}],
                "old": None,
                "type": "INSERT",
                "database": "db",
                "table": "t",
                "es": 1,
                "ts": 2,
                "isDdl": False,
            },
            {
                "data": [{"id": "1", "name": "a2", "w": "1.5"}],
                "old": [{"name": "a"}],
                "type": "UPDATE",
                "database": "db",
                "table": "t",
                "es": 3,
                "ts": 4,
                "isDdl": False,
            },
            {
                "data": None,
                "old": None,
                "type": "CREATE",
                "sql": "CREATE TABLE x (id INT)",
                "database": "db",
                "table": "x",
                "es": 5,
                "ts": 6,
                "isDdl": True,
            },
            {
                "data": [{"id": "2", "name": "b", "w": "2.5"}],
                "old": None,
                "type": "DELETE",
                "database": "db",
                "table": "t",
                "es": 7,
                "ts": 8,
                "isDdl": False,
            },
        ],
    )
    maxwell = _write(
        work / "maxwell.jsonl",
        [
            {"database": "db", "table": "t", "type": "insert", "ts": 1, "data": {"id": 1, "name": "a", "w": 1.5}},
            {
                "database": "db",
                "table": "t",
                "type": "update",
                "ts": 2,
                "data": {"id": 1, "name": "a2", "w": 1.5},
                "old": {"name": "a"},
            },
            {"database": "db", "table": "t", "type": "delete", "ts": 3, "data": {"id": 1, "name": "a2", "w": 1.5}},
        ],
    )
    ogg = _write(
        work / "ogg.jsonl",
        [
            {
                "table": "S.T",
                "op_type": "I",
                "op_ts": "2024-01-01 00:00:00.000000",
                "current_ts": "2024-01-01 00:00:01.000000",
                "pos": "1",
                "after": {"id": 1, "name": "a", "w": 1.5},
            },
            {
                "table": "S.T",
                "op_type": "U",
                "op_ts": "2024-01-01 00:00:02.000000",
                "current_ts": "2024-01-01 00:00:03.000000",
                "pos": "2",
                "before": {"id": 1, "name": "a", "w": 1.5},
                "after": {"id": 1, "name": "a2", "w": 1.5},
            },
            {
                "table": "S.T",
                "op_type": "D",
                "op_ts": "2024-01-01 00:00:04.000000",
                "current_ts": "2024-01-01 00:00:05.000000",
                "pos": "3",
                "before": {"id": 1, "name": "a2", "w": 1.5},
            },
        ],
    )
    cols = {"id": "BIGINT", "name": "STRING", "w": "DOUBLE"}

    def r(kind: str, i: int, name: str, w: float) -> tuple[str, dict[str, Any]]:
        return kind, {"id": i, "name": name, "w": w}

    def core(name: str, path: Path, hand: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
        """cdc's core decoder of the envelope (no CLI command yet), checked against rows by hand."""
        from cdc.core.envelopes import decoder_for

        decoder = decoder_for(name)
        rows = [change for line in path.read_text().splitlines() for change in decoder.decode(json.loads(line))]
        mine = [(k, {c: str(v) for c, v in r.items()}) for k, r in hand]
        theirs = [(k, {c: str(v) for c, v in r.items()}) for k, r in rows]
        if mine != theirs:
            raise AssertionError(f"cdc's {name} decoder {theirs} differs from the documented semantics {mine}")
        return rows

    by_hand = "cdc's core decoder (no decode CLI yet), equal to rows by hand from the format's documented semantics"

    def sample_case(name: str, skip: bool = False, table: str | None = None, key: str | None = None) -> Any:
        """A bundled sample through cdc's core decoder; columns inferred from its rows, as
        --print-sql infers them from the decoded sample."""
        from cdc.cli.print_sql import scan_events
        from cdc.core.envelopes import EnvelopeOptions, decoder_for
        from cdc.core.errors import InputError

        path = S / f"{name}-products.jsonl"
        decoder = decoder_for(name, EnvelopeOptions(table_include=table, key=(key,) if key else ()))
        rows: list[tuple[str, dict[str, Any]]] = []
        note = "cdc's core decoder (no decode CLI yet)"
        try:
            for line in path.read_text().splitlines():
                rows += decoder.decode(json.loads(line)) if line.strip() else []
        except InputError as exc:
            note += f"; it stops: {str(exc)[:90]}"
        types = fs.infer_columns(r for _, r in rows)
        info = scan_events(str(path), envelope=name)
        flags = ["--envelope", name]
        flags += ["--on-error", "skip"] if skip else []
        flags += ["--table-include", table] if table else []
        flags += ["--key", key] if key else []
        return Case(
            f"{name}-products.jsonl {' '.join(flags[2:])}".strip(),
            "decode",
            [path],
            flags,
            builder=lambda: fs.decode_sql(
                fs.Source(str(path), name), types, info=info, skip=skip, table_include=table, key=[key] if key else []
            ),
            expected=rows,
            keys=[key] if key else [],
            note=note,
        )

    return [
        sample_case("canal"),
        sample_case("canal", skip=True),
        sample_case("canal", skip=True, table="products"),
        sample_case("maxwell"),
        sample_case("maxwell", skip=True),
        sample_case("ogg"),
        sample_case("ogg", key="ID"),
        Case(
            "canal: data array, old merged, DDL skipped",
            "decode",
            [canal],
            ["--envelope", "canal"],
            builder=lambda: fs.decode_sql(fs.Source(str(canal), "canal"), cols),
            expected=[
                r("+I", 1, "a", 1.5),
                r("+I", 2, "b", 2.5),
                r("-U", 1, "a", 1.5),
                r("+U", 1, "a2", 1.5),
                r("-D", 2, "b", 2.5),
            ],
            note=by_hand,
        ),
        Case(
            "maxwell: data, old merged",
            "decode",
            [maxwell],
            ["--envelope", "maxwell"],
            builder=lambda: fs.decode_sql(fs.Source(str(maxwell), "maxwell"), cols),
            expected=core(
                "maxwell",
                maxwell,
                [r("+I", 1, "a", 1.5), r("-U", 1, "a", 1.5), r("+U", 1, "a2", 1.5), r("-D", 1, "a2", 1.5)],
            ),
            note=by_hand,
        ),
        Case(
            "ogg: op_type I/U/D",
            "decode",
            [ogg],
            ["--envelope", "ogg"],
            builder=lambda: fs.decode_sql(fs.Source(str(ogg), "ogg"), cols),
            expected=core(
                "ogg", ogg, [r("+I", 1, "a", 1.5), r("-U", 1, "a", 1.5), r("+U", 1, "a2", 1.5), r("-D", 1, "a2", 1.5)]
            ),
            note=by_hand,
        ),
    ]


def aggregate_cases(work: Path, clicks: Any) -> list[Any]:
    from flink_check import Case

    click_cols = {"user": "STRING", "url": "STRING", "cTime": "STRING"}
    counts = _write(
        work / "user-counts.jsonl",
        [
            {"op": "+I", "user": "Mary", "cnt": 1},
            {"op": "+I", "user": "Bob", "cnt": 1},
            {"op": "-U", "user": "Mary", "cnt": 1},
            {"op": "+U", "user": "Mary", "cnt": 2},
            {"op": "-U", "user": "Bob", "cnt": 1},
            {"op": "+U", "user": "Bob", "cnt": 2},
        ],
    )

    def u(kind: str, user: str, cnt: int) -> tuple[str, dict[str, Any]]:
        return kind, {"user": user, "cnt": cnt}

    def c(kind: str, cnt: int, users: int) -> tuple[str, dict[str, Any]]:
        return kind, {"cnt": cnt, "users": users}

    by_hand = "rows by hand from the group aggregate's documented update log (cdc has no aggregate yet)"
    return [
        Case(
            "clicks: COUNT(*) per user",
            "aggregate",
            [S / "clicks.jsonl"],
            ["--group-by", "user", "--agg", "cnt=COUNT(*)"],
            keys=["user"],
            builder=lambda: fs.aggregate_sql(clicks, click_cols, ["user"], [("cnt", "COUNT", None, False)]),
            expected=[
                u("+I", "Mary", 1),
                u("+I", "Bob", 1),
                u("-U", "Mary", 1),
                u("+U", "Mary", 2),
                u("+I", "Liz", 1),
                u("-U", "Bob", 1),
                u("+U", "Bob", 2),
                u("-U", "Mary", 2),
                u("+U", "Mary", 3),
            ],
            note=by_hand,
        ),
        Case(
            "clicks: COUNT(*) per user WHERE url <> './home'",
            "aggregate",
            [S / "clicks.jsonl"],
            ["--group-by", "user", "--agg", "cnt=COUNT(*)", "--where", "url <> './home'"],
            keys=["user"],
            builder=lambda: fs.aggregate_sql(
                clicks, click_cols, ["user"], [("cnt", "COUNT", None, False)], where="`url` <> './home'"
            ),
            expected=[
                u("+I", "Bob", 1),
                u("+I", "Mary", 1),
                u("-U", "Bob", 1),
                u("+U", "Bob", 2),
                u("-U", "Mary", 1),
                u("+U", "Mary", 2),
            ],
            note=by_hand,
        ),
        Case(
            "count of counts (changelog input, a group empties)",
            "aggregate",
            [counts],
            ["--input-mode", "changelog", "--group-by", "cnt", "--agg", "users=COUNT(*)"],
            keys=["cnt"],
            builder=lambda: fs.aggregate_sql(
                fs.Source(str(counts), "jsonl"),
                {"op": "STRING", "user": "STRING", "cnt": "BIGINT"},
                ["cnt"],
                [("users", "COUNT", None, False)],
                input_mode="changelog",
            ),
            expected=[
                c("+I", 1, 1),
                c("-U", 1, 1),
                c("+U", 1, 2),
                c("-U", 1, 2),
                c("+U", 1, 1),
                c("+I", 2, 1),
                c("-D", 1, 1),
                c("-U", 2, 1),
                c("+U", 2, 2),
            ],
            note=by_hand,
        ),
    ]
