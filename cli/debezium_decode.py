"""``cdc debezium-decode``: Debezium JSON change events → changelog rows (``decode --envelope debezium``)."""

from __future__ import annotations

from cdc.cli import options as o
from cdc.cli.decode import (
    DatabaseInclude,
    Key,
    Metadata,
    OnTruncate,
    OnTruncateOpt,
    Placeholder,
    RawValues,
    SchemaInclude,
    SchemaIncludeOpt,
    Strict,
    TableInclude,
    report_decode_findings,
)
from cdc.cli.running import call
from cdc.engine import api


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL, o.AVRO_IN)
def command(
    common: o.Common,
    key: Key = None,
    schema_include: SchemaIncludeOpt = SchemaInclude.auto,
    on_truncate: OnTruncateOpt = OnTruncate.fail,
    metadata: Metadata = None,
    raw_values: RawValues = False,
    kind_column: o.KindColumn = "op",
    database_include: DatabaseInclude = None,
    table_include: TableInclude = None,
    strict: Strict = False,
    unavailable_placeholder: Placeholder = None,
) -> None:
    """Decode Debezium JSON change events into changelog rows, exactly as Flink's debezium-json does.

    c and r give +I(after); u gives -U(before), +U(after); d gives -D(before). Tombstones and
    op m are skipped and counted. With a schema block, Decimal, Date, Time and Timestamp values
    become natural values (typed columns in Parquet). The same as cdc decode --envelope debezium.

    **Examples**

    ```
    cdc debezium-decode samples/mysql-inventory.jsonl
    cdc debezium-decode samples/postgres-default-identity.jsonl --key id \\
      -f print
    cdc debezium-decode samples/mysql-inventory.jsonl \\
      --metadata source.table=tbl -o /tmp/changes.parquet
    cdc debezium-decode samples/mysql-inventory.jsonl --raw-values \\
      --on-error skip --print-sql
    ```
    """
    result = call(
        common,
        api.debezium_decode,
        "debezium-decode",
        table_kinds=kind_column,
        key=key,
        schema_include=schema_include,
        on_truncate=on_truncate,
        metadata=metadata,
        raw_values=raw_values,
        kind_column=kind_column,
        database_include=database_include,
        table_include=table_include,
        strict=strict,
        unavailable_placeholder=unavailable_placeholder,
    )
    if result.sql is None:
        report_decode_findings("debezium-decode", result.counts.notes)
