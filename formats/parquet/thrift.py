"""Thrift's compact protocol, just enough to read a Parquet footer and write it back.

A struct decodes to a list of ``(field id, type, value)`` in wire order, unknown fields
included, so ``write_struct(read_struct(b))`` gives back ``b`` byte for byte: only the fields
a caller changes change. Lists and sets are ``(element type, items)``, maps
``(key type, value type, [(key, value)])``; doubles stay 8 raw bytes, and a bool inside a
container stays the byte it was written as.
"""

from __future__ import annotations

from typing import Any

TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)

Field = tuple[int, int, Any]  # (field id, compact type, value)
Struct = list[Field]


class ThriftError(ValueError):
    """The bytes are not the compact-protocol struct they should be."""


def read_struct(data: bytes, pos: int = 0) -> tuple[Struct, int]:
    """The struct that starts at ``pos``, and the position just after it."""
    fields: Struct = []
    last = 0
    try:
        while (header := data[pos]) != 0:
            pos += 1
            kind, delta = header & 0x0F, header >> 4
            if delta:
                last += delta
            else:
                raw, pos = _varint(data, pos)
                last = _unzigzag(raw)
            if kind in (TRUE, FALSE):
                fields.append((last, kind, kind == TRUE))
            else:
                value, pos = _read(data, pos, kind)
                fields.append((last, kind, value))
    except IndexError as exc:
        raise ThriftError("struct runs past the end of the data") from exc
    return fields, pos + 1


def write_struct(fields: Struct, out: bytearray | None = None) -> bytearray:
    out = bytearray() if out is None else out
    last = 0
    for fid, kind, value in fields:
        if kind in (TRUE, FALSE):
            kind = TRUE if value else FALSE
        delta = fid - last
        if 0 < delta <= 15:
            out.append(delta << 4 | kind)
        else:
            out.append(kind)
            _write_varint(out, _zigzag(fid))
        last = fid
        if kind not in (TRUE, FALSE):
            _write(out, kind, value)
    out.append(0)
    return out


def field(fields: Struct, fid: int, default: Any = None) -> Any:
    for f, _, value in fields:
        if f == fid:
            return value
    return default


def with_field(fields: Struct, fid: int, kind: int, value: Any) -> Struct:
    """A copy of ``fields`` with field ``fid`` set (kept in field-id order when added)."""
    out = [(f, k, v) for f, k, v in fields if f != fid]
    at = next((i for i, (f, _, _) in enumerate(out) if f > fid), len(out))
    out.insert(at, (fid, kind, value))
    return out


def _read(data: bytes, pos: int, kind: int) -> tuple[Any, int]:
    if kind == BYTE:
        return data[pos], pos + 1
    if kind in (I16, I32, I64):
        raw, pos = _varint(data, pos)
        return _unzigzag(raw), pos
    if kind == DOUBLE:
        return data[pos : pos + 8], pos + 8
    if kind == BINARY:
        size, pos = _varint(data, pos)
        return data[pos : pos + size], pos + size
    if kind in (LIST, SET):
        header = data[pos]
        pos += 1
        size, element = header >> 4, header & 0x0F
        if size == 15:
            size, pos = _varint(data, pos)
        items = []
        for _ in range(size):
            if element in (TRUE, FALSE):
                item, pos = data[pos], pos + 1
            else:
                item, pos = _read(data, pos, element)
            items.append(item)
        return (element, items), pos
    if kind == MAP:
        size, pos = _varint(data, pos)
        if size == 0:
            return (0, 0, []), pos
        types = data[pos]
        pos += 1
        key_kind, value_kind = types >> 4, types & 0x0F
        pairs = []
        for _ in range(size):
            key, pos = _read(data, pos, key_kind) if key_kind not in (TRUE, FALSE) else (data[pos], pos + 1)
            value, pos = _read(data, pos, value_kind) if value_kind not in (TRUE, FALSE) else (data[pos], pos + 1)
            pairs.append((key, value))
        return (key_kind, value_kind, pairs), pos
    if kind == STRUCT:
        return read_struct(data, pos)
    raise ThriftError(f"unknown compact type {kind}")


def _write(out: bytearray, kind: int, value: Any) -> None:
    if kind == BYTE or kind in (TRUE, FALSE):
        out.append(value)
    elif kind in (I16, I32, I64):
        _write_varint(out, _zigzag(value))
    elif kind == DOUBLE:
        out += value
    elif kind == BINARY:
        _write_varint(out, len(value))
        out += value
    elif kind in (LIST, SET):
        element, items = value
        if len(items) < 15:
            out.append(len(items) << 4 | element)
        else:
            out.append(0xF0 | element)
            _write_varint(out, len(items))
        for item in items:
            _write(out, element, item)
    elif kind == MAP:
        key_kind, value_kind, pairs = value
        _write_varint(out, len(pairs))
        if pairs:
            out.append(key_kind << 4 | value_kind)
            for key, item in pairs:
                _write(out, key_kind, key)
                _write(out, value_kind, item)
    elif kind == STRUCT:
        write_struct(value, out)
    else:
        raise ThriftError(f"unknown compact type {kind}")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _write_varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


def _zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def _unzigzag(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)
