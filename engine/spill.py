"""Past ``--memory-limit``: the changes partitioned by key into temporary files, each partition
run in memory, the tables put back together in first-insertion order.

A keyed table's rows depend only on the changes of their own key, so the changes can be split
by a hash of the key into K files (each key's changes keep their order) and each file
materialized alone, on whichever path takes it, within the limit. What the row path would say
is kept: every line is read once here as that path reads it — a blank line skipped, a bad line,
kind or key reported at its own place (``FILE:LINE`` of the input) — and the partitions' runs
report their findings and rejects at the input's places too (each partition keeps, per line, the
input line it came from). Rows come out in first-insertion order of their key, as in memory: a
key's place is the line that inserted it (the first ``+I``/``+U`` while it was not in the table,
a ``-U`` keeping the slot), worked out per partition from the kinds and key hashes kept beside
its lines, and the partitions' tables are merged by that place.

When the run spills is decided before it starts: named files by their size (a compressed file
counted as four times its size); stdin by reading ahead up to a quarter of the limit — if it
ends there the run goes on in memory from what was read (only when ``--memory-limit`` is given:
else stdin is read as it comes, in memory). Progress lines on stderr say how many
changes and keys are held and spilled. The temporary folder (``--temp-dir``, else the system's)
goes when the run ends, however it ends.

Spilling takes ``materialize --key`` over JSON lines (without ``--sort``, ``--dedup``,
``--as-of``) written to a file or stdout; a job it cannot take runs in memory, with a warning
when its input is past the limit.
"""

from __future__ import annotations

import heapq
import io
import os
import sys
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from cdc.core.convert import read_kind
from cdc.core.errors import CdcError, InputError, Location, UsageError
from cdc.core.specs import MaterializeSpec
from cdc.core.state import MAX_EXAMPLES, KeyedState
from cdc.engine.job import Job, Progress, Result
from cdc.formats.streams import STDIO, compression_of

SHARE = 0.5  # the default limit: this share of the machine's memory
STATE_PER_INPUT_BYTE = 1.5  # memory a keyed table takes per byte of JSON-lines input, at most
MAX_PARTS = 512
HOLD_BYTES = 32 << 20  # the partitions' lines written once this many are waiting
KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "G": 1 << 30, "GB": 1 << 30,
         "T": 1 << 40, "TB": 1 << 40}  # fmt: skip


def ram() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def default_limit() -> int:
    return int(ram() * SHARE)


def parse_size(text: str | int) -> int:
    """``64KB``, ``1.5GB``, ``512M``, ``40%`` (of the machine's memory), or bytes."""
    if isinstance(text, int):
        return text
    value = text.strip().upper().replace(" ", "")
    try:
        if value.endswith("%"):
            share = float(value[:-1]) / 100
            if not 0 < share <= 1:
                raise ValueError
            return int(ram() * share)
        digits = value.rstrip("KMGTB")
        size = float(digits) * UNITS[value[len(digits) :]]
    except (ValueError, KeyError):
        raise UsageError(f"--memory-limit: {text!r} is not a size (e.g. 512MB, 8GB, 50%)") from None
    if size < 1:
        raise UsageError(f"--memory-limit: {text!r} is too small")
    return int(size)


def _materialize(spec: MaterializeSpec) -> bool:
    return bool(spec.key) and not (spec.dedup or spec.sort) and spec.as_of is None


SPILLS: dict[type, Callable[[Any], bool]] = {
    MaterializeSpec: _materialize
}  # the commands a spill runs, and which of their jobs


def takes(job: Job) -> bool:
    """The jobs a spill can run (see the module)."""
    from cdc.engine.commands import lookup

    spec_takes = lookup(SPILLS, job.spec)
    return (
        spec_takes is not None
        and spec_takes(job.spec)
        and job.rows is None
        and job.writes_bytes
        and bool(job.formats)
        and all(f == "jsonl" for f in job.formats)
    )


def estimate(job: Job) -> int | None:
    """The memory the job's state may take, from its inputs' sizes (None: stdin, unknown)."""
    total = 0
    for path in job.inputs:
        if path == STDIO:
            return None
        size = os.stat(path).st_size
        total += size * 4 if compression_of(path) or _magic_compressed(path) else size
    return int(total * STATE_PER_INPUT_BYTE)


def _magic_compressed(path: str) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(4)
    return head[:2] == b"\x1f\x8b" or head == b"\x28\xb5\x2f\xfd"


def run_limited(job: Job, progress: Progress | None, in_memory: Callable[[Job], Result]) -> Result:
    """Run ``job`` within ``job.memory_limit``: in memory (``in_memory(job)``) when it fits,
    else spilled."""
    limit = job.memory_limit
    assert limit is not None
    if job.rows is not None or not job.formats or any(f not in ("jsonl",) for f in job.formats):
        return in_memory(job)  # tables: Arrow state, within the limit at the sizes it reads
    need = estimate(job)
    if not takes(job):
        if need is not None and need > limit:
            _say(f"warning: the input may need more than --memory-limit ({_size(limit)}); "
                 "this job cannot spill (materialize --key over JSON lines can), so it runs in memory")  # fmt: skip
        return in_memory(job)
    if need is not None:
        if need <= limit:
            return in_memory(job)
        return Spill(job, progress, parts=_parts(need, limit)).run(None)
    if job.inputs != (STDIO,) or not job.stdin_read_ahead:
        return in_memory(job)  # stdin among files, or no limit given: read as it comes, in memory
    return _stdin(job, progress, in_memory)


def _parts(need: int, limit: int) -> int:
    return max(2, min(MAX_PARTS, -(-need * 5 // (limit * 4))))  # each partition at most 80% of the limit


def _stdin(job: Job, progress: Progress | None, in_memory: Callable[[Job], Result]) -> Result:
    """stdin read ahead up to a quarter of the limit: in memory from there if it ended, else spilled."""
    from cdc.engine.inputs import line_chunks

    assert job.memory_limit is not None
    budget = job.memory_limit // 4
    chunks = line_chunks(job, progress.advance if progress is not None else None)
    head: list[tuple[bytes, int, str]] = []
    held = 0
    for item in chunks:
        head.append(item)
        held += len(item[0])
        if held * STATE_PER_INPUT_BYTE > budget:
            break
    else:
        saved = sys.stdin
        sys.stdin = io.TextIOWrapper(io.BufferedReader(_Held([c for c, _, _ in head])))
        head.clear()
        try:
            return in_memory(job)
        finally:
            sys.stdin = saved
    return Spill(job, progress, parts=64).run(_chain(head, chunks))


class _Held(io.RawIOBase):
    """Chunks read ahead, read again (each let go once read)."""

    def __init__(self, chunks: list[bytes]):
        self._chunks = chunks[::-1]
        self._at = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._chunks and self._at >= len(self._chunks[-1]):
            self._chunks.pop()
            self._at = 0
        if not self._chunks:
            return 0
        chunk = self._chunks[-1]
        n = min(len(buffer), len(chunk) - self._at)
        buffer[:n] = chunk[self._at : self._at + n]
        self._at += n
        return n


def _chain(
    head: list[tuple[bytes, int, str]], rest: Iterator[tuple[bytes, int, str]]
) -> Iterator[tuple[bytes, int, str]]:
    while head:
        yield head.pop(0)
    yield from rest


def _say(text: str) -> None:
    print(f"cdc: materialize: {text}", file=sys.stderr, flush=True)


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


class Spill:
    def __init__(self, job: Job, progress: Progress | None, parts: int):
        self.job = job
        self.progress = progress
        self.parts = parts
        self.names = [os.fspath(p) if p != STDIO else "<stdin>" for p in job.inputs]

    def run(self, chunks: Iterable[tuple[bytes, int, str]] | None) -> Result:
        from cdc.engine.session import session

        job = self.job
        with (
            tempfile.TemporaryDirectory(prefix="cdc-spill-", dir=job.temp_dir) as folder,
            session(job, self.progress) as current,
        ):
            return self._run(current, Path(folder), chunks)

    def _run(self, current: Any, folder: Path, chunks: Iterable[tuple[bytes, int, str]] | None) -> Result:
        from cdc.engine.empty import empty_result, examples_for
        from cdc.engine.inputs import line_chunks
        from cdc.engine.session import result_skips
        from cdc.engine.tables import new_table_state

        job, spec = self.job, self.job.spec
        examples = examples_for(spec, job.out_format)
        if chunks is None:
            chunks = line_chunks(job, current.on_bytes, examples=examples)
        else:
            chunks = _examples(chunks, examples)
        state = new_table_state(spec)
        assert isinstance(state, KeyedState)
        result = Result(path="spill", detail=state)
        assert job.memory_limit is not None
        _say(f"past --memory-limit ({_size(job.memory_limit)}): spilling the changes by key into {self.parts} "
             f"partitions in {folder}")  # fmt: skip
        writer = _Partitioner(folder, self.parts, spec, self.names)
        try:
            result.read = writer.feed(chunks, current, state)
        finally:
            writer.close()
        _say(f"spilled {result.read:,} changes ({_size(writer.bytes)} on disk)")
        outputs: list[tuple[Path, list[int]]] = []
        paths: set[str] = set()
        findings: list[Any] = []
        counts: dict[str, int] = {}
        for part in range(self.parts):
            sub_result, out, places = self._one(current, folder, part, writer)
            paths.add(sub_result.path)
            outputs.append((out, places))
            sub = sub_result.detail
            for kind, n in sub.by_kind.items():
                state.by_kind[kind] += n
            state.retract_messages += sub.retract_messages
            state.upsert_messages += sub.upsert_messages
            for what, n in sub.findings.counts.items():
                counts[what] = counts.get(what, 0) + n
            findings += sub.findings.examples  # located at the input's lines by ``_one``
            if self.parts <= 16 or part % max(1, self.parts // 8) == self.parts // 8 - 1:
                _say(f"partition {part + 1}/{self.parts}: {len(places):,} keys held")
        findings.sort(key=lambda f: _order(f.where, self.names))
        first = {f.what: i for i, f in reversed(list(enumerate(findings)))}  # each kind's first place
        for what in sorted(counts, key=lambda w: first.get(w, len(findings))):  # ties in that order, as in memory
            state.findings.counts[what] = counts[what]
        state.findings.examples = findings[:MAX_EXAMPLES]
        current.where = lambda: Location("<inputs>")
        empty = lambda: empty_result(spec, None, examples, state.metadata)  # noqa: E731
        result.counts.written = _write(job, current, outputs, empty)
        result.path = "spill+" + "+".join(sorted(paths))
        result_skips(current, result)
        return result

    def _one(self, current: Any, folder: Path, part: int, writer: _Partitioner) -> tuple[Result, Path, list[int]]:
        """Partition ``part`` materialized in memory into a JSON-lines file; its rows' places."""
        from cdc.core.model import OnError
        from cdc.engine.plan import choose
        from cdc.engine.session import Session

        src, out = writer.path(part), folder / f"table-{part}.jsonl"
        sub = self.job.with_(
            inputs=(os.fspath(src),), formats=("jsonl",), output=os.fspath(out), output_format="jsonl",
            out_format="jsonl", columns=(), rejects=None, memory_limit=None, temp_dir=None,
        )  # fmt: skip
        lines = writer.lines(part)

        def where(place: Location | None) -> Location | None:
            if place is None or place.source != os.fspath(src) or place.line is None:
                return place
            return _location(lines[place.line - 1], self.names)

        def reject(err: InputError, raw: str) -> None:
            err.where = where(err.where)
            current.reject(err, raw)

        session = Session(sub, None)
        session.reject = reject
        if sub.on_error == OnError.skip:
            session.rejects = None
        try:
            result = choose(sub).run(sub, session)
            if session.output is not None:
                session.output.commit()
        except CdcError as err:
            if session.output is not None:
                session.output.abort()
            err.where = where(err.where)
            raise
        if session.output is None:
            out.write_bytes(b"")
        from dataclasses import replace

        findings = result.detail.findings
        findings.examples = [replace(f, where=where(f.where)) for f in findings.examples]
        places = writer.places(part)
        if len(places) != result.counts.written:  # pragma: no cover - the state's rules and ours differ
            raise AssertionError(f"spill: partition {part} wrote {result.counts.written} rows, placed {len(places)}")
        writer.drop(part)
        return result, out, places


def _examples(chunks: Iterable[tuple[bytes, int, str]], examples: Any) -> Iterator[tuple[bytes, int, str]]:
    for item in chunks:
        if examples is not None:
            examples.add_lines(item[0])
        yield item


LINE_BITS = 40


def _location(place: int, names: list[str]) -> Location:
    return Location(names[place >> LINE_BITS], place & ((1 << LINE_BITS) - 1))


def _order(where: Location | None, names: list[str]) -> tuple[int, int]:
    if where is None:
        return (len(names), 0)
    return (names.index(where.source) if where.source in names else len(names), where.line or 0)


class _Partitioner:
    """Lines → K partition files by a hash of their key; beside each, per line, its place in the
    input (input number << 40 | line), its kind and its key's hash."""

    def __init__(self, folder: Path, parts: int, spec: MaterializeSpec, names: list[str]):
        from cdc.core.rowstore import key_getter

        self.folder = folder
        self.k = parts
        self.spec = spec
        self.names = names
        self.key_of = key_getter(spec.key)
        self.bytes = 0
        self._files = [open(self.path(p), "wb") for p in range(parts)]  # noqa: SIM115 - closed in close()
        self._buffers: list[list[bytes]] = [[] for _ in range(parts)]
        self._held = 0  # bytes of lines waiting to be written
        self._places = [array("Q") for _ in range(parts)]
        self._kinds = [array("b") for _ in range(parts)]
        self._hashes = [array("q") for _ in range(parts)]
        self._side = [open(self._side_path(p), "wb") for p in range(parts)]  # noqa: SIM115 - as above

    def path(self, part: int) -> Path:
        return self.folder / f"changes-{part}.jsonl"

    def _side_path(self, part: int) -> Path:
        return self.folder / f"changes-{part}.side"

    def feed(self, chunks: Iterable[tuple[bytes, int, str]], current: Any, state: KeyedState) -> int:
        """Every line read as the row path reads it; returns the records (bad ones included)."""
        from cdc.formats.jsonl import bad_line_error, loads_for, not_an_object_message

        kind_column, key_of, k = self.spec.kind_column, self.key_of, self.k
        records = 0
        names = self.names
        for chunk, first, name in chunks:
            base = (names.index(name) if name in names else 0) << LINE_BITS
            lines = chunk.split(b"\n")
            if lines and not lines[-1]:
                lines.pop()
            fast = self._fast(chunk, len(lines))
            if fast is not None:
                records += len(lines)
                self._add_all(lines, base + first, *fast)
                self._held += len(chunk)
                if self._held >= HOLD_BYTES:
                    self._flush_all()
                continue
            loads = loads_for(chunk)
            for number, line in enumerate(lines, first):
                try:
                    row = loads(line)
                except ValueError:
                    if not line.strip():
                        continue
                    records += 1
                    _reject(current, bad_line_error(line, number), name, number, line)
                    continue
                records += 1
                if type(row) is not dict:
                    _reject(current, InputError(not_an_object_message(row, line)), name, number, line)
                    continue
                try:
                    kind = read_kind(row, kind_column).value
                    del row[kind_column]
                except InputError as err:
                    _reject(current, err, name, number, line)
                    continue
                try:
                    key = key_of(row)
                except InputError as err:
                    state.by_kind[kind] += 1  # the state counts a change's kind before its key
                    _reject(current, err, name, number, line)
                    continue
                h = hash(key)
                part = h % k
                self._buffers[part].append(line)
                self._places[part].append(base | number)
                self._kinds[part].append(KINDS[kind])
                self._hashes[part].append(h)
                self._held += len(line) + 1
                if self._held >= HOLD_BYTES:
                    self._flush_all()
        self._flush_all()
        return records

    def _fast(self, chunk: bytes, lines: int) -> tuple[list[int], list[int]] | None:
        """Each line's kind code and key hash, read by pyarrow's JSON reader (off the GIL) when
        it reads the chunk as the row path does: one object a line, every kind one of the four,
        every key column whole numbers or text without nulls (values a line parses to the same
        Python object either way, so the same key always lands in the same partition); else None."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.json as pj

        from cdc.engine.paths.lines_arrow import different

        if different(chunk):
            return None
        try:
            table = pj.read_json(io.BytesIO(chunk), read_options=pj.ReadOptions(block_size=len(chunk) + 1))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        names = table.column_names
        if len(table) != lines or self.spec.kind_column not in names or not all(k in names for k in self.spec.key):
            return None
        kinds = table.column(self.spec.kind_column)
        if not pa.types.is_string(kinds.type):
            return None
        codes = pc.index_in(kinds, value_set=pa.array(list(KINDS)))
        if codes.null_count:
            return None
        columns = []
        for name in self.spec.key:
            column = table.column(name)
            if column.null_count or not (pa.types.is_int64(column.type) or pa.types.is_string(column.type)):
                return None
            columns.append(column.to_pylist())
        keys = columns[0] if len(columns) == 1 else zip(*columns, strict=True)
        hashes = [hash(k) for k in (keys if len(columns) == 1 else (tuple(k) for k in keys))]
        return codes.to_pylist(), hashes

    def _add_all(self, lines: list[bytes], first: int, kinds: list[int], hashes: list[int]) -> None:
        k = self.k
        buffers, places, kind_arrays, hash_arrays = self._buffers, self._places, self._kinds, self._hashes
        for place, (line, kind, h) in enumerate(zip(lines, kinds, hashes, strict=True), first):
            part = h % k
            buffers[part].append(line)
            places[part].append(place)
            kind_arrays[part].append(kind)
            hash_arrays[part].append(h)

    def _flush_all(self) -> None:
        for part in range(self.k):
            self._flush(part)
        self._held = 0

    def _flush(self, part: int) -> None:
        buffer = self._buffers[part]
        if buffer:
            data = b"\n".join(buffer) + b"\n"
            self._files[part].write(data)
            self.bytes += len(data)
            buffer.clear()
        side = self._side[part]
        for values in (self._places[part], self._kinds[part], self._hashes[part]):
            if values:
                side.write(len(values).to_bytes(8, "little") + bytes([ord(values.typecode)]))
                values.tofile(side)
                self.bytes += len(values) * values.itemsize
                del values[:]

    def close(self) -> None:
        for fh in (*self._files, *self._side):
            fh.close()

    def _read_side(self, part: int) -> tuple[array[int], array[int], array[int]]:
        found: dict[str, array[int]] = {"Q": array("Q"), "b": array("b"), "q": array("q")}
        with open(self._side_path(part), "rb") as fh:
            while True:
                head = fh.read(9)
                if not head:
                    break
                n, code = int.from_bytes(head[:8], "little"), chr(head[8])
                found[code].fromfile(fh, n)
        return found["Q"], found["b"], found["q"]

    def lines(self, part: int) -> array[int]:
        """Each line of the partition's place in the input."""
        return self._read_side(part)[0]

    def places(self, part: int) -> list[int]:
        """The places of the partition's live keys in first-insertion order: a key's place is the
        line that put it in the table while it was not there (a -U keeps the slot; a -D of a
        live row frees it), as ``KeyedState`` keeps its rows."""
        lines, kinds, hashes = self._read_side(part)
        slot: dict[int, int] = {}
        retracted: set[int] = set()
        for place, kind, h in zip(lines, kinds, hashes, strict=True):
            if kind == 0 or kind == 2:  # +I, +U
                if h not in slot:
                    slot[h] = place
                retracted.discard(h)
            elif h in slot and h not in retracted:
                if kind == 1:  # -U
                    retracted.add(h)
                else:  # -D
                    del slot[h]
        live = [place for h, place in slot.items() if h not in retracted]
        live.sort()
        return live

    def drop(self, part: int) -> None:
        """The partition's changes, once its table is made."""
        for path in (self.path(part), self._side_path(part)):
            path.unlink(missing_ok=True)


def _reject(current: Any, err: InputError, name: str, line_no: int, line: bytes) -> None:
    current.reject(err.located(Location(name, line_no)), line.decode("utf-8", "backslashreplace").rstrip("\r"))


def _merged(outputs: list[tuple[Path, list[int]]]) -> Iterator[bytes]:
    """The partitions' rows (JSON texts) in the order of their places."""
    files = [open(path, "rb") for path, _ in outputs]  # noqa: SIM115 - closed below
    try:
        streams = [_tagged(places, part) for part, (_, places) in enumerate(outputs)]
        for _, part in heapq.merge(*streams):
            yield files[part].readline().rstrip(b"\n")
    finally:
        for fh in files:
            fh.close()


def _tagged(places: list[int], part: int) -> Iterator[tuple[int, int]]:
    for place in places:
        yield place, part


def _write(job: Job, current: Any, outputs: list[tuple[Path, list[int]]], empty: Any) -> int:
    """The merged table to the job's output, in its format."""
    from cdc.engine.paths import texts_parquet
    from cdc.engine.tables import all_columns, write_rows
    from cdc.formats.jsonl import loads_for

    texts = _merged(outputs)
    if job.out_format == "jsonl" and not job.columns:  # rows as they are, as the in-memory paths write them
        stream = current.open_output().stream
        count = 0
        batch: list[bytes] = []
        for text in texts:
            batch.append(text)
            if len(batch) >= 4096:
                stream.write(b"\n".join(batch) + b"\n")
                count += len(batch)
                batch.clear()
        if batch:
            stream.write(b"\n".join(batch) + b"\n")
            count += len(batch)
        stream.flush()
        return count
    if texts_parquet.takes(job):
        from cdc.formats.parquet.io import BATCH_ROWS

        def blocks() -> Iterator[bytes]:
            batch: list[bytes] = []
            for text in texts:
                batch.append(text)
                if len(batch) >= BATCH_ROWS:
                    yield b"\n".join(batch)
                    batch.clear()
            if batch:
                yield b"\n".join(batch)

        try:
            return texts_parquet.write_blocks(job, current, blocks(), empty)
        except texts_parquet.Uneven:  # a column the first rows lack: again, the row path's way
            from cdc.formats.streams import Output

            current.output.abort()
            current.output = Output(job.output)

    def rows() -> Iterator[Any]:
        return (loads_for(t)(t) for t in _merged(outputs))

    return write_rows(job, current, all_columns(rows(), rows), empty=empty)
