"""Keyed state in plain Flink SQL 2.3, for inputs Flink gives no primary key: upsert rows in a file
(each row upserts its key, ``--delete-when COL=VALUE`` marks deletes) and changelog rows read back
through a file (``+I/+U`` upsert, ``-D`` deletes, ``-U`` carries nothing).

cdc's replay state (and Flink's ChangelogNormalize) per key: the first row is ``+I``; a later row
equal to the stored one is dropped (unless ``--keep-noop``); another is ``-U`` of the stored row
then ``+U`` of the new; a delete of a stored row is ``-D`` of the *stored* row; a delete of an absent
key is nothing. The stored row is the previous row of the key, unless that was a delete — so the
whole state is ``LAG`` over the key in arrival order (``PROCTIME()``; one file is read in order),
and each input row expands to at most two output rows through ``UNNEST`` of an array of two ROWs
(the previous image and the current one, each with its kind or NULL). An array of constants would
be planned as a join with VALUES, which does not keep a row's two images in order; this one does.

The view ``cdc_replayed`` holds ``cdc_op`` (``+I -U +U -D``) and the data columns as append-only
rows; FROM_CHANGELOG turns them into Flink's changelog.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cdc.core.errors import UsageError
from cdc.core.predicate import number_from_text
from cdc.flink.sql.coltypes import ident, literal
from cdc.flink.sql.tables import Script, map_literal, select_list

PROCTIME = "cdc_time"
PROCTIME_COLUMN = f"{ident(PROCTIME)} AS PROCTIME()"
OP = "cdc_op"
CODES = map_literal([("+I", "INSERT"), ("-U", "UPDATE_BEFORE"), ("+U", "UPDATE_AFTER"), ("-D", "DELETE")])


def delete_condition(column: str, value: str, columns: Mapping[str, str], numbers: Mapping[str, str]) -> str:
    """``--delete-when COLUMN=VALUE`` as a Flink predicate that is TRUE or FALSE (never NULL), as cdc
    compares: numbers by value (text that spells a number too), ``true``/``false`` with booleans,
    other text as written."""
    if column not in columns:
        raise UsageError(f"--delete-when: column {column!r} is not among the input's columns")
    kind = columns[column]
    col = ident(column)
    number = number_from_text(value)
    if kind == "BOOLEAN":
        if value.strip().lower() not in ("true", "false"):
            return "FALSE"
        return f"COALESCE({col} = {value.strip().upper()}, FALSE)"
    if kind.startswith(("BIGINT", "DOUBLE", "DECIMAL")):
        return f"COALESCE({col} = {value.strip()}, FALSE)" if number is not None else "FALSE"
    if kind != "STRING":
        raise UsageError(f"--delete-when on a {kind} column has no Flink SQL form here")
    if number is None:
        return f"COALESCE({col} = {literal(value)}, FALSE)"
    if column in numbers:  # CSV text that spells numbers throughout: compared as numbers, as cdc does
        return f"COALESCE(CAST({col} AS {numbers[column]}) = {value.strip()}, FALSE)"
    raise UsageError(
        f"--delete-when {column}={value}: cdc compares numbers by value ('1.0' deletes as '1' does), and "
        f"{column} holds text that is not always a number",
        hint="give the value as the column spells it in every row, or convert the column first",
    )


def replayed_view(
    script: Script,
    table: str,
    data: Sequence[str],
    keys: Sequence[str],
    deleted: str,
    keep_noop: bool = False,
    where: str | None = None,
) -> str:
    """Append the views that replay ``table`` (which has the ``PROCTIME()`` column ``cdc_time``)
    by ``keys``: ``deleted`` is the predicate of a delete, ``where`` keeps rows (e.g. not ``-U``).
    Returns the view's name, ``cdc_replayed`` (``cdc_op`` + ``data``)."""
    others = [c for c in data if c not in keys]
    over = f"OVER (PARTITION BY {select_list(keys)} ORDER BY {ident(PROCTIME)})"
    current = [f"{ident(c)} AS `cdc_a{i}`" for i, c in enumerate(data)]
    previous = [f"LAG({ident(c)}) {over} AS `cdc_b{i}`" for i, c in enumerate(data) if c in others]
    lines = [
        *current,
        f"{deleted} AS `cdc_delete`",
        *previous,
        f"LAG({deleted}, 1, TRUE) {over} AS `cdc_gone`",
    ]
    script.statements.append(
        "CREATE TEMPORARY VIEW `cdc_previous` AS\nSELECT\n  "
        + ",\n  ".join(lines)
        + f"\nFROM {ident(table)}"
        + (f"\nWHERE {where}" if where else "")
        + ";"
    )
    same = " AND ".join(f"`cdc_a{i}` IS NOT DISTINCT FROM `cdc_b{i}`" for i, c in enumerate(data) if c in others)
    if keep_noop or not same:
        same = "FALSE" if keep_noop else "TRUE"
    before = [f"`cdc_a{i}`" if c in keys else f"`cdc_b{i}`" for i, c in enumerate(data)]
    after = [f"`cdc_a{i}`" for i in range(len(data))]
    null = "CAST(NULL AS STRING)"
    first = f"CASE WHEN `cdc_gone` THEN {null} WHEN `cdc_delete` THEN '-D' WHEN `cdc_same` THEN {null} ELSE '-U' END"
    second = f"CASE WHEN `cdc_delete` THEN {null} WHEN `cdc_gone` THEN '+I' WHEN `cdc_same` THEN {null} ELSE '+U' END"
    script.statements.append(
        f"CREATE TEMPORARY VIEW `cdc_replayed` AS\nSELECT {select_list([OP, *data])}\n"
        f"FROM (SELECT *, ({same}) AS `cdc_same` FROM `cdc_previous`)\n"
        f"CROSS JOIN UNNEST(ARRAY[\n  ROW({first}, {', '.join(before)}),\n  ROW({second}, {', '.join(after)})\n])"
        f" AS `cdc_step`({select_list([OP, *data])})\nWHERE {ident(OP)} IS NOT NULL;"
    )
    script.notes.append(
        "keyed state as LAG over the key in arrival order (PROCTIME): the view cdc_replayed holds each "
        "change with its kind in cdc_op"
    )
    return "cdc_replayed"


def as_changelog(view: str, data: Sequence[str]) -> str:
    """The replayed rows as Flink's changelog (their kinds from ``cdc_op``)."""
    return (
        f"SELECT {select_list(data)} FROM FROM_CHANGELOG(\n  input => TABLE {ident(view)},\n"
        f"  op => DESCRIPTOR({ident(OP)}),\n  op_mapping => {CODES}\n)"
    )
