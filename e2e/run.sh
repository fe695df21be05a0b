#!/usr/bin/env bash
# End-to-end fidelity harness: real Debezium (embedded engine, 3.6.1.Final) on real PostgreSQL and
# MariaDB, held against `cdc debezium-decode | cdc materialize`. See e2e/README.md.
#
#   e2e/run.sh [--seed N] [--changes N] [--only postgres|mariadb] [--checkpoints N] [--keep] [--report FILE]
#
# Installs what it needs on a fresh Debian 12 machine (apt-get: PostgreSQL 15, MariaDB 10.11 server
# core + client; Maven Central via mvn: Debezium and its dependencies), starts the databases on
# loopback in a temporary directory, and stops them afterwards. Exit 0 only when every check holds;
# the last line is `e2e: N/M checks pass`.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"

say() { echo "e2e: $*" >&2; }
need_root() { [ "$(id -u)" = 0 ] || { say "needs root to apt-get install $*"; exit 2; }; }

# 1. Debian packages: the servers and their clients, a JDK and Maven.
missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v psql >/dev/null || missing+=(postgresql-client)
command -v mariadbd >/dev/null || missing+=(mariadb-server-core)
command -v mariadb >/dev/null || missing+=(mariadb-client-core)
command -v java >/dev/null || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
if [ ${#missing[@]} -gt 0 ]; then
  need_root "${missing[*]}"
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -q >/dev/null
  # --no-install-recommends and the *-core MariaDB packages: binaries only, no service is started.
  timeout 900 apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
# The postgresql package's own cluster is not used; never start it.

# 2. The Debezium capture project, capture/ (Maven fetches the dependencies; nothing binary is committed).
CAPTURE="$HERE/capture"
if [ ! -f "$CAPTURE/target/run-classpath.txt" ] || [ "$CAPTURE/pom.xml" -nt "$CAPTURE/target/run-classpath.txt" ] \
   || [ -n "$(find "$CAPTURE/src" -newer "$CAPTURE/target/run-classpath.txt" -type f 2>/dev/null)" ]; then
  say "building the Debezium capture project (mvn)"
  (cd "$CAPTURE" && timeout 900 mvn -q -B package dependency:build-classpath -Dmdep.outputFile=target/classpath.txt >&2)
  echo "$CAPTURE/target/classes:$(cat "$CAPTURE/target/classpath.txt")" > "$CAPTURE/target/run-classpath.txt"
fi

# 3. cdc itself, from this checkout.
if [ -z "${CDC:-}" ]; then
  if [ ! -x "$REPO/.venv/bin/cdc" ]; then
    say "creating $REPO/.venv with cdc installed from this checkout"
    python3 -m venv "$REPO/.venv"
    "$REPO/.venv/bin/pip" install -q -e "$REPO"
  fi
  export CDC="$REPO/.venv/bin/cdc"
fi

# 4. The harnesses (Python standard library only; the databases are driven through psql / mariadb):
#    the seeded random workload, then the fixed scenarios (scenarios.py: schema changes, several
#    tables in one file, Kafka dumps, edge values, placeholders, snapshots, flattened rows).
status=0
python3 "$HERE/harness.py" "$@" || status=$?
python3 "$HERE/scenarios.py" "$@" || status=$?
exit $status
