"""The Flink SQL that does the same job on a cluster (``--print-sql``).

Every builder returns a whole script for ``sql-client.sh -f``: a header comment, ``SET`` lines
(streaming mode first), the source table, views, and a last statement whose rows are what the cdc
command emits — a ``SELECT`` the SQL client shows with its ``op`` column, or an ``INSERT INTO`` a
sink when one is asked for. What Flink 2.3 really accepts was found by running these scripts
(``flink/harness/FINDINGS.md``; ``flink/harness/flink_check.py`` runs them against cdc's output). Where a
Flink version cannot do the job, a builder raises :class:`UsageError` (exit 2) naming the reason
and what would work: it never prints SQL that runs wrong.

Builders take plain data — column name → Flink type, op column, mapping, keys, flags — so any
front end can call them. ``flink_version`` is ``"2.3"`` (default, the newest release) or
``"2.4"`` (upstream master: FROM_CHANGELOG with PARTITION BY / upsert mode; not yet released, so
scripts for it are not run by the harness).
"""

from __future__ import annotations

from cdc.flink.sql.aggregate import AGG_FUNCTIONS as AGG_FUNCTIONS
from cdc.flink.sql.aggregate import agg_type as agg_type
from cdc.flink.sql.aggregate import aggregate_sql as aggregate_sql
from cdc.flink.sql.changelog import _check_decoded_types as _check_decoded_types
from cdc.flink.sql.changelog import changelog_source as changelog_source
from cdc.flink.sql.changelog import changelog_view as changelog_view
from cdc.flink.sql.changelog import envelope_table as envelope_table
from cdc.flink.sql.coltypes import DEFAULT_FLINK_VERSION as DEFAULT_FLINK_VERSION
from cdc.flink.sql.coltypes import FLINK_VERSIONS as FLINK_VERSIONS
from cdc.flink.sql.coltypes import SQL_TIMESTAMP as SQL_TIMESTAMP
from cdc.flink.sql.coltypes import STREAMING as STREAMING
from cdc.flink.sql.coltypes import TOAST_PLACEHOLDER as TOAST_PLACEHOLDER
from cdc.flink.sql.coltypes import ColumnTypes as ColumnTypes
from cdc.flink.sql.coltypes import Row as Row
from cdc.flink.sql.coltypes import _decimal_type as _decimal_type
from cdc.flink.sql.coltypes import check_version as check_version
from cdc.flink.sql.coltypes import ident as ident
from cdc.flink.sql.coltypes import infer_columns as infer_columns
from cdc.flink.sql.coltypes import literal as literal
from cdc.flink.sql.coltypes import sql_type as sql_type
from cdc.flink.sql.coltypes import widen as widen
from cdc.flink.sql.decode import debezium_sql as debezium_sql
from cdc.flink.sql.decode import decode_sql as decode_sql
from cdc.flink.sql.encode import debezium_encode_sql as debezium_encode_sql
from cdc.flink.sql.from_changelog import UPSERT_NEEDS_24 as UPSERT_NEEDS_24
from cdc.flink.sql.from_changelog import encodes_upsert as encodes_upsert
from cdc.flink.sql.from_changelog import from_changelog_sql as from_changelog_sql
from cdc.flink.sql.inspect import INSPECT_LEFT_OUT as INSPECT_LEFT_OUT
from cdc.flink.sql.inspect import inspect_sql as inspect_sql
from cdc.flink.sql.materialize import _key_check as _key_check
from cdc.flink.sql.materialize import dangling_retractions as dangling_retractions
from cdc.flink.sql.materialize import keyed_findings as keyed_findings
from cdc.flink.sql.materialize import materialize_sql as materialize_sql
from cdc.flink.sql.replay import replay_sql as replay_sql
from cdc.flink.sql.scan import CDC_ROWS as CDC_ROWS
from cdc.flink.sql.scan import ENVELOPE_METADATA as ENVELOPE_METADATA
from cdc.flink.sql.scan import FLINK_TYPES as FLINK_TYPES
from cdc.flink.sql.scan import METADATA_TYPES as METADATA_TYPES
from cdc.flink.sql.scan import DebeziumInfo as DebeziumInfo
from cdc.flink.sql.scan import _canal_text_boolean as _canal_text_boolean
from cdc.flink.sql.scan import _canal_update as _canal_update
from cdc.flink.sql.scan import _included as _included
from cdc.flink.sql.scan import scan_records as scan_records
from cdc.flink.sql.scan import stale_befores as stale_befores
from cdc.flink.sql.tables import ENVELOPES as ENVELOPES
from cdc.flink.sql.tables import FORMATS as FORMATS
from cdc.flink.sql.tables import Script as Script
from cdc.flink.sql.tables import Sink as Sink
from cdc.flink.sql.tables import Source as Source
from cdc.flink.sql.tables import _csv_header_view as _csv_header_view
from cdc.flink.sql.tables import create_table as create_table
from cdc.flink.sql.tables import encoded as encoded
from cdc.flink.sql.tables import finish as finish
from cdc.flink.sql.tables import grouped_codes as grouped_codes
from cdc.flink.sql.tables import header as header
from cdc.flink.sql.tables import map_literal as map_literal
from cdc.flink.sql.tables import output_table as output_table
from cdc.flink.sql.tables import select_list as select_list
from cdc.flink.sql.tables import source_statements as source_statements
from cdc.flink.sql.tables import with_clause as with_clause
from cdc.flink.sql.to_changelog import to_changelog_sql as to_changelog_sql
