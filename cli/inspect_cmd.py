"""``cdc inspect``: what kind of changelog is this file?"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import orjson
import typer

from cdc.cli import options as o
from cdc.cli.running import call
from cdc.engine import api
from cdc.formats.jsonl import encode_default


@o.cdc_command(o.INPUT, o.ERRORS, o.REPORT, o.SQL, o.CSV_IN, o.TABLES, o.AVRO_IN)
def command(
    common: o.Common,
    key: o.KeyOpt = None,
    time_column: Annotated[
        str | None,
        typer.Option("--time-column", "-t", show_default=False, help="Report the time range of this column."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout, for CI.")] = False,
    commit_columns: o.CommitColumnsOpt = None,
    ignore_columns: o.IgnoreColumnsOpt = None,
    kind_column: o.KindColumn = "op",
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Exit 3 when the changelog has inconsistent changes (after the report), for CI."),
    ] = False,
) -> None:
    """Tell what kind of changelog a file is: kinds present as Flink prints them ([I,UB,UA,D]),
    the mode (append-only / upsert / retract), counts, keys and live rows, consistency findings,
    message counts as retract vs upsert, and the time range.

    **Examples**

    ```
    cdc inspect samples/product-prices.jsonl --key product_id \\
      --time-column update_time
    cdc debezium-decode samples/mysql-inventory.jsonl \\
      | cdc inspect --key id --json
    cdc inspect samples/product-prices.jsonl --print-sql
    cdc debezium-decode samples/mysql-inventory.jsonl \\
      | cdc inspect --key id --strict
    ```
    """
    result = call(
        common,
        api.inspect,
        "inspect",
        key=key,
        time_column=time_column,
        commit_columns=commit_columns,
        kind_column=kind_column,
        ignore_columns=ignore_columns,
    )
    if result.report is None:  # --print-sql; --on-flink: the changes per kind, as rows
        for row in result.rows or []:
            sys.stdout.buffer.write(orjson.dumps(row, default=encode_default, option=orjson.OPT_APPEND_NEWLINE))
        sys.stdout.flush()
        return
    report = result.report
    if as_json:
        sys.stdout.buffer.write(
            orjson.dumps(
                report,
                default=encode_default,
                option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_INDENT_2 | orjson.OPT_PASSTHROUGH_DATETIME,
            )
        )
    elif sys.stdout.isatty():
        _panel(report)
    else:
        sys.stdout.write(plain(report))
    sys.stdout.flush()
    inconsistent = report["consistency"]["inconsistent_changes"]
    if strict and inconsistent:
        from cdc.cli.errors import say

        say(f"cdc: inspect: {inconsistent} inconsistent change(s) (--strict)")
        raise typer.Exit(3)


def plain(report: dict[str, Any]) -> str:
    counts = ", ".join(f"{k} {n}" for k, n in report["counts"].items())
    lines = []
    tables = report.get("tables", [])
    for i, t in enumerate(tables):
        head = "tables:    " if i == 0 else "           "
        lines.append(f"{head}{t['name']}  ({t['events']} events, first {t['first']})")
    if len(tables) > 1:
        lines.append("           several tables: the rest mixes them; pick one with --table-include")
    lines += [
        f"kinds:     {report['kinds']}  ({report['mode']})",
        f"changes:   {report['changes']}  ({counts})",
        f"live rows: {report['live_rows']}",
    ]
    if "key" in report:
        k = report["key"]
        lines.append(f"keys:      {k['distinct']} distinct, {k['live']} live  (key {', '.join(k['columns'])})")
    m = report["messages"]
    lines.append(f"messages:  {m['retract']} as retract, {m['upsert']} as upsert")
    c = report["consistency"]
    if c["inconsistent_changes"]:
        kinds = ", ".join(f"{w} {n}" for w, n in c["by_finding"].items())
        lines.append(f"findings:  {c['inconsistent_changes']} inconsistent ({kinds})")
        lines.extend(f"           {e}" for e in c["examples"])
    else:
        lines.append("findings:  consistent")
    if "time" in report:
        t = report["time"]
        lines.append(
            f"time:      {t['column']} from {_iso(t['min'])} to {_iso(t['max'])}"
            + (f" ({t['missing']} without a time)" if t["missing"] else "")
        )
    return "\n".join(lines) + "\n"


def _iso(value: Any) -> Any:
    """A time as JSON writes it (ISO 8601, ``T``): a typed stream's times are dates and times."""
    iso = getattr(value, "isoformat", None)
    return iso() if iso is not None else value


def _panel(report: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.panel import Panel

    from cdc.cli.table import StdoutConsole

    # values from the data may look like markup ("[red]"): escape them, then colour the verdict
    text = escape(plain(report)).replace("findings:  consistent\n", "findings:  [green]consistent[/]\n")
    title = f"[bold]{escape(report['kinds'])}[/] {report['mode']}"
    StdoutConsole().print(Panel(text.rstrip(), title=title, expand=False))
