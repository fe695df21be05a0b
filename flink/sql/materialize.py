"""``cdc materialize``: the table a changelog describes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from cdc.core.errors import UsageError
from cdc.core.kinds import UPDATE_BEFORE
from cdc.flink.sql.changelog import changelog_source
from cdc.flink.sql.coltypes import DEFAULT_FLINK_VERSION, Row, check_version, ident
from cdc.flink.sql.normalize import PROCTIME, PROCTIME_COLUMN
from cdc.flink.sql.scan import DebeziumInfo
from cdc.flink.sql.tables import ENVELOPES, Script, Sink, Source, finish, select_list, source_statements


def _key_check(keys: Sequence[str], columns: Iterable[str]) -> None:
    missing = [k for k in keys if k not in columns]
    if missing:
        raise UsageError(f"key column(s) {', '.join(missing)} not among the columns")


def materialize_sql(
    source: Source,
    columns: Mapping[str, str],
    *,
    kind_column: str = "op",
    keys: Sequence[str] = (),
    flink_version: str = DEFAULT_FLINK_VERSION,
    sink: Sink | None = None,
    empty_strings: bool = False,
    debezium: DebeziumInfo | None = None,
    drop_columns: Sequence[str] = (),
    sample: Iterable[Row] | None = None,
    dedup: bool = False,
) -> str:
    """``cdc materialize [--key K]``: the table a changelog describes.

    The changelog (changelog rows via FROM_CHANGELOG, or an envelope table) is the dynamic table;
    ``SELECT *`` from it is the query whose result the SQL client shows as a table
    (``sql-client.execution.result-mode = table``); its changelog nets to cdc's table. With
    ``keys`` the result goes into an upsert sink keyed by them when ``sink`` is ``upsert-kafka``
    (Flink's SinkUpsertMaterializer keeps the last row per key); without keys it is a multiset.
    ``drop_columns``: a change feed's commit columns, which are not part of the table (nor of a
    retraction's match): the query selects the other columns. ``--as-of``, ``--dedup`` and
    ``--expect`` have no SQL form here.

    ``sample``: the changelog rows, all of them (with ``kind_column``; read once, streaming). With
    ``keys`` and no upsert-kafka sink, a changelog that contradicts its keyed state (an insert of an
    existing key, a retraction unlike the stored row or of an absent one) is refused: the SQL client's table is
    a multiset, which equals cdc's keyed table only for a consistent changelog. With an
    upsert-kafka sink (which drops ``-U``; ``+I``/``+U`` put, ``-D`` deletes the key) only a
    ``-U`` that no ``+U`` follows differs from cdc (whose ``-U`` takes the row out). Without keys
    cdc and the SQL client apply a changelog alike (a retraction removes one equal row, if any).
    """
    check_version(flink_version)
    script = Script("cdc materialize" + (f" --key {','.join(keys)}" if keys else ""), flink_version)
    upsert_sink = sink is not None and sink.connector == "upsert-kafka"
    if dedup and (not keys or upsert_sink or source.fmt in ENVELOPES):
        raise UsageError(
            "--dedup has a Flink SQL form only with --key on changelog rows (a file or topic): the last change per "
            "key, update-befores ignored",
            hint="give --key, or print the SQL without --dedup",
        )
    if keys and not upsert_sink and source.fmt not in ENVELOPES:
        return _last_change_per_key(
            script, source, columns, kind_column, keys, sink, empty_strings, drop_columns, dedup
        )
    table, data = changelog_source(script, source, columns, kind_column, empty_strings, debezium)
    data = [c for c in data if c not in drop_columns]
    if keys and sample is not None:
        _key_check(keys, data)
        if sink is not None and sink.connector == "upsert-kafka":
            found = dangling_retractions(sample, kind_column, keys)
            where = "an upsert sink drops -U, so the row stays"
        else:
            found = keyed_findings(sample, kind_column, keys, drop_columns)
            where = "the SQL client's table (and a file sink's changelog) is a multiset, not keyed"
        if found:
            raise UsageError(
                f"the changelog contradicts its keyed state ({found}): cdc's keyed table then "
                f"differs from Flink's ({where})",
                hint="materialize without --key (a multiset: the same in cdc and Flink), or fix the changelog "
                "(cdc inspect shows where it is inconsistent)",
            )
    _key_check(keys, data)
    script.settings["sql-client.execution.result-mode"] = "table"
    if sink is not None and sink.connector == "upsert-kafka":
        if list(sink.key) != list(keys):
            raise UsageError("the upsert-kafka sink's key must be --key")
    elif keys:
        script.notes.append("the rows of a key: give an upsert-kafka sink keyed by it for a keyed table on Kafka")
    types = {c: columns[c] for c in data}
    return finish(script, f"SELECT {select_list(data)} FROM {ident(table)}", data, sink, types=types)


def keyed_findings(rows: Iterable[Row], kind_column: str, keys: Sequence[str], metadata: Sequence[str] = ()) -> str:
    """The inconsistencies cdc's keyed state finds in changelog rows, counted ('' when none)."""
    from cdc.core.kinds import KIND_BY_TEXT
    from cdc.core.state import Findings, Policy, new_state

    findings = Findings(Policy.ignore)
    state = new_state(keys, findings, metadata=frozenset(metadata))
    for row in rows:
        kind = KIND_BY_TEXT.get(str(row.get(kind_column, "")).strip())
        if kind is not None:
            state.apply(kind.value, {k: v for k, v in row.items() if k != kind_column})
    return ", ".join(f"{what} {n}" for what, n in findings.counts.most_common())


def dangling_retractions(rows: Iterable[Row], kind_column: str, keys: Sequence[str]) -> str:
    """``-U`` rows whose key's next change is not ``+U``/``+I``/``-D`` (or that end the rows),
    counted ('' when none): cdc takes such a row out of its keyed table, an upsert sink keeps it."""
    from cdc.core.kinds import KIND_BY_TEXT

    pending: dict[tuple[str, ...], int] = {}
    dangling = 0
    for row in rows:
        kind = KIND_BY_TEXT.get(str(row.get(kind_column, "")).strip())
        key = tuple(repr(row.get(k)) for k in keys)
        if kind is None:
            continue
        if key in pending:
            del pending[key]
            dangling += kind == UPDATE_BEFORE
        if kind == UPDATE_BEFORE:
            pending[key] = 1
    dangling += len(pending)
    return f"a -U that no +U follows {dangling}" if dangling else ""


def _last_change_per_key(
    script: Script,
    source: Source,
    columns: Mapping[str, str],
    kind_column: str,
    keys: Sequence[str],
    sink: Sink | None,
    empty_strings: bool,
    drop_columns: Sequence[str],
    dedup: bool = False,
) -> str:
    """cdc's keyed table of changelog rows: per key the last change decides — its row when it is
    ``+I``/``+U``, no row after ``-U``/``-D`` (cdc ignores a retraction of an absent key, and one of
    a stored key takes it out: either way the key is gone). That is Flink's keep-last-row
    deduplication on arrival order (``ROW_NUMBER`` over ``PROCTIME()`` descending), filtered by kind:
    right for an inconsistent changelog too, where the SQL client's multiset is not. ``dedup``
    (``--dedup``): cdc's state then consumes every ``-U`` (its ``+U`` carries the update, a
    duplicate changes nothing): the last change among the others decides."""
    if kind_column not in columns:
        raise UsageError(f"the kind column {kind_column!r} is not among the input's columns")
    data = [c for c in columns if c != kind_column and c not in drop_columns]
    _key_check(keys, data)
    table = source_statements(script, source, columns, empty_strings, extra_lines=[PROCTIME_COLUMN])
    kind = ident(kind_column)
    where = f"\n  WHERE {kind} IS NULL OR TRIM({kind}) <> '-U'" if dedup else ""
    script.statements.append(
        "CREATE TEMPORARY VIEW `cdc_last` AS\n"
        f"SELECT {select_list([*data, kind_column])} FROM (\n"
        f"  SELECT *, ROW_NUMBER() OVER (PARTITION BY {select_list(keys)} ORDER BY {ident(PROCTIME)} DESC) "
        "AS `cdc_rownum`\n"
        f"  FROM {ident(table)}{where}\n) WHERE `cdc_rownum` = 1;"
    )
    if dedup:
        script.notes.append("--dedup: update-befores are left out first (cdc's --dedup state consumes them)")
    script.notes.append(
        "--key: per key the last change decides (keep-last-row deduplication in arrival order): its row when it "
        "is +I/+U, none after -U/-D — cdc's keyed table, whether the changelog is consistent or not"
    )
    script.settings["sql-client.execution.result-mode"] = "table"
    query = f"SELECT {select_list(data)} FROM `cdc_last`\nWHERE TRIM({kind}) IN ('+I', '+U')"
    return finish(script, query, data, sink, types={c: columns[c] for c in data})
