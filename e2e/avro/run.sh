#!/usr/bin/env bash
# Serialise the real Debezium scenario streams (tests/conformance/debezium-scenarios, JsonConverter output)
# again with a real Avro converter (Apicurio's AvroData, Apache Avro's writers) into every form Avro events
# reach a file in, and vendor them as tests/conformance/debezium-avro (see its PROVENANCE.md).
#   e2e/avro/run.sh [OUT]     (default: the vendored folder)
# Needs Java 17 and mvn (Maven Central); builds target/ (git-ignored) when the sources change.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="${1:-$REPO/tests/conformance/debezium-avro}"
if [ ! -f "$HERE/target/classpath.txt" ] || [ "$HERE/pom.xml" -nt "$HERE/target/classpath.txt" ] \
   || [ -n "$(find "$HERE/src" -newer "$HERE/target/classpath.txt" -type f 2>/dev/null)" ]; then
  (cd "$HERE" && timeout 900 mvn -q -B package dependency:build-classpath -Dmdep.outputFile=target/classpath.txt >&2)
fi
CP="$HERE/target/classes:$(cat "$HERE/target/classpath.txt")"
SRC="$REPO/tests/conformance/debezium-scenarios"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for db in postgres mariadb; do
  for v in precise string double; do
    java -cp "$CP" cdc.e2e.avro.AvroForms "$SRC/$db/$v.all.schema.jsonl" "$WORK/$db/$v"
  done
  rm -rf "$OUT/$db" && mkdir -p "$OUT/$db"
  cp -r "$WORK/$db/precise" "$OUT/$db/precise"
  for v in string double; do
    mkdir -p "$OUT/$db/$v" && cp -r "$WORK/$db/$v/schemas" "$WORK/$db/$v/framed.bin" "$OUT/$db/$v/"
  done
done
echo "written: $OUT"
