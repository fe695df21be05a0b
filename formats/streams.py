"""Where bytes come from and go to: files, stdin/stdout, gzip/zstd, atomic ``-o`` writes."""

from __future__ import annotations

import gzip
import io
import os
import sys
import tempfile
from collections.abc import Callable
from typing import IO, Any, BinaryIO, cast

from cdc.core.errors import UsageError

STDIO = "-"
STDIN_NAME = "<stdin>"
READ_BUFFER = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
PARQUET_MAGIC = b"PAR1"

OnBytes = Callable[[int], None]


def display_name(path: str) -> str:
    return STDIN_NAME if path == STDIO else path


def compression_of(path: str) -> str | None:
    lower = path.lower()
    if lower.endswith(".gz"):
        return "gzip"
    if lower.endswith(".zst") or lower.endswith(".zstd"):
        return "zstd"
    return None


class _CountingRaw(io.RawIOBase):
    """Reports bytes read to a progress callback; sits below the buffer, so it costs per chunk."""

    def __init__(self, raw: IO[bytes], on_bytes: OnBytes):
        self._raw = raw
        self._on_bytes = on_bytes

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = cast(int, self._raw.readinto(buffer))  # type: ignore[attr-defined]
        if n:
            self._on_bytes(n)
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def _peekable(stream: IO[bytes]) -> io.BufferedReader:
    if isinstance(stream, io.BufferedReader):
        return stream
    return io.BufferedReader(cast(Any, stream), READ_BUFFER)


def input_size(path: str) -> int | None:
    if path == STDIO:
        return None
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def check_input_exists(path: str) -> None:
    if path == STDIO:
        if sys.stdin is None or sys.stdin.isatty():  # waiting on a keyboard helps no one
            raise UsageError("no input: name a file, or pipe data into cdc (e.g. cat dump.jsonl | cdc …)")
        return
    if not os.path.isfile(path):
        what = "is a directory" if os.path.isdir(path) else "does not exist"
        raise UsageError(f"input file {path!r} {what}")


def open_input(path: str, on_bytes: OnBytes | None = None) -> io.BufferedReader:
    """A buffered binary stream over a file or stdin; raw bytes, not yet decompressed."""
    if path == STDIO:
        # No byte counting below stdin's buffer: bytes already peeked there would be lost.
        return _peekable(sys.stdin.buffer)
    check_input_exists(path)
    try:
        raw: IO[bytes] = open(path, "rb", buffering=0)  # noqa: SIM115 - owned by the reader
    except OSError as exc:
        raise UsageError(f"cannot open {path!r}: {exc.strerror}") from exc
    if on_bytes is not None:
        raw = cast(IO[bytes], _CountingRaw(raw, on_bytes))
    return io.BufferedReader(cast(Any, raw), READ_BUFFER)


class _Decompressing(io.RawIOBase):
    """A decompressor whose failures (a truncated or corrupt stream) are input errors."""

    def __init__(self, inner: Any, codec: str, source: str):
        self._inner = inner
        self._codec = codec
        self._source = source

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._inner.read(len(buffer))
        except Exception as exc:  # gzip: EOFError, BadGzipFile, zlib.error; zstd: ArrowInvalid
            from cdc.core.errors import InputError, Location

            raise InputError(f"corrupt {self._codec} data: {exc}", where=Location(self._source)) from exc
        n = len(data)
        buffer[:n] = data
        return n

    def close(self) -> None:
        self._inner.close()
        super().close()


def decompressed(stream: io.BufferedReader, source: str = STDIN_NAME) -> BinaryIO:
    """Unwrap gzip or zstd by their magic bytes, whatever the file is called."""
    head = stream.peek(4)[:4]
    if head.startswith(GZIP_MAGIC):
        inner: Any = gzip.GzipFile(fileobj=stream)
        return cast(BinaryIO, io.BufferedReader(_Decompressing(inner, "gzip", source), READ_BUFFER))
    if head == ZSTD_MAGIC:
        import pyarrow as pa  # zstd comes with pyarrow; no extra dependency for it

        inner = pa.CompressedInputStream(pa.PythonFile(stream, mode="r"), "zstd")
        return cast(BinaryIO, io.BufferedReader(_Decompressing(inner, "zstd", source), READ_BUFFER))
    return cast(BinaryIO, stream)


class Output:
    """A binary output: stdout, or a file written atomically (temp file + rename on commit)."""

    def __init__(self, path: str):
        self.path = path
        self._tmp: str | None = None
        self._file: BinaryIO
        self._codec: BinaryIO | None = None
        if path == STDIO:
            self._file = sys.stdout.buffer
        else:
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                raise UsageError(f"cannot write {path!r}: folder {folder!r} does not exist")
            fd, self._tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
            self._file = os.fdopen(fd, "wb", buffering=READ_BUFFER)
        compression = compression_of(path) if path != STDIO else None
        if compression == "gzip":
            self._codec = cast(BinaryIO, gzip.GzipFile(fileobj=self._file, mode="wb", compresslevel=6))
        elif compression == "zstd":
            import pyarrow as pa

            self._codec = cast(BinaryIO, pa.CompressedOutputStream(pa.PythonFile(self._file, mode="w"), "zstd"))

    @property
    def stream(self) -> BinaryIO:
        return self._codec if self._codec is not None else self._file

    def commit(self) -> None:
        if self._codec is not None:
            self._codec.close()  # a pyarrow stream closes the file below it too
        if self._tmp is None:
            self._file.flush()
            return
        if not self._file.closed:
            # No fsync: rename makes the write all-or-nothing for readers, which is the promise;
            # durability across power loss would cost a second per 50 MB on this kind of disk.
            self._file.close()
        os.replace(self._tmp, self.path)
        self._tmp = None

    def abort(self) -> None:
        """Drop a half-written file; the target keeps its old content."""
        if self._tmp is None:
            return
        try:
            if not self._file.closed:
                self._file.close()
        except OSError:
            pass
        try:
            os.unlink(self._tmp)
        except FileNotFoundError:
            pass
        self._tmp = None
