"""Round trips across commands and formats, on generated data."""

from __future__ import annotations

import json
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cdc.cli.app import build_app
from cdc.core.convert import from_changelog, to_changelog
from cdc.core.kinds import UPDATE_BEFORE
from cdc.core.mapping import is_upsert_mapping, reverse_mapping
from cdc.core.presets import PRESETS
from cdc.core.specs import FromChangelogSpec, ToChangelogSpec
from cdc.core.stats import Counts

app = build_app()

KINDS = ["+I", "-U", "+U", "-D"]
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)  # unicode, no surrogates
changelogs = st.lists(
    st.fixed_dictionaries(
        {"op": st.sampled_from(KINDS), "id": st.integers(0, 50), "name": st.one_of(st.none(), texts)}
    ),
    max_size=20,
)


@pytest.mark.parametrize("preset", sorted(PRESETS))
@settings(max_examples=60, deadline=None)
@given(log=changelogs)
def test_to_then_from_changelog_is_identity_for_every_preset(preset: str, log: list[dict[str, Any]]) -> None:
    chosen = PRESETS[preset]
    upsert = is_upsert_mapping(chosen.mapping.values())
    out_spec = ToChangelogSpec(mapping=reverse_mapping(chosen.mapping), op_column=chosen.op_column)
    in_spec = FromChangelogSpec(op_column=chosen.op_column, mapping=chosen.mapping, keys=("id",) if upsert else ())
    rows = [dict(r) for r in log]
    back = list(from_changelog(to_changelog(rows, out_spec, Counts()), in_spec, Counts()))
    # an upsert vocabulary has no update-before: those rows are dropped on the way out
    expected = [r for r in log if not (upsert and r["op"] == UPDATE_BEFORE.value)]
    assert back == [({"op": r["op"], "id": r["id"], "name": r["name"]}) for r in expected]


values = st.one_of(
    st.none(),
    texts,
    st.just(""),
    st.integers(-(2**80), 2**80),
    st.booleans(),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-(10**9), max_value=10**9),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(values, min_size=1, max_size=12), st.sampled_from(["jsonl", "csv", "parquet"]))
def test_values_survive_a_format_round_trip(column: list[Any], fmt: str) -> None:
    """JSONL keeps values exactly (decimals as numbers); CSV keeps their text, null and "" apart;
    Parquet keeps its types. Written by cdc, read back by cdc."""
    if fmt == "parquet":  # a Parquet column has one type
        kinds = {type(v) for v in column if v is not None}
        if len(kinds) > 1 or (int in kinds and any(v is not None and abs(v) >= 2**63 for v in column)):
            return
    rows = [{"op": "+I", "i": i, "v": v} for i, v in enumerate(column)]
    data = "".join(
        json.dumps({**r, "v": str(r["v"]) if isinstance(r["v"], Decimal) else r["v"]}) + "\n" for r in rows
    ).encode()
    if any(isinstance(v, Decimal) for v in column):
        data = b"".join(
            json.dumps({**r, "v": "@@"}).encode().replace(b'"@@"', str(r["v"]).encode()) + b"\n"
            if isinstance(r["v"], Decimal)
            else json.dumps(r).encode() + b"\n"
            for r in rows
        )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"out.{fmt}"
        runner = CliRunner()
        first = runner.invoke(app, ["to-changelog", "-o", str(out)], input=data, catch_exceptions=False)
        assert first.exit_code == 0, first.stderr
        back = runner.invoke(app, ["from-changelog", str(out)], catch_exceptions=False)
        assert back.exit_code == 0, back.stderr
        got = [json.loads(line, parse_float=Decimal)["v"] for line in back.stdout.split("\n") if line]
    if fmt == "csv":  # text: numbers come back as their text, booleans as true/false

        def text(v: Any) -> str | None:
            return None if v is None else ("true" if v is True else "false" if v is False else str(v))

        # a JSON number keeps its value, not its spelling (0.000 may come back as 0.0)
        assert [Decimal(g) if isinstance(v, Decimal) else g for g, v in zip(got, column, strict=True)] == [
            v if isinstance(v, Decimal) else text(v) for v in column
        ]
    else:
        assert [None if v is None else (Decimal(str(v)) if isinstance(v, Decimal) else v) for v in got] == [
            None if v is None else v for v in column
        ]


def test_long_number_literals_are_written_back_exactly() -> None:
    data = b'{"op": "+I", "amount": 123456789012345678901234567890.123, "n": 98765432109876543210, "x": 0.1}\n'
    result = CliRunner().invoke(app, ["to-changelog"], input=data, catch_exceptions=False)
    assert result.stdout == (
        '{"op":"INSERT","amount":123456789012345678901234567890.123,"n":98765432109876543210,"x":0.1}\n'
    )


# JSON number literals as writers spell them: integers of any length, fractions with trailing
# zeros, exponents, -0 and tiny values — in compact lines, Python's ", "/": " spacing, or other
# whitespace, beside strings that look like numbers ("mysql-bin.000003", "4e2a").
_int_part = st.one_of(st.just("0"), st.from_regex(r"[1-9][0-9]{0,24}", fullmatch=True))
_fraction = st.one_of(st.just(""), st.from_regex(r"\.[0-9]{1,20}", fullmatch=True))
_exponent = st.one_of(st.just(""), st.from_regex(r"[eE][+-]?[0-9]{1,3}", fullmatch=True))
number_literals = st.builds("".join, st.tuples(st.sampled_from(["", "-"]), _int_part, _fraction, _exponent))
look_alikes = st.sampled_from(['"mysql-bin.000003"', '"4e2a"', '"1.50"', '"-0"', '"a: 1.0, b"'])


@settings(max_examples=400, deadline=None)
@given(
    values=st.lists(st.one_of(number_literals, look_alikes), min_size=1, max_size=6),
    spacing=st.sampled_from([(",", ":"), (", ", ": "), (" ,", " : "), (",\t", ":  ")]),
    in_array=st.booleans(),
)
def test_json_lines_keep_every_number_literal_whichever_parser_reads_them(
    values: list[str], spacing: tuple[str, str], in_array: bool
) -> None:
    import orjson

    from cdc.formats import jsonl

    comma, colon = spacing
    if in_array:
        line = '{"a"' + colon + "[" + comma.join(values) + "]}"
    else:
        line = "{" + comma.join(f'"c{i}"{colon}{v}' for i, v in enumerate(values)) + "}"
    data = line.encode()
    try:
        exact = jsonl._loads_exact(data)
    except ValueError:  # a number past a double's range: both parsers refuse it
        with pytest.raises((ValueError, orjson.JSONDecodeError)):
            jsonl.loads(data)
        return
    assert jsonl.dumps(jsonl.loads(data)) == jsonl.dumps(exact)
