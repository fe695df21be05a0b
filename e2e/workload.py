"""A seeded random workload: the tables, their values, and the SQL that changes them.

The generator keeps only the set of live keys (to pick rows to update or delete and to count the
rows a multi-row statement touches); what the tables hold is always read back from the database.
A "change" is one row changed by a committed statement: an insert, an update (a key change
counts once), a delete, each row a multi-row UPDATE/DELETE touches, each row a TRUNCATE empties.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

# ---- tables -------------------------------------------------------------------------------------

PG_COLUMNS = """
  id bigint PRIMARY KEY,
  name text,
  qty integer NOT NULL,
  amount numeric(38,10),
  price numeric(12,2) NOT NULL,
  bignum numeric,
  f8 double precision,
  f4 real,
  flag boolean,
  d date,
  t time(6),
  t3 time(3),
  ts timestamp(6),
  ts3 timestamp(3),
  tstz timestamptz,
  j json,
  jb jsonb,
  tags text[],
  nums integer[],
  doc text,
  bin bytea
"""

# Column → type class used by compare.py to decide how a value is compared.
PG_TYPES = {
    "id": "int",
    "name": "text",
    "qty": "int",
    "amount": "decimal",
    "price": "decimal",
    "bignum": "decimal",
    "f8": "float64",
    "f4": "float32",
    "flag": "bool",
    "d": "date",
    "t": "time",
    "t3": "time",
    "ts": "timestamp",
    "ts3": "timestamp",
    "tstz": "timestamptz",
    "j": "json",
    "jb": "json",
    "tags": "array",
    "nums": "array",
    "doc": "text",
    "bin": "bytes",
}

MARIA_COLUMNS = """
  id BIGINT PRIMARY KEY,
  name VARCHAR(200),
  qty INT NOT NULL,
  amount DECIMAL(38,10),
  price DECIMAL(12,2) NOT NULL,
  big DECIMAL(65,30),
  f8 DOUBLE,
  f4 FLOAT,
  flag BOOLEAN,
  d DATE,
  t TIME(6),
  t0 TIME,
  dt DATETIME(6),
  dt3 DATETIME(3),
  ts TIMESTAMP(6) NULL,
  j JSON,
  doc MEDIUMTEXT,
  bin VARBINARY(64),
  e ENUM('red','green','blue','ümlaut'),
  y YEAR,
  u BIGINT UNSIGNED
"""

MARIA_TYPES = {
    "id": "int",
    "name": "text",
    "qty": "int",
    "amount": "decimal",
    "price": "decimal",
    "big": "decimal",
    "f8": "float64",
    "f4": "float32",
    "flag": "int",
    "d": "date",
    "t": "time",
    "t0": "time",
    "dt": "timestamp",
    "dt3": "timestamp",
    "ts": "timestamptz",
    "j": "json",
    "doc": "text",
    "bin": "bytes",
    "e": "text",
    "y": "int",
    "u": "decimal",
}

# What the MariaDB dump selects for each column so that one JSON object per row comes back exactly.
MARIA_DUMP = {
    "f8": "CAST(f8 AS CHAR)",
    "f4": "CAST(f4 AS CHAR)",
    "bin": "HEX(bin)",
    "amount": "CAST(amount AS CHAR)",
    "price": "CAST(price AS CHAR)",
    "big": "CAST(big AS CHAR)",
    "u": "CAST(u AS CHAR)",
    "j": "j",
}


def maria_select() -> str:
    cols = list(MARIA_TYPES)
    return "JSON_OBJECT(" + ", ".join(f"'{c}', {MARIA_DUMP.get(c, c)}" for c in cols) + ")"


# ---- values -------------------------------------------------------------------------------------

UNICODE_BITS = [
    "Zoë",
    "naïve café",
    "東京",
    "😀🎉",
    "שלום",
    "Ωmega",
    "e\u0301",
    "tab\there",
    "line\nbreak",
    "quote'\"",
    "back\\slash",
    "\u2028sep",
    "ümlaut",
    "ß",
    "Ελληνικά",
    "русский",
    "한국어",
    "🏳️‍🌈",
    "\u00a0nbsp",
    "x" * 40,
]


def text_value(rng: random.Random, nullable: bool = True) -> str | None:
    r = rng.random()
    if nullable and r < 0.12:
        return None
    if r < 0.17:
        return ""
    parts = [
        rng.choice(UNICODE_BITS)
        if rng.random() < 0.4
        else "".join(rng.choices(string.ascii_letters, k=rng.randint(1, 8)))
        for _ in range(rng.randint(1, 4))
    ]
    return " ".join(parts)[:150]


def decimal_value(rng: random.Random, int_digits: int, scale: int) -> Decimal:
    r = rng.random()
    if r < 0.05:
        return Decimal(0)
    digits = rng.randint(1, int_digits) if int_digits else 0
    whole = rng.randint(0, 10**digits - 1) if digits else 0
    frac = rng.randint(0, 10**scale - 1) if scale else 0
    sign = "-" if rng.random() < 0.3 else ""
    text = f"{sign}{whole}" + (f".{frac:0{scale}d}" if scale else "")
    return Decimal(text)


def variable_decimal(rng: random.Random) -> Decimal:
    scale = rng.choice([0, 0, 1, 2, 5, 10, 20, 30])
    int_digits = rng.choice([1, 3, 10, 25, 40])
    return decimal_value(rng, int_digits, scale)


def float64_value(rng: random.Random) -> float:
    r = rng.random()
    if r < 0.05:
        return rng.choice([0.0, 1e300, -2.5e-300, 123456789012345.0, 0.1])
    return float(f"{rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-8, 8):.12g}")


def float32_value(rng: random.Random) -> float:
    return float(f"{rng.uniform(-1e4, 1e4) * 10 ** rng.randint(-3, 3):.6g}")


def date_value(rng: random.Random, lo: int = 1000, hi: int = 9999) -> dt.date:
    if rng.random() < 0.05:
        return rng.choice([dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2000, 2, 29), dt.date(lo, 1, 1)])
    return dt.date(1900, 1, 1) + dt.timedelta(days=rng.randint(0, 200 * 365))


def time_value(rng: random.Random, digits: int) -> dt.time:
    if rng.random() < 0.05:
        return rng.choice([dt.time(0, 0), dt.time(23, 59, 59, 999999 if digits == 6 else 999000 if digits == 3 else 0)])
    micros = rng.randint(0, 86_400 * 10**6 - 1)
    micros -= micros % 10 ** (6 - digits)
    return (dt.datetime.min + dt.timedelta(microseconds=micros)).time()


def timestamp_value(rng: random.Random, digits: int, lo_year: int = 1900, hi_year: int = 2100) -> dt.datetime:
    start = dt.datetime(lo_year, 1, 1)
    span = (dt.datetime(hi_year, 1, 1) - start).total_seconds()
    micros = int(rng.random() * span * 10**6)
    micros -= micros % 10 ** (6 - digits)
    if rng.random() < 0.03:
        return dt.datetime(1970, 1, 1) if lo_year <= 1970 else start
    return start + dt.timedelta(microseconds=micros)


def json_value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 2 or r < 0.3:
        return rng.choice(
            [
                None,
                True,
                False,
                rng.randint(-(10**12), 10**12),
                round(rng.uniform(-1000, 1000), 3),
                text_value(rng, nullable=False),
                "ü€😀",
            ]
        )
    if r < 0.65:
        return {
            rng.choice(["a", "b", "ключ", "k😀", "n", "nested"]) + str(i): json_value(rng, depth + 1)
            for i in range(rng.randint(0, 4))
        }
    return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def big_text(rng: random.Random) -> str | None:
    """Mostly large (TOASTed out of line: incompressible, > 2 kB), sometimes small or NULL."""
    r = rng.random()
    if r < 0.1:
        return None
    if r < 0.35:
        return text_value(rng, nullable=False)
    alphabet = string.ascii_letters + string.digits + "äöüßéèêñ東京語😀 "
    return "".join(rng.choices(alphabet, k=rng.randint(2200, 4000)))


# ---- SQL literals -------------------------------------------------------------------------------


def sql_text(value: str, backslash: bool) -> str:
    value = value.replace("'", "''")
    if backslash:
        value = value.replace("\\", "\\\\")
    return f"'{value}'"


@dataclass
class Dialect:
    name: str
    backslash: bool  # MariaDB's default sql_mode treats backslash as an escape

    def lit(self, value: Any, kind: str) -> str:
        if value is None:
            return "NULL"
        if kind == "bool":
            return "TRUE" if value else "FALSE"
        if kind in ("int", "decimal"):
            return str(value)
        if kind in ("float64", "float32"):
            return repr(value)
        if kind == "text":
            return sql_text(value, self.backslash)
        if kind == "bytes":
            return f"'\\x{value.hex()}'::bytea" if self.name == "postgres" else f"X'{value.hex()}'"
        if kind == "json":
            return sql_text(json.dumps(value, ensure_ascii=False), self.backslash)
        if kind in ("date", "time"):
            return f"'{value.isoformat()}'"
        if kind == "timestamp":
            return f"'{value.isoformat(sep=' ')}'"
        if kind == "timestamptz":
            return f"'{value.isoformat(sep=' ')}'"
        if kind == "textarray":
            items = ",".join(
                "NULL" if v is None else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in value
            )
            return sql_text("{" + items + "}", self.backslash) + "::text[]"
        if kind == "intarray":
            return "'{" + ",".join("NULL" if v is None else str(v) for v in value) + "}'::integer[]"
        raise ValueError(kind)


PG = Dialect("postgres", backslash=False)
MARIA = Dialect("mariadb", backslash=True)


def pg_row(rng: random.Random, key: int) -> dict[str, tuple[Any, str]]:
    n = rng.random
    tz = dt.timezone(dt.timedelta(minutes=rng.choice([0, 60, -300, 330, 545, -720])))
    return {
        "id": (key, "int"),
        "name": (text_value(rng), "text"),
        "qty": (rng.choice([0, 1, -1, 2**31 - 1, -(2**31)]) if n() < 0.1 else rng.randint(-(10**6), 10**6), "int"),
        "amount": (None if n() < 0.1 else decimal_value(rng, 28, 10), "decimal"),
        "price": (decimal_value(rng, 10, 2), "decimal"),
        "bignum": (None if n() < 0.1 else variable_decimal(rng), "decimal"),
        "f8": (None if n() < 0.1 else float64_value(rng), "float64"),
        "f4": (None if n() < 0.1 else float32_value(rng), "float32"),
        "flag": (None if n() < 0.2 else n() < 0.5, "bool"),
        "d": (None if n() < 0.1 else date_value(rng), "date"),
        "t": (None if n() < 0.1 else time_value(rng, 6), "time"),
        "t3": (None if n() < 0.1 else time_value(rng, 3), "time"),
        "ts": (None if n() < 0.1 else timestamp_value(rng, 6), "timestamp"),
        "ts3": (None if n() < 0.1 else timestamp_value(rng, 3), "timestamp"),
        "tstz": (None if n() < 0.1 else timestamp_value(rng, 6).replace(tzinfo=tz), "timestamptz"),
        "j": (None if n() < 0.1 else json_value(rng), "json"),
        "jb": (None if n() < 0.1 else json_value(rng), "json"),
        "tags": (
            None
            if n() < 0.15
            else [None if n() < 0.1 else text_value(rng, nullable=False) for _ in range(rng.randint(0, 4))],
            "textarray",
        ),
        "nums": (None if n() < 0.15 else [rng.randint(-(10**9), 10**9) for _ in range(rng.randint(0, 5))], "intarray"),
        "doc": (big_text(rng), "text"),
        "bin": (None if n() < 0.2 else rng.randbytes(rng.randint(0, 32)), "bytes"),
    }


def maria_row(rng: random.Random, key: int) -> dict[str, tuple[Any, str]]:
    n = rng.random
    return {
        "id": (key, "int"),
        "name": (text_value(rng), "text"),
        "qty": (rng.choice([0, 1, -1, 2**31 - 1, -(2**31)]) if n() < 0.1 else rng.randint(-(10**6), 10**6), "int"),
        "amount": (None if n() < 0.1 else decimal_value(rng, 28, 10), "decimal"),
        "price": (decimal_value(rng, 10, 2), "decimal"),
        "big": (None if n() < 0.1 else decimal_value(rng, 35, 30), "decimal"),
        "f8": (None if n() < 0.1 else float64_value(rng), "float64"),
        "f4": (None if n() < 0.1 else float32_value(rng), "float32"),
        "flag": (None if n() < 0.2 else int(n() < 0.5), "int"),
        "d": (None if n() < 0.1 else date_value(rng), "date"),
        "t": (None if n() < 0.1 else time_value(rng, 6), "time"),
        "t0": (None if n() < 0.1 else time_value(rng, 0), "time"),
        "dt": (None if n() < 0.1 else timestamp_value(rng, 6), "timestamp"),
        "dt3": (None if n() < 0.1 else timestamp_value(rng, 3), "timestamp"),
        "ts": (None if n() < 0.1 else timestamp_value(rng, 6, 1971, 2037), "timestamp"),
        "j": (None if n() < 0.1 else json_value(rng), "json"),
        "doc": (big_text(rng), "text"),
        "bin": (None if n() < 0.2 else rng.randbytes(rng.randint(0, 32)), "bytes"),
        "e": (None if n() < 0.2 else rng.choice(["red", "green", "blue", "ümlaut"]), "text"),
        "y": (None if n() < 0.2 else rng.randint(1901, 2155), "int"),
        "u": (None if n() < 0.2 else rng.choice([0, 2**63 - 1, 2**63, 2**64 - 1, rng.randint(0, 2**64 - 1)]), "int"),
    }


# ---- the workload -------------------------------------------------------------------------------


@dataclass
class Table:
    name: str
    make_row: Callable[[random.Random, int], dict[str, tuple[Any, str]]]
    dialect: Dialect
    live: set[int] = field(default_factory=set)
    next_key: int = 1
    changes: int = 0

    def new_key(self, rng: random.Random) -> int:
        # Mostly ascending keys, sometimes far away ones (keys are bigint)
        if rng.random() < 0.05:
            while True:
                k = rng.randint(10**12, 9 * 10**15)
                if k not in self.live:
                    return k
        k = self.next_key
        self.next_key += 1
        return k


class Workload:
    """Statements grouped in transactions; every committed row change is counted on its table."""

    def __init__(self, seed: int, tables: list[Table], truncates: bool = True):
        self.rng = random.Random(seed)
        self.tables = tables
        self.truncates = truncates

    def insert(self, t: Table, snapshot: bool = False) -> str:
        key = t.new_key(self.rng)
        row = t.make_row(self.rng, key)
        if snapshot and t.dialect is MARIA:
            # Debezium's MySQL connector reads MariaDB's TIME through MySQL's JDBC driver in the
            # snapshot: it drops the fraction of TIME(6) and reads TIME '00:00:00' as NULL (the raw
            # events say so: not cdc's doing, see README.md). Rows the snapshot reads avoid both.
            for col in ("t", "t0"):
                v = row[col][0]
                if v is not None:
                    v = v.replace(microsecond=0)
                    row[col] = (dt.time(0, 0, 1) if v == dt.time(0, 0) else v, "time")
        t.live.add(key)
        cols = ", ".join(row)
        vals = ", ".join(t.dialect.lit(v, k) for v, k in row.values())
        return f"INSERT INTO {t.name} ({cols}) VALUES ({vals});"

    def update(self, t: Table) -> tuple[str, int]:
        rng = self.rng
        key = rng.choice(sorted(t.live)) if len(t.live) < 64 else self._pick(t)
        fresh = t.make_row(rng, key)
        r = rng.random()
        if r < 0.08:  # a key change (the new key gets a delete + create from Debezium)
            new_key = t.new_key(rng)
            t.live.discard(key)
            t.live.add(new_key)
            extra = "" if rng.random() < 0.5 else f", qty = {fresh['qty'][0]}"
            return f"UPDATE {t.name} SET id = {new_key}{extra} WHERE id = {key};", 1
        names = [c for c in fresh if c != "id"]
        if r < 0.2:
            chosen = ["doc"]  # rewrite the large value
        elif r < 0.3:
            chosen = names  # every column
        else:
            chosen = [c for c in rng.sample(names, rng.randint(1, 4)) if c != "doc"] or ["qty"]
        sets = ", ".join(f"{c} = {t.dialect.lit(*fresh[c])}" for c in chosen)
        return f"UPDATE {t.name} SET {sets} WHERE id = {key};", 1

    def _pick(self, t: Table) -> int:
        # sample from the set without sorting all keys every time
        rng = self.rng
        while True:
            k = rng.randint(1, t.next_key - 1) if rng.random() < 0.97 else None
            if k is not None and k in t.live:
                return k
            if k is None:
                return rng.choice(tuple(t.live))

    def delete(self, t: Table) -> tuple[str, int]:
        key = self._pick(t) if len(t.live) >= 64 else self.rng.choice(sorted(t.live))
        t.live.discard(key)
        return f"DELETE FROM {t.name} WHERE id = {key};", 1

    def multi_update(self, t: Table) -> tuple[str, int]:
        lo = self.rng.randint(1, max(1, t.next_key - 1))
        hi = lo + self.rng.randint(1, 8)
        n = sum(1 for k in t.live if lo <= k <= hi)
        return f"UPDATE {t.name} SET qty = {self.rng.randint(-(10**6), 10**6)} WHERE id BETWEEN {lo} AND {hi};", n

    def multi_delete(self, t: Table) -> tuple[str, int]:
        lo = self.rng.randint(1, max(1, t.next_key - 1))
        hi = lo + self.rng.randint(1, 4)
        gone = [k for k in t.live if lo <= k <= hi]
        t.live.difference_update(gone)
        return f"DELETE FROM {t.name} WHERE id BETWEEN {lo} AND {hi};", len(gone)

    def truncate(self, t: Table) -> tuple[str, int]:
        n = len(t.live)
        t.live.clear()
        return f"TRUNCATE TABLE {t.name};", n

    def statement(self, t: Table) -> tuple[str, int]:
        r = self.rng.random()
        if len(t.live) < 20 or r < 0.35:
            return self.insert(t), 1
        if r < 0.75:
            return self.update(t)
        if r < 0.90:
            return self.delete(t)
        if r < 0.96:
            return self.multi_update(t)
        return self.multi_delete(t)

    def transaction(self, t: Table, truncate_now: bool = False) -> tuple[str, int]:
        """One transaction's SQL (or a rolled-back one, which changes nothing) and its row changes."""
        rng = self.rng
        if truncate_now and self.truncates:
            sql, n = self.truncate(t)
            return sql, n
        size = 1 if rng.random() < 0.5 else rng.randint(2, 12)
        if rng.random() < 0.04:  # a rolled-back transaction: Debezium must show nothing of it
            saved = (set(t.live), t.next_key)
            stmts = [self.statement(t)[0] for _ in range(size)]
            t.live, t.next_key = saved[0], saved[1]
            return "BEGIN;\n" + "\n".join(stmts) + "\nROLLBACK;", 0
        stmts, n = [], 0
        for _ in range(size):
            s, k = self.statement(t)
            stmts.append(s)
            n += k
        return "BEGIN;\n" + "\n".join(stmts) + "\nCOMMIT;", n
