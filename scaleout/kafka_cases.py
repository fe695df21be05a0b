"""Kafka end to end: a local single-node KRaft broker (one JVM, the jars ``setup.sh`` fetched), an
input file's records produced to a topic, the SQL printed for a Kafka source run in Flink with
``flink-sql-connector-kafka`` on its classpath, and Flink's rows held against cdc's on the file.

The broker listens on 127.0.0.1 only, keeps its data under ``scaleout/.work/kafka`` and is stopped
by the harness when it is done.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
JARS = HERE / ".jars"
SAMPLES = HERE.parent / "samples"
ORACLE = HERE.parent / "tests" / "conformance" / "flink-oracle"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Broker:
    def __init__(self, folder: Path):
        self.folder = folder
        self.port = _free_port()
        self.controller = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.jars = [str(p) for p in sorted((JARS / "flink").glob("*.jar"))]

    @property
    def servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _java(self, main: str, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        cp = str(JARS / "kafka" / "*")
        return subprocess.run(
            ["java", "-Xmx256m", "-cp", cp, main, *args], input=stdin, capture_output=True, timeout=120, check=True
        )

    def start(self) -> None:
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        props = self.folder / "server.properties"
        props.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{self.controller}",
                    f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                    "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    f"log.dirs={self.folder / 'data'}",
                    "num.partitions=1",
                    "offsets.topic.replication.factor=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "group.initial.rebalance.delay.ms=0",
                    "auto.create.topics.enable=true",
                ]
            )
            + "\n"
        )
        cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        self._java("kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(props))
        log = (self.folder / "broker.log").open("wb")
        cp = str(JARS / "kafka" / "*")
        self.process = subprocess.Popen(
            ["java", "-Xmx512m", "-cp", cp, "kafka.Kafka", str(props)], stdout=log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    time.sleep(2)
                    return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the broker exited; see {self.folder / 'broker.log'}") from None
                time.sleep(0.5)
        raise RuntimeError("the broker did not start in 60 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None

    def produce(self, topic: str, records: list[tuple[str | None, str | None]]) -> None:
        """(key, value) records; a value None is a tombstone (a record without value)."""
        keyed = any(k is not None for k, _ in records)
        sep, null = "\x1f", "\x1e"  # never in JSON text
        lines = []
        for key, value in records:
            v = null if value is None else value
            lines.append(f"{key or ''}{sep}{v}" if keyed else v)
        args = ["--bootstrap-server", self.servers, "--topic", topic, "--property", f"null.marker={null}"]
        if keyed:
            args += ["--property", "parse.key=true", "--property", f"key.separator={sep}"]
        self._java("org.apache.kafka.tools.ConsoleProducer", *args, stdin=("\n".join(lines) + "\n").encode())


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


def kafka_cases(work: Path) -> list[Any]:
    from flink_check import Case

    from cdc.cli.options import Common
    from cdc.cli.print_sql import debezium_sample
    from cdc.core import flinksql as fs
    from cdc.core.mapping import parse_from_mapping, parse_to_mapping
    from cdc.core.specs import DecodeSpec

    def types_of(path: Path) -> dict[str, str]:
        """Column types from the first rows, as --print-sql infers them."""
        return fs.infer_columns(json.loads(line) for line in _lines(path)[:100])

    def kafka_source(broker: Any, topic: str, fmt: str, key: list[str] | None = None) -> fs.Source:
        connector = "upsert-kafka" if key else "kafka"
        return fs.Source("-", fmt, connector, topic, broker.servers, key or [])

    def plain(path: Path) -> list[tuple[str | None, str | None]]:
        return [(None, None if line == "null" else line) for line in _lines(path)]

    def from_changelog(broker: Any) -> str:
        case = ORACLE / "from_custom_0" / "input.jsonl"
        broker.produce("from_custom_0", plain(case))
        types = types_of(case)
        mapping = parse_from_mapping(["c, r=INSERT", "ub=UPDATE_BEFORE", "ua=UPDATE_AFTER", "d=DELETE"])
        return fs.from_changelog_sql(
            "cdc from-changelog", kafka_source(broker, "from_custom_0", "jsonl"), types, "operation", mapping
        )

    def to_changelog(broker: Any) -> str:
        case = ORACLE / "to_delflag" / "input.jsonl"
        broker.produce("to_delflag", plain(case))
        types = types_of(case)
        mapping = parse_to_mapping(["INSERT, UPDATE_AFTER=false", "DELETE=true"])
        return fs.to_changelog_sql(
            "cdc to-changelog", kafka_source(broker, "to_delflag", "jsonl"), types, "op", "deleted", mapping
        )

    def debezium(broker: Any) -> str:
        path = SAMPLES / "mysql-inventory.jsonl"
        broker.produce("inventory", plain(path))  # the 'null' line becomes a real tombstone
        types, info = debezium_sample(Common(inputs=[str(path)]), DecodeSpec(raw_values=True))
        return fs.debezium_sql(
            "cdc debezium-decode",
            kafka_source(broker, "inventory", "debezium"),
            types,
            info.schema_include,
            [("source.table", "tbl")],
            info=info,
        )

    def debezium_times(broker: Any) -> str:
        path = ORACLE / "dbz_0" / "input.jsonl"
        broker.produce("dbz_0", plain(path))
        types, info = debezium_sample(Common(inputs=[str(path)]), DecodeSpec())
        metadata = [("ingestion-timestamp", "ingestion_timestamp"), ("source.timestamp", "sts")]
        return fs.debezium_sql(
            "cdc debezium-decode", kafka_source(broker, "dbz_0", "debezium"), types, False, metadata, info=info
        )

    def upsert(broker: Any) -> str:
        path = SAMPLES / "flat-cdc.jsonl"
        records: list[tuple[str | None, str | None]] = []
        for line in _lines(path):
            row = json.loads(line)
            key = json.dumps({"id": row["id"]})
            records.append((key, None if row["__deleted"] == "true" else line))
        broker.produce("flat_cdc", records)
        types = types_of(path)
        return fs.replay_sql(kafka_source(broker, "flat_cdc", "jsonl", ["id"]), types, ["id"], input_mode="upsert")

    via = "via Kafka: the file's records produced to a topic"
    return [
        Case(
            "kafka: from_custom_0",
            "from-changelog",
            [ORACLE / "from_custom_0" / "input.jsonl"],
            [
                "--op",
                "operation",
                "-m",
                "c, r=INSERT",
                "-m",
                "ub=UPDATE_BEFORE",
                "-m",
                "ua=UPDATE_AFTER",
                "-m",
                "d=DELETE",
            ],
            kafka=from_changelog,
            note=via,
        ),
        Case(
            "kafka: to_delflag",
            "to-changelog",
            [ORACLE / "to_delflag" / "input.jsonl"],
            ["--op", "deleted", "-m", "INSERT, UPDATE_AFTER=false", "-m", "DELETE=true"],
            "append",
            kafka=to_changelog,
            note=via,
        ),
        Case(
            "kafka: mysql-inventory.jsonl + metadata",
            "debezium-decode",
            [SAMPLES / "mysql-inventory.jsonl"],
            ["--raw-values", "--metadata", "source.table=tbl"],
            kafka=debezium,
            note=via + "; the null line as a tombstone",
            defect="4 (null lines), metadata",
        ),
        Case(
            "kafka: dbz_0 + TIMESTAMP_LTZ metadata",
            "debezium-decode",
            [ORACLE / "dbz_0" / "input.jsonl"],
            ["--metadata", "ingestion-timestamp", "--metadata", "source.timestamp=sts"],
            kafka=debezium_times,
            note=via,
            defect="metadata",
        ),
        Case(
            "upsert-kafka: flat-cdc.jsonl",
            "replay",
            [SAMPLES / "flat-cdc.jsonl"],
            ["--input-mode", "upsert", "--key", "id", "--delete-when", "__deleted=true"],
            keys=["id"],
            kafka=upsert,
            note="upsert-kafka, keyed by id, deletes as tombstones; Flink's ChangelogNormalize",
        ),
    ]
