"""``--where``: the filter Flink's Calc applies below an aggregate, in SQL's three-valued logic.

A predicate is comparisons ``COL OP VALUE`` (``= != <> < <= > >=``) and ``COL IS [NOT] NULL``
joined by ``AND``. VALUE is a number (``10``, ``-2.5``, ``1e3``), a string in single quotes
(``'it''s'``), ``TRUE``/``FALSE`` or ``NULL``. Column names are bare (``amount``, ``_ts``) or
quoted with backquotes or double quotes (`` `order id` ``).

A comparison with a null value is unknown, not true, so the row is dropped — as Flink drops it
(``x <> 5`` does not keep rows whose ``x`` is null, and ``x = NULL`` keeps none). A filter on a
changelog keeps each change's kind: a ``-U`` whose image fails the predicate is dropped like any
other row.

Values are compared as Flink compares a column of the matching type: numbers as numbers (int,
float, Decimal alike; a literal with a fraction is a DOUBLE against a float value, exact against
an int or Decimal one), text as text (code point order, which is Flink's UTF-8 byte order), and
booleans as booleans. Text that spells a number compares as that number with a numeric literal
(CSV values are all text), and ``'true'``/``'false'`` text as a boolean. A value that cannot be
compared with the literal (the text ``'abc'`` with ``10``, an object) is an input error, as a
failed cast is in Flink.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc.core.errors import InputError, UsageError

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<number>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?![\w.])
      | '(?P<string>(?:[^']|'')*)'
      | `(?P<bq>(?:[^`]|``)+)`
      | "(?P<dq>(?:[^"]|"")+)"
      | (?P<op><>|!=|<=|>=|=|<|>)
      | (?P<word>[A-Za-z_][\w$.]*)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"AND", "IS", "NOT", "NULL", "TRUE", "FALSE", "OR"}
_HINT = 'e.g. --where "amount > 10 AND country IS NOT NULL" (comparisons and IS [NOT] NULL, joined by AND)'
_INT_TEXT = re.compile(r"[+-]?\d+")
_DECIMAL_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)")
_FLOAT_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)[eE][+-]?\d+")


def number_from_text(text: str) -> int | Decimal | float | None:
    """The number a text spells, or None: integers exactly, fractions as exact decimals, an
    exponent as a double (blanks around it are allowed, as in a hand-written CSV)."""
    t = text.strip()
    if _INT_TEXT.fullmatch(t):
        return int(t)
    if _DECIMAL_TEXT.fullmatch(t):
        try:
            return Decimal(t)
        except InvalidOperation:  # pragma: no cover - the pattern admits only valid decimals
            return None
    if _FLOAT_TEXT.fullmatch(t):
        return float(t)
    return None


@dataclass(frozen=True)
class Literal:
    text: str  # as written in SQL
    value: Any  # int | Decimal | float | str | bool | None

    @property
    def exact(self) -> Any:
        return self.value

    @property
    def approx(self) -> Any:
        """The literal as a DOUBLE, for comparison with a float value."""
        return float(self.value) if isinstance(self.value, Decimal | int) else self.value


@dataclass(frozen=True)
class Comparison:
    column: str
    op: str  # one of _OPS, or "IS NULL" / "IS NOT NULL"
    literal: Literal | None = None

    def sql(self) -> str:
        col = _ident(self.column)
        if self.literal is None:
            return f"{col} {self.op}"
        return f"{col} {'<>' if self.op == '!=' else self.op} {self.literal.text}"

    def compile(self) -> Callable[[Mapping[str, Any]], bool]:
        col = self.column
        if self.op == "IS NULL":
            return lambda row: row.get(col) is None
        if self.op == "IS NOT NULL":
            return lambda row: row.get(col) is not None
        assert self.literal is not None
        lit = self.literal
        cmp = _OPS[self.op]
        value = lit.value
        if value is None:  # x = NULL is never true
            return lambda row: False
        if isinstance(value, bool):
            return _boolean_test(col, cmp, lit)
        if isinstance(value, str):
            return _text_test(col, cmp, lit)
        return _number_test(col, cmp, lit)


def _number_test(col: str, cmp: Callable[[Any, Any], bool], lit: Literal) -> Callable[[Mapping[str, Any]], bool]:
    exact, approx = lit.exact, lit.approx

    def test(row: Mapping[str, Any]) -> bool:
        v = row.get(col)
        if v is None:
            return False
        t = type(v)
        if t is int or t is Decimal:
            return cmp(v, exact)
        if t is float or (isinstance(v, float) and t is not bool):
            return cmp(v, approx)
        if t is str:
            n = number_from_text(v)
            if n is not None:
                return cmp(n, approx) if type(n) is float else cmp(n, exact)
        raise InputError(
            f"--where: {col} = {v!r} is not a number; it is compared with {lit.text}",
            hint="a numeric comparison needs numeric values in this column",
        )

    return test


def _text_test(col: str, cmp: Callable[[Any, Any], bool], lit: Literal) -> Callable[[Mapping[str, Any]], bool]:
    text = lit.value
    as_number = number_from_text(text)

    def test(row: Mapping[str, Any]) -> bool:
        v = row.get(col)
        if v is None:
            return False
        if type(v) is str:
            return cmp(v, text)
        if as_number is not None and type(v) is not bool and isinstance(v, int | float | Decimal):
            return cmp(v, float(as_number) if isinstance(v, float) else as_number)
        raise InputError(f"--where: {col} = {v!r} cannot be compared with the text {lit.text}")

    return test


def _boolean_test(col: str, cmp: Callable[[Any, Any], bool], lit: Literal) -> Callable[[Mapping[str, Any]], bool]:
    flag = lit.value

    def test(row: Mapping[str, Any]) -> bool:
        v = row.get(col)
        if v is None:
            return False
        if type(v) is bool:
            return cmp(v, flag)
        if type(v) is str and v.strip().lower() in ("true", "false"):
            return cmp(v.strip().lower() == "true", flag)
        raise InputError(f"--where: {col} = {v!r} is not a boolean; it is compared with {lit.text}")

    return test


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class Predicate:
    """Comparisons joined by AND; calling it on a row says whether the row passes (is true)."""

    terms: tuple[Comparison, ...]
    text: str = ""
    _tests: tuple[Callable[[Mapping[str, Any]], bool], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_tests", tuple(term.compile() for term in self.terms))

    def __call__(self, row: Mapping[str, Any]) -> bool:
        for test in self._tests:  # noqa: SIM110 - once per row: a loop costs less than all() over a generator
            if not test(row):
                return False
        return True

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.column for t in self.terms))

    def sql(self) -> str:
        """The predicate in Flink SQL (columns quoted with backquotes)."""
        return " AND ".join(t.sql() for t in self.terms)

    def __str__(self) -> str:
        return self.text or self.sql()


def parse_where(text: str) -> Predicate:
    """``"amount > 10 AND country IS NOT NULL"`` → a Predicate; bad text is a UsageError."""
    tokens = _tokenize(text)
    if not tokens:
        raise UsageError("--where is empty", hint=_HINT)
    terms: list[Comparison] = []
    pos = 0

    def take() -> tuple[str, str]:
        nonlocal pos
        if pos >= len(tokens):
            raise UsageError(f"--where {text!r}: the predicate ends too early", hint=_HINT)
        tok = tokens[pos]
        pos += 1
        return tok

    while True:
        kind, value = take()
        if kind == "word" and value.upper() in _KEYWORDS:
            raise UsageError(f"--where {text!r}: expected a column name, found {value.upper()}", hint=_HINT)
        if kind not in ("word", "ident"):
            raise UsageError(f"--where {text!r}: expected a column name, found {value!r}", hint=_HINT)
        column = value
        kind, value = take()
        if kind == "word" and value.upper() == "IS":
            kind, value = take()
            negated = kind == "word" and value.upper() == "NOT"
            if negated:
                kind, value = take()
            if not (kind == "word" and value.upper() == "NULL"):
                raise UsageError(f"--where {text!r}: expected NULL after IS{' NOT' if negated else ''}", hint=_HINT)
            terms.append(Comparison(column, "IS NOT NULL" if negated else "IS NULL"))
        elif kind == "op":
            op = value
            terms.append(Comparison(column, op, _literal(take(), text)))
        else:
            raise UsageError(
                f"--where {text!r}: expected a comparison (= != <> < <= > >=) or IS [NOT] NULL after {column!r}",
                hint=_HINT,
            )
        if pos == len(tokens):
            break
        kind, value = take()
        if kind == "word" and value.upper() == "OR":
            raise UsageError(f"--where {text!r}: OR is not supported, only AND", hint=_HINT)
        if not (kind == "word" and value.upper() == "AND"):
            raise UsageError(f"--where {text!r}: expected AND, found {value!r}", hint=_HINT)
    return Predicate(tuple(terms), text.strip())


def _literal(token: tuple[str, str], text: str) -> Literal:
    kind, value = token
    if kind == "number":
        n = number_from_text(value)
        assert n is not None
        return Literal(value, n)
    if kind == "string":
        return Literal("'" + value + "'", value.replace("''", "'"))
    if kind == "word" and value.upper() in ("TRUE", "FALSE"):
        return Literal(value.upper(), value.upper() == "TRUE")
    if kind == "word" and value.upper() == "NULL":
        return Literal("NULL", None)
    hint = "quote text in single quotes: name = 'Mary'" if kind in ("word", "ident") else _HINT
    raise UsageError(f"--where {text!r}: expected a value (number, 'text', TRUE, FALSE), found {value!r}", hint=hint)


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    end = len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise UsageError(f"--where {text!r}: cannot read {text[pos:].strip()[:20]!r}", hint=_HINT)
        pos = m.end()
        kind = m.lastgroup
        assert kind is not None
        value = m.group(kind)
        if kind == "bq":
            tokens.append(("ident", value.replace("``", "`")))
        elif kind == "dq":
            tokens.append(("ident", value.replace('""', '"')))
        else:
            tokens.append((kind, value))
    return tokens


def columns_of(predicate: Predicate | None) -> Sequence[str]:
    return () if predicate is None else predicate.columns
