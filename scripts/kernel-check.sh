#!/usr/bin/env bash
# The C kernel compiles without a single warning: -Wall -Wextra -Wconversion and more, as errors,
# with gcc and, where installed, clang (compiled at -O2, for the warnings of the optimiser too;
# the object is thrown away).
#
#     scripts/kernel-check.sh            # the interpreter: .venv/bin/python, else python3
#
# pyproject.toml builds with -Wall -Wextra as warnings only: a newer compiler's new warning must
# not make pip drop the optional kernel. This script is where they are errors.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
SOURCE=engine/paths/native/_kernel.c
INCLUDE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
FLAGS=(-O2 -std=c11 -Wpedantic -Wall -Wextra -Wconversion -Wsign-conversion -Wshadow -Wcast-qual -Wformat=2
       -Wundef -Wstrict-prototypes -Wvla -Wnull-dereference -Werror)
status=0
compilers=()
for cc in gcc clang; do command -v "$cc" >/dev/null && compilers+=("$cc"); done
if [ ${#compilers[@]} -eq 0 ]; then
    echo "kernel-check: no C compiler (gcc, clang) found" >&2
    exit 1
fi
for cc in "${compilers[@]}"; do
    if "$cc" -c -o /dev/null "${FLAGS[@]}" -I"$INCLUDE" "$SOURCE"; then
        echo "kernel-check: $cc $("$cc" -dumpversion): no warnings (${FLAGS[*]})"
    else
        echo "kernel-check: $cc: warnings above" >&2
        status=1
    fi
done
exit $status
