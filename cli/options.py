"""Options shared by the commands, declared once, as groups a command asks for.

``@cdc_command(INPUT, OUTPUT, ERRORS, REPORT)`` appends the groups' options to the command's own
and hands the command one ``Common`` object with their values; the command's body then makes
one Python API call (``cli.running.call``) and renders its result. Errors raised anywhere
inside become a message and an exit code at one boundary (``cli.errors``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, get_type_hints

import typer

from cdc.core.model import OnError

IO_PANEL = "Input and output"
ERR_PANEL = "Errors and reporting"
SQL_PANEL = "Beyond one machine"


def split_list(values: Sequence[str] | str | None) -> tuple[str, ...]:
    """``['id,name', 'x']`` → ``('id', 'name', 'x')``; repeated names once."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    return tuple(dict.fromkeys(part.strip() for text in values for part in text.split(",") if part.strip()))


class InputMode(StrEnum):
    """How `replay` and `aggregate` read their input (Flink's changelog modes)."""

    changelog = "changelog"
    upsert = "upsert"
    append = "append"


class Emit(StrEnum):
    """The changelog mode `replay` and `aggregate` write."""

    retract = "retract"
    upsert = "upsert"


@dataclass
class Common:
    """The shared options' values (a command sees only the groups it asked for)."""

    inputs: list[str] = field(default_factory=list)
    input_format: str | None = None
    output: str = "-"
    output_format: str | None = None
    columns: tuple[str, ...] = ()
    on_error: OnError = OnError.fail
    rejects: str | None = None
    stats: bool = False
    progress: bool | None = None
    verbose: bool = False
    print_sql: bool = False
    on_flink: str | None = None  # a SQL Gateway's URL: the --print-sql script runs there (flink.on_flink)
    flink_version: str = "2.3"
    sql_source: str = "filesystem"
    sql_sink: str = "none"
    topic: str | None = None
    sink_topic: str | None = None
    bootstrap_servers: str | None = None
    sink_path: str | None = None
    given: frozenset[str] = frozenset()  # the shared options the command has (cli.running.call passes them on)
    database_include: str | None = None
    table_include: str | None = None
    delimiter: str | None = None
    quote_char: str | None = None
    no_header: bool = False
    header_names: str | None = None
    schema_registry: str | None = None
    schema_registry_auth: str | None = None
    schemas: str | None = None


@dataclass(frozen=True)
class Group:
    params: tuple[tuple[str, Any, Any], ...]  # (name, annotation, default)


INPUT = Group(
    (
        (
            "inputs",
            Annotated[
                list[str] | None,
                typer.Argument(
                    help="Input files, read in order as one stream; none or '-' reads stdin.", show_default=False
                ),
            ],
            None,
        ),
        (
            "input_format",
            Annotated[
                str | None,
                typer.Option(
                    "--input-format",
                    "-i",
                    help="jsonl, csv, tsv or parquet (and debezium where changelog rows are read); "
                    "default: by suffix, stdin JSON lines (Parquet sniffed).",
                    rich_help_panel=IO_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
    )
)
OUTPUT = Group(
    (
        (
            "output",
            Annotated[
                str,
                typer.Option(
                    "--output", "-o", help="Output file (written atomically); '-' is stdout.", rich_help_panel=IO_PANEL
                ),
            ],
            "-",
        ),
        (
            "output_format",
            Annotated[
                str | None,
                typer.Option(
                    "--output-format",
                    "-f",
                    help="jsonl, csv, tsv, parquet, print (Flink's +I[…] rows) or table; "
                    "default: by suffix, else JSON lines.",
                    rich_help_panel=IO_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
        (
            "columns",
            Annotated[
                str | None,
                typer.Option(
                    "--columns",
                    help="Comma list: write these columns, in this order, in any format (missing ones are null).",
                    rich_help_panel=IO_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
    )
)
ERRORS = Group(
    (
        (
            "on_error",
            Annotated[
                OnError,
                typer.Option(
                    "--on-error",
                    help="fail on the first bad record, or skip it (counted; kept with --rejects).",
                    rich_help_panel=ERR_PANEL,
                    case_sensitive=True,
                ),
            ],
            OnError.fail,
        ),
        (
            "rejects",
            Annotated[
                str | None,
                typer.Option(
                    "--rejects",
                    help="With --on-error skip: write each skipped record here as JSON lines.",
                    rich_help_panel=ERR_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
    )
)
REPORT = Group(
    (
        (
            "stats",
            Annotated[
                bool, typer.Option("--stats", help="Print a one-line summary on stderr.", rich_help_panel=ERR_PANEL)
            ],
            False,
        ),
        (
            "progress",
            Annotated[
                bool | None,
                typer.Option(
                    "--progress/--no-progress",
                    help="A progress bar on stderr (default: when stderr is a terminal and stdin is not a pipe).",
                    rich_help_panel=ERR_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
        (
            "verbose",
            Annotated[
                bool,
                typer.Option(
                    "--verbose",
                    "-v",
                    help="Show the path the run took (and any hand-over to the row path) and a traceback with errors.",
                    rich_help_panel=ERR_PANEL,
                ),
            ],
            False,
        ),
    )
)
SQL = Group(
    (
        (
            "print_sql",
            Annotated[
                bool,
                typer.Option(
                    "--print-sql",
                    help="Print the Flink SQL script that does the same job on a cluster, and exit.",
                    rich_help_panel=SQL_PANEL,
                ),
            ],
            False,
        ),
        (
            "on_flink",
            Annotated[
                str | None,
                typer.Option(
                    "--on-flink",
                    metavar="URL",
                    help="Run that script on a Flink cluster through its SQL Gateway (http://HOST:8083) and write "
                    "its rows as the local run would (-o, -f). The cluster reads the input itself: a file:/// path "
                    "it shares, or any path when the gateway is on this machine. URL query parameters are session "
                    "settings (…?parallelism.default=4).",
                    rich_help_panel=SQL_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
        (
            "flink_version",
            Annotated[
                str,
                typer.Option(
                    "--flink-version",
                    help="The Flink the script is for; a job it cannot do is refused (exit 2) with the reason.",
                    rich_help_panel=SQL_PANEL,
                ),
            ],
            "2.3",
        ),
        (
            "sql_source",
            Annotated[
                str,
                typer.Option(
                    "--sql-source",
                    help="Where the script reads: filesystem (the input file), kafka or upsert-kafka (--topic).",
                    rich_help_panel=SQL_PANEL,
                ),
            ],
            "filesystem",
        ),
        (
            "sql_sink",
            Annotated[
                str,
                typer.Option(
                    "--sql-sink",
                    help="Where the script writes: none (the SQL client shows it), filesystem (--sink-path), "
                    "kafka or upsert-kafka (--sink-topic).",
                    rich_help_panel=SQL_PANEL,
                ),
            ],
            "none",
        ),
        (
            "topic",
            Annotated[
                str | None,
                typer.Option(
                    "--topic", help="The source's Kafka topic.", rich_help_panel=SQL_PANEL, show_default=False
                ),
            ],
            None,
        ),
        (
            "sink_topic",
            Annotated[
                str | None,
                typer.Option(
                    "--sink-topic", help="The sink's Kafka topic.", rich_help_panel=SQL_PANEL, show_default=False
                ),
            ],
            None,
        ),
        (
            "bootstrap_servers",
            Annotated[
                str | None,
                typer.Option(
                    "--bootstrap-servers", help="Kafka's host:port list.", rich_help_panel=SQL_PANEL, show_default=False
                ),
            ],
            None,
        ),
        (
            "sink_path",
            Annotated[
                str | None,
                typer.Option(
                    "--sink-path", help="The filesystem sink's folder.", rich_help_panel=SQL_PANEL, show_default=False
                ),
            ],
            None,
        ),
    )
)

CSV_PANEL = "CSV input"
CSV_IN = Group(
    (
        (
            "delimiter",
            Annotated[
                str | None,
                typer.Option(
                    "--delimiter",
                    help="CSV/TSV input: the field delimiter, one character (';', '|'; 'tab' for a tab).",
                    rich_help_panel=CSV_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
        (
            "quote_char",
            Annotated[
                str | None,
                typer.Option(
                    "--quote-char",
                    help="CSV/TSV input: the quote character (default '\"').",
                    rich_help_panel=CSV_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
        (
            "no_header",
            Annotated[
                bool,
                typer.Option(
                    "--no-header",
                    help="CSV/TSV input has no header line: its first line is a row (name the columns "
                    "with --header-names).",
                    rich_help_panel=CSV_PANEL,
                ),
            ],
            False,
        ),
        (
            "header_names",
            Annotated[
                str | None,
                typer.Option(
                    "--header-names",
                    help="CSV/TSV input: the columns' names (comma list), for a file without a header "
                    "(--no-header) or instead of its header's.",
                    rich_help_panel=CSV_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
    )
)
TABLES_PANEL = "Change events (-i debezium|canal|maxwell|ogg)"
TABLES = Group(
    (
        (
            "database_include",
            Annotated[
                str | None,
                typer.Option(
                    "--database-include",
                    help="Only the databases (or schemas) matching this regular expression, whole.",
                    rich_help_panel=TABLES_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
        (
            "table_include",
            Annotated[
                str | None,
                typer.Option(
                    "--table-include",
                    help="Only the table matching this regular expression, whole: the table, or "
                    "db.table / schema.table / db.schema.table. A stream of several tables needs it.",
                    rich_help_panel=TABLES_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
    )
)
AVRO_PANEL = "Debezium events in Avro"
AVRO_IN = Group(
    (
        (
            "schema_registry",
            Annotated[
                str | None,
                typer.Option(
                    "--schema-registry",
                    metavar="URL",
                    help="Confluent wire-format messages (magic byte 0 + schema id): fetch each schema id "
                    "from this schema registry (GET /schemas/ids/ID, once per id).",
                    rich_help_panel=AVRO_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
        (
            "schema_registry_auth",
            Annotated[
                str | None,
                typer.Option(
                    "--schema-registry-auth",
                    metavar="USER:PASSWORD",
                    help="The registry's basic-auth credentials (else CDC_SCHEMA_REGISTRY_AUTH); never printed.",
                    rich_help_panel=AVRO_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
        (
            "schemas",
            Annotated[
                str | None,
                typer.Option(
                    "--schemas",
                    metavar="DIR",
                    help="Wire-format messages' schemas from a folder of ID.avsc files (offline, CI).",
                    rich_help_panel=AVRO_PANEL,
                    show_default=False,
                ),
            ],
            None,
        ),
    )
)
IgnoreColumnsOpt = Annotated[
    str | None,
    typer.Option(
        "--ignore-columns",
        show_default=False,
        help="Columns that are not part of a row's identity (comma list): metadata such as a "
        "--metadata column, left out when a -U/-D is matched to the row it retracts (kept in the output). "
        "A stream with a schema line names its own.",
    ),
]

KindColumn = Annotated[
    str,
    typer.Option(
        "--kind-column",
        help="Column of changelog rows that holds the row kind (+I -U +U -D).",
        rich_help_panel=IO_PANEL,
    ),
]
KeyOpt = Annotated[
    list[str] | None,
    typer.Option("--key", "-k", help="Key column(s): a comma list, or repeat the flag.", show_default=False),
]


def cdc_command(*groups: Group) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the groups' options; it receives their values as ``common``."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        hints = get_type_hints(command, include_extras=True)
        own = [
            p.replace(annotation=hints[p.name])
            for p in inspect.signature(command).parameters.values()
            if p.name != "common"
        ]
        shared = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
            for group in groups
            for name, annotation, default in group.params
        ]
        inputs = [p for p in shared if p.name == "inputs"]  # the positional argument comes first
        params = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in [*inputs, *own, *(p for p in shared if p.name != "inputs")]
        ]
        names = {p.name for p in shared}

        @functools.wraps(command)
        def wrapper(**values: Any) -> None:
            from cdc.cli.errors import reported_errors

            common = Common(given=frozenset(names))
            for name in names:
                value = values.pop(name)
                if name == "columns":
                    value = split_list(value)
                elif name == "inputs":
                    value = list(value or ["-"])
                elif name in ("output_format", "input_format") and value is not None:
                    value = value.lower()
                setattr(common, name, value)
            with reported_errors(common.verbose, common.output):
                command(common=common, **values)

        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate


CommitColumnsOpt = Annotated[
    str | None,
    typer.Option(
        "--commit-columns",
        show_default=False,
        help="A change feed's commit columns (comma list): metadata, left out when a retraction is "
        "matched and of the table. \\[default: _commit_version, _commit_timestamp, snapshot_id, "
        "_change_ordinal, _commit_snapshot_id where present; '' for none]",
    ),
]
