#!/usr/bin/env bash
# A local standalone Flink cluster for `cdc … --on-flink http://127.0.0.1:8083`: a JobManager, one
# TaskManager and the SQL Gateway, all on loopback, from the Flink distribution inside PyFlink's
# wheel (flink/harness/setup.sh installs it and fetches the gateway jar the wheel lacks).
#
#   flink/harness/cluster.sh up       start (idempotent: a running cluster is left as it is)
#   flink/harness/cluster.sh down     stop (SIGTERM by PID, SIGKILL after 20 s); logs kept in RUN/log
#   flink/harness/cluster.sh status   exit 0 when the JobManager, a TaskManager and the gateway answer
#
# Environment: CDC_FLINK_RUN (default flink/harness/.cluster: config, logs, PIDs), CDC_FLINK_GATEWAY_PORT
# (8083), CDC_FLINK_REST_PORT (8081), CDC_FLINK_PARALLELISM (1), CDC_FLINK_SLOTS (4), JAVA_HOME (a
# JDK 11, 17 or 21: Flink 2.3 does not start on Java 24+; default: the first such java found).
# Nothing is written into the wheel; nothing listens beyond 127.0.0.1. Needs curl (the readiness checks).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
RUN="${CDC_FLINK_RUN:-$here/.cluster}"
GW_PORT="${CDC_FLINK_GATEWAY_PORT:-8083}"
REST_PORT="${CDC_FLINK_REST_PORT:-8081}"
PARALLELISM="${CDC_FLINK_PARALLELISM:-1}"
SLOTS="${CDC_FLINK_SLOTS:-4}"
PY="${CDC_FLINK_PYTHON:-$here/.flink-venv/bin/python}"

die() { echo "cluster.sh: $*" >&2; exit 1; }

java_home() {
  # Java 11/17/21 only: bin/config.sh adds -Djava.security.manager=allow for Java > 17, which 24+ refuses.
  local candidates=("${JAVA_HOME:-}" /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-21-openjdk-amd64 \
    /usr/lib/jvm/java-11-openjdk-amd64 /usr/lib/jvm/java-17-openjdk-arm64 /usr/lib/jvm/java-21-openjdk-arm64)
  local j
  for j in "${candidates[@]}" "$(dirname "$(dirname "$(readlink -f "$(command -v java 2>/dev/null || echo /nonexistent)")")")"; do
    [ -n "$j" ] && [ -x "$j/bin/java" ] || continue
    local v
    v="$("$j/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)"
    case "$v" in 11|17|21) echo "$j"; return 0 ;; esac
  done
  return 1
}

flink_home() {
  [ -x "$PY" ] || die "no PyFlink: run flink/harness/setup.sh first (or set CDC_FLINK_PYTHON)"
  "$PY" -c 'import os, pyflink; print(os.path.dirname(pyflink.__file__))'
}

env_setup() {
  FLINK_HOME="$(flink_home)"
  JAVA_HOME="$(java_home)" || die "no Java 11, 17 or 21 found (Flink 2.3 needs one; set JAVA_HOME)"
  export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
  export FLINK_CONF_DIR="$RUN/conf" FLINK_OPT_DIR="$RUN/opt" FLINK_LOG_DIR="$RUN/log" FLINK_PID_DIR="$RUN/pid"
  export FLINK_LIB_DIR="$RUN/lib"
}

configure() {
  local gw_jar
  gw_jar="$(ls "$here"/.jars/gateway/flink-sql-gateway-*.jar 2>/dev/null | head -1)"
  [ -n "$gw_jar" ] || die "no flink-sql-gateway jar in flink/harness/.jars/gateway: run flink/harness/setup.sh"
  mkdir -p "$RUN/conf" "$RUN/opt" "$RUN/lib" "$RUN/log" "$RUN/pid" "$RUN/tmp"
  rm -f "$RUN/opt"/*.jar "$RUN/lib"/*.jar
  ln -sf "$FLINK_HOME"/opt/*.jar "$RUN/opt/"
  ln -sf "$gw_jar" "$RUN/opt/"
  ln -sf "$FLINK_HOME"/lib/*.jar "$RUN/lib/"
  local extra
  for extra in "$here"/.jars/lib/*.jar; do  # optional: parquet + hadoop jars, if fetched
    [ -e "$extra" ] && ln -sf "$extra" "$RUN/lib/"
  done
  cp "$FLINK_HOME"/conf/log4j*.properties "$RUN/conf/" 2>/dev/null || true
  cp "$FLINK_HOME"/conf/logback*.xml "$RUN/conf/" 2>/dev/null || true
  local opts
  opts="$(sed -n 's/^env\.java\.opts\.all: *//p' "$FLINK_HOME/conf/config.yaml" | head -1)"
  if [ -z "$opts" ]; then  # the nested form: env: / java: / opts: / all: …
    opts="$(awk '/^ *all: *--add/ {sub(/^ *all: */, ""); print; exit}' "$FLINK_HOME/conf/config.yaml")"
  fi
  cat > "$RUN/conf/config.yaml" <<YAML
env.java.opts.all: $opts
env.log.dir: $RUN/log
env.pid.dir: $RUN/pid
io.tmp.dirs: $RUN/tmp
jobmanager.bind-host: 127.0.0.1
jobmanager.rpc.address: 127.0.0.1
jobmanager.rpc.port: ${CDC_FLINK_RPC_PORT:-6123}
jobmanager.memory.process.size: 1024m
jobmanager.execution.failover-strategy: region
taskmanager.bind-host: 127.0.0.1
taskmanager.host: 127.0.0.1
taskmanager.numberOfTaskSlots: $SLOTS
taskmanager.memory.process.size: 2048m
parallelism.default: $PARALLELISM
rest.address: 127.0.0.1
rest.bind-address: 127.0.0.1
rest.port: $REST_PORT
sql-gateway.endpoint.rest.address: 127.0.0.1
sql-gateway.endpoint.rest.bind-address: 127.0.0.1
sql-gateway.endpoint.rest.port: $GW_PORT
YAML
  echo "127.0.0.1:$REST_PORT" > "$RUN/conf/masters"
  echo "127.0.0.1" > "$RUN/conf/workers"
}

get() { curl -fsS --max-time 3 "$1" 2>/dev/null; }

taskmanagers() { get "http://127.0.0.1:$REST_PORT/overview" | sed -n 's/.*"taskmanagers":\([0-9]*\).*/\1/p'; }

pids() { cat "$RUN"/pid/*.pid 2>/dev/null || true; }

alive() {
  local p n=0
  for p in $(pids); do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done
  echo "$n"
}

status() {
  local tm gw
  tm="$(taskmanagers || true)"
  gw="$(get "http://127.0.0.1:$GW_PORT/v2/info" || true)"
  echo "run folder:   $RUN"
  echo "processes:    $(alive) alive"
  echo "jobmanager:   http://127.0.0.1:$REST_PORT ($( [ -n "$tm" ] && echo "$tm taskmanager(s)" || echo down))"
  echo "sql gateway:  http://127.0.0.1:$GW_PORT ($( [ -n "$gw" ] && echo "$gw" || echo down))"
  [ -n "$tm" ] && [ "$tm" -ge 1 ] && [ -n "$gw" ]
}

wait_for() {  # wait_for SECONDS COMMAND…
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}

tm_up() { local n; n="$(taskmanagers || true)"; [ -n "$n" ] && [ "$n" -ge 1 ]; }
gw_up() { get "http://127.0.0.1:$GW_PORT/v2/info" >/dev/null; }

failed() {
  echo "cluster.sh: $1; logs kept in $RUN/log:" >&2
  ls -1 "$RUN/log" >&2 || true
  tail -n 20 "$RUN"/log/*.log >&2 2>/dev/null || true
  down >/dev/null 2>&1 || true
  exit 1
}

up() {
  env_setup
  if status >/dev/null 2>&1; then
    echo "cluster.sh: already up"; status; return 0
  fi
  [ "$(alive)" = 0 ] || down
  configure
  local t0=$SECONDS
  # Daemons start from the run folder (a relative path in a script resolves there) and in a
  # session of their own, so that a timeout or Ctrl-C of the caller does not take them down.
  (cd "$RUN" && setsid "$FLINK_HOME/bin/start-cluster.sh" >"$RUN/log/start-cluster.out" 2>&1) \
    || failed "start-cluster.sh failed"
  wait_for 120 tm_up || failed "the JobManager has no TaskManager after 120 s"
  (cd "$RUN" && setsid "$FLINK_HOME/bin/sql-gateway.sh" start >"$RUN/log/sql-gateway-start.out" 2>&1) \
    || failed "sql-gateway.sh start failed"
  wait_for 60 gw_up || failed "the SQL Gateway does not answer after 60 s"
  echo "cluster.sh: up in $((SECONDS - t0)) s"
  status
}

down() {
  local p
  for p in $(pids); do kill -TERM "$p" 2>/dev/null || true; done
  local deadline=$((SECONDS + 20))
  while [ "$(alive)" != 0 ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.5; done
  for p in $(pids); do kill -KILL "$p" 2>/dev/null || true; done
  rm -f "$RUN"/pid/*.pid
  echo "cluster.sh: down (logs in $RUN/log)"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: flink/harness/cluster.sh up|down|status" >&2; exit 2 ;;
esac
