"""What each command can be asked to do: one frozen spec per kind of job.

A spec is plain data, built and checked once (from flags, or from the Python API) and passed
whole to the engine; the engine's paths each say which specs they accept. ``reads`` says what
the input rows are: plain rows, changelog rows (kind column), or change events (envelopes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from cdc.core.errors import UsageError
from cdc.core.kinds import RowKind
from cdc.core.state import Policy

if TYPE_CHECKING:  # the aggregate module loads only for aggregate jobs
    from cdc.core.aggregate import AggregateQuery

PLAIN = "rows"
CHANGELOG = "changelog"
EVENTS = "events"


@dataclass(frozen=True)
class Tables:
    """``--table-include`` / ``--database-include`` of a command that reads change events on the
    way in (``-i debezium|canal|maxwell|ogg``): which tables of the stream it reads."""

    database_include: str | None = None
    table_include: str | None = None

    def __bool__(self) -> bool:
        return self.database_include is not None or self.table_include is not None


@dataclass(frozen=True)
class CopySpec:
    """Rows → the same rows (a change of format, or rows read for a caller); with
    ``reads=CHANGELOG``, envelope inputs are decoded to changelog rows on the way."""

    stateless: ClassVar[bool] = True
    reads: str = PLAIN
    kind_column: str = "op"
    tables: Tables = Tables()  # -i debezium|canal|maxwell|ogg: the tables read


@dataclass(frozen=True)
class FromChangelogSpec:
    """Append-only rows with an op-code column → changelog rows (Flink FROM_CHANGELOG).

    ``commit_columns`` (a change feed: Delta CDF, DuckLake, Iceberg) pairs each commit's pre- and
    post-images whatever their order in the file (``core.commits``); ``drop_commit_columns``
    leaves those columns out of the rows."""

    writes_kinds: ClassVar[bool] = True  # its output rows carry their kind in ``kind_column``
    reads: ClassVar[str] = PLAIN
    op_column: str
    mapping: Mapping[str, RowKind]
    kind_column: str = "op"
    keys: tuple[str, ...] = ()
    drop: frozenset[RowKind] = field(default_factory=frozenset)
    commit_columns: tuple[str, ...] = ()
    pair_key: tuple[str, ...] = ()
    drop_commit_columns: bool = False

    @property
    def stateless(self) -> bool:
        """One row at a time, unless a commit's rows are paired (then a commit at a time)."""
        return not self.commit_columns


@dataclass(frozen=True)
class ToChangelogSpec:
    """Changelog rows → append-only rows with an op column (Flink TO_CHANGELOG)."""

    reads: ClassVar[str] = CHANGELOG
    stateless: ClassVar[bool] = True
    mapping: Mapping[RowKind, str]
    op_column: str = "op"
    kind_column: str = "op"
    drop: frozenset[RowKind] = field(default_factory=frozenset)
    tables: Tables = Tables()  # -i debezium|canal|maxwell|ogg: the tables read


@dataclass(frozen=True)
class DecodeSpec:
    """Change events → changelog rows, as Flink's debezium-json, canal-json, maxwell-json and
    ogg-json read them. ``envelope`` ``auto`` is decided from the first record (``with_envelope``)."""

    writes_kinds: ClassVar[bool] = True  # its output rows carry their kind in ``kind_column``
    reads: ClassVar[str] = EVENTS
    envelope: str = "debezium"  # auto | debezium | canal | maxwell | ogg
    kind_column: str = "op"
    schema_include: str = "auto"  # Debezium: auto | true | false
    raw_values: bool = False
    metadata: tuple[str, ...] = ()  # NAME[=COLUMN] requests, checked against the envelope's keys
    on_truncate: str = "fail"  # fail | skip | delete
    key: tuple[str, ...] = ()
    database_include: str | None = None  # Flink's database.include (Debezium: source.db/.schema)
    table_include: str | None = None  # ... and table.include (Debezium: source.table, db.schema.table)
    bootstrap: str = "insert"  # Maxwell's bootstrap-insert rows: insert | skip
    one_table: bool = False  # decoded for a command that keeps state: a second table is refused
    # Kafka dumps: kcat -J records are told by their fields (auto); console-consumer lines
    # (KEY<TAB>VALUE) by the first line, or named: auto | kcat | kafka-console
    container: str = "auto"
    # Debezium: what the stream says against itself (a stale before image, a placeholder that
    # cannot be rebuilt, a snapshot re-read of a live row): warn (counted), fail, or ignore.
    policy: Policy = Policy.warn
    unavailable_placeholder: str | None = None  # Debezium's unavailable.value.placeholder, if not the default
    live_rows: bool = False  # keep the live rows without a key too (a command that keeps state reads)

    @property
    def stateless(self) -> bool:
        """Without a key, truncate-deletes or live rows every event decodes on its own (parallel-safe)."""
        return not self.key and self.on_truncate != "delete" and not self.live_rows and not self.one_table


@dataclass(frozen=True)
class EncodeSpec:
    """Changelog rows → Debezium events; an adjacent -U/+U pair becomes one u event."""

    reads: ClassVar[str] = CHANGELOG
    stateless: ClassVar[bool] = False  # a -U waits for its +U
    kind_column: str = "op"
    split_updates: bool = False
    time_column: str | None = None
    source: tuple[tuple[str, Any], ...] = ()
    key: tuple[str, ...] = ()


@dataclass(frozen=True)
class MaterializeSpec:
    """Changelog rows → the table they describe (keyed upsert state, or a multiset)."""

    reads: ClassVar[str] = CHANGELOG
    stateless: ClassVar[bool] = False
    rows_at_end: ClassVar[bool] = True  # its rows are the state, written once the input is read
    kind_column: str = "op"
    key: tuple[str, ...] = ()
    policy: Policy = Policy.warn
    dedup: bool = False
    as_of: Any = None
    time_column: str | None = None
    sort: bool = False
    # A change feed's commit columns: metadata, left out of row identity and of the table.
    # None: the known ones (core.presets.COMMIT_COLUMNS) found in the input's columns.
    commit_columns: tuple[str, ...] | None = None
    tables: Tables = Tables()  # -i debezium|canal|maxwell|ogg: the table read
    # Columns that are not row identity (metadata: --metadata columns, a schema line's), kept in
    # the table: left out when a -U/-D is matched, a duplicate found.
    ignore_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.dedup and self.as_of is not None:
            raise UsageError("--dedup and --as-of do not combine: a versioned table keeps one version per time")
        if self.as_of is not None and not self.time_column:
            raise UsageError("--as-of needs --time-column COL")
        if self.time_column and self.as_of is None:  # it would be read and do nothing
            raise UsageError("--time-column goes with --as-of TIME (the table as of that time)")


@dataclass(frozen=True)
class InspectSpec:
    """Changelog rows → what kind of changelog this is (a report, no output rows)."""

    reads: ClassVar[str] = CHANGELOG
    stateless: ClassVar[bool] = False
    kind_column: str = "op"
    key: tuple[str, ...] = ()
    time_column: str | None = None
    commit_columns: tuple[str, ...] | None = None  # as MaterializeSpec's
    tables: Tables = Tables()  # -i debezium|canal|maxwell|ogg: the table read
    ignore_columns: tuple[str, ...] = ()  # as MaterializeSpec's


@dataclass(frozen=True)
class ReplaySpec:
    """A changelog run through keyed state and re-emitted (Flink ChangelogNormalize)."""

    writes_kinds: ClassVar[bool] = True  # its output rows carry their kind in ``kind_column``
    stateless: ClassVar[bool] = False
    key: tuple[str, ...]
    emit: str = "retract"  # retract | upsert
    keep_noop: bool = False
    order_by: str | None = None
    time_column: str | None = None
    since: Any = None
    until: Any = None
    net: bool = False
    input_mode: str = "changelog"  # changelog | upsert | append
    delete_when: tuple[str, str] | None = None  # upsert mode: (column, value) marks a delete
    kind_column: str = "op"
    tables: Tables = Tables()  # -i debezium|canal|maxwell|ogg: the table read
    ignore_columns: tuple[str, ...] = ()  # not compared: an update changing only these is a no-op

    def __post_init__(self) -> None:
        if not self.key:
            raise UsageError("replay needs --key: its state holds one row per key")
        if (self.since is not None or self.until is not None) and not self.time_column:
            raise UsageError("--since/--until need --time-column COL")
        if self.net and (self.since is None or self.until is None):
            raise UsageError("--net needs both --since and --until: it is the change between two states")
        if self.delete_when is not None and self.input_mode != "upsert":
            raise UsageError("--delete-when goes with --input-mode upsert")

    @property
    def reads(self) -> str:  # type: ignore[override]
        return CHANGELOG if self.input_mode == "changelog" else PLAIN


@dataclass(frozen=True)
class AggregateSpec:
    """A continuous GROUP BY over changes (Flink's group aggregate): ``query`` says what to
    compute; the input is changelog rows, or plain rows read as inserts (``append``) or as
    upserts of ``key`` (``upsert``, normalized first as Flink's ChangelogNormalize does)."""

    writes_kinds: ClassVar[bool] = True  # its output rows carry their kind in ``kind_column``
    stateless: ClassVar[bool] = False
    query: AggregateQuery
    input_mode: str = "changelog"  # changelog | upsert | append
    key: tuple[str, ...] = ()
    delete_when: tuple[str, str] | None = None
    kind_column: str = "op"
    policy: Policy = Policy.warn
    tables: Tables = Tables()  # -i debezium|canal|maxwell|ogg: the table read

    def __post_init__(self) -> None:
        if self.input_mode == "upsert" and not self.key:
            raise UsageError("--input-mode upsert needs --key: each row upserts its key")
        if self.delete_when is not None and self.input_mode != "upsert":
            raise UsageError("--delete-when goes with --input-mode upsert")
        named = [*self.query.group_by, *(a.name for a in self.query.aggs)]
        if self.kind_column in named:
            raise UsageError(
                f"output column {self.kind_column!r} collides with the kind column",
                hint="rename the kind column with --kind-column NAME",
            )

    @property
    def reads(self) -> str:
        return CHANGELOG if self.input_mode == "changelog" else PLAIN
