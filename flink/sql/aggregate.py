"""``cdc aggregate``: a continuous GROUP BY."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from cdc.core.errors import UsageError
from cdc.core.kinds import DELETE, INSERT, UPDATE_AFTER
from cdc.flink.sql.changelog import changelog_source
from cdc.flink.sql.coltypes import DEFAULT_FLINK_VERSION, check_version, ident
from cdc.flink.sql.materialize import _key_check
from cdc.flink.sql.normalize import PROCTIME_COLUMN, as_changelog, delete_condition, replayed_view
from cdc.flink.sql.scan import DebeziumInfo
from cdc.flink.sql.tables import Script, Sink, Source, create_table, encoded, finish, select_list, source_statements

AGG_FUNCTIONS = ("COUNT", "SUM", "MIN", "MAX", "AVG", "FIRST_VALUE", "LAST_VALUE")


def agg_type(function: str, argument_type: str | None) -> str:
    """The type of an aggregate's result in Flink: COUNT BIGINT; SUM of a DECIMAL(p, s)
    DECIMAL(38, s), AVG of one DECIMAL(38, max(s, 6)); else SUM/AVG/MIN/MAX/FIRST_VALUE/LAST_VALUE
    keep the argument's type (AVG of integers is an integer in Flink)."""
    fn = function.upper()
    if fn == "COUNT" or argument_type is None:
        return "BIGINT"
    if argument_type.startswith("DECIMAL(") and fn in ("SUM", "AVG"):
        scale = int(argument_type[len("DECIMAL(") :].split(",")[1].strip(" )"))
        return f"DECIMAL(38, {max(scale, 6) if fn == 'AVG' else scale})"
    return argument_type


def aggregate_sql(
    source: Source,
    columns: Mapping[str, str],
    group_by: Sequence[str],
    aggregates: Sequence[tuple[str, str, str | None, bool]],
    *,
    input_mode: str = "append",
    kind_column: str = "op",
    keys: Sequence[str] = (),
    where: str | None = None,
    flink_version: str = DEFAULT_FLINK_VERSION,
    sink: Sink | None = None,
    empty_strings: bool = False,
    select: Callable[[str], str] | None = None,
    debezium: DebeziumInfo | None = None,
    emit: str = "retract",
    delete_when: tuple[str, str] | None = None,
    numbers: Mapping[str, str] | None = None,
) -> str:
    """``cdc aggregate``: a continuous ``GROUP BY`` (Flink's group aggregate and its update log).

    - ``aggregates``: ``(name, function, argument or None for COUNT(*), distinct)``, function one
      of ``AGG_FUNCTIONS``; ``group_by``: grouping columns (none: one global row); ``where``: a
      Flink SQL predicate over the input columns, used as written.
    - ``input_mode``: ``append`` (plain rows), ``changelog`` (changelog rows through
      FROM_CHANGELOG, or an envelope source), ``upsert`` (an ``upsert-kafka`` source keyed by
      ``keys``; ``delete_when`` has no form there: a delete is a tombstone).
    - ``select``: the query's own SQL writer instead (``AggregateQuery.select_sql``: the source
      table's name → ``SELECT … FROM it [WHERE …] GROUP BY …``); ``aggregates`` still name the
      output columns and give their types.
    - ``emit``: ``retract`` (the SQL client's changelog: ``+I -U +U -D``) or ``upsert`` (cdc's
      upsert log: the same without ``-U``, written as rows with the kind in ``kind_column``
      through TO_CHANGELOG, unless the sink is upsert-kafka, which takes the update log itself).
    - ``numbers``: text columns (CSV: Flink's csv format reads STRING) whose every value spells a
      number, and the type cdc reads them as (``ColumnTypes.text_numbers``): SUM/AVG over such a
      column CAST it to that type, as cdc adds the numbers the text spells; over other text, refused
      (Flink has no SUM of STRING; cdc fails on the first value that is not a number).
    """
    check_version(flink_version)
    if not aggregates:
        raise UsageError("aggregate needs at least one --agg")
    if emit not in ("retract", "upsert"):
        raise UsageError(f"--emit {emit!r}: retract or upsert")
    script = Script(f"cdc aggregate --group-by {','.join(group_by)}", flink_version)
    if input_mode == "append":
        table = source_statements(script, source, columns, empty_strings)
        data = list(columns)
    elif input_mode == "changelog":
        table, data = changelog_source(script, source, columns, kind_column, empty_strings, debezium)
    elif input_mode == "upsert" and source.connector != "upsert-kafka":
        # Upsert rows normalized by key first (cdc's reading, Flink's ChangelogNormalize): the LAG state.
        if not keys:
            raise UsageError("--input-mode upsert needs --key")
        data = list(columns)
        _key_check(keys, data)
        deleted = "FALSE" if delete_when is None else delete_condition(*delete_when, columns, numbers or {})
        table = source_statements(script, source, columns, empty_strings, extra_lines=[PROCTIME_COLUMN])
        view = replayed_view(script, table, data, keys, deleted)
        script.statements.append(f"CREATE TEMPORARY VIEW `cdc_changelog` AS\n{as_changelog(view, data)};")
        table = "cdc_changelog"
    elif input_mode == "upsert":
        if delete_when is not None:
            raise UsageError(
                "--delete-when has no Flink SQL form on an upsert-kafka source: it deletes a key on a tombstone (a "
                "record without value)",
                hint="produce deletes as tombstones, or read the topic with --sql-source kafka (then the rows are "
                "normalized by key in the query, --delete-when included)",
            )
        if list(source.key) != list(keys) or not keys:
            raise UsageError(
                "--input-mode upsert is Flink's upsert-kafka source keyed by --key",
                hint="--sql-source upsert-kafka --topic T --bootstrap-servers H",
            )
        script.statements.append(create_table("cdc_input", columns, source))
        table, data = "cdc_input", list(columns)
    else:
        raise UsageError(f"--input-mode {input_mode!r}: changelog, append or upsert")
    _key_check(group_by, data)
    items = [ident(g) for g in group_by]
    out_cols = list(group_by)
    types = {g: columns[g] for g in group_by}
    for name, function, argument, distinct in aggregates:
        fn = function.upper()
        if fn not in AGG_FUNCTIONS:
            raise UsageError(f"aggregate function {function!r}: one of {', '.join(AGG_FUNCTIONS)}")
        argument_type = None
        if argument is None:
            if fn != "COUNT":
                raise UsageError(f"{fn}(*) is not an aggregate; only COUNT(*)")
            expr = "COUNT(*)"
        else:
            _key_check([argument], data)
            operand, argument_type = ident(argument), columns[argument]
            if fn in ("SUM", "AVG") and argument_type == "STRING":
                number = (numbers or {}).get(argument)
                if number is None:
                    raise UsageError(
                        f"{fn}({argument}): the column is text that does not spell a number in every row; Flink has "
                        f"no {fn} of STRING, and cdc stops at the first value that is not a number",
                        hint="filter the rows first (--where), or fix the column's values",
                    )
                operand, argument_type = f"CAST({operand} AS {number})", number
            expr = f"{fn}({'DISTINCT ' if distinct else ''}{operand})"
        items.append(f"{expr} AS {ident(name)}")
        out_cols.append(name)
        types[name] = agg_type(fn, argument_type)
    query = f"SELECT {', '.join(items)}\nFROM {ident(table)}"
    if where:
        query += f"\nWHERE {where}"
    if group_by:
        query += f"\nGROUP BY {select_list(group_by)}"
    if select is not None:
        query = select(ident(table))
    if sink is not None and sink.connector == "upsert-kafka":
        if list(sink.key) != list(group_by) or not group_by:
            raise UsageError("the upsert-kafka sink's key must be the --group-by columns")
        return finish(script, query, out_cols, sink, types=types)
    if emit == "upsert":
        if kind_column in out_cols:
            raise UsageError(f"the kind column {kind_column!r} is also an output column; rename it with --kind-column")
        script.notes.append(f"--emit upsert: the update log without -U, its kind in column {kind_column}")
        script.statements.append(f"CREATE TEMPORARY VIEW `cdc_result` AS\n{query};")
        query = encoded("cdc_result", out_cols, kind_column, (INSERT, UPDATE_AFTER, DELETE))
        return finish(
            script, query, [kind_column, *out_cols], sink, changelog=False, types={kind_column: "STRING", **types}
        )
    return finish(script, query, out_cols, sink, types=types)
