"""Where bytes come from and go to: files, stdin/stdout, gzip/zstd, atomic ``-o`` writes."""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
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


class _CountingReader:
    """A buffered stream's reads, reported to a progress callback (peeks are not reads)."""

    def __init__(self, inner: io.BufferedReader, on_bytes: OnBytes):
        self._inner = inner
        self._on_bytes = on_bytes

    def _counted(self, data: bytes) -> bytes:
        if data:
            self._on_bytes(len(data))
        return data

    def read(self, size: int = -1) -> bytes:
        return self._counted(self._inner.read(size))

    def read1(self, size: int = -1) -> bytes:
        return self._counted(self._inner.read1(size))

    def readline(self, size: int = -1) -> bytes:
        return self._counted(self._inner.readline(size))

    def readinto(self, buffer: Any) -> int:
        n = self._inner.readinto(buffer)
        if n:
            self._on_bytes(n)
        return n

    def peek(self, size: int = 0) -> bytes:
        return self._inner.peek(size)

    def __getattr__(self, name: str) -> Any:  # seekable, readable, close, closed, fileno …
        return getattr(self._inner, name)


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
        # Counted above stdin's buffer: bytes peeked there (format sniffing) stay unread.
        stdin = _peekable(sys.stdin.buffer)
        return cast(io.BufferedReader, _CountingReader(stdin, on_bytes)) if on_bytes is not None else stdin
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


def _mode_for(target: str) -> int:
    """An existing file's permission bits, else 0666 less the umask (as open() would give)."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


_FD_FOLDER = re.compile(r"/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/fd|/dev/fd")


def _open_descriptor(path: str) -> int | None:
    """The descriptor a path like /dev/stdout, /dev/fd/N or /proc/self/fd/N names, if it is one
    of this process's: None for any other path."""
    seen = 0
    while seen < 40:  # a symlink loop ends like the kernel's
        seen += 1
        folder = os.path.realpath(os.path.dirname(path) or ".")
        name = os.path.basename(path)
        if name.isdigit() and _FD_FOLDER.fullmatch(folder):
            pid = folder.split("/")[2] if folder.startswith("/proc/") else "self"
            if pid in ("self", "thread-self", str(os.getpid())):
                return int(name)
            return None
        full = os.path.join(folder, name)
        if not os.path.islink(full):
            return None
        path = os.path.join(folder, os.readlink(full))
    return None


def same_target(a: str | None, b: str | None) -> bool:
    """Whether two output names write into one place: both stdout (``-``, /dev/stdout,
    /dev/fd/1…), one descriptor, or one existing file (followed through symlinks)."""
    if not a or not b:
        return False

    def fd_of(name: str) -> int | None:
        return 1 if name == STDIO else _open_descriptor(name)

    fa, fb = fd_of(a), fd_of(b)
    if fa is not None or fb is not None:
        if fa is not None and fb is not None:
            return fa == fb
        try:  # a descriptor and a path: the same file behind both?
            sa = os.fstat(fa) if fa is not None else os.stat(a)
            sb = os.fstat(fb) if fb is not None else os.stat(b)
        except OSError:
            return False
        return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)
    try:
        return os.path.samefile(a, b)
    except OSError:  # one is not there yet: the same name is the same file
        return os.path.realpath(a) == os.path.realpath(b)


def names_stdout(name: str) -> bool:
    """Whether an output name writes to stdout: ``-``, /dev/stdout, /dev/fd/1, or the file stdout is."""
    return name == STDIO or same_target(name, STDIO)


def is_special(path: str) -> bool:
    """Whether the path names something that is there and is not a regular file (or a folder):
    a FIFO, a device, a socket — after following symlinks."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _open_direct(path: str) -> BinaryIO | None:
    """A stream written straight into what the path names, when that is not a regular file to
    replace: a descriptor of this process (/dev/stdout, /dev/stderr, /proc/self/fd/N — shared
    with the shell, so its offset too: what the shell wrote before and after stays), a FIFO, a
    device or a socket. None for a regular file (or one not there yet)."""
    fd = _open_descriptor(path)
    if fd is not None:
        try:
            return os.fdopen(os.dup(fd), "wb", buffering=READ_BUFFER)
        except OSError as exc:
            raise UsageError(f"cannot write {path!r}: descriptor {fd} is not open") from exc
    if not is_special(path):
        return None
    try:
        if stat.S_ISSOCK(os.stat(path).st_mode):
            import socket

            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(path)
                return os.fdopen(os.dup(sock.fileno()), "wb", buffering=READ_BUFFER)
        # No O_TRUNC, no O_CREAT: a pipe's reader or a device gets the bytes as they come.
        return os.fdopen(os.open(path, os.O_WRONLY), "wb", buffering=READ_BUFFER)
    except OSError as exc:
        raise UsageError(f"cannot write {path!r}: {exc.strerror or exc}") from exc


class Output:
    """A binary output: stdout, a file written atomically (temp file + rename on commit), or
    what is not a regular file (a FIFO, a device, /dev/stderr) written straight into."""

    def __init__(self, path: str):
        self.path = path
        self._tmp: str | None = None
        self._file: BinaryIO
        self._codec: BinaryIO | None = None
        self._own = False  # a descriptor of ours to close on commit (not a temp file)
        direct = _open_direct(path) if path != STDIO else None
        if path == STDIO:
            self._file = sys.stdout.buffer
        elif direct is not None:
            self._file, self._own = direct, True
        else:
            # Through a symlink to the file it names; the new file gets the old one's mode, or
            # for a new file what the umask allows (mkstemp makes it 0600).
            self.target = os.path.realpath(path)
            folder = os.path.dirname(self.target)
            if not os.path.isdir(folder):
                raise UsageError(f"cannot write {path!r}: folder {folder!r} does not exist")
            fd, self._tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(self.target)}.", suffix=".tmp")
            try:
                os.fchmod(fd, _mode_for(self.target))
            except OSError:
                pass  # a file system without modes: the file is written all the same
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

    @property
    def atomic(self) -> bool:
        """Whether nothing written reaches the target before commit (a temp file): a run can
        still begin again."""
        return self._tmp is not None

    def commit(self) -> None:
        if self._codec is not None:
            self._codec.close()  # a pyarrow stream closes the file below it too
        if self._tmp is None:
            if self._own:
                self._close_own()
            else:
                self._file.flush()
            return
        if not self._file.closed:
            # No fsync: rename makes the write all-or-nothing for readers, which is the promise;
            # durability across power loss would cost a second per 50 MB on this kind of disk.
            self._file.close()
        os.replace(self._tmp, self.target)
        self._tmp = None

    def _close_own(self) -> None:
        self._own = False
        if not self._file.closed:
            self._file.close()

    def abort(self) -> None:
        """Drop a half-written file; the target keeps its old content. Written straight into a
        FIFO or a device, what went out stays out (as on stdout)."""
        if self._own:
            try:
                self._close_own()
            except OSError:
                pass
            return
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
