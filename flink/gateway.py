"""A client of Flink's SQL Gateway (REST API v2), for ``--on-flink URL``: run a printed script on a
cluster and stream its rows back.

One session per script: each statement (``SET`` included, as the SQL client runs them) is
executed on its own and fetched to the end — errors of planning and of the job both arrive only
when results are fetched (HTTP 500 with the Java stack; the last ``Caused by:`` is the message).
Result pages are followed by ``nextResultUri`` until ``EOS``; ``NOT_READY`` and empty pages are
polled with a short sleep. Rows come with their kind (``INSERT``, ``UPDATE_BEFORE``,
``UPDATE_AFTER``, ``DELETE`` → ``+I -U +U -D``). Operations and the session are closed at the end,
on errors too (closing an operation cancels a SELECT that still runs).

Stdlib only (``urllib``): no dependency for a feature most runs never use.
"""

from __future__ import annotations

import json
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from cdc.core.errors import CdcError, Location, UsageError

KINDS = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}
POLL = 0.05  # seconds between polls of a page that had no rows yet


class FlinkError(CdcError):
    """The cluster refused or failed the job: Flink's own message (exit 3)."""


def split_statements(script: str) -> list[str]:
    """A script as ``sql-client.sh -f`` splits it: ``--`` comments dropped, statements split on
    ``;`` outside ``'…'``, ``"…"`` and `` `…` ``; empty statements left out."""
    statements: list[str] = []
    current: list[str] = []
    quote = ""
    i = 0
    while i < len(script):
        c = script[i]
        if quote:
            current.append(c)
            if c == quote:
                if i + 1 < len(script) and script[i + 1] == quote:  # a doubled quote is the quote itself
                    current.append(script[i + 1])
                    i += 1
                else:
                    quote = ""
        elif c in "'\"`":
            quote = c
            current.append(c)
        elif c == "-" and script.startswith("--", i):
            end = script.find("\n", i)
            i = len(script) if end < 0 else end
            continue
        elif c == ";":
            text = "".join(current).strip()
            if text:
                statements.append(text)
            current = []
        else:
            current.append(c)
        i += 1
    text = "".join(current).strip()
    if text:
        statements.append(text)
    return statements


def flink_message(body: str) -> str:
    """The message in a gateway error: the last ``Caused by:`` of the server's stack, else its
    first error line."""
    try:
        errors = json.loads(body).get("errors") or []
    except (ValueError, AttributeError):
        errors = [body]
    text = "\n".join(str(e) for e in errors)
    causes = re.findall(r"Caused by: ([^\n]+)", text)
    if causes:
        return str(causes[-1]).strip()
    lines = [ln.strip() for e in errors for ln in str(e).splitlines() if ln.strip()]
    useful = [ln for ln in lines if ln not in ("Internal server error.", "<Exception on server side:")]
    return str((useful or lines or ["the gateway answered with an error"])[0])


def is_local(url: str) -> bool:
    """The gateway runs on this machine (it then reads this machine's files)."""
    host = str(urllib.parse.urlsplit(url).hostname or "").lower()
    if host in ("127.0.0.1", "localhost", "::1", "0.0.0.0"):
        return True
    names = {socket.gethostname().lower(), socket.getfqdn().lower()}
    if host in names:
        return True
    try:
        return host.startswith("127.") or socket.gethostbyname(host) in ("127.0.0.1", "127.0.1.1")
    except OSError:
        return False


@dataclass
class Column:
    name: str
    type: str  # Flink's logical type root: INTEGER, BIGINT, DECIMAL, DOUBLE, TIMESTAMP_WITHOUT_TIME_ZONE …
    scale: int | None = None


@dataclass
class Outcome:
    """One statement's result: its columns, whether it was a query, the job it started."""

    columns: list[Column] = field(default_factory=list)
    query: bool = False
    job_id: str | None = None


class Gateway:
    """A session on a SQL Gateway at ``url`` (``http://host:port``)."""

    def __init__(self, url: str, timeout: float = 60.0, poll: float = POLL) -> None:
        if not url.startswith(("http://", "https://")):
            url = "http://" + url
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.poll = poll
        self.session: str | None = None

    # -- HTTP

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                text = response.read().decode("utf-8")
        except urllib.error.HTTPError as e:
            message = "Flink: " + flink_message(e.read().decode("utf-8", "replace"))
            raise FlinkError(message, where=Location(self.url)) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise UsageError(
                f"--on-flink: no Flink SQL Gateway answers at {self.url} ({reason})",
                hint="start one (flink/harness/cluster.sh up starts a local cluster with its gateway on port 8083)",
            ) from None
        return json.loads(text, parse_float=Decimal) if text.strip() else {}

    # -- the session

    def open(self, name: str = "cdc") -> None:
        info = self._call("GET", "/v2/info")
        if not isinstance(info, dict) or "version" not in info:
            raise UsageError(f"--on-flink: {self.url} is not a Flink SQL Gateway (GET /v2/info: {info!r})")
        self.version = str(info["version"])
        self.session = str(self._call("POST", "/v2/sessions", {"sessionName": name})["sessionHandle"])

    def close(self) -> None:
        if self.session is None:
            return
        session, self.session = self.session, None
        try:
            self._call("DELETE", f"/v2/sessions/{session}")
        except CdcError:
            pass  # the session expires on its own; the job's own error matters more

    def __enter__(self) -> Gateway:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- statements

    def execute(self, statement: str) -> tuple[Outcome, Iterator[tuple[str, list[Any]]]]:
        """Submit ``statement``; its outcome (filled in as pages arrive) and its rows as
        ``(kind, fields)``. Iterate the rows to the end: that is where Flink's errors come."""
        if self.session is None:
            raise RuntimeError("the gateway session is not open")
        s = self.session
        op = str(self._call("POST", f"/v2/sessions/{s}/statements", {"statement": statement})["operationHandle"])
        outcome = Outcome()
        return outcome, self._rows(s, op, outcome)

    def _rows(self, s: str, op: str, outcome: Outcome) -> Iterator[tuple[str, list[Any]]]:
        uri: str | None = f"/v2/sessions/{s}/operations/{op}/result/0?rowFormat=JSON"
        try:
            while uri is not None:
                page = self._call("GET", uri)
                kind = page.get("resultType")
                if kind == "NOT_READY":
                    time.sleep(self.poll)
                    uri = page.get("nextResultUri") or uri
                    continue
                outcome.query = bool(page.get("isQueryResult", outcome.query))
                outcome.job_id = page.get("jobID") or outcome.job_id
                results = page.get("results") or {}
                if results.get("columns") and not outcome.columns:
                    outcome.columns = [_column(c) for c in results["columns"]]
                data = results.get("data") or []
                for row in data:
                    yield KINDS.get(str(row.get("kind")), "+I"), list(row.get("fields") or [])
                if kind == "EOS":
                    break
                uri = page.get("nextResultUri")
                if not data and uri is not None:
                    time.sleep(self.poll)
        finally:
            try:
                self._call("DELETE", f"/v2/sessions/{s}/operations/{op}/close")
            except CdcError:
                pass

    def run_all(self, statements: list[str]) -> tuple[Outcome, Iterator[tuple[str, list[Any]]]]:
        """Run every statement but the last to its end (SET, DDL, views); the last one's outcome and rows."""
        for statement in statements[:-1]:
            _, rows = self.execute(statement)
            for _ in rows:
                pass
        return self.execute(statements[-1])


def _column(spec: dict[str, Any]) -> Column:
    logical = spec.get("logicalType") or {}
    scale = logical.get("scale")
    return Column(str(spec.get("name")), str(logical.get("type", "")), int(scale) if scale is not None else None)


def convert(value: Any, column: Column) -> Any:
    """A JSON value of a result row as cdc holds the same value: integers as int, DOUBLE as float,
    DECIMAL with its scale (JSON drops trailing zeros), timestamps as ``yyyy-MM-dd HH:mm:ss[.f]``."""
    if value is None:
        return None
    t = column.type
    if t in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT"):
        return int(value)
    if t in ("DOUBLE", "FLOAT"):
        return float(value)
    if t == "DECIMAL" and isinstance(value, Decimal | int):
        d = Decimal(value)
        return d.quantize(Decimal(1).scaleb(-column.scale)) if column.scale is not None else d
    if t == "TIMESTAMP_WITHOUT_TIME_ZONE" and isinstance(value, str):
        return value.replace("T", " ", 1)
    return value
