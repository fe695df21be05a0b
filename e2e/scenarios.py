"""Scenarios: the streams real systems produce that a random workload of one table does not.

``harness.py`` drives a seeded random workload through one wide table per database. This file
drives fixed scenarios, each a few tables and SQL steps with checkpoints between them, through the
same Debezium engine (``capture/``), writing every record of every topic to one file per converter
setting (``all.<setting>.jsonl``, as a single-topic router or an S3 sink does) and the same
records as Kafka dumps (``all.kcat.jsonl``, ``all.console.txt``). The classes covered:

- a table without a primary key (REPLICA IDENTITY FULL), composite keys, a key change;
- ``ALTER TABLE`` between checkpoints: ADD COLUMN, DROP COLUMN, RENAME COLUMN, a widening type;
- TIME edge values (PostgreSQL ``24:00:00``, MariaDB durations −838:59:59 … 838:59:59), dates and
  timestamps outside the ordinary calendar (``infinity``, BC, years past 9999);
- a text value equal to the unavailable-value placeholder in inserts;
- NUMERIC columns with DEFAULTs under every decimal.handling.mode × decimal.format × schemas.enable;
- unchanged TOASTed values of every type (text, bytea, text[], int[], bigint[], jsonb, hstore)
  in a REPLICA IDENTITY DEFAULT table; arrays of decimals, dates, timestamps and times;
- a data column named ``op``; transaction BEGIN/END records, heartbeats and schema changes in the
  same file; an incremental snapshot in the middle of streaming;
- the ExtractNewRecordState transform's flattened rows (``__op``, ``__deleted``, rewrite mode).

Every check runs the cdc pipeline a user would type (one table picked with ``--table-include``)
and holds its table against the database's ``SELECT *`` at every checkpoint, value for value;
the final tables also through Parquet, types included.

    python3 e2e/scenarios.py [--only postgres|mariadb] [--keep] [--report FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import compare
import dbs
import harness as H
from dbs import HarnessError

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PLACEHOLDER = "__debezium_unavailable_value"


@dataclass
class Table:
    name: str
    key: tuple[str, ...]  # () for a table without a primary key: the changelog is read as a multiset
    types: dict[str, str]  # column → compare.py type class; changed by ALTER steps
    decode_key: bool = False  # REPLICA IDENTITY DEFAULT: --key rebuilds partial before images
    edge: bool = False  # holds values outside the ordinary calendar: compared as text


@dataclass
class Step:
    sql: str
    retype: dict[str, dict[str, str | None]] = field(default_factory=dict)  # table → column → type (None: dropped)
    signal: str | None = None  # an incremental snapshot of this table, started by a signal row


@dataclass
class Scenario:
    db: str
    setup: str
    tables: list[Table]
    snapshot: str  # rows the initial snapshot reads
    steps: list[list[Step]]  # a checkpoint after each inner list
    include: str  # table.include.list
    extra: dict[str, str] = field(default_factory=dict)


def _big_text(seed: int, n: int = 3000) -> str:
    import random

    rng = random.Random(seed)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(n))


def _pg() -> Scenario:
    big = [_big_text(i) for i in range(4)]
    ints = ",".join(str((i * 7919) % 1_000_003) for i in range(1500))
    bigs = ",".join(str((i * 104_729_001) % 9_000_000_000_000) for i in range(1200))
    hstore = ",".join(f'"k{i}"=>"{big[0][i : i + 12]}"' for i in range(400))
    jdoc = json.dumps({"doc": big[1], "n": [1, 2.5, None]})
    tags = "{" + ",".join(f'"{big[2][i : i + 20]}"' for i in range(0, 2800, 20)) + "}"
    types_edge = {"id": "int", "t": "edgetime", "d": "edgedate", "ts": "edgets", "tstz": "edgetstz"}
    return Scenario(
        db="postgres",
        setup="""
CREATE EXTENSION IF NOT EXISTS hstore;
CREATE TABLE s_nopk (a int, note text);
ALTER TABLE s_nopk REPLICA IDENTITY FULL;
CREATE TABLE s_comp (region text, n int, qty int, PRIMARY KEY (region, n));
CREATE TABLE s_evolve (id int PRIMARY KEY, a text, price numeric(10,2));
ALTER TABLE s_evolve REPLICA IDENTITY FULL;
CREATE TABLE s_edge (id int PRIMARY KEY, t time, d date, ts timestamp, tstz timestamptz);
CREATE TABLE s_ph (id int PRIMARY KEY, note text, n int);
CREATE TABLE s_numdef (id int PRIMARY KEY, amount numeric(12,2) DEFAULT 1.50, n2 numeric DEFAULT 0, qty int);
CREATE TABLE s_toast (id int PRIMARY KEY, small int, doc text, bin bytea, tags text[], nums int[], bigs bigint[],
                      jb jsonb, hs hstore);
CREATE TABLE s_arrays (id int PRIMARY KEY, amounts numeric(10,2)[], ds date[], tss timestamp[], ts time[]);
CREATE TABLE s_audit (id int PRIMARY KEY, op text, who text);
CREATE TABLE s_snap (id int PRIMARY KEY, v text);
CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048));
CREATE TABLE cdc_marker (id int PRIMARY KEY, n int NOT NULL);
""",
        tables=[
            Table("s_nopk", (), {"a": "int", "note": "text"}),
            Table("s_comp", ("region", "n"), {"region": "text", "n": "int", "qty": "int"}, decode_key=True),
            Table("s_evolve", ("id",), {"id": "int", "a": "text", "price": "decimal"}),
            Table("s_edge", ("id",), types_edge, decode_key=True, edge=True),
            Table("s_ph", ("id",), {"id": "int", "note": "text", "n": "int"}, decode_key=True),
            Table("s_numdef", ("id",), {"id": "int", "amount": "decimal", "n2": "decimal", "qty": "int"}, True),
            Table(
                "s_toast",
                ("id",),
                {
                    "id": "int",
                    "small": "int",
                    "doc": "text",
                    "bin": "bytes",
                    "tags": "array",
                    "nums": "array",
                    "bigs": "array",
                    "jb": "json",
                    "hs": "hstore",
                },
                decode_key=True,
            ),
            Table(
                "s_arrays",
                ("id",),
                {"id": "int", "amounts": "decarray", "ds": "array", "tss": "array", "ts": "timearray"},
                decode_key=True,
            ),
            Table("s_audit", ("id",), {"id": "int", "op": "text", "who": "text"}, decode_key=True),
            Table("s_snap", ("id",), {"id": "int", "v": "text"}, decode_key=True),
        ],
        snapshot="""
INSERT INTO s_nopk VALUES (1, 'one'), (1, 'one'), (2, 'two');
INSERT INTO s_comp VALUES ('eu', 1, 10), ('us', 1, 20);
INSERT INTO s_evolve VALUES (1, 'a1', 1.50), (2, 'a2', 2.50), (3, 'a3', 3.50);
INSERT INTO s_edge VALUES (1, '24:00:00', 'infinity', 'infinity', 'infinity'),
  (2, '00:00:00', '-infinity', '-infinity', '-infinity');
INSERT INTO s_ph VALUES (1, '__debezium_unavailable_value', 1);
INSERT INTO s_numdef (id, qty) VALUES (1, 1);
INSERT INTO s_audit VALUES (1, 'DELETE', 'alice'), (2, 'INSERT', 'bob');
INSERT INTO s_snap VALUES (1, 'one'), (2, 'two'), (3, 'three');
""",
        steps=[
            [
                Step(
                    f"""
INSERT INTO s_nopk VALUES (3, 'three'), (2, 'two');
UPDATE s_nopk SET note = 'uno' WHERE ctid = (SELECT ctid FROM s_nopk WHERE a = 1 LIMIT 1);
DELETE FROM s_nopk WHERE ctid = (SELECT ctid FROM s_nopk WHERE a = 2 LIMIT 1);
INSERT INTO s_comp VALUES ('eu', 2, 30);
UPDATE s_comp SET qty = 11 WHERE region = 'eu' AND n = 1;
UPDATE s_comp SET n = 5 WHERE region = 'us' AND n = 1;
DELETE FROM s_comp WHERE region = 'eu' AND n = 2;
INSERT INTO s_edge VALUES
  (3, '23:59:59.999999', '0044-03-15 BC', '0044-03-15 12:00:00 BC', '0044-03-15 12:00:00+00 BC'),
  (4, '12:00:00', '12345-06-07', '12345-06-07 10:00:00', '12345-06-07 10:00:00+00'),
  (5, '24:00:00', '9999-12-31', '9999-12-31 23:59:59.999999', '0001-01-01 00:00:00+00');
UPDATE s_edge SET t = '24:00:00' WHERE id = 2;
INSERT INTO s_ph VALUES (2, '__debezium_unavailable_value', 2);
UPDATE s_ph SET n = 10 WHERE id = 1;
INSERT INTO s_numdef (id, qty) VALUES (2, 2);
INSERT INTO s_numdef (id, amount, n2, qty) VALUES (3, 12345678.91, 12345678901234567890.123456789, 3);
UPDATE s_numdef SET qty = 20 WHERE id = 2;
INSERT INTO s_toast VALUES (1, 1, '{big[0]}', decode(md5('x') || '{big[3][:2000].encode().hex()}', 'hex'),
  '{tags}', '{{{ints}}}', '{{{bigs}}}', '{jdoc}', '{hstore}');
INSERT INTO s_arrays VALUES (1, '{{1.50,2.25,NULL}}', '{{2024-01-01,1999-12-31}}',
  '{{"2024-01-01 10:00:00.123456","1970-01-01 00:00:00"}}', '{{10:00:00,23:59:59.5}}');
INSERT INTO s_audit VALUES (3, 'UPDATE', 'carol');
UPDATE s_audit SET op = 'INSERT', who = 'dave' WHERE id = 1;
DELETE FROM s_audit WHERE id = 2;
"""
                )
            ],
            [
                Step(
                    """
UPDATE s_toast SET small = 2 WHERE id = 1;
UPDATE s_toast SET small = 3 WHERE id = 1;
UPDATE s_arrays SET amounts = '{3.75}' WHERE id = 1;
ALTER TABLE s_evolve ADD COLUMN c text;
INSERT INTO s_evolve VALUES (4, 'a4', 4.50, 'c4');
UPDATE s_evolve SET c = 'c1' WHERE id = 1;
UPDATE s_evolve SET a = 'a2b' WHERE id = 2;
DELETE FROM s_evolve WHERE id = 3;
""",
                    retype={"s_evolve": {"c": "text"}},
                ),
                Step(
                    "INSERT INTO s_snap VALUES (4, 'four'); UPDATE s_snap SET v = 'two!' WHERE id = 2;", signal="s_snap"
                ),
            ],
            [
                Step(
                    """
ALTER TABLE s_evolve DROP COLUMN a;
UPDATE s_evolve SET price = 9.99 WHERE id = 2;
DELETE FROM s_evolve WHERE id = 4;
ALTER TABLE s_evolve ALTER COLUMN price TYPE numeric(20,4);
INSERT INTO s_evolve VALUES (5, 123456789.1234, 'c5');
ALTER TABLE s_evolve RENAME COLUMN c TO c2;
UPDATE s_evolve SET c2 = 'c1b' WHERE id = 1;
UPDATE s_toast SET doc = doc || 'x' WHERE id = 1;
UPDATE s_toast SET small = 4 WHERE id = 1;
DELETE FROM s_ph WHERE id = 2;
DELETE FROM s_toast WHERE id = 1;
INSERT INTO s_toast (id, small) VALUES (2, 1);
UPDATE s_snap SET v = 'three!' WHERE id = 3;
DELETE FROM s_snap WHERE id = 1;
""",
                    retype={"s_evolve": {"a": None, "c": None, "c2": "text"}},
                )
            ],
        ],
        include="public.s_.*,public.cdc_marker,public.debezium_signal",
        extra={
            "signal.data.collection": "public.debezium_signal",
            "provide.transaction.metadata": "true",
            "heartbeat.interval.ms": "300",
            "publication.autocreate.mode": "all_tables",
        },
    )


def _maria() -> Scenario:
    return Scenario(
        db="mariadb",
        setup="""
CREATE TABLE m_nopk (a INT, note VARCHAR(20));
CREATE TABLE m_comp (region VARCHAR(8), n INT, qty INT, PRIMARY KEY (region, n));
CREATE TABLE m_evolve (id INT PRIMARY KEY, a VARCHAR(20), price DECIMAL(10,2));
CREATE TABLE m_time (id INT PRIMARY KEY, t TIME(6), t0 TIME);
CREATE TABLE m_numdef (id INT PRIMARY KEY, amount DECIMAL(12,2) DEFAULT 1.50, n2 DECIMAL(30,10) DEFAULT 0, qty INT);
CREATE TABLE m_audit (id INT PRIMARY KEY, op VARCHAR(10), who VARCHAR(10));
CREATE TABLE m_ph (id INT PRIMARY KEY, note VARCHAR(40));
CREATE TABLE cdc_marker (id int PRIMARY KEY, n int NOT NULL);
""",
        tables=[
            Table("m_nopk", (), {"a": "int", "note": "text"}),
            Table("m_comp", ("region", "n"), {"region": "text", "n": "int", "qty": "int"}),
            Table("m_evolve", ("id",), {"id": "int", "a": "text", "price": "decimal"}),
            Table("m_time", ("id",), {"id": "int", "t": "edgetime", "t0": "edgetime"}, edge=True),
            Table("m_numdef", ("id",), {"id": "int", "amount": "decimal", "n2": "decimal", "qty": "int"}),
            Table("m_audit", ("id",), {"id": "int", "op": "text", "who": "text"}),
            Table("m_ph", ("id",), {"id": "int", "note": "text"}),
        ],
        snapshot="""
INSERT INTO m_nopk VALUES (1, 'one'), (1, 'one'), (2, 'two');
INSERT INTO m_comp VALUES ('eu', 1, 10), ('us', 1, 20);
INSERT INTO m_evolve VALUES (1, 'a1', 1.50), (2, 'a2', 2.50), (3, 'a3', 3.50);
INSERT INTO m_time VALUES (1, '01:02:03.000004', '10:00:00');
INSERT INTO m_numdef (id, qty) VALUES (1, 1);
INSERT INTO m_audit VALUES (1, 'DELETE', 'alice'), (2, 'INSERT', 'bob');
""",
        steps=[
            [
                Step(
                    """
INSERT INTO m_nopk VALUES (3, 'three');
UPDATE m_nopk SET note = 'uno' WHERE a = 1 LIMIT 1;
DELETE FROM m_nopk WHERE a = 2 LIMIT 1;
INSERT INTO m_comp VALUES ('eu', 2, 30);
UPDATE m_comp SET qty = 11 WHERE region = 'eu' AND n = 1;
UPDATE m_comp SET n = 5 WHERE region = 'us' AND n = 1;
DELETE FROM m_comp WHERE region = 'eu' AND n = 2;
INSERT INTO m_time VALUES (2, '-838:59:59', '838:59:59'), (3, '-00:00:01', '24:00:00'),
  (4, '-00:00:00.5', '-12:30:00'), (5, '100:00:00.25', '00:00:00');
UPDATE m_time SET t = '-01:00:00' WHERE id = 1;
INSERT INTO m_numdef (id, qty) VALUES (2, 2);
INSERT INTO m_numdef VALUES (3, 12345678.91, 12345678901234567890.1234567891, 3);
UPDATE m_numdef SET qty = 20 WHERE id = 2;
INSERT INTO m_audit VALUES (3, 'UPDATE', 'carol');
UPDATE m_audit SET op = 'INSERT', who = 'dave' WHERE id = 1;
DELETE FROM m_audit WHERE id = 2;
INSERT INTO m_ph VALUES (1, '__debezium_unavailable_value');
"""
                )
            ],
            [
                Step(
                    """
ALTER TABLE m_evolve ADD COLUMN c VARCHAR(20);
INSERT INTO m_evolve VALUES (4, 'a4', 4.50, 'c4');
UPDATE m_evolve SET c = 'c1' WHERE id = 1;
UPDATE m_evolve SET a = 'a2b' WHERE id = 2;
DELETE FROM m_evolve WHERE id = 3;
""",
                    retype={"m_evolve": {"c": "text"}},
                )
            ],
            [
                Step(
                    """
ALTER TABLE m_evolve DROP COLUMN a;
UPDATE m_evolve SET price = 9.99 WHERE id = 2;
DELETE FROM m_evolve WHERE id = 4;
ALTER TABLE m_evolve MODIFY price DECIMAL(20,4);
INSERT INTO m_evolve VALUES (5, 123456789.1234, 'c5');
""",
                    retype={"m_evolve": {"a": None}},
                )
            ],
        ],
        include="e2e.m_.*,e2e.cdc_marker",
        extra={"provide.transaction.metadata": "true", "include.schema.changes": "true"},
    )


# Decimal settings: each engine writes schema (BASE64), numeric (NUMERIC) and noschema files.
VARIANTS = [
    ("precise", {}),
    ("string", {"decimal.handling.mode": "string"}),
    ("double", {"decimal.handling.mode": "double"}),
]
UNWRAP = {
    "transforms": "unwrap",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrap.drop.tombstones": "false",
    "transforms.unwrap.delete.handling.mode": "rewrite",  # before Debezium 3.0
    "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",  # 3.x: a delete is a row with __deleted=true
    "transforms.unwrap.add.fields": "op,table,source.ts_ms",
}


def canon_edge(value: Any, kind: str, side: str) -> Any:
    """Values outside the ordinary calendar, as text the way the database shows them.

    PostgreSQL writes BC years as ``0044-03-15 BC``; cdc writes the ISO 8601 expanded year
    (``-0043-03-15``: year 0 is 1 BC) and ``+12345-06-07`` past 9999; ``infinity`` stays."""
    if value is None:
        return None
    text = str(value)
    if side == "db" and kind in ("edgedate", "edgets", "edgetstz"):
        if text.endswith(" BC"):
            body = text[:-3]
            year = int(body[:4])
            text = f"-{year - 1:04d}{body[4:]}"
        elif len(text) > 4 and text[:5].isdigit():
            text = "+" + text
    if kind in ("edgets", "edgetstz"):
        text = text.replace(" ", "T")
        if kind == "edgetstz":
            text = text.replace("+00:00", "Z")
        if "." in text:
            head, _, frac = text.partition(".")
            digits = frac.rstrip("Z")
            text = head + "." + digits.rstrip("0") + ("Z" if frac.endswith("Z") else "")
            text = text.replace(".Z", "Z").rstrip(".")
    if kind == "edgetime" and "." in text:
        head, _, frac = text.partition(".")
        text = head + ("." + frac.rstrip("0") if frac.rstrip("0") else "")
    return text


def canon(value: Any, kind: str, side: str, db: str, modes: dict[str, str]) -> Any:
    if kind.startswith("edge"):
        return canon_edge(value, kind, side)
    if kind == "hstore":
        if value is None:
            return None
        if side == "db" and isinstance(value, str):  # row_to_json: "\"k\"=>\"v\", …"
            pairs = [p.split("=>") for p in value.split(", ")]
            return {a.strip('"'): b.strip('"') for a, b in pairs}
        return json.loads(value) if isinstance(value, str) else value
    if kind == "timearray":  # 23:59:59.5 and 23:59:59.500000 are one time
        return None if value is None else [None if v is None else compare._iso(v, dt.time) for v in value]
    if kind == "decarray":
        if value is None:
            return None
        return [None if v is None else Decimal(str(v)) for v in value]
    if side == "db":
        return compare.canon_db(value, kind, db, modes)
    return compare.canon_cdc(value, kind, modes)


# Columns an ALTER dropped or renamed away: cdc's table is the union of the columns it saw (as
# Flink's debezium-json reads a later event without them: null), the database's has them no more.
GONE = {"s_evolve": {"a", "c"}, "m_evolve": {"a"}}
# A rename (new name → old name): a row no event touched since holds its value under the old name.
RENAMED = {"s_evolve": {"c2": "c"}}


def _canonical(value: Any) -> Any:
    """A hashable, order-free form: 1.50 and 1.5 alike, a map's keys in any order."""
    if isinstance(value, Decimal):
        return value.normalize()
    if isinstance(value, dict):
        return tuple(sorted((k, _canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_canonical(v) for v in value)
    return value


def kind_column_for(t: Table) -> list[str]:
    """A table with a data column named ``op`` (an audit table) is read with another kind column,
    as cdc's collision error says."""
    return ["--kind-column", "cdc_kind"] if "op" in t.types else []


def table_diffs(
    db_rows: list[dict[str, Any]], cdc_rows: list[dict[str, Any]], t: Table, db: str, modes: dict[str, str]
) -> list[str]:
    """Differences between two tables as multisets of canonical rows (any key, or none)."""

    def rows(src: list[dict[str, Any]], side: str) -> Counter[str]:
        out: Counter[str] = Counter()
        for r in src:
            extra = set(r) - set(t.types) - GONE.get(t.name, set())
            if side == "cdc":
                for new, old in RENAMED.get(t.name, {}).items():
                    if r.get(new) is None and r.get(old) is not None:
                        r = {**r, new: r[old]}
            cells = {c: _canonical(canon(r.get(c), k, side, db, modes)) for c, k in t.types.items()}
            if extra:
                cells["<extra columns>"] = sorted(extra)
            out[repr(sorted(cells.items()))] += 1
        return out

    want, got = rows(db_rows, "db"), rows(cdc_rows, "cdc")
    diffs = [f"only in the database: {r}" for r in (want - got)][:4]
    diffs += [f"only in cdc's table: {r}" for r in (got - want)][:4]
    return diffs


class ScenarioRun(H.Run):
    def __init__(self, args: argparse.Namespace, db: Any, work: Path, results: H.Results, scenario: Scenario):
        super().__init__(args, db, work, results)
        self.scenario = scenario
        self.types_at: dict[int, dict[str, dict[str, str]]] = {}

    def engine_properties(self) -> list[Path]:
        files = []
        sc = self.scenario
        for i, (variant, props) in enumerate([*VARIANTS, ("unwrap", UNWRAP)]):
            out = self.work / f"events-{variant}"
            self.variant_dirs[variant] = out
            tag = f"sc_{variant}"
            p = {
                "name": f"e2e-sc-{self.db.name}-{variant}",
                "topic.prefix": tag,
                "offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore",
                "offset.flush.interval.ms": "60000",
                "skipped.operations": "none",
                "snapshot.mode": "initial",
                **self.db.debezium_properties(),
                **sc.extra,
                "table.include.list": sc.include,
            }
            if self.db.name == "postgres":
                p.update({"slot.name": tag, "publication.name": tag, "slot.drop.on.stop": "true"})
            else:
                p.update({"database.server.id": str(5600 + i), "bigint.unsigned.handling.mode": "precise"})
            p.update(props)
            converters = "schema" if variant == "unwrap" else "schema,numeric,noschema"
            p.update(
                {
                    "capture.out": str(out),
                    "capture.converters": converters,
                    "capture.marker.table": "cdc_marker",
                    "capture.all": "true",
                }
            )
            path = self.work / f"engine-{variant}.properties"
            path.write_text("".join(f"{k}={v}\n" for k, v in p.items()), encoding="utf-8")
            files.append(path)
        return files

    def dump_table(self, t: Table) -> list[str]:
        if self.db.name == "postgres":
            return self.db.dump(t.name)
        cols = ", ".join(
            f"'{c}', " + (f"CAST({c} AS CHAR)" if k in ("decimal", "edgetime") else c) for c, k in t.types.items()
        )
        return self.db.dump(t.name, f"JSON_OBJECT({cols})")

    def checkpoint_sc(self, n: int) -> None:
        self.db.sql(f"INSERT INTO cdc_marker (id, n) VALUES ({n}, {n});")
        dumps = {}
        for t in self.scenario.tables:
            path = self.work / f"expected-{n}-{t.name}.jsonl"
            path.write_text("".join(line + "\n" for line in self.dump_table(t)), encoding="utf-8")
            dumps[t.name] = path
        self.expected[n] = dumps
        self.types_at[n] = {t.name: dict(t.types) for t in self.scenario.tables}
        self.wait_checkpoint(n, timeout=240, retry=3.0 if n == 0 else None)

    def drive(self) -> None:
        sc = self.scenario
        self.db.start()
        if self.db.name == "mariadb":
            self.db.sql("CREATE DATABASE IF NOT EXISTS e2e;")
        self.db.sql(sc.setup)
        self.db.sql(sc.snapshot)
        self.start_engine(self.engine_properties())
        self.checkpoint_sc(0)
        for i, group in enumerate(sc.steps, start=1):
            for step in group:
                self.db.sql(step.sql)
                if step.signal:
                    coll = f"public.{step.signal}" if self.db.name == "postgres" else f"e2e.{step.signal}"
                    self.db.sql(
                        "INSERT INTO debezium_signal VALUES ('snap-"
                        + str(i)
                        + "', 'execute-snapshot', '{\"data-collections\": [\""
                        + coll
                        + '"], "type": "incremental"}\');'
                    )
                    time.sleep(3)  # let the incremental snapshot read its chunk before the checkpoint
                for table, cols in step.retype.items():
                    t = next(t for t in sc.tables if t.name == table)
                    for col, kind in cols.items():
                        if kind is None:
                            t.types.pop(col, None)
                        else:
                            t.types[col] = kind
            self.checkpoint_sc(i)
        self.stop_engine()
        self.db.stop()

    # -- checks --

    def pipeline(self, t: Table, events: Path, out: Path, extra_decode: list[str], materialize: list[str]) -> list[str]:
        key = ",".join(t.key)
        kind = kind_column_for(t)
        decode = [*self.cdc, "debezium-decode", events, "--table-include", t.name, "--on-truncate", "delete", *kind]
        if t.key and t.decode_key:
            decode += ["--key", key]
        mat = [*self.cdc, "materialize", *(["--key", key] if t.key else []), *kind, *materialize]
        return H.sh([[*decode, *extra_decode], mat], out)

    def check(
        self, name: str, t: Table, events: Path, n: int, modes: dict[str, str], extra: list[str] | None = None
    ) -> None:
        out = self.work / "checks" / (name.replace(" ", "_").replace("/", "_").replace(":", "") + ".jsonl")
        out.parent.mkdir(exist_ok=True)
        strict = [] if t.name in GONE else ["--strict"]  # a renamed column's old and new name differ
        err = self.pipeline(t, events, out, extra or [], strict)
        if err:
            self.results.add(name, err)
            return
        tt = Table(t.name, t.key, self.types_at[n][t.name], t.decode_key, t.edge)
        self.results.add(
            name, table_diffs(H.read_rows(self.expected[n][t.name]), H.read_rows(out), tt, self.db.name, modes)
        )

    def run_checks(self) -> None:
        final = max(self.expected)
        checks = self.work / "checks"
        checks.mkdir(exist_ok=True)
        for variant, props in VARIANTS:
            modes = {"decimal": props.get("decimal.handling.mode", "precise")}
            for conv in ("schema", "numeric"):
                src = self.variant_dirs[variant] / f"all.{conv}.jsonl"
                for n in sorted(self.expected):
                    lines = (self.checkpoint_lines(variant, n) or {}).get(f"all.{conv}.jsonl", 0)
                    prefix = H.head(src, lines, checks / f"all-{variant}-{conv}-ck{n}.jsonl")
                    for t in self.scenario.tables:
                        if variant != "precise" and t.edge:
                            continue
                        if variant != "precise" and conv == "numeric" and n != final:
                            continue
                        self.check(f"{self.db.name} {variant}/{conv} {t.name} checkpoint {n}", t, prefix, n, modes)
        # Kafka dumps of the same records: the final tables.
        main = self.variant_dirs["precise"]
        for dump in ("all.kcat.jsonl", "all.console.txt"):
            for t in self.scenario.tables:
                self.check(f"{self.db.name} {dump} {t.name} final", t, main / dump, final, {"decimal": "precise"})
        # schemas.enable=false: the same table as the schema'd file read with --raw-values.
        for t in self.scenario.tables:
            a, b = checks / f"noschema-{t.name}.jsonl", checks / f"raw-{t.name}.jsonl"
            err = self.pipeline(t, main / "all.noschema.jsonl", a, [], [])
            err += self.pipeline(t, main / "all.schema.jsonl", b, ["--raw-values"], [])
            if not err and Counter(map(repr, H.read_rows(a))) != Counter(map(repr, H.read_rows(b))):
                err = [f"schemas.enable=false gives another table than --raw-values ({a}, {b})"]
            self.results.add(f"{self.db.name} noschema {t.name} final", err)
        # A stateful read of several tables without a filter is refused, never merged.
        out = checks / "merged.jsonl"
        refuse = [*self.cdc, "materialize", "-i", "debezium", main / "all.schema.jsonl", "--key", "id"]
        err = H.sh([[*refuse, "--kind-column", "k"]], out)
        refused = bool(err) and any("--table-include" in line for line in err)
        self.results.add(
            f"{self.db.name} several tables without a filter are refused", [] if refused else ["not refused", *err]
        )
        self.check_parquet(final)
        self.check_unwrap(final)

    def check_parquet(self, final: int) -> None:
        """The Parquet at the end of the documented pipe holds the table, typed."""
        py = REPO / ".venv" / "bin" / "python"
        main = self.variant_dirs["precise"] / "all.schema.jsonl"
        for t in self.scenario.tables:
            if t.edge:
                continue
            out = self.work / "checks" / f"{t.name}.parquet"
            err = self.pipeline(t, main, self.work / "checks" / f"{t.name}.pq.log", [], ["-o", str(out)])
            if err:
                self.results.add(f"{self.db.name} parquet {t.name} final", err)
                continue
            code = (
                "import json,sys,pyarrow.parquet as pq\n"
                "t=pq.read_table(sys.argv[1])\n"
                "print(json.dumps({f.name:str(f.type) for f in t.schema}))\n"
                "for r in t.to_pylist(): print(json.dumps(r, default=str))\n"
            )
            proc = subprocess.run([str(py), "-c", code, str(out)], capture_output=True, text=True)
            if proc.returncode:
                self.results.add(f"{self.db.name} parquet {t.name} final", [proc.stderr[-500:]])
                continue
            lines = proc.stdout.splitlines()
            schema = json.loads(lines[0])
            rows = [json.loads(x, parse_float=Decimal) for x in lines[1:]]
            diffs = []
            want_types = {"decimal": "decimal128", "date": "date32", "timestamp": "timestamp", "int": "int"}
            for col, kind in self.types_at[final][t.name].items():
                want = want_types.get(kind)
                if want and not schema.get(col, "").startswith(want):
                    diffs.append(f"column {col}: Parquet type {schema.get(col)}, expected {want}…")
            for r in rows:
                for col, kind in self.types_at[final][t.name].items():
                    if kind == "bytes" and isinstance(r.get(col), str) and r[col].startswith("b'"):
                        r[col] = None  # bytes shown by default=str: compared through JSON lines above
                    if kind == "decimal" and isinstance(r.get(col), str):
                        r[col] = Decimal(r[col])  # a decimal128 value, shown as text by default=str
            tt = Table(t.name, t.key, {c: k for c, k in self.types_at[final][t.name].items() if k != "bytes"})
            diffs += table_diffs(
                [{c: v for c, v in r.items() if c in tt.types} for r in H.read_rows(self.expected[final][t.name])],
                [{c: v for c, v in r.items() if c in tt.types or c in GONE.get(t.name, ())} for r in rows],
                tt,
                self.db.name,
                {"decimal": "precise"},
            )
            self.results.add(f"{self.db.name} parquet {t.name} final", diffs)

    def check_unwrap(self, final: int) -> None:
        """ExtractNewRecordState's flattened rows, read as upserts of the key (deletes rewritten)."""
        events = self.variant_dirs["unwrap"] / "all.schema.jsonl"
        for t in self.scenario.tables:
            if not t.key or t.edge:
                continue
            out = self.work / "checks" / f"unwrap-{t.name}.jsonl"
            key = ",".join(t.key)
            kind = kind_column_for(t)
            err = H.sh(
                [
                    [*self.cdc, "decode", events, "--key", key, "--table-include", t.name, *kind],
                    [*self.cdc, "materialize", "--key", key, *kind],
                ],
                out,
            )
            if err:
                self.results.add(f"{self.db.name} unwrap {t.name} final", err)
                continue
            rows = [{c: v for c, v in r.items() if not c.startswith("__")} for r in H.read_rows(out)]
            tt = Table(t.name, t.key, self.types_at[final][t.name])
            self.results.add(
                f"{self.db.name} unwrap {t.name} final",
                table_diffs(H.read_rows(self.expected[final][t.name]), rows, tt, self.db.name, {"decimal": "precise"}),
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["postgres", "mariadb"])
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--report", type=Path)
    args, _ = ap.parse_known_args()  # run.sh passes the random workload's options too
    args.seed, args.changes, args.checkpoints = 1, 0, 0
    base = Path(tempfile.mkdtemp(prefix="cdc-e2e-sc-"))
    os.chmod(base, 0o755)
    results = H.Results()
    t0 = time.monotonic()
    try:
        for name, make in (("postgres", _pg), ("mariadb", _maria)):
            if args.only and args.only != name:
                continue
            work = base / name
            work.mkdir()
            db = dbs.Postgres(work) if name == "postgres" else dbs.MariaDB(work)
            run = ScenarioRun(args, db, work, results, make())
            H.log(f"{name} scenarios:")
            try:
                run.drive()
            except HarnessError as exc:
                results.add(f"{name}: capture", [str(exc)])
                continue
            finally:
                run.stop_engine()
                db.stop()
            run.run_checks()
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    passed = sum(c.ok for c in results.checks)
    total = len(results.checks)
    for c in results.checks:
        if not c.ok:
            H.log(f"FAIL {c.name}\n    " + "\n    ".join(c.detail[:6]))
    if args.report:
        args.report.write_text(
            json.dumps([{"name": c.name, "ok": c.ok, "detail": c.detail[:10]} for c in results.checks], indent=2) + "\n"
        )
    if args.keep:
        H.log(f"e2e: work directory kept: {base}")
    H.log(f"e2e scenarios: total wall time {time.monotonic() - t0:.0f}s")
    H.log(f"e2e scenarios: {passed}/{total} checks pass")
    return 0 if passed == total and total > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
