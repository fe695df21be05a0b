"""Flink as the oracle of Debezium Avro (issue 34): Flink 2.3's ``debezium-avro-confluent`` (PyFlink,
``flink-sql-avro-confluent-registry`` from Maven Central) and cdc read the same Confluent wire-format
messages from a Kafka topic and must give the same changelog; cdc reads what Flink writes.

    flink/harness/.flink-venv/bin/python flink/harness/avro_check.py [--tables m_comp,m_nopk] [--report FILE]

For each table of the real converter's output (``tests/conformance/debezium-avro``: the scenarios'
Debezium events serialised by Apicurio's AvroData):

1. **real → Flink**: the table's messages produced to a topic; the script ``cdc debezium-decode FILE
   --print-sql --sql-source kafka …`` prints run in Flink; its rows held to cdc's on the file;
2. **cdc → Flink**: cdc's changelog of the table written by ``cdc debezium-encode --format
   avro-confluent --schema-registry URL``, produced, read by Flink (the script of that file);
3. **Flink → cdc**: Flink copies topic 1 into a ``debezium-avro-confluent`` sink topic (Flink's form:
   an update as d + c); cdc decodes the sink's messages (``--schema-registry``), held to Flink's
   changelog as Flink writes it (+I/+U → c → +I, -U/-D → d → -D).

The broker (``kafka_cases.Broker``) and the registry (``registry.Registry``, a stand-in: see its
docstring) run on 127.0.0.1 and are stopped at the end. Needs ``setup.sh``'s venv and jars.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
REAL = REPO / "tests" / "conformance" / "debezium-avro"
SCENARIOS = REPO / "tests" / "conformance" / "debezium-scenarios"
JARS = HERE / ".jars"
DEFAULT_TABLES = ("mariadb:m_comp", "mariadb:m_nopk", "mariadb:m_numdef", "postgres:s_comp", "postgres:s_nopk")

from flink_check import rows_equal  # noqa: E402
from flinkrun import run_script  # noqa: E402
from kafka_cases import Broker  # noqa: E402
from registry import Registry  # noqa: E402

Rows = list[tuple[str, dict[str, Any]]]


def cdc(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """A cdc command; its JSON lines carry their schema line (decimals' scale, timestamps), as into a cdc pipe."""
    env = dict(os.environ, CDC_SCHEMA_LINE="always")
    return subprocess.run([sys.executable, "-m", "cdc", *args], input=stdin, capture_output=True, timeout=300, env=env)


def frames(data: bytes) -> list[bytes | None]:
    out: list[bytes | None] = []
    at = 0
    while at < len(data):
        n = int.from_bytes(data[at : at + 4], "big")
        at += 4
        if n == 0xFFFFFFFF:
            out.append(None)
            continue
        out.append(data[at : at + n])
        at += n
    return out


def framed(messages: list[bytes | None]) -> bytes:
    return b"".join(b"\xff\xff\xff\xff" if m is None else len(m).to_bytes(4, "big") + m for m in messages)


def table_messages(db: str, table: str, out: Path) -> Path:
    """The table's messages of the real converter's dump (its schemas' namespace names it)."""
    folder = REAL / db / "precise"
    keep: list[bytes | None] = []
    for m in frames((folder / "framed.bin").read_bytes()):
        if m is None:
            continue  # a tombstone names no table; Flink and cdc both skip them
        schema = json.loads((folder / "schemas" / f"{int.from_bytes(m[1:5], 'big')}.avsc").read_text())
        if str(schema.get("namespace", "")).endswith("." + table):
            keep.append(m)
    out.write_bytes(framed(keep))
    return out


def cdc_rows(stdout: bytes, kind_column: str = "op") -> Rows:
    rows: Rows = []
    for line in stdout.decode().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if "__cdc_schema" in row:
            continue
        rows.append((row.pop(kind_column), row))
    return rows


def kafka_bytes(*args: str) -> str:
    run = subprocess.run(
        ["java", "-cp", str(JARS / "kafka" / "*"), str(HERE / "KafkaBytes.java"), *args],
        capture_output=True,
        timeout=180,
        check=True,
    )
    return run.stdout.decode().strip()


def flink_jars() -> list[str]:
    return [str(p) for p in sorted((JARS / "flink").glob("*.jar")) + sorted((JARS / "avro").glob("*.jar"))]


def check_table(db: str, table: str, broker: Broker, registry: Registry, work: Path) -> list[dict[str, Any]]:
    meta = json.loads((SCENARIOS / db / "scenario.json").read_text())
    t = next(x for x in meta["tables"] if x["name"] == table)
    key = ["--key", ",".join(t["key"])] if t["key"] and t["decode_key"] else []
    schemas = str(REAL / db / "precise" / "schemas")
    results = []

    def flink_of(path: Path, topic: str, extra: list[str]) -> tuple[Rows | None, str, str]:
        kafka_bytes("produce", broker.servers, topic, str(path))
        printed = cdc(
            "debezium-decode", str(path), *extra, *key, "--schema-registry", registry.url, "--print-sql",
            "--sql-source", "kafka", "--topic", topic, "--bootstrap-servers", broker.servers,
        )  # fmt: skip
        if printed.returncode != 0:
            return None, "", printed.stderr.decode().strip()
        sql = printed.stdout.decode()
        outcome = run_script(sql, 1, jars=flink_jars(), idle=6.0, limit=120.0)
        if outcome.error:
            return None, sql, f"Flink: {outcome.error}"
        return list(outcome.rows), sql, ""

    # 1. the real converter's messages, read by Flink and by cdc
    path = table_messages(db, table, work / f"{db}-{table}.bin")
    want = cdc_rows(cdc("debezium-decode", str(path), "--schemas", schemas, *key).stdout)
    got, sql, error = flink_of(path, f"real-{db}-{table}", ["--schemas", schemas])
    results.append(_result(db, table, "real → Flink", want, got, error))
    # 2. cdc's own encoding, read by Flink
    encoded = work / f"{db}-{table}-cdc.bin"
    changelog = cdc("debezium-decode", str(path), "--schemas", schemas, *key)
    enc = cdc(
        "debezium-encode", "--format", "avro-confluent", "--schema-registry", registry.url,
        "--source", f"name=cdc_{db}", "--source", f"table={table}", "-o", str(encoded), stdin=changelog.stdout,
    )  # fmt: skip
    if enc.returncode != 0:
        results.append(_result(db, table, "cdc → Flink", want, None, enc.stderr.decode().strip()))
    else:
        back = cdc_rows(cdc("debezium-decode", str(encoded), "--schema-registry", registry.url, *key).stdout)
        got2, _, error2 = flink_of(encoded, f"cdc-{db}-{table}", [])
        results.append(_result(db, table, "cdc → Flink", back, got2, error2))
    # 3. Flink's encoding (d + c), read by cdc
    if sql:
        results.append(flink_to_cdc(db, table, sql, want, broker, registry, work))
    return results


def flink_to_cdc(
    db: str, table: str, sql: str, want: Rows, broker: Broker, registry: Registry, work: Path
) -> dict[str, Any]:
    """Flink copies the source topic of ``sql`` into a debezium-avro-confluent sink topic."""
    sink = f"flink-{db}-{table}"
    m = re.search(r"CREATE TABLE `cdc_input` \((.*?)\n\) WITH \((.*?)\n\);", sql, re.S)
    assert m is not None, sql
    columns = "\n".join(line for line in m.group(1).splitlines() if "PRIMARY KEY" not in line).rstrip().rstrip(",")
    settings = "\n".join(line for line in sql.splitlines() if line.startswith("SET "))
    script = (
        f"{settings}\nCREATE TABLE `cdc_input` ({m.group(1)}\n) WITH ({m.group(2)}\n);\n"
        f"CREATE TABLE `flink_sink` ({columns}\n) WITH (\n  'connector' = 'kafka',\n  'topic' = '{sink}',\n"
        f"  'properties.bootstrap.servers' = '{broker.servers}',\n  'format' = 'debezium-avro-confluent',\n"
        f"  'debezium-avro-confluent.url' = '{registry.url}',\n"
        f"  'debezium-avro-confluent.subject' = '{sink}-value'\n);\n"
        "INSERT INTO `flink_sink` SELECT * FROM `cdc_input`;\n"
    )
    outcome = run_script(script, 1, jars=flink_jars(), detach=True)
    if outcome.error:
        return _result(db, table, "Flink → cdc", want, None, f"Flink: {outcome.error}")
    written = work / f"{sink}.bin"
    try:
        expected = [("+I" if k in ("+I", "+U") else "-D", r) for k, r in want]  # Flink's form: c or d
        deadline = time.monotonic() + 90
        while True:
            kafka_bytes("consume", broker.servers, sink, str(len(expected)), "5000", str(written))
            if len(frames(written.read_bytes())) >= len(expected) or time.monotonic() > deadline:
                break
    finally:
        if outcome.job is not None:
            try:
                outcome.job.cancel()
            except Exception:  # noqa: BLE001 - the job (or its mini-cluster) already ended
                pass
    got = cdc_rows(cdc("debezium-decode", str(written), "--schema-registry", registry.url).stdout)
    return _result(db, table, "Flink → cdc", expected, got, "")


def _filled(rows: Rows, columns: list[str]) -> Rows:
    return [(kind, {c: row.get(c) for c in columns}) for kind, row in rows]


def _result(db: str, table: str, what: str, want: Rows, got: Rows | None, error: str) -> dict[str, Any]:
    # A column an event does not have reads as null (a table whose columns changed mid-stream: cdc
    # writes each event's own columns, Flink its table's)
    columns = list(dict.fromkeys(c for rows in (want, got or []) for _, row in rows for c in row))
    same = got is not None and rows_equal(_filled(want, columns), _filled(got, columns))
    refused = error.startswith("cdc: error:") and "--print-sql" not in error and got is None
    return {
        "refused": refused,
        "db": db,
        "table": table,
        "check": what,
        "rows": len(want),
        "flink_rows": None if got is None else len(got),
        "same": same,
        "error": error,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", default=",".join(DEFAULT_TABLES), help="DB:TABLE,… of the vendored scenarios")
    parser.add_argument("--report", type=Path, help="write the results as JSON")
    args = parser.parse_args(argv)
    work = HERE / ".work" / "avro"
    work.mkdir(parents=True, exist_ok=True)
    broker = Broker(HERE / ".work" / "kafka-avro")
    registries: list[Registry] = []
    results: list[dict[str, Any]] = []
    try:
        broker.start()
        for spec in args.tables.split(","):
            db, table = spec.split(":")
            registry = Registry(REAL / db / "precise" / "schemas").start()
            registries.append(registry)
            for r in check_table(db, table, broker, registry, work):
                results.append(r)
                sys.stdout.flush()
                verdict = "same" if r["same"] else "refused by cdc --print-sql" if r["refused"] else "DIFFERENT"
                counts = f"{r['rows']} cdc rows, {r['flink_rows']} Flink rows"
                print(f"{db} {table} {r['check']}: {counts}: {verdict} {r['error']}", flush=True)
    finally:
        broker.stop()
        for registry in registries:
            registry.stop()
    if args.report:
        args.report.write_text(json.dumps(results, indent=1) + "\n")
    ok = sum(r["same"] for r in results)
    refused = sum(r["refused"] for r in results)
    print(f"avro check: {ok}/{len(results) - refused} the same, {refused} refused (with the reason) by cdc --print-sql")
    return 0 if ok + refused == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
