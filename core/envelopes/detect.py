"""Which CDC envelope is this record? (Debezium, Canal, Maxwell, Oracle GoldenGate)."""

from __future__ import annotations

from typing import Any

from cdc.core.errors import InputError, UsageError

ENVELOPES = ("debezium", "canal", "maxwell", "ogg")

LABELS = {"debezium": "Debezium", "canal": "Canal", "maxwell": "Maxwell", "ogg": "Oracle GoldenGate"}

# What gives each one away, for messages and hints.
SIGNS = {
    "debezium": "'op' beside 'before'/'after'",
    "canal": "a 'data' array beside 'type'",
    "maxwell": "a 'data' object beside 'type'",
    "ogg": "'op_type' beside 'before'/'after'",
}

# Canal's EventType names (com.alibaba.otter.canal.protocol.CanalEntry.EventType) and Maxwell's
# message types (its data format and bootstrapping docs): upper case vs lower case with dashes.
CANAL_TYPES = frozenset(
    [
        "INSERT",
        "UPDATE",
        "DELETE",
        "CREATE",
        "ALTER",
        "ERASE",
        "QUERY",
        "TRUNCATE",
        "RENAME",
        "CINDEX",
        "DINDEX",
        "GTID",
        "XACOMMIT",
        "XAROLLBACK",
        "MHEARTBEAT",
    ]
)
MAXWELL_TYPES = frozenset(
    [
        "insert",
        "update",
        "delete",
        "bootstrap-start",
        "bootstrap-insert",
        "bootstrap-complete",
        "database-create",
        "database-alter",
        "database-drop",
        "table-create",
        "table-alter",
        "table-drop",
    ]
)


def recognise(event: Any, *, strict: bool = False) -> str | None:
    """The envelope of one parsed record: ``debezium``, ``canal``, ``maxwell``, ``ogg`` or None.

    ``strict`` asks for a nested row image (or a format-specific field) before naming an
    envelope, so that a flattened row with a ``type`` or ``op`` column is not taken for one.
    """
    if not isinstance(event, dict):
        return None
    if "op_type" in event:
        before, after = event.get("before"), event.get("after")
        if isinstance(before, dict) or isinstance(after, dict):
            return "ogg"
        if not strict and ("before" in event or "after" in event or "table" in event):
            return "ogg"
    kind = event.get("type")
    if isinstance(kind, str):
        data = event.get("data")
        if isinstance(data, list) or "isDdl" in event:
            return "canal"
        if isinstance(data, dict):
            return "maxwell"
        if kind in MAXWELL_TYPES and ("def" in event or not strict):
            return "maxwell"
        if not strict and kind in CANAL_TYPES:
            return "canal"
    payload = event.get("payload")
    if isinstance(payload, dict) and "schema" in event:
        return "debezium"
    if "op" in event:
        before, after = event.get("before"), event.get("after")
        if isinstance(before, dict) or isinstance(after, dict):
            return "debezium"
        if not strict and ("before" in event or "after" in event or "source" in event):
            return "debezium"
    elif not strict and ("__op" in event or "__deleted" in event) and "before" not in event and "after" not in event:
        return "debezium"  # a row of Debezium's ExtractNewRecordState (its __op / __deleted fields)
    return None


DEBEZIUM_OPS = frozenset("crudtm")
OGG_OPS = frozenset(("I", "U", "D", "T"))


def looks_like_envelope(row: Any) -> str | None:
    """For commands that read flattened rows: the envelope this row is, when it plainly is one —
    a nested image and the envelope's own operation code, so that a flattened row that merely
    has an ``op``/``type`` column and a nested value is not taken for one."""
    found = recognise(row, strict=True)
    if found == "debezium":
        payload = row.get("payload") if "schema" in row else row
        op = payload.get("op") if isinstance(payload, dict) else None
        return found if isinstance(op, str) and op in DEBEZIUM_OPS else None
    if found == "ogg":
        return found if row.get("op_type") in OGG_OPS else None
    if found == "canal":
        return found if row.get("type") in CANAL_TYPES else None
    if found == "maxwell":
        return found if row.get("type") in MAXWELL_TYPES else None
    return None


def envelope_message(name: str) -> str:
    """What to tell a user who fed an envelope to a command that reads flattened rows."""
    label = LABELS.get(name, name)
    return (
        f"this is a {label} message ({SIGNS.get(name, 'an envelope')}), not a flattened row: "
        f"use `cdc decode --envelope {name}`"
    )


def choose_envelope(requested: str, first: object) -> str:
    """The envelope to decode with: ``requested``, or for ``auto`` the one the first record is.

    ``first`` is the first parsed record that is not a tombstone. Fails with a hint naming
    ``--envelope`` when ``auto`` cannot tell.
    """
    if requested != "auto":
        if requested not in ENVELOPES:
            raise UsageError(f"--envelope: {requested!r}; choose auto or one of {', '.join(ENVELOPES)}")
        return requested
    found = recognise(first)
    if found is None:
        raise InputError(
            "cannot tell which CDC envelope this record is (no 'op', 'type' with 'data', or 'op_type' field)",
            hint="name it: --envelope debezium|canal|maxwell|ogg",
        )
    return found


def check_envelope(expected: str, event: object) -> None:
    """Fail when ``event`` plainly is another envelope than ``expected`` (a mixed input).

    The decoders do this themselves on any record they cannot read; call this only where a
    record could be read by both (e.g. to vet every record of ``--envelope auto`` cheaply)."""
    found = recognise(event, strict=True)
    if found is not None and found != expected:
        raise InputError(
            f"this record is a {LABELS[found]} message, but the stream is {LABELS[expected]} "
            "(recognised from its first record): mixed envelopes in one input",
            hint=f"decode each envelope on its own: --envelope {found} for these records",
        )
