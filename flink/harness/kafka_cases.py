"""Kafka end to end: a local single-node KRaft broker (one JVM, the jars ``setup.sh`` fetched), an
input file's records produced to a topic, and the script of the same cdc command line with
``--sql-source kafka|upsert-kafka --topic T --bootstrap-servers H`` (and, for some cases,
``--sql-sink kafka|upsert-kafka --sink-topic S``) run in Flink with ``flink-sql-connector-kafka``
on its classpath. Flink's rows — the SELECT's, or the sink topic's records read back with Kafka's
console consumer — are held against cdc's on the file; an upsert-kafka sink's topic is compared
as the table it holds (the last value per key, a tombstone deleting it) with cdc's rows applied
the same way.

The broker listens on 127.0.0.1 only, keeps its data under ``flink/harness/.work/kafka`` and is stopped
by the harness when it is done.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
JARS = HERE / ".jars"
SAMPLES = HERE.parent.parent / "samples"
ORACLE = HERE.parent.parent / "tests" / "conformance" / "flink-oracle"


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

    def consume(self, topic: str, offset: int, wait_ms: int = 3000) -> list[tuple[str | None, str | None]]:
        """The (key, value) records of partition 0 from ``offset`` on; value None for a tombstone."""
        sep = "\x1f"
        args = [
            "--bootstrap-server",
            self.servers,
            "--topic",
            topic,
            "--partition",
            "0",
            "--offset",
            str(offset),
            "--timeout-ms",
            str(wait_ms),
            "--property",
            "print.key=true",
            "--property",
            f"key.separator={sep}",
            "--property",
            "null.literal=\x1e",
        ]
        cp = str(JARS / "kafka" / "*")
        run = subprocess.run(
            ["java", "-Xmx256m", "-cp", cp, "org.apache.kafka.tools.consumer.ConsoleConsumer", *args],
            capture_output=True,
            timeout=120,
        )
        out: list[tuple[str | None, str | None]] = []
        for line in run.stdout.decode().split("\n"):  # not splitlines: it splits on \x1e too
            if not line:
                continue
            key, _, value = line.partition(sep)
            out.append((None if key == "\x1e" else key, None if value == "\x1e" else value))
        return out


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


@dataclass
class Feed:
    """How a Kafka case's input reaches its topic, and where its script writes.

    ``source``: kafka (each line a record; a ``null`` line a tombstone) or upsert-kafka (records
    keyed by ``key`` as JSON); ``sink``: none (the SELECT's rows), kafka or upsert-kafka."""

    path: Path
    source: str = "kafka"
    sink: str = "none"
    key: tuple[str, ...] = ()
    topic: str = ""
    sink_topic: str = ""
    consumed: int = 0  # records of the sink topic read by earlier runs (p=1 before p=4)

    def records(self) -> list[tuple[str | None, str | None]]:
        out: list[tuple[str | None, str | None]] = []
        for line in _lines(self.path):
            if self.source == "upsert-kafka":
                row = json.loads(line)
                out.append((json.dumps({k: row[k] for k in self.key}), line))
            else:
                out.append((None, None if line == "null" else line))
        return out

    def prepare(self, broker: Any) -> list[str]:
        """Produce the input to a fresh topic; the SQL flags of the case."""
        run = uuid.uuid4().hex[:8]
        self.topic, self.sink_topic, self.consumed = f"cdc-in-{run}", f"cdc-out-{run}", 0
        broker.produce(self.topic, self.records())
        flags = ["--sql-source", self.source, "--topic", self.topic, "--bootstrap-servers", broker.servers]
        if self.sink != "none":
            flags += ["--sql-sink", self.sink, "--sink-topic", self.sink_topic]
        return flags

    def run(self, broker: Any, sql: str, parallelism: int, expect: int) -> Any:
        from flinkrun import Outcome, run_script

        if self.sink == "none":
            return run_script(sql, parallelism, jars=broker.jars, idle=4.0, limit=90.0, expect=expect)
        outcome: Outcome = run_script(sql, parallelism, jars=broker.jars, detach=True)
        if outcome.error or outcome.job is None:
            return outcome
        records: list[tuple[str | None, str | None]] = []
        deadline = time.monotonic() + 90
        try:
            while time.monotonic() < deadline:  # until two reads in a row find nothing new
                time.sleep(2)
                more = broker.consume(self.sink_topic, self.consumed + len(records))
                if not more and records:
                    break
                records += more
        finally:
            outcome.job.cancel().result()
        self.consumed += len(records)
        rows: list[tuple[str, dict[str, Any]]] = []
        for key, value in records:
            if value is None:  # an upsert-kafka tombstone: the key's row is deleted
                rows.append(("-D", json.loads(key or "{}", parse_float=Decimal)))
            else:
                rows.append(("+I", json.loads(value, parse_float=Decimal)))
        outcome.rows = rows
        outcome.columns = list(rows[0][1]) if rows else []
        return outcome


def kafka_cases(work: Path) -> list[Any]:
    from cases import AGGREGATE, ORACLE, SAMPLES, Case

    s = SAMPLES

    def case(
        group: str,
        name: str,
        command: str,
        path: Path,
        flags: list[str],
        feed: Feed,
        output: str = "changelog",
        keys: list[str] | None = None,
        defect: str = "",
    ) -> Any:
        where = f"{feed.source} → {feed.sink if feed.sink != 'none' else 'SELECT'}"
        return Case(
            group, f"{name} ({where})", command, [path], flags, output, keys=keys or [], defect=defect, kafka=feed
        )

    custom = ["--op", "operation", "-m", "c, r=INSERT", "-m", "ub=UPDATE_BEFORE", "-m", "ua=UPDATE_AFTER"]
    delflag = ["--op", "deleted", "-m", "INSERT, UPDATE_AFTER=false", "-m", "DELETE=true"]
    inv = s / "mysql-inventory.jsonl"
    oracle = "conformance/flink-oracle"
    upsert_in = AGGREGATE / "upsert_input" / "input.jsonl"
    return [
        case(
            oracle,
            "from_custom_0",
            "from-changelog",
            ORACLE / "from_custom_0" / "input.jsonl",
            [*custom, "-m", "d=DELETE"],
            Feed(ORACLE / "from_custom_0" / "input.jsonl"),
        ),
        case(
            oracle,
            "to_delflag",
            "to-changelog",
            ORACLE / "to_delflag" / "input.jsonl",
            delflag,
            Feed(ORACLE / "to_delflag" / "input.jsonl", sink="kafka"),
            "append",
        ),
        case(
            "samples",
            inv.name,
            "debezium-decode",
            inv,
            ["--raw-values", "--metadata", "source.table=tbl"],
            Feed(inv),
            defect="4 (null line: a tombstone)",
        ),
        case(
            oracle,
            "dbz_0",
            "debezium-decode",
            ORACLE / "dbz_0" / "input.jsonl",
            ["--metadata", "ingestion-timestamp", "--metadata", "source.timestamp=sts"],
            Feed(ORACLE / "dbz_0" / "input.jsonl", sink="kafka"),
        ),
        case(
            "samples",
            "canal-products.jsonl",
            "decode",
            s / "canal-products.jsonl",
            ["--envelope", "canal", "--table-include", "products", "--on-error", "skip"],
            Feed(s / "canal-products.jsonl"),
        ),
        case(
            "samples",
            "flat-cdc.jsonl",
            "replay",
            s / "flat-cdc.jsonl",
            ["--input-mode", "upsert", "--key", "id"],
            Feed(s / "flat-cdc.jsonl", "upsert-kafka", key=("id",)),
            keys=["id"],
        ),
        case(
            "samples",
            "flat-cdc.jsonl",
            "replay",
            s / "flat-cdc.jsonl",
            ["--input-mode", "upsert", "--key", "id", "--emit", "upsert"],
            Feed(s / "flat-cdc.jsonl", "upsert-kafka", "upsert-kafka", key=("id",)),
            keys=["id"],
        ),
        case(
            "conformance/flink-aggregate",
            "upsert_input",
            "aggregate",
            upsert_in,
            [
                "--input-mode",
                "upsert",
                "--key",
                "id",
                "--group-by",
                "user",
                "--agg",
                "n=COUNT(*)",
                "--agg",
                "total=SUM(dwell)",
                "--agg",
                "longest=MAX(dwell)",
            ],
            Feed(upsert_in, "upsert-kafka", "upsert-kafka", key=("id",)),
            keys=["user"],
        ),
        case(
            "samples",
            "clicks.jsonl",
            "aggregate",
            s / "clicks.jsonl",
            ["--input-mode", "append", "-g", "user", "-a", "cnt=COUNT(*)"],
            Feed(s / "clicks.jsonl", sink="upsert-kafka"),
            keys=["user"],
        ),
        case(
            "samples",
            "product-prices.jsonl",
            "materialize",
            s / "product-prices.jsonl",
            ["--key", "product_id"],
            Feed(s / "product-prices.jsonl", sink="upsert-kafka"),
            "table",
            keys=["product_id"],
        ),
        case(
            oracle,
            "to_named",
            "debezium-encode",
            ORACLE / "to_named" / "input.jsonl",
            ["--split-updates"],
            Feed(ORACLE / "to_named" / "input.jsonl", sink="kafka"),
            "events",
        ),
    ]
