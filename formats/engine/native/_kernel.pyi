# Type stub of the C kernel (formats/_kernel.c). Each call converts lines from ``start`` until
# the first line it declines (returned position < len(chunk)) or the end. columns, debezium:
#     (output, position, lines done, counts per kind (+I, -U, +U, -D), rows dropped)
# keyed applies the lines to ``table`` instead:
#     (position, lines done, counts per kind, retract messages, upsert messages)

def columns(
    chunk: bytes,
    start: int,
    column_key: bytes,
    name_key: bytes,
    codes: tuple[tuple[bytes, int, bytes | None], ...],
) -> tuple[bytes, int, int, tuple[int, int, int, int], int]: ...
def debezium(
    chunk: bytes,
    start: int,
    kind_key: bytes,
    first_members: tuple[bytes, bytes, bytes, bytes],
    envelopes: bool,
    plain_schemas: set[bytes],
) -> tuple[bytes, int, int, tuple[int, int, int, int], int, bytes | None]: ...
def keyed(
    chunk: bytes,
    start: int,
    kind_key: bytes,
    spellings: tuple[tuple[bytes, int], ...],
    key_keys: tuple[bytes, ...],
    table: Table,
) -> tuple[int, int, tuple[int, int, int, int], int, int]: ...
def parse_changes(
    chunk: bytes, start: int, kind_key: bytes, spellings: tuple[tuple[bytes, int], ...], key_keys: tuple[bytes, ...]
) -> tuple[bytes, int, int]: ...
def apply_changes(changes: bytes, table: Table) -> tuple[int, int, tuple[int, int, int, int], int, int]: ...

class Table:
    """An upsert table: key bytes → row bytes in first-insertion order; a -U retracts a row and
    keeps its slot for the +U to come."""

    def __len__(self) -> int: ...
    def texts(self) -> list[bytes]: ...
    def items(self) -> list[tuple[bytes, bytes, bool]]: ...

def count_lines(chunk: bytes) -> int: ...
