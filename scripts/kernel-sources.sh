#!/usr/bin/env bash
# The C kernel's source files, one a line, as pyproject.toml lists them (its ext-modules
# sources): the one list the build, scripts/kernel-check.sh and scripts/kernel-sanitize.sh share.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
"$PY" - <<'PYTHON'
import tomllib

with open("pyproject.toml", "rb") as f:
    modules = tomllib.load(f)["tool"]["setuptools"]["ext-modules"]
(kernel,) = [m for m in modules if m["name"] == "cdc.engine.paths.native._kernel"]
print("\n".join(kernel["sources"]))
PYTHON
