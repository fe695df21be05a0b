"""A stand-in for a Confluent Schema Registry, for the Avro check (``avro_check.py``): the REST calls
Flink's ``debezium-avro-confluent`` (Confluent's schema-registry client) and cdc make, answered on
127.0.0.1 from memory. None of the real registries installs from the package registries this project
reaches (Confluent's is not on Maven Central; Apicurio Registry's server needs artifacts that are not
there; Karapace is not on PyPI): this is what stands in for one, and says so.

Calls: ``GET /schemas/ids/{id}``, ``POST /subjects/{subject}/versions`` (register: the same schema text
gets the same id), ``POST /subjects/{subject}`` (look up), ``GET /subjects``, ``GET
/subjects/{subject}/versions[/latest]``.
"""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit


class Registry:
    def __init__(self, preload: Path | None = None):
        self.schemas: dict[int, str] = {}
        self.subjects: dict[str, list[int]] = {}
        self.calls: list[str] = []
        if preload is not None:
            for p in sorted(preload.glob("*.avsc"), key=lambda p: int(p.stem)):
                self.schemas[int(p.stem)] = p.read_text()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def start(self) -> Registry:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def register(self, subject: str, schema: str) -> int:
        canonical = json.dumps(json.loads(schema), sort_keys=True)
        same = [i for i, text in self.schemas.items() if json.dumps(json.loads(text), sort_keys=True) == canonical]
        sid = same[0] if same else max(self.schemas, default=0) + 1
        self.schemas.setdefault(sid, schema)
        versions = self.subjects.setdefault(subject, [])
        if sid not in versions:
            versions.append(sid)
        return sid

    def _handler(self) -> Any:
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _parts(self) -> list[str]:
                return [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                registry.calls.append("GET " + self.path)
                parts = self._parts()
                if parts[:2] == ["schemas", "ids"] and len(parts) >= 3 and parts[2].isdigit():
                    sid = int(parts[2])
                    if sid in registry.schemas:
                        return self._send(200, {"schema": registry.schemas[sid]})
                    return self._send(404, {"error_code": 40403, "message": f"Schema {sid} not found"})
                if parts == ["subjects"]:
                    return self._send(200, sorted(registry.subjects))
                if parts[:1] == ["subjects"] and len(parts) >= 3 and parts[2] == "versions":
                    versions = registry.subjects.get(parts[1])
                    if not versions:
                        return self._send(404, {"error_code": 40401, "message": "Subject not found"})
                    if len(parts) == 3:
                        return self._send(200, list(range(1, len(versions) + 1)))
                    n = len(versions) if parts[3] == "latest" else int(parts[3])
                    sid = versions[n - 1]
                    body = {"subject": parts[1], "version": n, "id": sid, "schema": registry.schemas[sid]}
                    return self._send(200, body)
                return self._send(404, {"error_code": 404, "message": "not found"})

            def do_POST(self) -> None:  # noqa: N802
                registry.calls.append("POST " + self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                parts = self._parts()
                if parts[:1] == ["subjects"] and len(parts) >= 2:
                    sid = registry.register(parts[1], body["schema"])
                    if len(parts) == 2:  # look up: the schema as registered under the subject
                        version = registry.subjects[parts[1]].index(sid) + 1
                        return self._send(
                            200, {"subject": parts[1], "id": sid, "version": version, "schema": body["schema"]}
                        )
                    return self._send(200, {"id": sid})
                return self._send(404, {"error_code": 404, "message": "not found"})

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
