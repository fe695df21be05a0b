# Type stub of the C kernel (formats/_kernel.c). Each call converts lines from ``start`` until
# the first line it declines (returned position < len(chunk)) or the end:
#     (output, position, lines done, counts per kind (+I, -U, +U, -D), rows dropped)

def columns(
    chunk: bytes,
    start: int,
    column_key: bytes,
    name_key: bytes,
    codes: tuple[tuple[bytes, int, bytes | None], ...],
) -> tuple[bytes, int, int, tuple[int, int, int, int], int]: ...
def debezium(
    chunk: bytes, start: int, kind_key: bytes, first_members: tuple[bytes, bytes, bytes, bytes]
) -> tuple[bytes, int, int, tuple[int, int, int, int], int]: ...
