"""--on-flink URL: the printed script run through a Flink SQL Gateway (REST API v2), against a fake
gateway on 127.0.0.1 that answers as the real one does (shapes from Flink 2.3: pages with
NOT_READY / PAYLOAD / EOS and ``nextResultUri``, row kinds, errors as HTTP 500 with a Java stack).
The real cluster runs in flink/harness/ (flink/harness/cluster.sh, flink/harness/gateway_check.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import parse_jsonl, run_cdc, write_jsonl

from cdc.flink.gateway import flink_message, split_statements

STACK = (
    "<Exception on server side:\norg.apache.flink.table.gateway.api.utils.SqlGatewayException: failed\n"
    "\tat org.apache.flink...\nCaused by: org.apache.flink.table.api.ValidationException: wrapped\n"
    "Caused by: org.apache.flink.table.api.TableRuntimeException: Received NULL op code. Every changelog row "
    "must carry an operation code.\n\tat org.apache.flink...>"
)


class Fake:
    """A SQL Gateway that records what it was sent and answers a SELECT with ``rows``."""

    def __init__(self, columns: list[tuple[str, str]], rows: list[tuple[str, list[Any]]], fail: bool = False):
        self.columns = columns
        self.rows = rows
        self.fail = fail
        self.statements: list[str] = []
        self.calls: list[str] = []
        self.ops: dict[str, str] = {}
        self.closed_ops: list[str] = []
        self.closed_sessions: list[str] = []
        self.polls: dict[str, int] = {}

    def page(self, op: str, token: int) -> tuple[int, dict[str, Any]]:
        statement = self.ops[op]
        base = f"/v2/sessions/S1/operations/{op}/result/"
        if not statement.upper().startswith("SELECT"):
            if token == 0:
                return 200, {
                    "resultType": "PAYLOAD",
                    "isQueryResult": False,
                    "resultKind": "SUCCESS",
                    "results": {
                        "columns": [{"name": "result", "logicalType": {"type": "VARCHAR"}}],
                        "rowFormat": "JSON",
                        "data": [{"kind": "INSERT", "fields": ["OK"]}],
                    },
                    "nextResultUri": base + "1?rowFormat=JSON",
                }
            return 200, {"resultType": "EOS", "isQueryResult": False, "results": {"columns": [], "data": []}}
        if self.fail:
            return 500, {"errors": ["Internal server error.", STACK]}
        columns = [
            {"name": n, "logicalType": dict({"type": t.split("(")[0], "nullable": True}, **_scale(t))}
            for n, t in self.columns
        ]
        # token 0: NOT_READY first, then an empty page while the job runs; 7, 9: the rows; 11: the end
        if token == 0:
            self.polls[op] = self.polls.get(op, 0) + 1
            if self.polls[op] == 1:
                return 200, {"resultType": "NOT_READY", "nextResultUri": base + "0?rowFormat=JSON"}
            return 200, {
                "resultType": "PAYLOAD",
                "isQueryResult": True,
                "jobID": "j1",
                "results": {"columns": columns, "rowFormat": "JSON", "data": []},
                "nextResultUri": base + "7?rowFormat=JSON",
            }
        half = len(self.rows) // 2
        chunk = {7: self.rows[:half], 9: self.rows[half:]}.get(token)
        if chunk is None:
            return 200, {"resultType": "EOS", "isQueryResult": True, "jobID": "j1", "results": {"columns": columns}}
        data = [{"kind": k, "fields": f} for k, f in chunk]
        next_token = 9 if token == 7 else 11
        return 200, {
            "resultType": "PAYLOAD",
            "isQueryResult": True,
            "jobID": "j1",
            "results": {"columns": columns, "rowFormat": "JSON", "data": data},
            "nextResultUri": base + f"{next_token}?rowFormat=JSON",
        }


def _scale(t: str) -> dict[str, int]:
    if t.startswith("DECIMAL("):
        p, s = t[len("DECIMAL(") : -1].split(",")
        return {"precision": int(p), "scale": int(s)}
    return {}


@pytest.fixture
def gateway() -> Iterator[tuple[None, str, list[Fake]]]:
    holder: list[Fake] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            fake = holder[0]
            fake.calls.append("GET " + self.path)
            if self.path == "/v2/info":
                return self.answer(200, {"productName": "Apache Flink", "version": "2.3.0"})
            parts = self.path.split("?")[0].split("/")
            op, token = parts[5], int(parts[7])
            status, body = fake.page(op, token)
            self.answer(status, body)

        def do_POST(self) -> None:
            fake = holder[0]
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            fake.calls.append("POST " + self.path)
            if self.path == "/v2/sessions":
                return self.answer(200, {"sessionHandle": "S1"})
            if self.path == "/v2/sessions/S1/statements":
                op = f"op{len(fake.statements)}"
                fake.statements.append(body["statement"])
                fake.ops[op] = body["statement"]
                return self.answer(200, {"operationHandle": op})
            self.answer(404, {"errors": ["Not found"]})

        def do_DELETE(self) -> None:
            fake = holder[0]
            fake.calls.append("DELETE " + self.path)
            parts = self.path.split("/")
            if self.path.endswith("/close"):
                fake.closed_ops.append(parts[5])
            else:
                fake.closed_sessions.append(parts[3])
            self.answer(200, {"status": "CLOSED"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield None, url, holder
    finally:
        server.shutdown()
        server.server_close()


CHANGELOG = [
    {"op": "+I", "id": 1, "name": "ann", "price": 12.5},
    {"op": "+I", "id": 2, "name": "bob", "price": 3.0},
    {"op": "-U", "id": 1, "name": "ann", "price": 12.5},
    {"op": "+U", "id": 1, "name": "anne", "price": 13.25},
    {"op": "+I", "id": 3, "name": "cy", "price": 1.0},
    {"op": "-D", "id": 2, "name": "bob", "price": 3.0},
]
# What Flink's SELECT over the FROM_CHANGELOG view streams back for CHANGELOG: the same changes.
FLINK_ROWS = [
    ("INSERT", [1, "ann", 12.5]),
    ("INSERT", [2, "bob", 3.0]),
    ("UPDATE_BEFORE", [1, "ann", 12.5]),
    ("UPDATE_AFTER", [1, "anne", 13.25]),
    ("INSERT", [3, "cy", 1.0]),
    ("DELETE", [2, "bob", 3.0]),
]
COLUMNS = [("id", "BIGINT"), ("name", "VARCHAR"), ("price", "DOUBLE")]


def test_materialize_on_flink_writes_the_table_the_local_run_writes(gateway: Any, tmp_path: Path) -> None:
    _, url, holder = gateway
    fake = Fake(COLUMNS, FLINK_ROWS)
    holder.append(fake)
    source = write_jsonl(tmp_path / "changes.jsonl", CHANGELOG)
    out = tmp_path / "table.csv"
    remote = run_cdc(["materialize", source, "--key", "id", "--on-flink", url, "-o", out])
    assert remote.returncode == 0, remote.stderr.decode()
    local = run_cdc(["materialize", source, "--key", "id", "-f", "csv"])
    assert out.read_bytes() == local.stdout
    assert out.read_text().splitlines() == ["id,name,price", "1,anne,13.25", "3,cy,1.0"]
    # The protocol: one statement per request, SETs included; every page followed to EOS (the
    # NOT_READY and the empty page polled); every operation and the session closed.
    assert fake.statements[0] == "SET 'execution.runtime-mode' = 'streaming'"
    assert any(s.startswith("CREATE TABLE `cdc_input`") for s in fake.statements)
    assert fake.statements[-1].startswith("SELECT")
    assert not any(";" in s for s in fake.statements)
    last = f"op{len(fake.statements) - 1}"
    pages = [c for c in fake.calls if c.startswith(f"GET /v2/sessions/S1/operations/{last}/result/")]
    assert [p.split("/result/")[1].split("?")[0] for p in pages] == ["0", "0", "7", "9", "11"]
    assert sorted(fake.closed_ops) == sorted(fake.ops)
    assert fake.closed_sessions == ["S1"]


def test_a_changelog_comes_back_with_its_kinds(gateway: Any, tmp_path: Path) -> None:
    _, url, holder = gateway
    rows = [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    fake = Fake([("id", "BIGINT"), ("v", "VARCHAR")], [("INSERT", [1, "a"]), ("INSERT", [2, "b"])])
    holder.append(fake)
    source = write_jsonl(tmp_path / "in.jsonl", [dict(r, op="INSERT") for r in rows])
    remote = run_cdc(["from-changelog", source, "--on-flink", url])
    assert remote.returncode == 0, remote.stderr.decode()
    assert parse_jsonl(remote.stdout) == [{"op": "+I", "id": 1, "v": "a"}, {"op": "+I", "id": 2, "v": "b"}]
    assert remote.stdout == run_cdc(["from-changelog", source]).stdout


def test_decimal_keeps_its_scale(gateway: Any, tmp_path: Path) -> None:
    """Flink's JSON row format writes DECIMAL(10, 2) 12.50 as 12.5: the column's scale restores it."""
    _, url, holder = gateway
    fake = Fake([("id", "BIGINT"), ("amount", "DECIMAL(10,2)")], [("INSERT", [1, 12.5])])
    holder.append(fake)
    source = write_jsonl(tmp_path / "in.jsonl", [{"op": "+I", "id": 1, "amount": 1}])
    remote = run_cdc(["from-changelog", source, "--on-flink", url, "-f", "csv"])
    assert remote.stdout.decode().splitlines() == ["op,id,amount", "+I,1,12.50"]


def test_a_flink_error_is_a_cdc_error_with_flinks_message(gateway: Any, tmp_path: Path) -> None:
    _, url, holder = gateway
    holder.append(Fake(COLUMNS, FLINK_ROWS, fail=True))
    source = write_jsonl(tmp_path / "changes.jsonl", CHANGELOG)
    out = tmp_path / "out.jsonl"
    result = run_cdc(["materialize", source, "--key", "id", "--on-flink", url, "-o", out])
    assert result.returncode == 3
    err = result.stderr.decode()
    assert "Received NULL op code. Every changelog row must carry an operation code." in err
    assert "Traceback" not in err and "\tat org.apache" not in err
    assert not out.exists()
    assert holder[0].closed_sessions == ["S1"]


def test_no_gateway_is_a_usage_error(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "changes.jsonl", CHANGELOG)
    result = run_cdc(["materialize", source, "--key", "id", "--on-flink", "http://127.0.0.1:9"])
    assert result.returncode == 2
    assert "no Flink SQL Gateway answers at http://127.0.0.1:9" in result.stderr.decode()


def test_a_local_file_is_refused_for_a_remote_cluster(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "changes.jsonl", CHANGELOG)
    result = run_cdc(["materialize", source, "--key", "id", "--on-flink", "http://192.0.2.7:8083"])
    assert result.returncode == 2
    err = result.stderr.decode()
    assert "is a file of this machine" in err and "file:///" in err


def test_stdin_and_object_stores_are_refused() -> None:
    result = run_cdc(["materialize", "--key", "id", "--on-flink", "http://127.0.0.1:9"], stdin=b'{"op":"+I","id":1}\n')
    assert result.returncode == 2 and "needs an input file" in result.stderr.decode()
    result = run_cdc(["materialize", "s3://bucket/changes.jsonl", "--key", "id", "--on-flink", "http://127.0.0.1:9"])
    assert result.returncode == 2 and "cdc reads local files only" in result.stderr.decode()


def test_print_sql_and_on_flink_together_are_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "changes.jsonl", CHANGELOG)
    result = run_cdc(["materialize", source, "--print-sql", "--on-flink", "http://127.0.0.1:9"])
    assert result.returncode == 2 and "give one of them" in result.stderr.decode()


def test_a_file_uri_names_a_shared_path(gateway: Any, tmp_path: Path) -> None:
    """file:///PATH: a file system the cluster shares; the script reads that path."""
    _, url, holder = gateway
    fake = Fake(COLUMNS, FLINK_ROWS)
    holder.append(fake)
    source = write_jsonl(tmp_path / "changes.jsonl", CHANGELOG)
    result = run_cdc(["materialize", f"file://{source}", "--key", "id", "--on-flink", url])
    assert result.returncode == 0, result.stderr.decode()
    table = next(s for s in fake.statements if s.startswith("CREATE TABLE `cdc_input`"))
    assert f"'path' = 'file://{source}'" in table


def test_statements_split_as_the_sql_client_splits_them() -> None:
    script = "-- a comment; with a semicolon\nSET 'a' = 'x;y';\nSELECT `c;d`, 'it''s' FROM t;\n\n-- end\n"
    assert split_statements(script) == ["SET 'a' = 'x;y'", "SELECT `c;d`, 'it''s' FROM t"]


def test_flinks_message_is_the_last_cause() -> None:
    body = json.dumps({"errors": ["Internal server error.", STACK]})
    assert flink_message(body) == (
        "org.apache.flink.table.api.TableRuntimeException: Received NULL op code. Every changelog row must carry "
        "an operation code."
    )


def test_the_urls_query_is_session_settings(gateway: Any, tmp_path: Path) -> None:
    _, url, holder = gateway
    fake = Fake(COLUMNS, FLINK_ROWS)
    holder.append(fake)
    source = write_jsonl(tmp_path / "changes.jsonl", CHANGELOG)
    result = run_cdc(["materialize", source, "--on-flink", f"{url}?parallelism.default=4"])
    assert result.returncode == 0, result.stderr.decode()
    sets = [s for s in fake.statements if s.startswith("SET ")]
    assert sets[0] == "SET 'execution.runtime-mode' = 'streaming'"
    assert sets[-1] == "SET 'parallelism.default' = '4'"
    assert not fake.statements[len(sets)].startswith("SET ")  # all SETs before the first table


def test_options_only_cdc_honours_are_refused_not_ignored(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "changes.jsonl", CHANGELOG)
    url = "http://127.0.0.1:9"
    rejects = run_cdc(["materialize", source, "--on-flink", url, "--rejects", tmp_path / "bad.jsonl"])
    assert rejects.returncode == 2 and "--rejects" in rejects.stderr.decode()
    expect = run_cdc(["materialize", source, "--key", "id", "--on-flink", url, "--expect", source])
    assert expect.returncode == 2 and "--expect" in expect.stderr.decode()


def test_sort_orders_the_table_by_key(gateway: Any, tmp_path: Path) -> None:
    _, url, holder = gateway
    rows = [("INSERT", [3, "c"]), ("INSERT", [1, "a"]), ("INSERT", [2, "b"])]
    holder.append(Fake([("id", "BIGINT"), ("v", "VARCHAR")], rows))
    source = write_jsonl(tmp_path / "in.jsonl", [{"op": "+I", "id": i, "v": v} for i, v in ((3, "c"), (1, "a"))])
    result = run_cdc(["materialize", source, "--key", "id", "--sort", "-f", "csv", "--on-flink", url])
    assert result.stdout.decode().splitlines() == ["id,v", "1,a", "2,b", "3,c"]


def test_the_python_api_runs_on_flink_too(gateway: Any, tmp_path: Path) -> None:
    from cdc.engine import api

    _, url, holder = gateway
    holder.append(Fake(COLUMNS, FLINK_ROWS))
    source = write_jsonl(tmp_path / "changes.jsonl", CHANGELOG)
    result = api.materialize(source, key="id", on_flink=url)
    assert result.rows == api.materialize(source, key="id").rows
    assert result.flink_job == "j1" and result.sql is None
