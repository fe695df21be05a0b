"""The C kernel (``_kernel.c``) behind the JSON-lines paths, and its Python side.

Each kernel call converts lines of a chunk until the first line it declines, which the caller
converts the general way (the row path's steps) before calling again past it. The extension is
optional: where it was not built (no C compiler at install), ``available()`` is False and the
planner never picks a kernel path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from cdc.core.kinds import KIND_BY_TEXT, RowKind
from cdc.core.specs import DecodeSpec, FromChangelogSpec, ToChangelogSpec
from cdc.core.stats import Counts
from cdc.engine.commands import Command, implements, lookup, set_fields

_kernel: Any
try:
    from cdc.engine.paths.native import _kernel
except ImportError:  # built without a C compiler
    _kernel = None

KINDS = ("+I", "-U", "+U", "-D")
Loads = Callable[[bytes], Any]


def count_lines(chunk: bytes) -> int:
    """The newlines in ``chunk``: the kernel counts 8 bytes at a time (4x ``bytes.count``)."""
    return int(_kernel.count_lines(chunk)) if _kernel is not None else chunk.count(b"\n")


def available() -> bool:
    return _kernel is not None


ENVELOPE_KERNELS = ("canal", "maxwell", "ogg")


def _from_changelog(spec: FromChangelogSpec, counts: Counts, decoder: Any) -> _Kernel | None:
    return from_changelog_kernel(spec.op_column, spec.kind_column, spec.mapping, spec.drop, counts)


def _to_changelog(spec: ToChangelogSpec, counts: Counts, decoder: Any) -> _Kernel | None:
    return to_changelog_kernel(spec.kind_column, spec.op_column, spec.mapping, spec.drop, counts)


def _decode(spec: DecodeSpec, counts: Counts, decoder: Any) -> _Kernel | None:
    """``decoder`` (Debezium) decides which envelope schemas convert no value."""
    if spec.envelope in ENVELOPE_KERNELS:
        return envelope_kernel(spec, counts, decoder)
    envelopes = spec.schema_include == "auto"
    return debezium_kernel(spec.kind_column, counts, envelopes, decoder.plain_schema if decoder else None)


ESCAPES = (b"\\u", b"\\/")  # the escapes a value may be spelled with that the general way writes otherwise


def escape_at(chunk: bytes, start: int = 0) -> int:
    """Where the first ``\\u…`` or ``\\/`` escape in ``chunk`` from ``start`` is, or -1. The
    kernels copy a value's bytes as written; the general way writes the value it parsed, in
    UTF-8 (``\\u0078`` is ``x``, ``\\/`` is ``/``, a surrogate pair its character). So that the
    output is spelled one way whatever path runs, the line kernels' output is ``respelled`` and
    the state kernels hand a chunk with an escape over to the general way."""
    found = [i for i in (chunk.find(e, start) for e in ESCAPES) if i >= 0]
    return min(found) if found else -1


class _Unescaped:
    """A kernel whose output lines with an escape (``escape_at``) are written again from their
    values, as the general way writes them (numbers keep their spelling: only the strings'
    escapes change) — a few µs a line, where sending the line the general way cost 6x the run."""

    def __init__(self, inner: Any):
        self.inner = inner

    def __call__(self, chunk: bytes, start: int) -> tuple[bytes, int, int]:
        out, position, lines = self.inner(chunk, start)
        return respelled(out), position, lines

    def declined_run(self, chunk: bytes, position: int) -> int:
        run: int = self.inner.declined_run(chunk, position)
        return run

    def run_parser(self, loads: Loads) -> Loads:
        parse: Loads = self.inner.run_parser(loads)
        return parse


# an escaped backslash (kept, so that `\\u0078` stays text), `\/`, a surrogate pair, a `\uXXXX`
_ESCAPE = re.compile(rb"\\\\|\\/|\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})")


def respelled(out: bytes) -> bytes:
    r"""JSON lines with each ``\uXXXX`` and ``\/`` escape written as the general way writes its
    character (orjson: UTF-8, or its own escape for a quote, a backslash, a control character);
    everything else stays as it is, numbers too."""
    if escape_at(out) < 0:
        return out
    return _ESCAPE.sub(_respell, out)


def _respell(match: re.Match[bytes]) -> bytes:
    text = match.group()
    if text == b"\\\\":
        return text
    if text == b"\\/":
        return b"/"
    if match.group(1) is not None:
        high, low = int(match.group(1), 16), int(match.group(2), 16)
        code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
    else:
        code = int(match.group(3), 16)
        if 0xD800 <= code <= 0xDFFF:  # a lone surrogate: as written
            return text
    return orjson.dumps(chr(code))[1:-1]


def _decodes(job: Any) -> bool:
    """The envelopes the kernel reads (Debezium: not with a schema in every event)."""
    spec: DecodeSpec = job.spec
    if spec.envelope == "debezium":
        return bool(spec.schema_include != "true")
    return spec.envelope in ENVELOPE_KERNELS


def kernel_for(spec: Any, counts: Counts, decoder: Any = None) -> Any:
    """The kernel of a spec whose options it implements (else None: the general way);
    ``decoder`` (Debezium) decides which envelope schemas convert no value."""
    if _kernel is None:
        return None
    command = lookup(COMMANDS, spec)
    if command is None or any(name not in command.fields for name in set_fields(spec)):
        return None
    kernel: _Kernel | None = command.do(spec, counts, decoder)
    return None if kernel is None else _Unescaped(kernel)  # one spelling of escapes, the general way's


class _Kernel:
    """Calls one kernel function; adds its counts. Returns (output, next position, lines done):
    the next position is where the kernel stopped before a line it declines."""

    def __init__(self, function: Any, args: tuple[Any, ...], counts: Counts):
        self.function, self.args, self.counts = function, args, counts

    def __call__(self, chunk: bytes, start: int) -> tuple[bytes, int, int]:
        out, position, lines, kinds, dropped = self.function(chunk, start, *self.args)[:5]
        self._add(kinds, dropped)
        return out, position, lines

    def declined_run(self, chunk: bytes, position: int) -> int:
        """Where the run of lines the kernel declines, from ``position`` on, surely ends: here,
        the end of that one line."""
        end = chunk.find(b"\n", position)
        return len(chunk) if end < 0 else end + 1

    def run_parser(self, loads: Loads) -> Loads:
        """How the general way should parse the lines of the last declined run: as they are."""
        return loads

    def _add(self, kinds: tuple[int, ...], dropped: int) -> None:
        by_kind = self.counts.by_kind
        for kind, n in zip(KINDS, kinds, strict=True):
            if n:
                by_kind[kind] += n
        self.counts.dropped += dropped


class _DebeziumKernel(_Kernel):
    """Envelopes too: an event whose schema converts no value (no Decimal, date or time type)
    reads like a payload-only one. The kernel stops at each schema it has not seen; Python
    decides once (``plain_schema``) and the kernel goes on, or leaves such lines to the general way."""

    def __init__(self, args: tuple[Any, ...], counts: Counts, plain_schema: Callable[[Any], bool]):
        self.plain: set[bytes] = set()
        self.converting: set[bytes] = set()
        self.plain_schema = plain_schema
        self.stopped_at: bytes | None = None  # the converting schema of the line the kernel stopped at
        self._run_prefix: bytes | None = None  # of the last declined run, when it is one of envelopes
        self._scanned: tuple[bytes, int] | None = None  # (chunk, where its next placeholder form is)
        super().__init__(_kernel.debezium, (*args, self.plain), counts)

    def __call__(self, chunk: bytes, start: int) -> tuple[bytes, int, int]:
        # A line that may hold Debezium's placeholder in a form the kernel does not look for
        # (bytea base64, an int array, hstore JSON text) goes the general way: the kernel is
        # given the chunk up to it.
        scanned = self._scanned
        if scanned is None or scanned[0] is not chunk or start > scanned[1]:
            scanned = self._scanned = (chunk, _first_marker(chunk, start))
        marker = scanned[1]
        cut = len(chunk) if marker == len(chunk) else chunk.rfind(b"\n", start, marker) + 1 or start
        if cut <= start:
            self.stopped_at = None
            return b"", start, 0
        whole = chunk
        chunk = chunk[:cut] if cut < len(chunk) else chunk
        parts: list[bytes] = []
        done = 0
        while True:
            out, position, lines, kinds, dropped, schema = self.function(chunk, start, *self.args)
            if position >= len(chunk) and chunk is not whole:
                schema = None  # the end of the part given, not a schema's stop
            self._add(kinds, dropped)
            parts.append(out)
            done += lines
            self.stopped_at = schema if schema in self.converting else None
            if schema is None or schema in self.converting:
                return b"".join(parts), position, done
            try:
                plain = self.plain_schema(orjson.loads(schema))
            except Exception:  # noqa: BLE001 - a schema the decoder refuses: its error comes the general way
                plain = False
            (self.plain if plain else self.converting).add(schema)
            start = position

    def declined_run(self, chunk: bytes, position: int) -> int:
        """Events under a schema with values to convert go the general way; the lines after this
        one that start with the same envelope schema and a payload (so the kernel would stop at
        them too) go with it, in one batch."""
        self._run_prefix = None
        end = super().declined_run(chunk, position)
        if self.stopped_at is None:
            return end
        prefix = b'{"schema":' + self.stopped_at + b',"payload":'
        if not chunk.startswith(prefix, position):
            return end
        while end < len(chunk) and chunk.startswith(prefix, end):
            end = super().declined_run(chunk, end)
        self._run_prefix = prefix
        return end

    def run_parser(self, loads: Loads) -> Loads:
        """The run's lines share their envelope schema: it is parsed once and, of each line
        that is exactly ``{"schema":S,"payload":P}``, only P (the schema block is most of the
        bytes; parsing it for every line took most of the time). Anything else is parsed whole,
        so each event is the same as parsing its line."""
        prefix = self._run_prefix
        if prefix is None or self.stopped_at is None:
            return loads
        schema = loads(self.stopped_at)  # one object for the run: the decoder caches by it
        cut = len(prefix)

        def parse(line: bytes) -> Any:
            if line.startswith(prefix):
                body = line[cut:].rstrip(b"\r")
                if body.endswith(b"}"):
                    try:
                        return {"schema": schema, "payload": loads(body[:-1])}
                    except ValueError:  # not one payload value: the whole line decides
                        pass
            return loads(line)

        return parse


_PLACEHOLDER: Any = None


def _placeholder_markers() -> tuple[bytes, ...]:
    global _PLACEHOLDER
    if _PLACEHOLDER is None:
        from cdc.core.envelopes.unavailable import Placeholder

        _PLACEHOLDER = Placeholder().markers  # the kernel checks the text as an image's value, not nested
    return _PLACEHOLDER  # type: ignore[no-any-return]


def _first_marker(chunk: bytes, start: int) -> int:
    """Where the first byte of any placeholder form is, from ``start`` on (``len(chunk)``: none)."""
    first = len(chunk)
    for marker in _placeholder_markers():
        at = chunk.find(marker, start, first)
        if at >= 0:
            first = at
    return first


def _first_member(name: str, value: str) -> bytes:
    return orjson.dumps(name) + b":" + orjson.dumps(value)


def column_kernel(
    column: str, name: str, codes: Mapping[str, tuple[RowKind, str] | None], counts: Counts
) -> _Kernel | None:
    """``codes``: each accepted value → (its kind, the value written in ``name``), or None: dropped."""
    if _kernel is None:
        return None
    table = tuple(
        (
            orjson.dumps(code),
            KINDS.index(entry[0].value) if entry else 0,
            _first_member(name, entry[1]) if entry else None,
        )
        for code, entry in codes.items()
    )
    name_key = orjson.dumps(name) if name != column else b""
    return _Kernel(_kernel.columns, (orjson.dumps(column), name_key, table), counts)


def from_changelog_kernel(
    op_column: str, kind_column: str, mapping: Mapping[str, RowKind], drop: frozenset[RowKind], counts: Counts
) -> _Kernel | None:
    codes = {code: None if kind in drop else (kind, kind.value) for code, kind in mapping.items()}
    return column_kernel(op_column, kind_column, codes, counts)


def to_changelog_kernel(
    kind_column: str, op_column: str, mapping: Mapping[RowKind, str], drop: frozenset[RowKind], counts: Counts
) -> _Kernel | None:
    codes: dict[str, tuple[RowKind, str] | None] = {}
    for text, kind in KIND_BY_TEXT.items():
        code = None if kind in drop else mapping.get(kind)
        codes[text] = None if code is None else (kind, code)
    return column_kernel(kind_column, op_column, codes, counts)


def debezium_kernel(
    kind_column: str, counts: Counts, envelopes: bool = False, plain_schema: Callable[[Any], bool] | None = None
) -> _Kernel | None:
    """``envelopes``: read {"schema", "payload"} events (--schema-include auto); a schema counts as
    plain when ``plain_schema`` says so (no value of it needs converting)."""
    if _kernel is None:
        return None
    firsts = tuple(_first_member(kind_column, kind) for kind in KINDS)
    args = (orjson.dumps(kind_column), firsts, envelopes)
    return _DebeziumKernel(args, counts, plain_schema or (lambda schema: False))


class _OggKernel(_Kernel):
    """OGG's decoder remembers each table's last insert (its columns: a before image must have
    them all). The kernel is given those it knows and reports those it reads, so that the general
    way, which takes the lines it declines, goes on from the same knowledge."""

    def __init__(self, args: tuple[Any, ...], counts: Counts, inner: Any):
        super().__init__(_kernel.ogg, args, counts)
        self.shapes: dict[Any, Any] = inner._shapes

    def __call__(self, chunk: bytes, start: int) -> tuple[bytes, int, int]:
        from cdc.formats.jsonl import loads

        known = [(table, after) for table, after in self.shapes.items() if table is None or type(table) is str]
        complete = len(known) == len(self.shapes) and len(known) <= 16
        given = tuple((orjson.dumps(table), tuple(map(orjson.dumps, after))) for table, after in known[:16])
        out, position, lines, kinds, dropped, learnt = self.function(chunk, start, *self.args, given, complete)
        for table, after in learnt:
            self.shapes[loads(table)] = loads(after)
        self._add(kinds, dropped)
        return out, position, lines


class _CanalKernel(_Kernel):
    """Canal's decoder caches its converters by the sqlType dict, and dicts whose codes are equal
    numbers (4 and 4.0) are one key: the first decides. The kernel reports the sqlTypes of the
    lines it takes, which the decoder is shown in order, so that its cache is the row path's when
    it takes a line; once it holds a sqlType written with a float code, every line is its own."""

    def __init__(self, args: tuple[Any, ...], counts: Counts, inner: Any):
        super().__init__(_kernel.canal, args, counts)
        self.inner = inner
        self.off = False

    def __call__(self, chunk: bytes, start: int) -> tuple[bytes, int, int]:
        from cdc.formats.jsonl import loads

        if self.off or any(type(code) is float for key in self.inner._converters for _, code in key):
            self.off = True
            return b"", start, 0
        out, position, lines, kinds, dropped, types = self.function(chunk, start, *self.args)
        for text in types:
            self.inner._convert_of({"sqlType": loads(text)})
        self._add(kinds, dropped)
        return out, position, lines


def envelope_kernel(spec: DecodeSpec, counts: Counts, decoder: Any) -> _Kernel | None:
    """Canal, Maxwell and OGG events as their decoder (core.envelopes, stateless: no key, filter or
    metadata) reads them; ``decoder`` is the engine's ``CoreDecoder``."""
    if _kernel is None:
        return None
    firsts = tuple(_first_member(spec.kind_column, kind) for kind in KINDS)
    kind_key = orjson.dumps(spec.kind_column)
    if spec.envelope == "canal":
        return _CanalKernel((kind_key, firsts, spec.raw_values), counts, decoder.inner)
    if spec.envelope == "maxwell":
        return _Kernel(_kernel.maxwell, (kind_key, firsts, spec.bootstrap == "insert"), counts)
    return _OggKernel((kind_key, firsts), counts, decoder.inner)


# The kernel-lines path: the lines path with the kernel converting the lines it is sure of, for
# the options the kernel implements (the others: the lines path, without it); the lines path's
# conditions hold too (``kernel_lines.can_run``).
COMMANDS: dict[type, Command] = {
    FromChangelogSpec: implements(_from_changelog, "op_column", "mapping", "kind_column", "drop"),
    ToChangelogSpec: implements(_to_changelog, "mapping", "op_column", "kind_column", "drop"),
    DecodeSpec: implements(
        _decode,
        "envelope",
        "kind_column",
        "schema_include",
        "raw_values",
        "on_truncate",
        "bootstrap",
        "policy",  # a line that may make a finding (a placeholder form, no op) goes the general way
        can_run=_decodes,
    ),
}
