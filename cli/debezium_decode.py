"""``cdc debezium-decode``: Debezium JSON change events → changelog rows (``decode --envelope debezium``)."""

from __future__ import annotations

from cdc.cli import options as o
from cdc.cli.decode import (
    Bootstrap,
    Key,
    Metadata,
    OnTruncate,
    OnTruncateOpt,
    Placeholder,
    RawValues,
    SchemaInclude,
    SchemaIncludeOpt,
    Strict,
    decode,
)


@o.cdc_command(o.INPUT, o.OUTPUT, o.ERRORS, o.REPORT, o.SQL)
def command(
    common: o.Common,
    key: Key = None,
    schema_include: SchemaIncludeOpt = SchemaInclude.auto,
    on_truncate: OnTruncateOpt = OnTruncate.fail,
    metadata: Metadata = None,
    raw_values: RawValues = False,
    kind_column: o.KindColumn = "op",
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
    decode(
        common,
        "debezium",
        key,
        schema_include,
        on_truncate,
        metadata,
        raw_values,
        None,
        None,
        Bootstrap.insert,
        kind_column,
        "debezium-decode",
        strict,
        unavailable_placeholder,
    )
