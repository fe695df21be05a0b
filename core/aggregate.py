"""``aggregate``: a continuous GROUP BY that emits the update log Flink's group aggregate emits.

The rules are those of Flink's ``GroupAggFunction`` (flink-table-runtime, operators/aggregate)
with mini-batch off, at parallelism 1. Per input message, for the message's group:

- a retraction (``-U``/``-D``) for a group that does not exist is skipped — Flink does not
  create state for it; cdc also reports it as a finding (``--on-inconsistency``);
- otherwise the row is accumulated (``+I``/``+U``) or retracted (``-U``/``-D``) into the group's
  accumulators and its record counter (``RecordCounter``: a COUNT(*) the planner adds whenever
  the input can retract);
- a new group emits ``+I(result)``; a group whose record count is back to zero emits
  ``-D(previous result)`` and forgets its state; an unchanged result emits nothing; any other
  change emits ``-U(previous)`` then ``+U(new)`` — or ``+U(new)`` alone for a sink with a
  primary key (``emit="upsert"``: generateUpdateBefore is false).

Aggregate functions follow Flink's built-ins, the retracting variants where the input can
retract (flink-table-planner, functions/aggfunctions):

- ``COUNT(*)`` (Count1AggFunction) counts rows; ``COUNT(col)`` (CountAggFunction) counts non-null
  values; both BIGINT, 0 for a group of nulls.
- ``SUM`` (SumWithRetractAggFunction) keeps a sum and a count of non-null values: null until a
  non-null value arrives, null again when every non-null value is retracted (the running sum is
  kept, as Flink keeps it). The result has the input's type: integers sum to an integer, floats
  (DOUBLE) to a float, decimals to a decimal of the same scale.
- ``AVG`` (AvgAggFunction) is sum / count with the input's type: integer AVG divides as Java does
  (truncated toward zero), DECIMAL(p, s) gives DECIMAL(38, max(6, s)) rounded half-up
  (LogicalTypeMerging.findAvgAggType, DecimalDataUtils.divide), DOUBLE divides as a double.
- ``MIN``/``MAX`` (MinWithRetractAggFunction, MaxWithRetractAggFunction) keep per group a map
  value → count and the current extreme, so a retracted extreme falls back to the next value;
  every detail of the map is kept, including Flink's behaviour for retractions of values never
  accumulated. Append-only input uses the plain MinAggFunction/MaxAggFunction (no map).
- ``COUNT(DISTINCT col)`` (and SUM/AVG/MIN/MAX DISTINCT) keep a map value → count, as the
  planner's DistinctAggCodeGen does; the inner aggregate sees a value when its count goes 0 → 1
  and loses it when the count goes 1 → 0.
- ``FIRST_VALUE``/``LAST_VALUE`` ignore nulls. With retraction Flink orders values by arrival
  (FirstValueWithRetractAggFunction: a wall-clock millisecond, then a list); a retraction
  removes the earliest occurrence of the value; the result is the earliest (latest) value
  still present. cdc keeps exactly that order, so its result is Flink's whatever the timing.

Values come from JSON, CSV or Parquet readers: int, float (or a float subclass), Decimal, str,
bool, None, nested objects and arrays. SUM and AVG read numbers and text that spells a number
(CSV values are all text): integer text as an integer, other decimal text as an exact decimal,
exponent text as a double. Anything else there (``'n/a'``, a boolean) is an InputError naming
the function, the column and the value. MIN/MAX/FIRST_VALUE/LAST_VALUE/COUNT take values as
they are, so on a CSV column MIN/MAX compare text, as Flink does on a STRING column. Python
integers do not overflow where Flink's BIGINT would wrap.

A row that lacks a column has null there (JSON lines may omit columns); a column that the first
row lacks is an unknown column: an InputError naming the columns present.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any, Protocol

from cdc.core.errors import CdcError, InputError, Location, UsageError
from cdc.core.model import Row
from cdc.core.predicate import Predicate, number_from_text, parse_where
from cdc.core.rowstore import hashable
from cdc.core.state import Findings, Policy, Where
from cdc.core.values import json_text

Change = tuple[str, Row]

FUNCTIONS = ("COUNT", "SUM", "MIN", "MAX", "AVG", "FIRST_VALUE", "LAST_VALUE")
_NUMERIC = ("SUM", "AVG")
_DISTINCT_OK = ("COUNT", "SUM", "AVG", "MIN", "MAX")
_AGG_HINT = "e.g. --agg cnt=COUNT(url), --agg 'n=COUNT(*)', --agg 'pages=COUNT(DISTINCT url)', --agg total=SUM(amount)"


def _nowhere() -> Location | None:
    return None


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# ---------------------------------------------------------------------------------------------
# Parsing


@dataclass(frozen=True)
class AggCall:
    """One aggregate: ``name=FUNC([DISTINCT] arg)``; ``arg`` is None for ``COUNT(*)``."""

    name: str
    func: str
    arg: str | None = None
    distinct: bool = False

    def call_text(self) -> str:
        arg = "*" if self.arg is None else self.arg
        return f"{self.func}({'DISTINCT ' if self.distinct else ''}{arg})"

    def __str__(self) -> str:
        return f"{self.name}={self.call_text()}"

    def sql(self) -> str:
        """The call in Flink SQL, with its alias: ``COUNT(DISTINCT `url`) AS `pages```."""
        arg = "*" if self.arg is None else _ident(self.arg)
        return f"{self.func}({'DISTINCT ' if self.distinct else ''}{arg}) AS {_ident(self.name)}"


_AGG = re.compile(
    r"""\s*(?:(?P<name>`(?:[^`]|``)+`|"(?:[^"]|"")+"|[^\s=()`"]+)\s*=\s*)?
        (?P<func>[A-Za-z_][A-Za-z_0-9]*)\s*\(\s*(?P<body>.*?)\s*\)\s*""",
    re.VERBOSE | re.DOTALL,
)


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in '`"':
        q = text[0]
        return text[1:-1].replace(q + q, q)
    return text


def parse_agg(text: str) -> AggCall:
    """``"cnt=COUNT(url)"`` → AggCall; ``COUNT(*)``, ``COUNT(DISTINCT col)``, ``SUM``, ``MIN``,
    ``MAX``, ``AVG``, ``FIRST_VALUE``, ``LAST_VALUE`` (function names in any case). Without
    ``NAME=`` the result column is named like ``sum_amount``. Bad text is a UsageError."""
    m = _AGG.fullmatch(text)
    if m is None:
        raise UsageError(f"--agg {text!r}: expected NAME=FUNCTION(COLUMN)", hint=_AGG_HINT)
    func = m["func"].upper()
    if func not in FUNCTIONS:
        raise UsageError(
            f"--agg {text!r}: unknown aggregate function {m['func']}; cdc computes {', '.join(FUNCTIONS)}",
            hint=_AGG_HINT,
        )
    body = m["body"]
    distinct = False
    head = body.split(None, 1)
    if len(head) == 2 and head[0].upper() == "DISTINCT":
        distinct, body = True, head[1].strip()
    elif body.upper() == "DISTINCT":
        raise UsageError(f"--agg {text!r}: DISTINCT needs a column", hint=_AGG_HINT)
    if not body:
        raise UsageError(f"--agg {text!r}: {func}() needs a column (or * for COUNT)", hint=_AGG_HINT)
    arg: str | None
    if body == "*" or (func == "COUNT" and body == "1" and not distinct):
        if func != "COUNT" or distinct:
            raise UsageError(f"--agg {text!r}: only COUNT takes *", hint=_AGG_HINT)
        arg = None
    else:
        if any(c in body for c in "()") or ("," in body and body[0] not in '`"'):
            raise UsageError(f"--agg {text!r}: the argument must be one column name, not an expression", hint=_AGG_HINT)
        arg = _unquote(body)
    if distinct and func not in _DISTINCT_OK:
        raise UsageError(f"--agg {text!r}: {func} does not take DISTINCT", hint=_AGG_HINT)
    if m["name"] is not None:
        name = _unquote(m["name"])
    elif arg is None:
        name = "count_star"
    else:
        name = f"{func.lower()}_{'distinct_' if distinct else ''}{arg}"
    return AggCall(name, func, arg, distinct)


@dataclass(frozen=True)
class AggregateQuery:
    """What ``cdc aggregate`` computes.

    ``group_by`` (empty: one global row), the aggregates in output order, the emission
    (``retract`` or ``upsert``), an optional ``where`` filter, and whether the input can
    retract at all: ``retractions=False`` (append-only input, every change a ``+I``) lets
    MIN/MAX/DISTINCT/FIRST/LAST keep Flink's lean append-only state.
    """

    group_by: tuple[str, ...] = ()
    aggs: tuple[AggCall, ...] = ()
    emit: str = "retract"
    where: Predicate | None = None
    retractions: bool = True

    def __post_init__(self) -> None:
        if self.emit not in ("retract", "upsert"):
            raise UsageError(f"--emit {self.emit!r}: expected retract or upsert")
        if not self.aggs and not self.group_by:
            raise UsageError("aggregate needs --group-by COLS, --agg NAME=FUNC(COL), or both", hint=_AGG_HINT)
        if len(set(self.group_by)) != len(self.group_by):
            raise UsageError(f"--group-by names a column twice: {', '.join(self.group_by)}")
        seen: set[str] = set()
        for name in self.columns:
            if name in seen:
                raise UsageError(
                    f"the output would have two columns named {name!r}",
                    hint="give each aggregate its own name: --agg NAME=FUNC(COL), different from the group-by columns",
                )
            seen.add(name)

    @classmethod
    def parse(
        cls,
        group_by: Sequence[str] = (),
        aggs: Sequence[str] = (),
        emit: str = "retract",
        where: str | None = None,
        retractions: bool = True,
    ) -> AggregateQuery:
        """The spec from flag texts; ``group_by`` items may be comma lists (``"user,url"``)."""
        cols = tuple(c.strip() for item in group_by for c in item.split(",") if c.strip())
        return cls(
            cols,
            tuple(parse_agg(a) for a in aggs),
            emit,
            parse_where(where) if where is not None and where.strip() else None,
            retractions,
        )

    @property
    def columns(self) -> tuple[str, ...]:
        """The output columns: the group-by columns, then the aggregates in the order given."""
        return self.group_by + tuple(a.name for a in self.aggs)

    @property
    def input_columns(self) -> tuple[str, ...]:
        """Every input column the job reads (group-by, aggregate arguments, the filter's)."""
        cols = [*self.group_by, *(a.arg for a in self.aggs if a.arg is not None)]
        if self.where is not None:
            cols.extend(self.where.columns)
        return tuple(dict.fromkeys(cols))

    def select_sql(self, source: str) -> str:
        """The continuous query in Flink SQL over ``source`` (a table name or a table function)."""
        select = ", ".join([*(_ident(c) for c in self.group_by), *(a.sql() for a in self.aggs)])
        sql = f"SELECT {select} FROM {source}"
        if self.where is not None:
            sql += f" WHERE {self.where.sql()}"
        if self.group_by:
            sql += " GROUP BY " + ", ".join(_ident(c) for c in self.group_by)
        return sql

    def example_row(self, row: Row) -> Row:
        """The result row this input row alone would give its group (+I): its values of the
        types the aggregate writes — COUNT an integer, SUM/AVG the number a value reads as (None
        where it reads as none), the others the value itself. An empty result's Parquet schema
        takes its types from such rows, never written."""
        out = {c: row.get(c) for c in self.group_by}
        for call in self.aggs:
            value = None if call.arg is None else row.get(call.arg)
            if call.func == "COUNT":
                out[call.name] = 1 if value is not None or call.arg is None else 0
            elif call.func in _NUMERIC and value is not None:
                try:
                    number = _number(value, call.func, call.arg or "")
                except InputError:
                    number = None
                out[call.name] = _avg(number, 1) if call.func == "AVG" and number is not None else number
            else:
                out[call.name] = value
        return out

    def check_columns(self, present: Iterable[str]) -> None:
        """An InputError when the input lacks a column the job reads."""
        have = list(present)
        known = set(have)
        for col in self.input_columns:
            if col not in known:
                raise InputError(
                    f"column {col!r} does not exist; the input has {', '.join(map(repr, have)) or 'no columns'}",
                    hint="--group-by, --agg and --where name input columns (case-sensitive)",
                )


# ---------------------------------------------------------------------------------------------
# Value helpers used by the generated code


def _number(value: Any, func: str, column: str) -> Any:
    """A SUM/AVG operand that is not a plain int or float, as a number (or an InputError)."""
    if isinstance(value, float):
        return float(value)  # a float subclass (one that remembers its JSON spelling)
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        n = number_from_text(value)
        if n is not None:
            return n
    raise InputError(
        f"{func}({column}): {value!r} is not a number",
        hint=f"{func} adds numbers, or text that spells one; filter other rows out with --where",
    )


def _mixed(total: Any, value: Any, sign: int) -> Any:
    """A DECIMAL and a DOUBLE meet in one sum: SQL's common type of the two is DOUBLE."""
    return float(total) + sign * float(value)


_DIVIDE = Context(prec=38, rounding=ROUND_HALF_UP)  # DecimalDataUtils.MC_DIVIDE
_WIDE = Context(prec=200, rounding=ROUND_HALF_UP)


def _avg(total: Any, count: int) -> Any:
    """Flink's AVG value: sum / count in the sum's type."""
    t = type(total)
    if t is float:
        return total / count
    if t is int:  # Java long division: truncated toward zero
        q = abs(total) // abs(count)
        return q if (total >= 0) == (count > 0) else -q
    exponent = total.as_tuple().exponent
    scale = max(6, -exponent) if isinstance(exponent, int) else 6  # DECIMAL(38, max(6, s))
    quotient = _DIVIDE.divide(total, Decimal(count))
    return quotient.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP, context=_WIDE)


# ---------------------------------------------------------------------------------------------
# Code generation: like Flink's AggsHandleFunction, one function made for the job at hand


class _Code:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def add(self, *lines: str) -> None:
        self.lines.extend("    " * self.depth + line for line in lines)

    def block(self, lines: Sequence[str]) -> None:
        self.add(*lines)


def _indent(lines: Sequence[str], levels: int = 1) -> list[str]:
    return ["    " * levels + line for line in lines]


@dataclass
class _Agg:
    """Code for one aggregate: slot initial values, accumulate/retract lines, value expression."""

    slots: list[str]
    acc: list[str]
    ret: list[str]
    value: str


def _agg_code(call: AggCall, base: int, v: str, retracting: bool) -> _Agg:
    """The code of one aggregate whose state starts at ``s[base]`` and whose operand is ``v``."""
    if call.distinct:
        inner = _plain_code(call.func, base + 1, v, retracting)
        m = f"s[{base}]"
        if retracting:
            acc = [
                f"m = {m}; c = m.get({v}, 0) + 1",
                f"if c == 0: del m[{v}]",
                f"else: m[{v}] = c",
                "if c == 1:",
                *_indent(inner.acc or ["pass"]),
            ]
            ret = [
                f"m = {m}; c = m.get({v}, 0) - 1",
                "if c == 0:",
                f"    del m[{v}]",
                *_indent(inner.ret or ["pass"]),
                f"else: m[{v}] = c",
            ]
            return _Agg(["{}", *inner.slots], acc, ret, inner.value)
        acc = [f"m = {m}", f"if {v} not in m:", f"    m.add({v})", *_indent(inner.acc or ["pass"])]
        return _Agg(["set()", *inner.slots], acc, [], inner.value)
    return _plain_code(call.func, base, v, retracting)


def _plain_code(func: str, b: int, v: str, retracting: bool) -> _Agg:
    s = f"s[{b}]"
    if func == "COUNT":
        return _Agg(["0"], [f"if {v} is not None: {s} += 1"], [f"if {v} is not None: {s} -= 1"], s)
    if func == "SUM":
        add = [
            "x = " + s,
            f"if x is None: {s} = {v}",
            "else:",
            f"    try: {s} = x + {v}",
            f"    except TypeError: {s} = mixed(x, {v}, 1)",
        ]
        if not retracting:  # SumAggFunction
            return _Agg(["None"], [f"if {v} is not None:", *_indent(add)], [], s)
        cnt = f"s[{b + 1}]"
        sub = [
            "x = " + s,
            f"if x is None: {s} = 0 - {v}",
            "else:",
            f"    try: {s} = x - {v}",
            f"    except TypeError: {s} = mixed(x, {v}, -1)",
        ]
        return _Agg(
            ["None", "0"],
            [f"if {v} is not None:", *_indent([*add, f"{cnt} += 1"])],
            [f"if {v} is not None:", *_indent([*sub, f"{cnt} -= 1"])],
            f"(None if {cnt} == 0 else {s})",
        )
    if func == "AVG":
        cnt = f"s[{b + 1}]"
        return _Agg(
            ["0", "0"],
            [
                f"if {v} is not None:",
                f"    try: {s} += {v}",
                f"    except TypeError: {s} = mixed({s}, {v}, 1)",
                f"    {cnt} += 1",
            ],
            [
                f"if {v} is not None:",
                f"    try: {s} -= {v}",
                f"    except TypeError: {s} = mixed({s}, {v}, -1)",
                f"    {cnt} -= 1",
            ],
            f"(None if {cnt} == 0 else avg({s}, {cnt}))",
        )
    if func in ("MIN", "MAX"):
        beats = "<" if func == "MIN" else ">"  # v beats the current extreme
        pick = "min" if func == "MIN" else "max"
        if not retracting:  # MinAggFunction / MaxAggFunction
            return _Agg(
                ["None"],
                [f"if {v} is not None:", "    x = " + s, f"    if x is None or {v} {beats} x: {s} = {v}"],
                [],
                s,
            )
        size, view = f"s[{b + 1}]", f"s[{b + 2}]"
        return _Agg(
            ["None", "0", "{}"],
            [
                f"if {v} is not None:",
                f"    if {size} == 0 or {v} {beats} {s}: {s} = {v}",
                f"    m = {view}; c = m.get({v}, 0) + 1",
                f"    if c == 0: del m[{v}]",
                f"    else: m[{v}] = c",
                f"    if c == 1: {size} += 1",
            ],
            [
                f"if {v} is not None:",
                f"    m = {view}; c = m.get({v}, 0) - 1",
                "    if c == 0:",
                f"        del m[{v}]",
                f"        {size} -= 1",
                f"        if {size} == 0: {s} = None",
                f"        elif {v} == {s}:",
                f"            if m: {s} = {pick}(m)",  # every key, negative counts too (updateMax)
                f"            else: {size} = 0; {s} = None",
                f"    else: m[{v}] = c",
            ],
            f"({s} if {size} > 0 else None)",
        )
    if func in ("FIRST_VALUE", "LAST_VALUE"):
        first = func == "FIRST_VALUE"
        if not retracting:  # FirstValueAggFunction / LastValueAggFunction: nulls ignored
            cond = f"{v} is not None and {s} is None" if first else f"{v} is not None"
            return _Agg(["None"], [f"if {cond}: {s} = {v}"], [], s)
        return _Agg(
            ["[]"],
            [f"if {v} is not None: {s}.append({v})"],
            [f"if {v} is not None and {v} in {s}: {s}.remove({v})"],
            f"({s}[{0 if first else -1}] if {s} else None)",
        )
    raise AssertionError(func)  # pragma: no cover - parse_agg admits only FUNCTIONS


# Placeholders in the generated body: repr() never writes a NUL, so no column name can hold them
DONE, WHERE = "\x00DONE\x00", "\x00WHERE\x00"

# Counter slots of the generated code
_INSERTED, _UPDATED, _DELETED, _UNCHANGED, _FILTERED, _SKIPPED = range(6)


def generate(spec: AggregateQuery, check_retractions: bool = True) -> str:
    """The Python source of ``make(...)``, which returns the job's ``apply`` and ``apply_batch``.

    ``check_retractions`` keeps, per group, a count of each live row's operands, to report a
    retraction of a row the group never accumulated (it changes nothing in the output)."""
    retracting = spec.retractions
    # operands: the raw value of each argument column, and a numeric one for SUM/AVG
    arg_cols = list(dict.fromkeys(a.arg for a in spec.aggs if a.arg is not None))
    raw = {c: f"r{i}" for i, c in enumerate(arg_cols)}
    numeric: dict[str, str] = {}
    extract: list[str] = [f"{raw[c]} = row.get({c!r})" for c in arg_cols]
    for a in spec.aggs:
        if a.func in _NUMERIC and a.arg is not None and a.arg not in numeric:
            n = numeric[a.arg] = f"n{arg_cols.index(a.arg)}"
            r = raw[a.arg]
            extract += [
                f"{n} = {r}",
                f"if {n} is not None and type({n}) is not int and type({n}) is not float: "
                f"{n} = number({n}, {a.func!r}, {a.arg!r})",
            ]

    base = 2  # s[0]: the result last emitted (a row), s[1]: the record count
    aggs: list[_Agg] = []
    values: list[str] = []
    for a in spec.aggs:
        if a.arg is None:
            values.append("s[1]")  # COUNT(*) is the record counter
            continue
        v = numeric[a.arg] if a.func in _NUMERIC else raw[a.arg]
        code = _agg_code(a, base, v, retracting)
        base += len(code.slots)
        aggs.append(code)
        values.append(code.value)
    track = check_retractions and retracting and bool(arg_cols)
    tracker = base
    inits = ", ".join(["None", "1", *(slot for code in aggs for slot in code.slots), *(["{}"] if track else [])])

    if len(spec.group_by) == 1:
        key_expr = f"row.get({spec.group_by[0]!r})"
        fix_key = "key = hashable(key)"
    elif spec.group_by:
        key_expr = "(" + ", ".join(f"row.get({c!r})" for c in spec.group_by) + ")"
        fix_key = "key = tuple([hashable(k) for k in key])"
    else:
        key_expr = "()"
        fix_key = "raise"
    names = spec.columns
    a_vars = [f"a{i}" for i in range(len(values))]
    first_row = ", ".join(
        [
            *(f"{c!r}: row.get({c!r})" for c in spec.group_by),
            *(f"{n!r}: {x}" for n, x in zip(names[len(spec.group_by) :], a_vars, strict=True)),
        ]
    )
    next_row = ", ".join(
        [
            *(f"{c!r}: old[{c!r}]" for c in spec.group_by),
            *(f"{n!r}: {x}" for n, x in zip(names[len(spec.group_by) :], a_vars, strict=True)),
        ]
    )
    same = (
        " and ".join(f"old[{n!r}] == {x}" for n, x in zip(names[len(spec.group_by) :], a_vars, strict=True)) or "True"
    )
    # one operand is its own key (no tuple per row for the collector to trace); several, a tuple
    operands = raw[arg_cols[0]] if len(arg_cols) == 1 else "(" + "".join(f"{raw[c]}, " for c in arg_cols) + ")"
    unhashable = "hashable(t)" if len(arg_cols) == 1 else "tuple([hashable(x) for x in t])"

    body = _Code()
    if spec.where is not None:
        body.add("if not pred(row):", f"    C[{_FILTERED}] += 1", "    " + DONE)
    body.add(f"key = {key_expr}", *extract)
    body.add("try:", "    s = groups.get(key)", "except TypeError:", f"    {fix_key}", "    s = groups.get(key)")
    body.add("if kind == '+I' or kind == '+U':")
    body.depth += 1
    body.add("if s is None:")
    body.add(f"    s = [{inits}]", "    groups[key] = s")
    if track:
        body.add(
            f"    t = {operands}",
            f"    try: s[{tracker}][t] = 1",
            f"    except TypeError: s[{tracker}][{unhashable}] = 1",
        )
    for code in aggs:
        body.block(_indent(code.acc))
    body.add(*_indent([f"{x} = {val}" for x, val in zip(a_vars, values, strict=True)]))
    body.add(f"    s[0] = new = {{{first_row}}}", f"    C[{_INSERTED}] += 1", "    emit(('+I', new))", "    " + DONE)
    body.add("s[1] += 1")
    if track:
        body.add(
            f"t = {operands}; tr = s[{tracker}]",
            "try: c = tr.get(t, 0) + 1",
            f"except TypeError: t = {unhashable}; c = tr.get(t, 0) + 1",
            "if c == 0: del tr[t]",
            "else: tr[t] = c",
        )
    for code in aggs:
        body.block(code.acc)
    body.depth -= 1
    if retracting:
        body.add("elif kind == '-U' or kind == '-D':")
        body.depth += 1
        body.add("if s is None:", f"    C[{_SKIPPED}] += 1", "    absent(kind, row, " + WHERE + ")", "    " + DONE)
        if track:
            body.add(
                f"t = {operands}; tr = s[{tracker}]",
                "try: c = tr.get(t, 0) - 1",
                f"except TypeError: t = {unhashable}; c = tr.get(t, 0) - 1",
                "if c < 0: unmatched(kind, row, " + WHERE + ")",
                "if c == 0: del tr[t]",
                "else: tr[t] = c",
            )
        body.add("s[1] -= 1")
        for code in aggs:
            body.block(code.ret)
        body.add(
            "if s[1] == 0:",
            "    del groups[key]",
            f"    C[{_DELETED}] += 1",
            "    emit(('-D', s[0]))",
            "    " + DONE,
        )
        body.depth -= 1
        body.add("else:", "    bad_kind(kind)")
    else:
        body.add("else:", "    append_only(kind)")
    body.add(*(f"{x} = {val}" for x, val in zip(a_vars, values, strict=True)))
    body.add("old = s[0]")
    if not any(a.arg is None for a in spec.aggs):  # COUNT(*) changes with every message that gets here
        body.add(f"if {same}:", f"    C[{_UNCHANGED}] += 1", "    " + DONE)
    body.add(f"s[0] = new = {{{next_row}}}", f"C[{_UPDATED}] += 1")
    if spec.emit == "retract":
        body.add("emit(('-U', old))")
    body.add("emit(('+U', new))")
    body.add(DONE)

    def render(done: str, where: str, depth: int) -> list[str]:
        return _indent([line.replace(DONE, done).replace(WHERE, where) for line in body.lines], depth)

    src = [
        "def make(groups, C, pred, absent, unmatched, bad_kind, append_only, type_error,",
        "         number, mixed, avg, hashable, CdcError, nowhere):",
        "    def apply(kind, row, where=nowhere):",
        "        out = []",
        "        emit = out.append",
        "        try:",
        *render("return out", "where", 3),
        "        except TypeError as exc:",
        "            raise type_error(exc).located(where()) from None",
        "        except CdcError as exc:",
        "            raise exc.located(where())",
        "",
        "    def apply_batch(changes, locate):",
        "        out = []",
        "        emit = out.append",
        "        i = -1",
        "        try:",
        "            for kind, row in changes:",
        "                i += 1",
        *render("continue", "(lambda: locate(i))", 4),
        "        except TypeError as exc:",
        "            raise type_error(exc).located(locate(i)) from None",
        "        except CdcError as exc:",
        "            raise exc.located(locate(i))",
        "        return out",
        "",
        "    return apply, apply_batch",
    ]
    return "\n".join(src) + "\n"


# ---------------------------------------------------------------------------------------------
# The operator


@dataclass
class AggregateCounts:
    """Every input message is accounted for by exactly one outcome."""

    filtered: int = 0  # dropped by --where
    skipped: int = 0  # retractions of a group that does not exist (Flink skips them)
    unchanged: int = 0  # the group's result did not change: nothing emitted
    inserted: int = 0  # +I: a new group
    updated: int = 0  # -U/+U (retract) or +U (upsert)
    deleted: int = 0  # -D: the group's last row was retracted
    groups: int = 0  # live groups now
    emit: str = "retract"

    @property
    def read(self) -> int:
        return self.filtered + self.skipped + self.unchanged + self.inserted + self.updated + self.deleted

    @property
    def by_kind(self) -> dict[str, int]:
        before = self.updated if self.emit == "retract" else 0
        counts = {"+I": self.inserted, "-U": before, "+U": self.updated, "-D": self.deleted}
        return {k: n for k, n in counts.items() if n}

    @property
    def written(self) -> int:
        return sum(self.by_kind.values())

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in self.by_kind.items())
        parts = [f"read {self.read}", f"wrote {self.written}" + (f" ({kinds})" if kinds else "")]
        parts.append(f"{self.groups} groups")
        if self.unchanged:
            parts.append(f"unchanged results {self.unchanged}")
        if self.filtered:
            parts.append(f"filtered out {self.filtered}")
        if self.skipped:
            parts.append(f"retractions of absent groups {self.skipped}")
        return ", ".join(parts)


class _Apply(Protocol):
    def __call__(self, kind: str, row: Row, where: Where = ...) -> list[Change]: ...


class GroupAggregate:
    """Flink's group aggregate for one job: ``apply(kind, row)`` returns the changes to emit.

    Output rows carry the group-by columns then the aggregates (the caller adds the kind
    column). The last ``+I``/``+U`` row of each group is also the group's stored result, so a
    caller must not change output rows in place (build a new dict to add the kind column).
    """

    apply: _Apply

    def __init__(self, spec: AggregateQuery, findings: Findings | None = None):
        self.spec = spec
        self.findings = findings if findings is not None else Findings()
        self.groups: dict[Any, list[Any]] = {}
        self._c = [0] * 6
        self.source = generate(spec, check_retractions=self.findings.policy != Policy.ignore)
        namespace: dict[str, Any] = {}
        exec(compile(self.source, f"<cdc aggregate: {spec.select_sql('input')}>", "exec"), namespace)
        self._fast_apply, self._fast_batch = namespace["make"](
            self.groups,
            self._c,
            spec.where,
            self._absent,
            self._unmatched,
            _bad_kind,
            _append_only,
            self._type_error,
            _number,
            _mixed,
            _avg,
            hashable,
            CdcError,
            _nowhere,
        )
        self._checked = False
        self.apply = self._first_apply

    def _first_apply(self, kind: str, row: Row, where: Where = _nowhere) -> list[Change]:
        self._check(row, where)
        self.apply = self._fast_apply
        return self.apply(kind, row, where)

    def _check(self, row: Row, where: Where) -> None:
        if not self._checked:
            try:
                self.spec.check_columns(row)
            except CdcError as exc:
                raise exc.located(where()) from None
            self._checked = True

    def apply_batch(
        self, changes: Sequence[Change], locate: Callable[[int], Location | None] | None = None
    ) -> list[Change]:
        """``apply`` for many changes at once, without a call per change; ``locate(i)`` names
        where the i-th change came from (for errors and findings)."""
        if not changes:
            return []
        loc = locate if locate is not None else _no_location
        if not self._checked:
            self._check(changes[0][1], lambda: loc(0))
            self.apply = self._fast_apply
        out: list[Change] = self._fast_batch(changes, loc)
        return out

    def run(self, changes: Iterable[Change]) -> Iterator[Change]:
        """Every change through the aggregate, in order: its update log."""
        for kind, row in changes:
            yield from self.apply(kind, row)

    def rows(self) -> Iterator[Row]:
        """The result table now: one row per live group, in the order the groups appeared."""
        return (s[0] for s in self.groups.values())

    @property
    def counts(self) -> AggregateCounts:
        c = self._c
        return AggregateCounts(
            filtered=c[_FILTERED],
            skipped=c[_SKIPPED],
            unchanged=c[_UNCHANGED],
            inserted=c[_INSERTED],
            updated=c[_UPDATED],
            deleted=c[_DELETED],
            groups=len(self.groups),
            emit=self.spec.emit,
        )

    # Rare paths, called from the generated code

    def _describe_group(self, row: Row) -> str:
        if not self.spec.group_by:
            return "the global group"
        return "group " + ", ".join(f"{c}={row.get(c)!r}" for c in self.spec.group_by)

    def _absent(self, kind: str, row: Row, where: Where) -> None:
        self.findings.add(
            "retraction of an absent group",
            f"{kind} for {self._describe_group(row)}, which does not exist (Flink skips it)",
            where,
        )

    def _unmatched(self, kind: str, row: Row, where: Where) -> None:
        args = [a.arg for a in self.spec.aggs if a.arg is not None]
        values = ", ".join(f"{c}={json_text(row.get(c))}" for c in dict.fromkeys(args))
        self.findings.add(
            "retraction of a row never accumulated",
            f"{kind} of a row ({values}) that {self._describe_group(row)} never accumulated (Flink applies it anyway)",
            where,
        )

    def _type_error(self, exc: TypeError) -> InputError:
        compared = [str(a) for a in self.spec.aggs if a.func not in ("COUNT",) or a.distinct]
        return InputError(
            f"values of different types meet in one aggregate ({exc}); aggregates: {', '.join(compared)}",
            hint="a column must hold one type: numbers, or text, not both",
        )


def _no_location(index: int) -> Location | None:
    return None


def _bad_kind(kind: str) -> None:
    raise InputError(f"unknown row kind {kind!r}; expected +I, -U, +U or -D")


def _append_only(kind: str) -> None:
    if kind in ("-U", "-D"):
        raise InputError(f"a {kind} in append-only input", hint="--input-mode changelog reads retractions")
    _bad_kind(kind)


def aggregate(changes: Iterable[Change], spec: AggregateQuery, findings: Findings | None = None) -> Iterator[Change]:
    """The update log of ``spec`` over ``changes`` (kind, row)."""
    return GroupAggregate(spec, findings).run(changes)


UPSERT_STREAM = (
    "+U with no -U before it: an upsert stream (only +I/+U), whose every update a changelog "
    "aggregate counts as one more row; read it with --input-mode upsert --key COL"
)


class UpsertWatch:
    """``aggregate`` reading a changelog: a ``+U`` with no ``-U`` anywhere before it means an
    upsert stream, which changelog mode miscounts — a finding, once (``--on-inconsistency fail``
    stops there). A ``-U`` first (a retract stream) ends the watch."""

    def __init__(self, findings: Findings):
        self.findings = findings
        self.watching = True

    def see(self, kind: str, where: Where) -> None:
        if kind == "-U":
            self.watching = False
        elif kind == "+U":
            self.watching = False
            self.findings.add("upsert stream read as a changelog", UPSERT_STREAM, where)
