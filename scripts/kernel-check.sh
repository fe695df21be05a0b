#!/usr/bin/env bash
# The C kernel compiles without a single warning: -Wall -Wextra -Wconversion and more, as errors,
# with gcc and, where installed, clang (compiled at -O2, for the warnings of the optimiser too),
# every source file of it (pyproject.toml's list), then linked into one shared object, so that a
# name declared in kernel.h and defined nowhere fails here too (the objects are thrown away).
#
#     scripts/kernel-check.sh            # the interpreter: .venv/bin/python, else python3
#
# pyproject.toml builds with -Wall -Wextra as warnings only: a newer compiler's new warning must
# not make pip drop the optional kernel. This script is where they are errors.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
mapfile -t SOURCES < <(scripts/kernel-sources.sh)
INCLUDE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
FLAGS=(-O2 -std=c11 -Wpedantic -Wall -Wextra -Wconversion -Wsign-conversion -Wshadow -Wcast-qual -Wformat=2
       -Wundef -Wstrict-prototypes -Wvla -Wnull-dereference -Wmissing-prototypes -Werror)
status=0
compilers=()
for cc in gcc clang; do command -v "$cc" >/dev/null && compilers+=("$cc"); done
if [ ${#compilers[@]} -eq 0 ]; then
    echo "kernel-check: no C compiler (gcc, clang) found" >&2
    exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/kernel-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
for cc in "${compilers[@]}"; do
    objects=()
    ok=1
    for source in "${SOURCES[@]}"; do
        object="$work/$cc-$(basename "$source" .c).o"
        "$cc" -c -fPIC -o "$object" "${FLAGS[@]}" -I"$INCLUDE" "$source" || ok=0
        objects+=("$object")
    done
    # Linked as the extension is. kernel.h declares its names hidden: one declared and defined
    # nowhere fails the link (a hidden symbol cannot be left to the loader), Python's may.
    if [ $ok -eq 1 ] && ! "$cc" -shared -o "$work/$cc-kernel.so" "${objects[@]}"; then
        ok=0
    fi
    if [ $ok -eq 1 ]; then
        echo "kernel-check: $cc $("$cc" -dumpversion): ${#SOURCES[@]} files, no warnings (${FLAGS[*]}), linked"
    else
        echo "kernel-check: $cc: warnings or errors above" >&2
        status=1
    fi
done
exit $status
