"""What stateful commands tell people: findings, stats, and the --expect diff."""

from __future__ import annotations

import sys
from typing import Any

from cdc.cli.errors import say
from cdc.core.compare import TableDiff, canonical
from cdc.core.state import Findings, Policy, TableState
from cdc.core.versioned import VersionedState


def report_findings(command: str, findings: Findings | None) -> None:
    if findings is None or not findings.total or findings.policy == Policy.ignore:  # None: --on-flink
        return
    kinds = ", ".join(f"{what} {n}" for what, n in findings.counts.most_common())
    say(f"cdc: {command}: warning: {findings.total} inconsistent change(s): {kinds}")
    for example in findings.examples:
        say(f"  {example}")
    if findings.total > len(findings.examples):
        say(f"  … {findings.total - len(findings.examples)} more; --strict stops at the first")


def state_stats(state: TableState, read: int, live: int | None = None) -> str:
    """``live``: the number of rows when they were kept outside the state (as texts)."""
    kinds = ", ".join(f"{k} {state.by_kind[k]}" for k in ("+I", "-U", "+U", "-D") if state.by_kind.get(k))
    n = len(state) if live is None else live
    text = f"read {read} changes ({kinds}); {n} live {'row' if n == 1 else 'rows'}"
    keys = getattr(state, "key", None)
    if keys:
        text += f" by key {', '.join(keys)}"
    if isinstance(state, VersionedState):  # a table at one time: the log's message counts do not apply
        text += f"; {state.after} change(s) later than --as-of left out"
    else:
        text += f"; as retract {state.retract_messages} messages, as upsert {state.upsert_messages}"
    duplicates = getattr(state, "duplicates", 0)
    if duplicates:
        text += f"; {duplicates} duplicate(s) dropped"
    if state.findings.total:
        text += f"; {state.findings.total} inconsistent"
    return text


def rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def _cell(value: Any) -> str:
    text = canonical(value)
    return "null" if text is None else text


def _row_text(row: dict[str, Any], columns: list[str]) -> str:
    return ", ".join(f"{c}={_cell(row.get(c))}" for c in columns if c in row)


def _quoted(value: Any) -> str:
    text = canonical(value)
    return "null" if text is None else repr(text)


def render_diff_plain(diff: TableDiff, expected_name: str) -> str:
    """A stable text form for CI logs and pipes."""
    lines = [
        f"cdc: materialize: result {diff.summary()} (expected {expected_name}: {rows(diff.expected_rows)}, "
        f"result: {rows(diff.result_rows)})"
    ]
    if diff.columns_only_in_result:
        lines.append(f"+ columns only in result: {', '.join(diff.columns_only_in_result)}")
    if diff.columns_only_in_expected:
        lines.append(f"- columns only in expected: {', '.join(diff.columns_only_in_expected)}")
    for change in diff.changed:
        cells = "; ".join(
            f"{c}: expected {_quoted(change.expected.get(c))}, got {_quoted(change.result.get(c))}"
            for c in change.columns
        )
        lines.append(f"~ {change.key}: {cells}")
    for row in diff.only_in_result:
        lines.append(f"+ only in result: {_row_text(row, diff.columns)}")
    for row in diff.only_in_expected:
        lines.append(f"- only in expected: {_row_text(row, diff.columns)}")
    return "\n".join(lines) + "\n"


def render_diff(diff: TableDiff, expected_name: str) -> None:
    if not sys.stdout.isatty():
        sys.stdout.write(render_diff_plain(diff, expected_name))
        sys.stdout.flush()
        return
    from rich.table import Table
    from rich.text import Text

    from cdc.cli.table import StdoutConsole

    console = StdoutConsole()
    style = "green" if diff.equal else "bold red"
    console.print(Text(f"result {diff.summary()}", style=style), Text(f"(expected: {expected_name})", style="dim"))
    if diff.equal:
        return
    table = Table(show_edge=False, header_style="bold")
    table.add_column("")
    for column in diff.columns:
        table.add_column(column)
    for change in diff.changed:
        cells = []
        for c in diff.columns:
            if c in change.columns:
                cells.append(
                    Text.assemble(
                        (_cell(change.expected.get(c)), "red strike"),
                        " → ",
                        (_cell(change.result.get(c)), "bold green"),
                    )
                )
            else:
                cells.append(Text(_cell(change.result.get(c))))
        table.add_row(Text("~", style="yellow"), *cells)
    for row in diff.only_in_result:
        table.add_row(Text("+", style="green"), *[Text(_cell(row.get(c)), style="green") for c in diff.columns])
    for row in diff.only_in_expected:
        table.add_row(Text("-", style="red"), *[Text(_cell(row.get(c)), style="red") for c in diff.columns])
    console.print(table)
    for label, cols in (
        ("only in result", diff.columns_only_in_result),
        ("only in expected", diff.columns_only_in_expected),
    ):
        if cols:
            console.print(Text(f"columns {label}: {', '.join(cols)}", style="yellow"))
