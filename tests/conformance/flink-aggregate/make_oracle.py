"""Regenerate the ``flink-aggregate`` oracle: every case's input, run through Apache Flink 2.3.

Runnable only where PyFlink is installed (it is not a dependency of cdc)::

    python3 -m venv .flink-venv && .flink-venv/bin/pip install apache-flink==2.3.0
    .flink-venv/bin/python tests/conformance/flink-aggregate/make_oracle.py [CASE ...]

For each case it writes ``input.jsonl`` (seeded, so the same bytes every time), ``schema.json``
(the column types Flink read), ``args.json`` (the ``cdc aggregate`` flags for the same job),
``query.sql`` (what Flink ran) and ``expected.jsonl`` (every row Flink emitted, in order, as
``{"kind": "+I", "row": {...}}``). Flink runs in a local mini-cluster at parallelism 1, without
mini-batch, so the group aggregate is ``GroupAggFunction`` and the order of its output is fixed
by the input order.

- Append-only input: a filesystem table in JSON format over ``input.jsonl``.
- Changelog input: the same, read through ``FROM_CHANGELOG`` (op column ``op``, Flink's default
  mapping of the long names INSERT/UPDATE_BEFORE/UPDATE_AFTER/DELETE).
- Upsert input: Flink 2.3's FROM_CHANGELOG has no PARTITION BY (no upsert mode), so the rows go
  through ``from_changelog_stream(..., ChangelogMode.upsert())`` with ``PRIMARY KEY (id)``; the
  planner puts ChangelogNormalize before the aggregate, as it does for an upsert-kafka source.
- Retract emission: ``execute_sql(query).collect()``; the collect sink needs update-befores.
- Upsert emission: ``to_changelog_stream(table, schema with PRIMARY KEY(group columns),
  ChangelogMode.upsert())``: the planner then runs the aggregate with generateUpdateBefore=false,
  the form a sink with a primary key gets.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parents[2] / "samples"
LONG = {"+I": "INSERT", "-U": "UPDATE_BEFORE", "+U": "UPDATE_AFTER", "-D": "DELETE"}


@dataclass
class Case:
    name: str
    mode: str  # append | changelog | upsert
    schema: dict[str, str]  # column → Flink type (the op column excluded)
    query: str  # SELECT ... FROM {src} ...
    flags: list[str]
    rows: Callable[[], list[dict[str, Any]]]  # changelog/upsert rows carry their kind in "op"
    emit: str = "retract"
    group_by: list[str] = field(default_factory=list)
    note: str = ""


# ---------------------------------------------------------------------------------------------
# Inputs


def sample(name: str) -> Callable[[], list[dict[str, Any]]]:
    def rows() -> list[dict[str, Any]]:
        return [json.loads(line) for line in (SAMPLES / name).read_text().splitlines() if line.strip()]

    return rows


clicks = sample("clicks.jsonl")  # the docs' six clicks
clicks_continued = sample("clicks-continued.jsonl")  # ... and three more, so that count groups empty


def log_of(case: str) -> Callable[[], list[dict[str, Any]]]:
    """A case's retract log, as changelog rows: the input of an aggregation over it."""

    def rows() -> list[dict[str, Any]]:
        return [{"op": LONG[e["kind"]], **e["row"]} for e in read_expected(HERE / case)]

    return rows


PAGES = ["./home", "./cart", "./checkout", "./search"] + [f"./prod?id={i}" for i in range(1, 27)]


def random_clicks(seed: int, n: int, users: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        rows.append(
            {
                "user": f"u{rnd.randrange(users):02d}",
                "url": None if rnd.random() < 0.03 else rnd.choice(PAGES),
                "dwell": None if rnd.random() < 0.05 else rnd.randrange(0, 300),
                "ts": 1714564800 + i,
            }
        )
    return rows


def random_changelog(
    seed: int, n: int, ids: int, make: Callable[[random.Random, int], dict[str, Any]], delete_share: float = 0.15
) -> list[dict[str, Any]]:
    """A consistent changelog of a table keyed by ``id``: inserts, updates (-U old, +U new) and
    deletes, each retraction carrying the stored row."""
    rnd = random.Random(seed)
    live: dict[int, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    while len(out) < n:
        i = rnd.randrange(ids)
        old = live.get(i)
        if old is None:
            new = {"id": i, **make(rnd, i)}
            live[i] = new
            out.append({"op": "INSERT", **new})
        elif rnd.random() < delete_share:
            del live[i]
            out.append({"op": "DELETE", **old})
        else:
            new = {"id": i, **make(rnd, i)}
            if rnd.random() < 0.5:  # keep the group (the first column): an update inside one group
                group = next(k for k in new if k != "id")
                new[group] = old[group]
            live[i] = new
            out.append({"op": "UPDATE_BEFORE", **old})
            out.append({"op": "UPDATE_AFTER", **new})
    return out


def click_row(users: int) -> Callable[[random.Random, int], dict[str, Any]]:
    def make(rnd: random.Random, i: int) -> dict[str, Any]:
        return {
            "user": f"u{rnd.randrange(users):02d}",
            "url": None if rnd.random() < 0.05 else rnd.choice(PAGES[:12]),
            "dwell": None if rnd.random() < 0.08 else rnd.randrange(-20, 120),
        }

    return make


def money_row(rnd: random.Random, i: int) -> dict[str, Any]:
    cents = rnd.randrange(-5000, 50000)
    return {
        "account": f"a{rnd.randrange(6)}",
        "amount": None if rnd.random() < 0.05 else Decimal(cents).scaleb(-2),
        "ratio": None if rnd.random() < 0.05 else round(rnd.uniform(-10, 10), rnd.choice([1, 3, 6])),
    }


def ints_row(rnd: random.Random, i: int) -> dict[str, Any]:
    return {"grp": f"g{rnd.randrange(4)}", "v": rnd.randrange(-7, 8)}


def upsert_rows() -> list[dict[str, Any]]:
    """Upsert input (key ``id``): each row replaces its key's row; ``__deleted`` marks a delete."""
    rnd = random.Random(11)
    live: dict[int, dict[str, Any]] = {}
    out = []
    for _ in range(600):
        i = rnd.randrange(60)
        if i in live and rnd.random() < 0.2:
            out.append({**live.pop(i), "__deleted": "true"})
            continue
        row = {"id": i, "user": f"u{rnd.randrange(8)}", "dwell": rnd.randrange(0, 50), "__deleted": "false"}
        if i in live and rnd.random() < 0.1:
            row = dict(live[i])  # an unchanged upsert: ChangelogNormalize drops it
        live[i] = row
        out.append(row)
    return out


def nulls_log() -> list[dict[str, Any]]:
    def c(op: str, g: str | None, x: int | None, s: str | None) -> dict[str, Any]:
        return {"op": op, "g": g, "x": x, "s": s}

    return [
        c("INSERT", "a", None, None),  # a group whose values are all null
        c("INSERT", None, 5, "p"),  # a null group key is a group like any other
        c("INSERT", "a", None, "q"),
        c("INSERT", "b", 3, "p"),
        c("INSERT", "b", None, None),
        c("DELETE", "b", 3, "p"),  # the only non-null retracted: SUM/MIN/MAX/AVG back to null
        c("INSERT", None, 7, "p"),
        c("INSERT", "b", 4, "r"),
        c("DELETE", None, 5, "p"),
        c("UPDATE_BEFORE", "a", None, "q"),
        c("UPDATE_AFTER", "a", 0, "q"),
        c("DELETE", "b", None, None),
        c("DELETE", "b", 4, "r"),  # group b empties: -D
        c("INSERT", "b", None, None),  # and comes back as +I
    ]


def global_log() -> list[dict[str, Any]]:
    xs = [("INSERT", 4), ("INSERT", 9), ("INSERT", 4), ("DELETE", 9), ("DELETE", 4), ("DELETE", 4)]
    xs += [("INSERT", -2), ("INSERT", 6), ("UPDATE_BEFORE", 6), ("UPDATE_AFTER", 1)]
    return [{"op": op, "x": x} for op, x in xs]


def inconsistent_log() -> list[dict[str, Any]]:
    """Retractions Flink cannot match: of a group that does not exist (skipped), and of values
    never accumulated into an existing group (applied, with Flink's quirks)."""

    def c(op: str, g: str, x: int | None) -> dict[str, Any]:
        return {"op": op, "g": g, "x": x}

    return [
        c("DELETE", "zz", 1),  # no such group: nothing
        c("INSERT", "a", 5),
        c("INSERT", "a", 3),
        c("DELETE", "a", 9),  # never accumulated: MAX keeps a -1 count for 9, COUNT(*) drops to 1
        c("INSERT", "a", 9),  # ... which this insert cancels: 9 never becomes the MAX's map entry
        c("INSERT", "a", 4),
        c("DELETE", "a", 5),
        c("UPDATE_BEFORE", "b", 2),  # no such group
        c("UPDATE_AFTER", "b", 2),
        c("DELETE", "a", 4),
        c("DELETE", "a", 3),
        c("DELETE", "a", 7),  # after the group emptied: no such group any more
    ]


# ---------------------------------------------------------------------------------------------
# Cases

ALL_FUNCS = (
    "COUNT(*) AS n, COUNT(url) AS urls, COUNT(DISTINCT url) AS pages, SUM(dwell) AS total, "
    "MIN(dwell) AS shortest, MAX(dwell) AS longest, AVG(dwell) AS mean, MAX(url) AS last_page, "
    "FIRST_VALUE(url) AS first_url, LAST_VALUE(url) AS last_url"
)
ALL_FLAGS = [
    "--agg", "n=COUNT(*)", "--agg", "urls=COUNT(url)", "--agg", "pages=COUNT(DISTINCT url)",
    "--agg", "total=SUM(dwell)", "--agg", "shortest=MIN(dwell)", "--agg", "longest=MAX(dwell)",
    "--agg", "mean=AVG(dwell)", "--agg", "last_page=MAX(url)", "--agg", "first_url=FIRST_VALUE(url)",
    "--agg", "last_url=LAST_VALUE(url)",
]  # fmt: skip
CLICKS = {"user": "STRING", "url": "STRING", "cTime": "STRING"}
RANDOM_CLICKS = {"user": "STRING", "url": "STRING", "dwell": "BIGINT", "ts": "BIGINT"}
CHANGELOG_CLICKS = {"id": "BIGINT", "user": "STRING", "url": "STRING", "dwell": "BIGINT"}

CASES = [
    Case(
        "clicks_count", "append", CLICKS,
        "SELECT `user`, COUNT(url) AS cnt FROM {src} GROUP BY `user`",
        ["--input-mode", "append", "--group-by", "user", "--agg", "cnt=COUNT(url)"],
        clicks, group_by=["user"], note="the dynamic-tables docs' example (samples/clicks.jsonl)",
    ),
    Case(
        "clicks_count_upsert", "append", CLICKS,
        "SELECT `user`, COUNT(url) AS cnt FROM {src} GROUP BY `user`",
        ["--input-mode", "append", "--group-by", "user", "--agg", "cnt=COUNT(url)", "--emit", "upsert"],
        clicks, emit="upsert", group_by=["user"], note="the same, emitted for a sink keyed by user",
    ),
    Case(
        "count_of_counts", "changelog", {"user": "STRING", "cnt": "BIGINT"},
        "SELECT cnt, COUNT(*) AS freq FROM {src} GROUP BY cnt",
        ["--input-mode", "changelog", "--group-by", "cnt", "--agg", "freq=COUNT(*)"],
        log_of("clicks_count"), group_by=["cnt"],
        note="a second aggregation over clicks_count's retract log",
    ),
    Case(
        "count_of_counts_upsert", "changelog", {"user": "STRING", "cnt": "BIGINT"},
        "SELECT cnt, COUNT(*) AS freq FROM {src} GROUP BY cnt",
        ["--input-mode", "changelog", "--group-by", "cnt", "--agg", "freq=COUNT(*)", "--emit", "upsert"],
        log_of("clicks_count"), emit="upsert", group_by=["cnt"],
    ),
    Case(
        "continued_count", "append", CLICKS,
        "SELECT `user`, COUNT(url) AS cnt FROM {src} GROUP BY `user`",
        ["--input-mode", "append", "--group-by", "user", "--agg", "cnt=COUNT(url)"],
        clicks_continued, group_by=["user"], note="samples/clicks-continued.jsonl: the docs' clicks and three more",
    ),
    Case(
        "continued_count_of_counts", "changelog", {"user": "STRING", "cnt": "BIGINT"},
        "SELECT cnt, COUNT(*) AS freq FROM {src} GROUP BY cnt",
        ["--input-mode", "changelog", "--group-by", "cnt", "--agg", "freq=COUNT(*)"],
        log_of("continued_count"), group_by=["cnt"],
        note="the count of counts over continued_count's log: groups 1 and 2 empty (-D)",
    ),
    Case(
        "random_append", "append", RANDOM_CLICKS,
        f"SELECT `user`, {ALL_FUNCS} FROM {{src}} GROUP BY `user`",
        ["--input-mode", "append", "--group-by", "user", *ALL_FLAGS],
        lambda: random_clicks(1, 3000, 40), group_by=["user"], note="3000 seeded clicks, 40 users",
    ),
    Case(
        "random_append_upsert", "append", RANDOM_CLICKS,
        "SELECT `user`, url, COUNT(*) AS n, SUM(dwell) AS total, MAX(dwell) AS longest FROM {src} GROUP BY `user`, url",
        ["--input-mode", "append", "--group-by", "user,url", "--agg", "n=COUNT(*)", "--agg", "total=SUM(dwell)",
         "--agg", "longest=MAX(dwell)", "--emit", "upsert"],
        lambda: [r for r in random_clicks(2, 2500, 12) if r["url"] is not None], emit="upsert",
        group_by=["user", "url"], note="two group-by columns, upsert emission",
    ),
    Case(
        "random_changelog", "changelog", CHANGELOG_CLICKS,
        f"SELECT `user`, {ALL_FUNCS} FROM {{src}} GROUP BY `user`",
        ["--input-mode", "changelog", "--group-by", "user", *ALL_FLAGS],
        lambda: random_changelog(3, 4000, 250, click_row(15)), group_by=["user"],
        note="4000 changes of a table keyed by id: rows move between groups, groups empty and return",
    ),
    Case(
        "random_changelog_upsert", "changelog", CHANGELOG_CLICKS,
        "SELECT `user`, COUNT(*) AS n, SUM(dwell) AS total, MIN(dwell) AS shortest, AVG(dwell) AS mean "
        "FROM {src} GROUP BY `user`",
        ["--input-mode", "changelog", "--group-by", "user", "--agg", "n=COUNT(*)", "--agg", "total=SUM(dwell)",
         "--agg", "shortest=MIN(dwell)", "--agg", "mean=AVG(dwell)", "--emit", "upsert"],
        lambda: random_changelog(4, 2000, 80, click_row(6)), emit="upsert", group_by=["user"],
    ),
    Case(
        "where", "changelog", CHANGELOG_CLICKS,
        "SELECT `user`, COUNT(*) AS n, SUM(dwell) AS total, MAX(url) AS last_page FROM {src} "
        "WHERE dwell > 10 AND url IS NOT NULL AND `user` <> 'u03' GROUP BY `user`",
        ["--input-mode", "changelog", "--group-by", "user", "--agg", "n=COUNT(*)", "--agg", "total=SUM(dwell)",
         "--agg", "last_page=MAX(url)", "--where", "dwell > 10 AND url IS NOT NULL AND user <> 'u03'"],
        lambda: random_changelog(5, 1500, 100, click_row(6)), group_by=["user"],
        note="a filter on a changelog: kinds pass unchanged, rows whose predicate is not true are dropped",
    ),
    Case(
        "upsert_input", "upsert", {"id": "BIGINT", "user": "STRING", "dwell": "BIGINT", "__deleted": "STRING"},
        "SELECT `user`, COUNT(*) AS n, SUM(dwell) AS total, MAX(dwell) AS longest FROM {src} GROUP BY `user`",
        ["--input-mode", "upsert", "--key", "id", "--delete-when", "__deleted=true", "--group-by", "user",
         "--agg", "n=COUNT(*)", "--agg", "total=SUM(dwell)", "--agg", "longest=MAX(dwell)"],
        upsert_rows, group_by=["user"],
        note="upsert rows keyed by id (ChangelogNormalize before the aggregate)",
    ),
    Case(
        "nulls", "changelog", {"g": "STRING", "x": "BIGINT", "s": "STRING"},
        "SELECT g, COUNT(*) AS n, COUNT(x) AS nx, COUNT(DISTINCT s) AS ds, SUM(x) AS sx, MIN(x) AS lo, "
        "MAX(s) AS hi, AVG(x) AS ax FROM {src} GROUP BY g",
        ["--input-mode", "changelog", "--group-by", "g", "--agg", "n=COUNT(*)", "--agg", "nx=COUNT(x)",
         "--agg", "ds=COUNT(DISTINCT s)", "--agg", "sx=SUM(x)", "--agg", "lo=MIN(x)", "--agg", "hi=MAX(s)",
         "--agg", "ax=AVG(x)"],
        nulls_log, note="null group key, aggregates over nulls only, non-nulls retracted back to null",
    ),
    Case(
        "decimal_double", "changelog", {"id": "BIGINT", "account": "STRING", "amount": "DECIMAL(10, 2)",
                                        "ratio": "DOUBLE"},
        "SELECT account, SUM(amount) AS total, AVG(amount) AS mean, MIN(amount) AS lo, MAX(amount) AS hi, "
        "SUM(ratio) AS rsum, AVG(ratio) AS rmean, MAX(ratio) AS rmax FROM {src} GROUP BY account",
        ["--input-mode", "changelog", "--group-by", "account", "--agg", "total=SUM(amount)",
         "--agg", "mean=AVG(amount)", "--agg", "lo=MIN(amount)", "--agg", "hi=MAX(amount)",
         "--agg", "rsum=SUM(ratio)", "--agg", "rmean=AVG(ratio)", "--agg", "rmax=MAX(ratio)"],
        lambda: random_changelog(6, 1500, 60, money_row), group_by=["account"],
        note="DECIMAL(10, 2) and DOUBLE columns (schema.json); amounts are exact decimals",
    ),
    Case(
        "avg_integers", "changelog", {"id": "BIGINT", "grp": "STRING", "v": "BIGINT"},
        "SELECT grp, SUM(v) AS s, AVG(v) AS a, COUNT(v) AS c FROM {src} GROUP BY grp",
        ["--input-mode", "changelog", "--group-by", "grp", "--agg", "s=SUM(v)", "--agg", "a=AVG(v)",
         "--agg", "c=COUNT(v)"],
        lambda: random_changelog(7, 600, 30, ints_row), group_by=["grp"],
        note="AVG of a BIGINT column is a BIGINT: the quotient truncated toward zero",
    ),
    Case(
        "global", "changelog", {"x": "BIGINT"},
        "SELECT COUNT(*) AS n, SUM(x) AS s, MAX(x) AS m FROM {src}",
        ["--input-mode", "changelog", "--agg", "n=COUNT(*)", "--agg", "s=SUM(x)", "--agg", "m=MAX(x)"],
        global_log, note="no GROUP BY: one global row, deleted when its last row is retracted",
    ),
    Case(
        "inconsistent", "changelog", {"g": "STRING", "x": "BIGINT"},
        "SELECT g, COUNT(*) AS n, SUM(x) AS s, MAX(x) AS m, COUNT(DISTINCT x) AS d FROM {src} GROUP BY g",
        ["--input-mode", "changelog", "--group-by", "g", "--agg", "n=COUNT(*)", "--agg", "s=SUM(x)",
         "--agg", "m=MAX(x)", "--agg", "d=COUNT(DISTINCT x)", "--on-inconsistency", "warn"],
        inconsistent_log,
        note="retractions Flink cannot match: of an absent group (skipped), of never-accumulated values",
    ),
]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Files


def json_value(value: Any) -> str:
    if isinstance(value, Decimal):
        return str(value)  # an exact JSON number, as Flink's json format writes a DECIMAL
    return json.dumps(value, ensure_ascii=False)


def json_object(row: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {json_value(v)}" for k, v in row.items()) + "}"


def read_expected(case_dir: Path) -> list[dict[str, Any]]:
    text = (case_dir / "expected.jsonl").read_text()
    return [json.loads(line, parse_float=Decimal) for line in text.splitlines() if line.strip()]


def ddl(name: str, schema: dict[str, str], path: Path) -> str:
    cols = ", ".join(f"`{c}` {t}" for c, t in schema.items())
    return f"CREATE TABLE {name} ({cols}) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'json')"


def sql_script(case: Case) -> str:
    lines = ["SET 'execution.runtime-mode' = 'streaming';", "SET 'parallelism.default' = '1';"]
    if case.mode == "upsert":
        cols = ", ".join(f"`{c}` {t}{' NOT NULL' if c == 'id' else ''}" for c, t in case.schema.items())
        lines.append(
            f"-- src: input.jsonl as an upsert stream ({cols}, PRIMARY KEY (id) NOT ENFORCED): rows with\n"
            "-- __deleted = 'true' are DELETE, the others UPDATE_AFTER; built with from_changelog_stream(...,\n"
            "-- ChangelogMode.upsert()) because FROM_CHANGELOG in Flink 2.3 has no PARTITION BY."
        )
        src = "src"
    elif case.mode == "changelog":
        lines.append(ddl("src", {"op": "STRING", **case.schema}, Path("input.jsonl")) + ";")
        src = "FROM_CHANGELOG(input => TABLE src)"
    else:
        lines.append(ddl("src", case.schema, Path("input.jsonl")) + ";")
        src = "src"
    if case.emit == "upsert":
        keys = ", ".join(f"`{c}`" for c in case.group_by)
        lines.append(f"-- emitted for a sink with PRIMARY KEY ({keys}) NOT ENFORCED (no UPDATE_BEFORE)")
    lines.append(case.query.format(src=src) + ";")
    return "\n".join(lines) + "\n"


def write_inputs(case: Case, out: Path) -> list[dict[str, Any]]:
    rows = case.rows()
    out.mkdir(parents=True, exist_ok=True)
    (out / "input.jsonl").write_text("".join(json_object(r) + "\n" for r in rows), encoding="utf-8")
    (out / "schema.json").write_text(json.dumps(case.schema, indent=1) + "\n")
    (out / "args.json").write_text(json.dumps({"command": "aggregate", "flags": case.flags}, indent=1) + "\n")
    (out / "query.sql").write_text(sql_script(case))
    return rows


# ---------------------------------------------------------------------------------------------
# Flink


class Flink:
    def __init__(self) -> None:
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.table import EnvironmentSettings, StreamTableEnvironment

        self.senv = StreamExecutionEnvironment.get_execution_environment()
        self.senv.set_parallelism(1)
        self.env = StreamTableEnvironment.create(self.senv, EnvironmentSettings.in_streaming_mode())
        self.env.get_config().set("parallelism.default", "1")
        self.env.get_config().set("table.exec.mini-batch.enabled", "false")

    def flink_type(self, text: str) -> Any:
        from pyflink.table import DataTypes

        if text.startswith("DECIMAL"):
            p, s = (int(x) for x in text[text.index("(") + 1 : -1].split(","))
            return DataTypes.DECIMAL(p, s)
        return {"STRING": DataTypes.STRING(), "BIGINT": DataTypes.BIGINT(), "DOUBLE": DataTypes.DOUBLE()}[text]

    def source(self, case: Case, case_dir: Path, rows: list[dict[str, Any]]) -> str:
        env = self.env
        env.execute_sql("DROP TEMPORARY TABLE IF EXISTS src")
        env.execute_sql("DROP TEMPORARY VIEW IF EXISTS src")
        if case.mode == "upsert":
            return self._upsert_source(case, rows)
        schema = case.schema if case.mode == "append" else {"op": "STRING", **case.schema}
        env.execute_sql(ddl("src", schema, case_dir / "input.jsonl").replace("CREATE TABLE", "CREATE TEMPORARY TABLE"))
        return "src" if case.mode == "append" else "FROM_CHANGELOG(input => TABLE src)"

    def _upsert_source(self, case: Case, rows: list[dict[str, Any]]) -> str:
        from pyflink.common import Row, Types
        from pyflink.common.types import RowKind
        from pyflink.table import Schema
        from pyflink.table.changelog_mode import ChangelogMode

        names = list(case.schema)
        type_infos = {"BIGINT": Types.LONG(), "STRING": Types.STRING()}
        records = []
        for r in rows:
            rec = Row(*(r[c] for c in names))
            rec.set_row_kind(RowKind.DELETE if r["__deleted"] == "true" else RowKind.UPDATE_AFTER)
            records.append(rec)
        ds = self.senv.from_collection(
            records, type_info=Types.ROW_NAMED(names, [type_infos[case.schema[c]] for c in names])
        )
        builder = Schema.new_builder()
        for c in names:
            t = self.flink_type(case.schema[c])
            builder = builder.column(c, t.not_null() if c == "id" else t)
        table = self.env.from_changelog_stream(ds, builder.primary_key("id").build(), ChangelogMode.upsert())
        self.env.create_temporary_view("src", table)
        return "src"

    def run(self, case: Case, src: str) -> list[dict[str, Any]]:
        table = self.env.sql_query(case.query.format(src=src))
        names = table.get_schema().get_field_names()
        out = []
        if case.emit == "retract":
            with table.execute().collect() as results:
                for row in results:
                    out.append({"kind": str(row.get_row_kind()), "row": dict(zip(names, row, strict=True))})
            return out
        from pyflink.table import Schema
        from pyflink.table.changelog_mode import ChangelogMode

        types = table.get_schema().get_field_data_types()
        builder = Schema.new_builder()
        for n, t in zip(names, types, strict=True):
            builder = builder.column(n, t.not_null() if n in case.group_by else t)
        stream = self.env.to_changelog_stream(
            table, builder.primary_key(*case.group_by).build(), ChangelogMode.upsert()
        )
        with stream.execute_and_collect() as results:
            for row in results:
                out.append({"kind": str(row.get_row_kind()), "row": dict(zip(names, row, strict=True))})
        return out


def main(argv: list[str]) -> None:
    wanted = set(argv)
    flink = Flink()
    for case in CASES:
        if wanted and case.name not in wanted:
            continue
        case_dir = HERE / case.name
        rows = write_inputs(case, case_dir)
        src = flink.source(case, case_dir, rows)
        emitted = flink.run(case, src)
        lines = "".join(f'{{"kind": "{e["kind"]}", "row": {json_object(e["row"])}}}\n' for e in emitted)
        (case_dir / "expected.jsonl").write_text(lines, encoding="utf-8")
        print(f"{case.name}: {len(rows)} input rows, {len(emitted)} emitted", flush=True)
    for inner, outer in NESTED:
        if not wanted or outer in wanted:
            check_nested(flink, inner, outer)


NESTED = [("clicks_count", "count_of_counts"), ("continued_count", "continued_count_of_counts")]


def check_nested(flink: Flink, inner: str, outer: str) -> None:
    """A count of counts reads the inner case's log; the nested query over the clicks must agree."""
    case = next(c for c in CASES if c.name == inner)
    src = flink.source(case, HERE / case.name, case.rows())
    nested = Case(
        "nested", "append", CLICKS,
        f"SELECT cnt, COUNT(*) AS freq FROM (SELECT `user`, COUNT(url) AS cnt FROM {src} GROUP BY `user`) GROUP BY cnt",
        [], case.rows,
    )  # fmt: skip
    got = flink.run(nested, src)
    want = read_expected(HERE / outer)
    assert got == want, f"nested count of counts differs:\n{got}\n{want}"
    print(f"{outer}: the nested query over the clicks emits the same log", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
