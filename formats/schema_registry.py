"""Where the writer schemas of Confluent wire-format messages come from: a schema registry's REST
API (``GET /schemas/ids/{id}``, each id asked once per run) or a folder of ``ID.avsc`` files
(offline, CI). Standard library only (urllib).

Credentials come from ``--schema-registry-auth USER:PASSWORD``, else ``CDC_SCHEMA_REGISTRY_AUTH``,
else the URL's own ``user:password@``; they are sent as HTTP basic auth and never shown: every
message names the registry by its URL without them.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from cdc.core.errors import InputError, UsageError

AUTH_ENV = "CDC_SCHEMA_REGISTRY_AUTH"
TIMEOUT_SECONDS = 10.0
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass(frozen=True)
class SchemaSources:
    """The run's schema sources as given (``--schema-registry``, ``--schema-registry-auth``,
    ``--schemas``); ``open()`` makes the client that asks them."""

    registry: str | None = None
    auth: str | None = None
    folder: str | None = None

    def __post_init__(self) -> None:
        if self.registry is not None and urlsplit(self.registry).scheme not in ("http", "https"):
            raise UsageError(f"--schema-registry: expected an http(s):// URL, got {_shown(self.registry)!r}")
        if self.auth is not None and ":" not in self.auth:
            raise UsageError("--schema-registry-auth: expected USER:PASSWORD")
        if self.folder is not None and not Path(self.folder).is_dir():
            raise UsageError(f"--schemas: {self.folder!r} is not a folder (of ID.avsc files)")

    def __bool__(self) -> bool:
        return bool(self.registry or self.folder)

    def open(self) -> Schemas:
        return Schemas(self)


@dataclass
class Schemas:
    """Writer schemas by id (JSON text), cached for the run."""

    sources: SchemaSources
    cache: dict[int, str] = field(default_factory=dict)

    def describe(self) -> str:
        where = []
        if self.sources.folder:
            where.append(f"--schemas {self.sources.folder}")
        if self.sources.registry:
            where.append(f"the schema registry at {_shown(self.sources.registry)}")
        return " and ".join(where) or "no schema source"

    def text(self, schema_id: int) -> str:
        """The Avro schema registered under ``schema_id``; an InputError naming the id when no
        source has it (or the registry does not answer)."""
        found = self.cache.get(schema_id)
        if found is not None:
            return found
        if not self.sources:
            raise InputError(
                f"a Confluent wire-format message of schema id {schema_id}: its schema is in a registry",
                hint="give --schema-registry URL, or --schemas DIR with the schema as ID.avsc",
            )
        text = self._from_folder(schema_id) if self.sources.folder else None
        if text is None and self.sources.registry:
            text = self._from_registry(schema_id)
        if text is None:
            raise InputError(f"schema id {schema_id} is not in {self.describe()}{self._listing()}")
        self.cache[schema_id] = text
        return text

    def _listing(self) -> str:
        if not self.sources.folder:
            return ""
        ids = sorted(int(p.stem) for p in Path(self.sources.folder).glob("*.avsc") if p.stem.isdigit())
        return (
            f" (it holds {', '.join(map(str, ids[:10]))}{' …' if len(ids) > 10 else ''})" if ids else " (it is empty)"
        )

    def _from_folder(self, schema_id: int) -> str | None:
        path = Path(self.sources.folder or ".") / f"{schema_id}.avsc"
        if not path.is_file():
            return None
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"schema id {schema_id}: cannot read {path}: {exc}") from None

    def _from_registry(self, schema_id: int) -> str | None:
        body = self._request(f"/schemas/ids/{schema_id}", f"schema id {schema_id}", missing_ok=True)
        if body is None:
            return None
        kind = body.get("schemaType", "AVRO")
        if kind != "AVRO":
            raise InputError(f"schema id {schema_id} is a {kind} schema, not Avro")
        schema = body.get("schema")
        if not isinstance(schema, str):
            raise InputError(f"schema id {schema_id}: the registry's answer has no schema")
        return schema

    def register(self, subject: str, schema: str) -> int:
        """``POST /subjects/{subject}/versions``: the id the registry gives ``schema``."""
        from urllib.parse import quote

        body = self._request(
            f"/subjects/{quote(subject, safe='')}/versions", f"subject {subject!r}", {"schema": schema}
        )
        schema_id = body.get("id") if body is not None else None
        if not isinstance(schema_id, int):
            raise InputError(f"subject {subject!r}: the registry's answer has no id")
        self.cache[schema_id] = schema
        return schema_id

    def _request(self, path: str, what: str, payload: Any = None, missing_ok: bool = False) -> Any:
        import urllib.error
        import urllib.request

        base, user = _split_auth(self.sources.registry or "")
        auth = self.sources.auth or os.environ.get(AUTH_ENV) or user
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(base.rstrip("/") + path, data=data, method="POST" if data else "GET")
        request.add_header("Accept", f"{CONTENT_TYPE}, application/json")
        if data is not None:
            request.add_header("Content-Type", CONTENT_TYPE)
        if auth:
            request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
        shown = _shown(self.sources.registry or "")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:  # noqa: S310 - the user's URL
                return json.loads(answer.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            if exc.code == 404 and missing_ok:
                return None
            detail = _error_text(exc)
            if exc.code in (401, 403):
                raise InputError(
                    f"{what}: the schema registry at {shown} refused the request (HTTP {exc.code}{detail})",
                    hint="give its credentials with --schema-registry-auth USER:PASSWORD (or " + AUTH_ENV + ")",
                ) from None
            raise InputError(f"{what}: the schema registry at {shown} answered HTTP {exc.code}{detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise InputError(f"{what}: the schema registry at {shown} does not answer ({reason})") from None
        except ValueError as exc:
            raise InputError(f"{what}: the schema registry at {shown} answered something not JSON ({exc})") from None


def _error_text(exc: Any) -> str:
    try:
        message = json.loads(exc.read().decode("utf-8")).get("message")
    except Exception:  # noqa: BLE001 - the status alone says enough
        return ""
    return f": {message}" if message else ""


def _split_auth(url: str) -> tuple[str, str | None]:
    """The URL without ``user:password@``, and those credentials."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    from urllib.parse import unquote

    user = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), user


def _shown(url: str) -> str:
    """The URL as messages show it: never with its credentials."""
    return _split_auth(url)[0]
