#!/usr/bin/env bash
# Fetch what the Flink harness needs, into gitignored folders beside this script:
#   .flink-venv/   PyFlink (apache-flink from PyPI) + cdc itself, kept apart from cdc's own venv
#   .jars/flink/   Flink's Kafka SQL connector (one shaded jar), put on PyFlink's pipeline.jars
#   .jars/gateway/ flink-sql-gateway (not in the wheel) for flink/harness/cluster.sh
#   .jars/kafka/   a Kafka broker (kafka_2.13 and its runtime dependencies) for a local KRaft node
# Needs: python3 (3.11), Java 11+ (17 here), mvn. Idempotent: what is there is not fetched again.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$(dirname "$here")")"
FLINK_VERSION="${FLINK_VERSION:-2.3.0}"
# The newest flink-sql-connector-kafka on Maven Central is built against Flink 2.2; FINDINGS.md
# records that it runs on 2.3 (the connector API it uses did not change).
KAFKA_CONNECTOR="${KAFKA_CONNECTOR:-5.0.0-2.2}"
KAFKA_VERSION="${KAFKA_VERSION:-4.1.1}"

if [ ! -x "$here/.flink-venv/bin/python" ]; then
  python3 -m venv "$here/.flink-venv"
fi
if ! "$here/.flink-venv/bin/python" -c "import pyflink" 2>/dev/null; then
  "$here/.flink-venv/bin/pip" install -q "apache-flink==${FLINK_VERSION}"
fi
if ! "$here/.flink-venv/bin/python" -c "import cdc" 2>/dev/null; then
  "$here/.flink-venv/bin/pip" install -q -e "$repo"
fi

mkdir -p "$here/.jars/flink" "$here/.jars/kafka" "$here/.jars/gateway"
# The SQL Gateway is not in the wheel's opt/ (only flink-python and flink-sql-client are):
# flink/harness/cluster.sh puts this jar on FLINK_OPT_DIR for bin/sql-gateway.sh.
if [ -z "$(ls "$here/.jars/gateway"/flink-sql-gateway-*.jar 2>/dev/null)" ]; then
  mvn -q dependency:copy -Dartifact="org.apache.flink:flink-sql-gateway:${FLINK_VERSION}" \
      -DoutputDirectory="$here/.jars/gateway"
fi
if [ -z "$(ls "$here/.jars/flink"/flink-sql-connector-kafka-*.jar 2>/dev/null)" ]; then
  mvn -q dependency:copy -Dartifact="org.apache.flink:flink-sql-connector-kafka:${KAFKA_CONNECTOR}" \
      -DoutputDirectory="$here/.jars/flink"
fi
# Flink's debezium-avro-confluent (the Avro check, avro_check.py): one shaded jar, Avro and the registry client inside.
mkdir -p "$here/.jars/avro"
if [ -z "$(ls "$here/.jars/avro"/flink-sql-avro-confluent-registry-*.jar 2>/dev/null)" ]; then
  mvn -q dependency:copy -Dartifact="org.apache.flink:flink-sql-avro-confluent-registry:${FLINK_VERSION}" \
      -DoutputDirectory="$here/.jars/avro"
fi
if [ -z "$(ls "$here/.jars/kafka"/kafka_2.13-*.jar 2>/dev/null)" ]; then
  # A throwaway pom: copy-dependencies resolves the broker's whole runtime classpath.
  pom="$(mktemp -d)/pom.xml"
  cat > "$pom" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>kafka-broker</artifactId><version>0</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
POM
  mvn -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$here/.jars/kafka"
fi
echo "ready: $here/.flink-venv, $(ls "$here/.jars/flink" | tr '\n' ' '), $(ls "$here/.jars/kafka" | wc -l) broker jars"
