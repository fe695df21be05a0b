"""How a value read back through cdc is held against the database's own value.

Each column has a type class (workload.PG_TYPES / MARIA_TYPES). Both sides are turned into one
canonical Python value and compared with ==; the canonical forms are:

- int, bool, text: as they are (a text column compares code point for code point).
- decimal: ``Decimal`` value (1.50 == 1.5); with ``decimal.handling.mode=double`` the database's
  value is rounded to the nearest binary64 (what Debezium's BigDecimal.doubleValue() does) and the
  two floats must be equal; with ``string`` the text is read as a Decimal.
- float64: the float; float32: the value rounded to binary32 (REAL/FLOAT are single precision).
- date / time / timestamp: ``datetime`` objects from ISO text; with ``time.precision.mode=connect``
  the database value is first truncated to milliseconds (Kafka Connect's Time/Timestamp hold ms:
  Debezium's documented loss, not cdc's).
- timestamptz: an aware datetime (PostgreSQL's ``+00:00`` and Debezium's ``Z`` are the same instant).
- json: the parsed document (numbers as Decimal), so key order and white space of ``json`` text
  do not matter but every value does.
- array: the list, element by element.
- bytes: the bytes (the database gives hex, Debezium base64).
Anything else — a column missing or extra, a row missing or extra — is a difference.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
from decimal import Context, Decimal
from typing import Any


class Unparseable(ValueError):
    pass


def _iso(text: Any, cls: type) -> Any:
    if not isinstance(text, str):
        raise Unparseable(f"expected ISO text, got {text!r}")
    t = text.strip()
    if cls is dt.date:
        return dt.date.fromisoformat(t)
    if cls is dt.time:
        return dt.time.fromisoformat(t)
    return dt.datetime.fromisoformat(t.replace(" ", "T") if len(t) > 10 and t[10] == " " else t)


def _ms(value: Any) -> Any:
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


def float32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", float(x)))[0])


def canon_db(value: Any, kind: str, db: str, modes: dict[str, str]) -> Any:
    """The database's value (row_to_json / JSON_OBJECT text) in canonical form."""
    if value is None:
        return None
    connect = modes.get("time") == "connect"
    if kind == "int":
        return int(value)
    if kind == "bigunsigned":
        return Decimal(str(value))
    if kind == "decimal":
        d = Decimal(str(value))
        return float(d) if modes.get("decimal") == "double" else d
    if kind == "float64":
        return float(value)
    if kind == "float32":
        return float32(float(value))
    if kind == "bool":
        return bool(value)
    if kind == "date":
        return _iso(value, dt.date)
    if kind == "time":
        t = _iso(value, dt.time)
        return _ms(t) if connect else t
    if kind == "timestamp":
        ts = _iso(value, dt.datetime)
        return _ms(ts) if connect else ts
    if kind == "timestamptz":
        ts = _iso(value, dt.datetime)
        if ts.tzinfo is None:  # MariaDB TIMESTAMP read in a +00:00 session
            ts = ts.replace(tzinfo=dt.UTC)
        return ts
    if kind == "json":
        return json.loads(value, parse_float=Decimal) if isinstance(value, str) and db == "mariadb-text" else value
    if kind == "array":
        return value
    if kind == "text":
        return value
    if kind == "bytes":
        text = value[2:] if value.startswith("\\x") else value
        return bytes.fromhex(text)
    raise ValueError(kind)


def canon_cdc(value: Any, kind: str, modes: dict[str, str]) -> Any:
    """What ``cdc materialize`` wrote (JSON lines, floats read as Decimal) in canonical form."""
    if value is None:
        return None
    try:
        if kind == "int":
            if isinstance(value, bool) or not isinstance(value, int | Decimal) or int(value) != value:
                raise Unparseable(f"not an integer: {value!r}")
            return int(value)
        if kind == "bigunsigned":
            return Decimal(value) if isinstance(value, int | Decimal) else Unparseable(repr(value))
        if kind == "decimal":
            if modes.get("decimal") == "double":
                return float(value)
            if isinstance(value, str) and modes.get("decimal") != "string":
                raise Unparseable(f"a decimal left as text: {value!r}")
            return (
                Decimal(value)
                if isinstance(value, int | str)
                else value
                if isinstance(value, Decimal)
                else Unparseable(repr(value))
            )
        if kind == "float64":
            return float(value)
        if kind == "float32":
            return float32(float(value))
        if kind == "bool":
            if not isinstance(value, bool):
                raise Unparseable(f"not a boolean: {value!r}")
            return value
        if kind == "date":
            return _iso(value, dt.date)
        if kind == "time":
            return _iso(value, dt.time)
        if kind == "timestamp":
            return _iso(value, dt.datetime)
        if kind == "timestamptz":
            ts = _iso(value, dt.datetime)
            if ts.tzinfo is None:
                raise Unparseable(f"a zoned timestamp without its zone: {value!r}")
            return ts
        if kind == "json":
            if not isinstance(value, str):
                raise Unparseable(f"JSON document not as text: {value!r}")
            return json.loads(value, parse_float=Decimal)
        if kind == "array":
            return value
        if kind == "text":
            return value
        if kind == "bytes":
            return base64.b64decode(value, validate=True)
    except (ValueError, TypeError) as exc:
        return Unparseable(f"{exc}")
    raise ValueError(kind)


def compare_tables(
    db_rows: list[dict[str, Any]],
    cdc_rows: list[dict[str, Any]],
    types: dict[str, str],
    modes: dict[str, str],
    db: str,
    key: str = "id",
    limit: int = 5,
) -> list[str]:
    """Differences between the database's table and cdc's, as readable lines (empty: equal)."""
    diffs: list[str] = []
    db_by = {int(r[key]): r for r in db_rows}
    cdc_by: dict[int, dict[str, Any]] = {}
    for r in cdc_rows:
        k = int(r[key])
        if k in cdc_by:
            diffs.append(f"key {k}: twice in cdc's table")
        cdc_by[k] = r
    for k in sorted(db_by.keys() - cdc_by.keys())[:limit]:
        diffs.append(f"key {k}: in the database, not in cdc's table")
    missing = len(db_by.keys() - cdc_by.keys())
    if missing > limit:
        diffs.append(f"… {missing - limit} more keys only in the database")
    extra = sorted(cdc_by.keys() - db_by.keys())
    for k in extra[:limit]:
        diffs.append(f"key {k}: in cdc's table, not in the database")
    if len(extra) > limit:
        diffs.append(f"… {len(extra) - limit} more keys only in cdc's table")
    cells = 0
    tags: set[str | None] = {None} if diffs else set()
    for k in sorted(db_by.keys() & cdc_by.keys()):
        a, b = db_by[k], cdc_by[k]
        if set(b) != set(types):
            diffs.append(f"key {k}: cdc's columns {sorted(b)} are not the table's {sorted(types)}")
            cells += 1
            continue
        for col, kind in types.items():
            want = canon_db(a.get(col), kind, db, modes)
            got = canon_cdc(b.get(col), kind, modes)
            if isinstance(got, Unparseable) or want != got:
                cells += 1
                tag = known_finding(want, b.get(col), kind)
                tags.add(tag)
                if cells <= limit:
                    shown = repr(b.get(col))
                    diffs.append(
                        f"key {k} column {col}: database {_short(a.get(col))}, cdc {_short(shown)}"
                        + (f" ({got})" if isinstance(got, Unparseable) else "")
                        + (f" [finding {tag}]" if tag else "")
                    )
    if cells > limit:
        diffs.append(f"… {cells - limit} more differing cells")
    if diffs and None not in tags:
        diffs.append("known findings: " + ", ".join(sorted(t for t in tags if t)))
    return diffs


def known_finding(want: Any, got: Any, kind: str) -> str | None:
    """Which e2e/findings/NN explains a differing cell, when one does (None: unexplained)."""
    if kind in ("time", "timestamp") and isinstance(got, str) and isinstance(want, dt.time | dt.datetime):
        us = want.microsecond
        if 10_000 <= us < 100_000 and got.endswith(f".{us}"):
            return "01"
    if kind in ("decimal", "bigunsigned") and isinstance(want, Decimal) and isinstance(got, int | Decimal):
        got_d = Decimal(got)
        if got_d == Context(prec=28).plus(want) and got_d != want:
            return "02"
        if got_d == Decimal(repr(float(want))) or float(got_d) == float(want):
            return "03"
    return None


def _short(v: Any) -> str:
    s = v if isinstance(v, str) else repr(v)
    return s if len(s) <= 120 else s[:100] + f"…({len(s)} chars)"
