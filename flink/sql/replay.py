"""``cdc replay --key``: a changelog through keyed state."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from cdc.core.errors import UsageError
from cdc.core.kinds import DELETE, INSERT, UPDATE_AFTER
from cdc.flink.sql.changelog import envelope_table
from cdc.flink.sql.coltypes import DEFAULT_FLINK_VERSION, SQL_TIMESTAMP, Row, check_version, ident
from cdc.flink.sql.materialize import _key_check
from cdc.flink.sql.normalize import OP, PROCTIME_COLUMN, as_changelog, delete_condition, replayed_view
from cdc.flink.sql.scan import DebeziumInfo
from cdc.flink.sql.tables import (
    ENVELOPES,
    Script,
    Sink,
    Source,
    create_table,
    encoded,
    finish,
    select_list,
    source_statements,
)


def replay_sql(
    source: Source,
    columns: Mapping[str, str],
    keys: Sequence[str],
    *,
    input_mode: str = "changelog",
    emit: str = "retract",
    kind_column: str = "op",
    order_by: str | None = None,
    delete_when: tuple[str, str] | None = None,
    flink_version: str = DEFAULT_FLINK_VERSION,
    sink: Sink | None = None,
    empty_strings: bool = False,
    debezium: DebeziumInfo | None = None,
    sample: Iterable[Row] = (),
    keep_noop: bool = False,
    numbers: Mapping[str, str] | None = None,
) -> str:
    """``cdc replay --key K``: a changelog through keyed state (Flink's ChangelogNormalize).

    - ``input_mode='upsert'``: an ``upsert-kafka`` source keyed by ``keys`` (every record upserts
      its key, a tombstone deletes it) — Flink normalizes by key: ``+I`` for a new key, ``-U`` old /
      ``+U`` new, ``-D`` with the stored row, no-op updates dropped; ``delete_when`` has no form
      there (a delete is a tombstone). Any other source (a file, a kafka topic): the same state as
      LAG over the key (``normalize.replayed_view``), ``delete_when`` (``--delete-when COL=VALUE``)
      marking deletes, ``keep_noop`` keeping equal updates.
    - ``input_mode='changelog'``: changelog rows (a file) by the same LAG state: ``+I``/``+U``
      upsert, ``-D`` deletes, ``-U`` ignored (cdc's replay; Flink's ChangelogNormalize drops
      UPDATE_BEFORE too). An envelope source: its table with a PRIMARY KEY and
      ``table.exec.source.cdc-events-duplicate`` (ChangelogNormalize itself).
    - ``input_mode='append'`` without ``order_by``: every row upserts its key (the LAG state).
    - ``input_mode='append'`` with ``order_by``: the versioned view of Flink's versioned-table docs,
      ``ROW_NUMBER() OVER (PARTITION BY keys ORDER BY order_by DESC) = 1`` — keep-last by a time
      column; ``order_by`` must be a TIMESTAMP column for Flink's deduplication (else refused), or
      text in Flink's SQL timestamp format in every ``sample`` row (a JSON source: a CSV header
      line would fail the scan).
    - ``emit='upsert'``: rows without ``-U`` (an upsert sink's view); ``'retract'``: with ``-U``.
    """
    check_version(flink_version)
    script = Script(f"cdc replay --key {','.join(keys)} --input-mode {input_mode}", flink_version)
    if emit not in ("retract", "upsert"):
        raise UsageError(f"--emit {emit!r}: retract or upsert")
    lag = (input_mode == "upsert" and source.connector != "upsert-kafka") or (
        input_mode == "append" and order_by is None
    )
    if order_by is not None and input_mode != "append":
        raise UsageError(
            f"--order-by {order_by} with --input-mode {input_mode}: cdc drops a change older than its key's last "
            "one; the script applies the changes in the order they come",
            hint="--input-mode append reads rows keep-last by --order-by (Flink's deduplication)",
        )
    if keep_noop and input_mode == "append" and order_by is not None:
        raise UsageError("--keep-noop has no Flink SQL form with --order-by: the deduplication drops equal rows")
    if lag or (input_mode == "changelog" and source.fmt not in ENVELOPES):
        return _replay_by_lag(
            script,
            source,
            columns,
            keys,
            input_mode,
            emit,
            kind_column,
            delete_when,
            sink,
            empty_strings,
            keep_noop,
            numbers or {},
        )
    if input_mode == "upsert":
        if delete_when is not None:
            raise UsageError(
                "--delete-when has no Flink SQL form: upsert-kafka deletes a key on a tombstone (a record "
                "without value)",
                hint="produce deletes as tombstones",
            )
        if source.connector != "upsert-kafka" or list(source.key) != list(keys):
            raise UsageError(
                "--input-mode upsert is Flink's upsert-kafka source (a file has no upsert connector in Flink)",
                hint="--sql-source upsert-kafka --topic T --bootstrap-servers H, the records keyed by --key",
            )
        _key_check(keys, columns)
        if keep_noop:
            script.settings["table.exec.state.ttl"] = "3650 d"
            script.notes.append(
                "--keep-noop: table.exec.state.ttl (ten years) makes ChangelogNormalize emit an update that changes "
                "nothing, as cdc does (without a TTL Flink drops it)"
            )
        script.statements.append(create_table("cdc_input", columns, source))
        table, data = "cdc_input", list(columns)
    elif input_mode == "append":
        if order_by is None:
            raise UsageError("--input-mode append needs --order-by (Flink's keep-last-row deduplication)")
        kind = columns.get(order_by, "")
        if not kind.startswith(("TIMESTAMP", "STRING", "BIGINT")):
            raise UsageError(
                f"--order-by {order_by}: Flink deduplicates on an event-time attribute (a TIMESTAMP with a "
                f"watermark); {order_by} is {kind or 'not a column'}",
                hint="order by a timestamp column",
            )
        _key_check(keys, columns)
        if kind == "STRING":
            # Flink reads the text into TIMESTAMP(3) (SQL format) while scanning the table — before any
            # view: a CSV header line, or any other text, fails the job.
            if source.fmt in ("csv", "tsv") and not source.kafka:
                raise UsageError(
                    f"--order-by {order_by} is read as TIMESTAMP(3) while Flink scans the file, and the csv "
                    "format reads the header line as a row: its text fails the job",
                    hint="convert the file to JSON lines first (cdc ... -f jsonl), then print the SQL for that file",
                )
            bad = next(
                (v for r in sample if (v := r.get(order_by)) is not None and not SQL_TIMESTAMP.fullmatch(str(v))), None
            )
            if bad is not None:
                raise UsageError(
                    f"--order-by {order_by}: Flink deduplicates on an event-time attribute, a TIMESTAMP(3) read from "
                    f"'yyyy-MM-dd HH:mm:ss[.SSS]' text; {order_by} holds {bad!r}",
                    hint="order by a column holding such timestamps",
                )
        # An event-time attribute: TIMESTAMP(3) (or TIMESTAMP_LTZ(3)) with a watermark, so that the
        # ROW_NUMBER view is Flink's keep-last-row deduplication on event time, not a Top-N.
        columns = dict(columns)
        order = order_by
        if kind == "BIGINT":
            # A number orders as TO_TIMESTAMP_LTZ(n, 3) does (monotone): that computed column is the
            # event-time attribute; the column itself keeps its numbers.
            order = "cdc_order"
            extra = [
                f"`cdc_order` AS TO_TIMESTAMP_LTZ({ident(order_by)}, 3)",
                "WATERMARK FOR `cdc_order` AS `cdc_order`",
            ]
            script.notes.append(f"{order_by} orders as the event time TO_TIMESTAMP_LTZ({order_by}, 3) (cdc_order)")
        else:
            columns[order_by] = "TIMESTAMP_LTZ(3)" if "LTZ" in kind else "TIMESTAMP(3)"
            extra = [f"WATERMARK FOR {ident(order_by)} AS {ident(order_by)}"]
        if kind == "STRING":
            script.notes.append(f"{order_by} is read as TIMESTAMP(3): its values must be 'yyyy-MM-dd HH:mm:ss[.SSS]'")
        table = source_statements(script, source, columns, empty_strings, extra_lines=extra)
        data = list(columns)
        script.statements.append(
            "CREATE TEMPORARY VIEW `cdc_versioned` AS\n"
            f"SELECT {select_list(data)} FROM (\n"
            f"  SELECT *, ROW_NUMBER() OVER (PARTITION BY {select_list(keys)} ORDER BY {ident(order)} DESC) "
            "AS `cdc_rownum`\n"
            f"  FROM {ident(table)}\n) WHERE `cdc_rownum` = 1;"
        )
        table = "cdc_versioned"
    elif source.fmt in ENVELOPES:
        # An envelope table with a PRIMARY KEY and cdc-events-duplicate: ChangelogNormalize by key.
        _key_check(keys, columns)
        table = envelope_table(script, source, columns, debezium or DebeziumInfo(), key=keys, keep_noop=keep_noop)
        data = list(columns)
    else:
        raise UsageError(f"--input-mode {input_mode!r}: changelog, upsert or append")
    if emit == "upsert" and (sink is None or sink.connector != "upsert-kafka"):
        # The SQL client would show -U rows too: write the upsert log as cdc does, the kind first.
        if kind_column in data:
            raise UsageError(f"the kind column {kind_column!r} is also a data column; rename it with --kind-column")
        script.notes.append(f"--emit upsert: the changelog without -U, its kind in column {kind_column}")
        query = encoded(table, data, kind_column, (INSERT, UPDATE_AFTER, DELETE))
        types = {kind_column: "STRING", **columns}
        return finish(script, query, [kind_column, *data], sink, changelog=False, types=types)
    return finish(script, f"SELECT {select_list(data)} FROM {ident(table)}", data, sink, types=columns)


def _replay_by_lag(
    script: Script,
    source: Source,
    columns: Mapping[str, str],
    keys: Sequence[str],
    input_mode: str,
    emit: str,
    kind_column: str,
    delete_when: tuple[str, str] | None,
    sink: Sink | None,
    empty_strings: bool,
    keep_noop: bool,
    numbers: Mapping[str, str],
) -> str:
    """Replay by the LAG state of ``normalize``: the retract changelog through FROM_CHANGELOG, or
    (``--emit upsert``) the rows without ``-U``, their kind in ``kind_column``."""
    if input_mode == "changelog":
        if kind_column not in columns:
            raise UsageError(f"the kind column {kind_column!r} is not among the input's columns")
        data = [c for c in columns if c != kind_column]
        kind = ident(kind_column)
        deleted = f"COALESCE(TRIM({kind}) = '-D', FALSE)"
        where: str | None = f"{kind} IS NULL OR TRIM({kind}) <> '-U'"
    else:
        data = list(columns)
        deleted = "FALSE" if delete_when is None else delete_condition(*delete_when, columns, numbers)
        where = None
    _key_check(keys, data)
    table = source_statements(script, source, columns, empty_strings, extra_lines=[PROCTIME_COLUMN])
    view = replayed_view(script, table, data, keys, deleted, keep_noop, where)
    types = {c: columns[c] for c in data}
    if emit == "upsert" and (sink is None or sink.connector != "upsert-kafka"):
        if kind_column in data:
            raise UsageError(f"the kind column {kind_column!r} is also a data column; rename it with --kind-column")
        script.notes.append(f"--emit upsert: the changelog without -U, its kind in column {kind_column}")
        query = (
            f"SELECT {ident(OP)} AS {ident(kind_column)}, {select_list(data)} FROM {ident(view)}\n"
            f"WHERE {ident(OP)} <> '-U'"
        )
        types = {kind_column: "STRING", **types}
        return finish(script, query, [kind_column, *data], sink, changelog=False, types=types)
    return finish(script, as_changelog(view, data), data, sink, types=types)
