"""PostgreSQL and MariaDB servers on loopback, in a temporary data directory, driven by their CLIs.

Both come from Debian's packages (postgresql-15, mariadb-server-core + mariadb-client-core); run.sh
installs them. Each server listens on 127.0.0.1 on a free port, keeps its data under the run's
work directory and is stopped by ``stop()`` (the harness calls it in a ``finally``).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import time
from decimal import Decimal
from pathlib import Path
from typing import Any


class HarnessError(RuntimeError):
    """A setup or wait that failed: the message says what and where to look."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(
    cmd: list[str], *, input: str | None = None, timeout: float = 120, user: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    if user is not None and os.geteuid() == 0:
        cmd = ["runuser", "-u", user, "--", *cmd]
    try:
        proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise HarnessError(f"timed out after {timeout:.0f}s: {' '.join(cmd[:4])} …") from exc
    if check and proc.returncode != 0:
        raise HarnessError(f"{' '.join(cmd[:3])} … exited {proc.returncode}:\n{proc.stderr.strip()[-3000:]}")
    return proc


def parse_json_line(line: str) -> Any:
    return json.loads(line, parse_float=Decimal)


class Postgres:
    name = "postgres"

    def __init__(self, workdir: Path):
        self.dir = workdir / "pg"
        self.port = free_port()
        self.bin = self._bindir()
        self.started = False

    @staticmethod
    def _bindir() -> Path:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            raise HarnessError("PostgreSQL server binaries not found (apt-get install postgresql)")
        return Path(found[-1]).parent

    def start(self) -> None:
        self.dir.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.dir / "data"),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ],
            user="postgres",
        )
        opts = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.dir} "
            "-c wal_level=logical -c max_replication_slots=16 -c max_wal_senders=16 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c TimeZone=UTC -c shared_buffers=64MB"
        )
        run(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.dir / "data"),
                "-l",
                str(self.dir / "server.log"),
                "-o",
                opts,
                "-w",
                "-t",
                "60",
                "start",
            ],
            user="postgres",
            timeout=90,
        )
        self.started = True

    def stop(self) -> None:
        if self.started:
            run(
                [str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "-w", "-t", "60", "stop"],
                user="postgres",
                timeout=90,
                check=False,
            )
            self.started = False

    def sql(self, script: str, timeout: float = 300) -> str:
        proc = run(
            [
                "psql",
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                "postgres",
            ],
            input=script,
            timeout=timeout,
        )
        return proc.stdout

    def dump(self, table: str) -> list[str]:
        """The table as the database answers SELECT *: one row_to_json object (JSON text) per row."""
        out = self.sql(f"SET TimeZone='UTC'; SELECT row_to_json(r__)::text FROM {table} r__;")
        return [line for line in out.split("\n") if line.strip()]

    def debezium_properties(self) -> dict[str, str]:
        return {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.port),
            "database.user": "postgres",
            "database.password": "postgres",
            "database.dbname": "postgres",
            "plugin.name": "pgoutput",
            "publication.autocreate.mode": "filtered",
        }


class MariaDB:
    name = "mariadb"

    def __init__(self, workdir: Path):
        self.dir = workdir / "mariadb"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def compat_version() -> str:
        """The version string mariadbd reports: a MySQL 5.7.19 prefix, then MariaDB's own.

        Debezium 3.6's MySQL connector (its MariaDB connector is not on Maven Central) decides by the
        version number which statements to use: 10.11 reads as "MySQL >= 8.2" and it would ask for
        SHOW BINARY LOG STATUS, which MariaDB lacks; MySQL's JDBC driver asks servers >= 5.7.20 for
        @@transaction_isolation, which MariaDB 10.11 lacks. Below 5.7.20 both use what MariaDB has
        (SHOW MASTER STATUS, @@tx_isolation). Only the reported string changes, not the server.
        """
        out = run(["mariadbd", "--version"]).stdout
        real = next((w for w in out.split() if "MariaDB" in w), "MariaDB")
        return f"5.7.19-{real}"

    def start(self) -> None:
        self.dir.mkdir(parents=True)
        data = self.dir / "data"
        run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={data}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            timeout=180,
        )
        log = open(self.dir / "server.log", "wb")  # noqa: SIM115 - the server writes it while it runs
        self.proc = subprocess.Popen(
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={data}",
                "--user=root",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--socket={self.dir}/mysqld.sock",
                f"--pid-file={self.dir}/mysqld.pid",
                f"--log-bin={data}/binlog",
                "--server-id=1",
                "--binlog-format=ROW",
                "--binlog-row-image=FULL",
                "--skip-name-resolve",
                "--innodb-flush-log-at-trx-commit=2",
                "--sync-binlog=0",
                "--default-time-zone=+00:00",
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_bin",
                "--innodb-buffer-pool-size=128M",
                f"--log-error={self.dir}/error.log",
                f"--version={self.compat_version()}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            ok = run(
                ["mariadb", "--no-defaults", f"--socket={self.dir}/mysqld.sock", "-uroot", "-e", "SELECT 1"],
                check=False,
                timeout=10,
            )
            if ok.returncode == 0:
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise HarnessError(f"MariaDB did not start; see {self.dir}/error.log")
            time.sleep(0.3)
        self._root_sql(
            "CREATE USER 'cdc'@'%' IDENTIFIED BY 'cdc'; GRANT ALL ON *.* TO 'cdc'@'%' WITH GRANT OPTION; "
            "CREATE DATABASE e2e CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
        )

    def _root_sql(self, script: str) -> str:
        return run(["mariadb", "--no-defaults", f"--socket={self.dir}/mysqld.sock", "-uroot"], input=script).stdout

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self.proc = None

    def sql(self, script: str, timeout: float = 300) -> str:
        proc = run(
            [
                "mariadb",
                "--no-defaults",
                f"--socket={self.dir}/mysqld.sock",
                "-uroot",
                "-N",
                "-B",
                "--raw",
                "--default-character-set=utf8mb4",
                "e2e",
            ],
            input=script,
            timeout=timeout,
        )
        return proc.stdout

    def dump(self, table: str, select: str) -> list[str]:
        out = self.sql(f"SET time_zone='+00:00'; SELECT {select} FROM {table};")
        return [line for line in out.split("\n") if line.strip()]

    def debezium_properties(self) -> dict[str, str]:
        return {
            "connector.class": "io.debezium.connector.mysql.MySqlConnector",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.port),
            "database.user": "cdc",
            "database.password": "cdc",
            "database.include.list": "e2e",
            "schema.history.internal": "io.debezium.relational.history.MemorySchemaHistory",
            "include.schema.changes": "false",
        }
