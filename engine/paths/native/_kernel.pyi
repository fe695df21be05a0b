# Type stub of the C kernel (engine/paths/native/*.c, one module). Each call converts lines from
# ``start`` until the first line it declines (returned position < len(chunk)) or the end.
# columns, debezium:
#     (output, position, lines done, counts per kind (+I, -U, +U, -D), rows dropped)
# keyed applies the lines to ``table`` instead:
#     (position, lines done, counts per kind, retract messages, upsert messages)
#
# Every argument is checked: a ``start`` outside 0..len(chunk) raises ValueError, a tuple member
# of the wrong type TypeError, a kind index outside 0..3 ValueError.

# The longest key keyed/parse_changes take: the key columns' values as written, joined by ",".
# A line with a longer key is declined (it goes the general way); apply_changes refuses one.
MAX_KEY_BYTES: int

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

# Parses without the GIL: the chunk must be read-only (bytes, or a read-only memoryview), else
# TypeError. Records, in the machine's byte order:
#     [kind u8][line offset u32][key length u32][key][row length u32][row]
def parse_changes(
    chunk: bytes, start: int, kind_key: bytes, spellings: tuple[tuple[bytes, int], ...], key_keys: tuple[bytes, ...]
) -> tuple[bytes, int, int]: ...

# The whole buffer is checked before any record is applied (kinds 0..3, keys of at most
# MAX_KEY_BYTES, lengths within the buffer, line offsets increasing, no trailing bytes): a
# malformed one raises ValueError and leaves the table as it was.
def apply_changes(changes: bytes, table: Table) -> tuple[int, int, tuple[int, int, int, int], int, int]: ...

class Table:
    """An upsert table: key bytes → row bytes in first-insertion order; a -U retracts a row and
    keeps its slot for the +U to come."""

    def __len__(self) -> int: ...
    def texts(self) -> list[bytes]: ...
    def items(self) -> list[tuple[bytes, bytes, bool]]: ...

def count_lines(chunk: bytes) -> int: ...

# Tests only: how many probes a member-name index may take before it sorts the names instead
# (-1: the default). Returns the previous budget.
def _set_probe_budget(budget: int) -> int: ...

# -- the state engine (engine/paths/native/state.py) -----------------------------------------

# Parses without the GIL (the chunk must be read-only): plain changes packed as records
#     [kind u8][line u32][offset u32][key length u32][key][row length u32][row]
#     then per extra column [length u32][value as written] (0xFFFFFFFF: the row lacks it)
# key: the canonical text of the key columns' values (equal texts exactly when Python finds the
# values equal), or without key columns the row's (a multiset's identity). Declines what
# parse_changes declines, and a line whose key its text cannot decide (nested values, floats of
# more than 15 digits). Chunks of at most 1 GiB.
def parse_records(
    chunk: bytes,
    start: int,
    kind_key: bytes,
    spellings: tuple[tuple[bytes, int], ...],
    key_keys: tuple[bytes, ...],
    extra_keys: tuple[bytes, ...],
    flags: int = 0,  # 1: no key; 2: no kind column (each line +I); 4: a missing key column is null
) -> tuple[bytes, int, int]: ...

# handle(code, line, offset, kind, a, b) -> int: what the texts cannot tell (codes H_* of
# state.py); it may run any Python code, but not this State's methods (RuntimeError).
Handle = object

class State:
    """command 0 multiset, 1 keyed, 2 replay; flags F_* of state.py; n_extras: the extra columns
    of the records (0 to 4); firsts: replay's kind members, e.g. b'"op":"+I"'; since/until:
    replay's integer bounds (with F_INT_BOUNDS)."""

    def __init__(
        self,
        command: int,
        flags: int,
        n_extras: int,
        firsts: tuple[bytes, bytes, bytes, bytes],
        since: int = 0,
        until: int = 0,
    ) -> None: ...
    # The records (read-only) from byte ``start`` (a record's start) on; the whole buffer is
    # checked first (ValueError: the state as it was). Returns replay's rows (b"" otherwise).
    def apply(self, records: bytes, start: int, handle: object) -> bytes: ...
    def net(self, handle: object) -> bytes: ...
    def texts(self) -> list[bytes]: ...
    def items(self, which: int = 0) -> list[tuple[bytes, bytes, int, object]]: ...
    def counters(self) -> tuple[int, ...]: ...
    def previous(self) -> tuple[int, bytes] | None: ...
    def time_range(self) -> tuple[object, object]: ...
    def sizes(self) -> tuple[int, int]: ...

# DebeziumEncoder.step over the lines from start until one it declines:
#     (events, position, lines, counts per kind, events (c, u, d), pending -U's row or None)
def encode(
    chunk: bytes,
    start: int,
    kind_key: bytes,
    spellings: tuple[tuple[bytes, int], ...],
    key_keys: tuple[bytes, ...],
    time_key: bytes,
    source: bytes,
    now: bytes,
    split: bool,
    pending: bytes | None,
) -> tuple[bytes, int, int, tuple[int, int, int, int], tuple[int, int, int], bytes | None]: ...

# Canal, Maxwell and OGG events as their core decoders (without state, metadata or filters) read
# them, until a line they decline: (output, position, lines, counts per kind, 0, ...).
def maxwell(
    chunk: bytes, start: int, kind_key: bytes, firsts: tuple[bytes, bytes, bytes, bytes], bootstrap_insert: bool
) -> tuple[bytes, int, int, tuple[int, int, int, int], int]: ...

# shapes: each table's last insert's column names (the table as JSON text); complete: all of
# them. Returns also the (table, after image) of the inserts it read, for the decoder.
def ogg(
    chunk: bytes,
    start: int,
    kind_key: bytes,
    firsts: tuple[bytes, bytes, bytes, bytes],
    shapes: tuple[tuple[bytes, tuple[bytes, ...]], ...],
    complete: bool,
) -> tuple[bytes, int, int, tuple[int, int, int, int], int, list[tuple[bytes, bytes]]]: ...

# Returns also the sqlType texts of the lines it took (each once, first seen first, then the last).
def canal(
    chunk: bytes, start: int, kind_key: bytes, firsts: tuple[bytes, bytes, bytes, bytes], raw_values: bool
) -> tuple[bytes, int, int, tuple[int, int, int, int], int, list[bytes]]: ...

class Aggregate:
    """GroupAggregate over parse_records' records (extras: the group-by columns, then the
    arguments): flags 1 retracting, 2 tracking, 4 emit retract; funcs 0 COUNT(*), 1 COUNT, 2 SUM,
    3 AVG, 4 MIN, 5 MAX; args: each one's extra (-1 for COUNT(*)); track_arg: the tracked extra.
    Only where the compiler has 128-bit integers."""

    def __init__(
        self,
        flags: int,
        n_group: int,
        group_names: tuple[bytes, ...],
        funcs: tuple[int, ...],
        args: tuple[int, ...],
        names: tuple[bytes, ...],
        track_arg: int,
        firsts: tuple[bytes, bytes, bytes, bytes],
    ) -> None: ...
    # (output, stop): stop is the byte offset of the record it stopped at, or -1.
    def apply(self, records: bytes, start: int, handle: object) -> tuple[bytes, int]: ...
    def items(self) -> list[tuple[bytes, int, tuple[object, ...], tuple[object, ...], object]]: ...
    def counters(self) -> tuple[int, int, int, int, int, int, int, int]: ...
