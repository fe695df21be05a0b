"""End-to-end fidelity harness: real Debezium on real PostgreSQL and MariaDB, held against cdc.

run.sh installs what is needed and calls this file. Per database it:
  1. starts the server (loopback, temporary data directory), creates the tables and loads the rows
     the initial snapshot will read (op r);
  2. starts Debezium's embedded engine (capture/, one JVM, one engine per connector setting) writing
     every event value as Kafka Connect's JsonConverter serialises it;
  3. runs a seeded random workload; after each batch it inserts a checkpoint marker row, dumps the
     tables (SELECT *: the database's own answer) and waits until every engine has written the
     marker — the engine then records how many lines each event file held (the exact prefix);
  4. stops the engine and the server, and runs the checks: ``cdc debezium-decode | cdc materialize``
     of each prefix against the dump taken with it, the other converter and connector settings at
     the end, the changelog's consistency, and debezium-encode → debezium-decode round trips.
The last line is ``e2e: N/M checks pass``; the exit code is 0 only when every check passes.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import compare
import dbs
import workload as W
from dbs import HarnessError

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# Connector settings: (variant, Debezium properties, converter settings written).
# "main" is each connector's default (decimal.handling.mode=precise; time.precision.mode adaptive for
# PostgreSQL, adaptive_time_microseconds for MySQL/MariaDB) under three JsonConverter settings.
VARIANTS: list[tuple[str, dict[str, str], str]] = [
    ("main", {}, "schema,noschema,numeric"),
    ("string-connect", {"decimal.handling.mode": "string", "time.precision.mode": "connect"}, "schema"),
    ("double-nanos", {"decimal.handling.mode": "double", "time.precision.mode": "nanoseconds"}, "schema"),
    ("precise-micros", {"decimal.handling.mode": "precise", "time.precision.mode": "microseconds"}, "schema"),
]


def log(msg: str) -> None:
    print(msg, flush=True)


# ---- results ---------------------------------------------------------------------------------


@dataclass
class Check:
    name: str
    ok: bool
    detail: list[str] = field(default_factory=list)

    def finding(self) -> str | None:
        """The findings (e2e/findings/NN-*) that explain every difference of this check, if they do."""
        text = "\n".join(self.detail)
        tags = set()
        if "known findings: " in text:
            tags.update(text.split("known findings: ")[-1].split("\n")[0].split(", "))
        elif "placeholder '__debezium_unavailable_value'" in text and "--key" in text:
            tags.add("05")
        elif "retracts" in text and "differs from the row last written" in text:
            tags.add("04")
        elif "-D of a key that does not exist" in text:
            tags.add("07")  # a TRUNCATE's -D for a row the multiset should have dropped
        if "-U image differs from the stored row" in text and all(
            _same_instant(line) for line in self.detail if "differs from the stored row" in line
        ):
            tags.add("06")
        return ", ".join(sorted(tags)) or None


def _same_instant(line: str) -> bool:
    """A materialize inconsistency whose stored and new values are one instant spelt twice."""
    import re

    m = re.search(r"stored '([^']+)', got '([^']+)'", line)
    if not m:
        return False
    try:
        import datetime as _dt

        return _dt.datetime.fromisoformat(m[1]) == _dt.datetime.fromisoformat(m[2])
    except ValueError:
        return False


class Results:
    def __init__(self) -> None:
        self.checks: list[Check] = []
        self.figures: dict[str, Any] = {}

    def add(self, name: str, diffs: list[str]) -> None:
        c = Check(name, not diffs, diffs)
        self.checks.append(c)
        if c.ok:
            log(f"  PASS {name}")
        else:
            note = f"  [explained by e2e/findings {c.finding()}]" if c.finding() else ""
            log(f"  FAIL {name}{note}")
            for line in diffs[:8]:
                log(f"       {line}")


# ---- the cdc CLI --------------------------------------------------------------------------------


def cdc_command() -> list[str]:
    exe = os.environ.get("CDC")
    if exe:
        return shlex.split(exe)
    venv = REPO / ".venv" / "bin" / "cdc"
    if venv.exists():
        return [str(venv)]
    found = shutil.which("cdc")
    if found:
        return [found]
    raise HarnessError("no cdc command: set CDC=... or create the repository's .venv (run.sh does)")


def sh(parts: list[list[str]], out: Path, timeout: float = 600) -> list[str]:
    """Run a pipeline (``a | b | …``) into ``out``; on failure, the error lines to report."""
    cmd = " | ".join(" ".join(shlex.quote(str(p)) for p in part) for part in parts)
    with open(out, "wb") as f:
        try:
            proc = subprocess.run(
                ["bash", "-o", "pipefail", "-c", cmd], stdout=f, stderr=subprocess.PIPE, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return [f"timed out after {timeout:.0f}s: {cmd}"]
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return [f"exit {proc.returncode}: {cmd}", *err[-6:]]
    return []


def read_rows(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line, parse_float=Decimal) for line in f.read().split("\n") if line.strip()]


def head(src: Path, lines: int, dst: Path) -> Path:
    with open(src, "rb") as f, open(dst, "wb") as g:
        for i, line in enumerate(f):
            if i >= lines:
                break
            g.write(line)
    return dst


def _as_floats(value: Any) -> Any:
    if isinstance(value, Decimal | int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, dict):
        return {k: _as_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_floats(v) for v in value]
    return value


def retractions_match(changelog: Path, key: str = "id", limit: int = 5) -> list[str]:
    """Every -U and -D must retract exactly the row last written for its key (materialize --strict
    holds a -U to that, but a -D only to its key)."""
    state: dict[Any, dict[str, Any]] = {}
    diffs: list[str] = []
    bad = zoned = 0
    for i, row in enumerate(read_rows(changelog), 1):
        kind = row.pop("op")
        k = row.get(key)
        if kind in ("+I", "+U"):
            state[k] = row
            continue
        stored = state.pop(k, None)
        if stored is not None and stored != row and _equal_but_zoned_text(stored, row):
            zoned += 1
            continue
        if stored != row:
            bad += 1
            if bad <= limit:
                cols = sorted(c for c in set(row) | set(stored or {}) if (stored or {}).get(c) != row.get(c))
                diffs.append(
                    f"row {i}: {kind} of key {k} differs from the row last written for it in "
                    f"{', '.join(cols[:6])}: "
                    + ", ".join(
                        f"{c}: wrote {compare._short(repr((stored or {}).get(c)))}, "
                        f"retracts {compare._short(repr(row.get(c)))}"
                        for c in cols[:2]
                    )
                )
    if bad > limit:
        diffs.append(f"… {bad - limit} more")
    if zoned:
        diffs.append(
            f"{zoned} retraction(s) differ from the written row only in how a zoned timestamp is spelt"
            + ("" if bad else "\nknown findings: 06")
        )
    return diffs


def _equal_but_zoned_text(a: dict[str, Any], b: dict[str, Any]) -> bool:
    import datetime as _dt

    if set(a) != set(b):
        return False
    for c in a:
        if a[c] != b[c]:
            try:
                if not (
                    isinstance(a[c], str)
                    and isinstance(b[c], str)
                    and a[c].endswith("Z")
                    and _dt.datetime.fromisoformat(a[c]) == _dt.datetime.fromisoformat(b[c])
                ):
                    return False
            except ValueError:
                return False
    return True


# ---- one database -------------------------------------------------------------------------------


@dataclass
class Target:
    """A captured table and how cdc is asked to read it."""

    table: str
    types: dict[str, str]
    decode_key: bool  # PostgreSQL REPLICA IDENTITY DEFAULT: --key id rebuilds the before images
    label: str


class Run:
    def __init__(self, args: argparse.Namespace, db: Any, work: Path, results: Results):
        self.args = args
        self.db = db
        self.work = work
        self.results = results
        self.cdc = cdc_command()
        self.java: subprocess.Popen[bytes] | None = None
        self.stop_file = work / "capture.stop"
        self.expected: dict[int, dict[str, Path]] = {}  # checkpoint → table → dump file
        self.variant_dirs: dict[str, Path] = {}
        self.figures: dict[str, Any] = {}

    # -- setup --

    def targets(self) -> list[Target]:
        if self.db.name == "postgres":
            return [
                Target("items_default", W.PG_TYPES, True, "postgres DEFAULT identity"),
                Target("items_full", W.PG_TYPES, False, "postgres FULL identity"),
            ]
        types = dict(W.MARIA_TYPES, u="bigunsigned")
        return [Target("items", types, False, "mariadb")]

    def create_schema(self) -> list[W.Table]:
        if self.db.name == "postgres":
            self.db.sql(
                f"CREATE TABLE items_default ({W.PG_COLUMNS});\n"
                f"CREATE TABLE items_full ({W.PG_COLUMNS});\n"
                "ALTER TABLE items_full REPLICA IDENTITY FULL;\n"
                "CREATE TABLE cdc_marker (id int PRIMARY KEY, n int NOT NULL);"
            )
            return [W.Table("items_default", W.pg_row, W.PG), W.Table("items_full", W.pg_row, W.PG)]
        self.db.sql(
            f"CREATE TABLE items ({W.MARIA_COLUMNS});\nCREATE TABLE cdc_marker (id int PRIMARY KEY, n int NOT NULL);"
        )
        return [W.Table("items", W.maria_row, W.MARIA)]

    def engine_properties(self) -> list[Path]:
        files = []
        for i, (variant, props, converters) in enumerate(VARIANTS):
            out = self.work / f"events-{variant}"
            self.variant_dirs[variant] = out
            p = {
                "name": f"e2e-{self.db.name}-{variant}",
                "topic.prefix": f"e2e_{variant.replace('-', '_')}",  # distinct: one JMX name per engine
                "offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore",
                "offset.flush.interval.ms": "60000",
                "skipped.operations": "none",  # truncate events too (Debezium skips them by default)
                "snapshot.mode": "initial",
                **self.db.debezium_properties(),
            }
            if self.db.name == "postgres":
                p.update(
                    {
                        "slot.name": f"e2e_{variant.replace('-', '_')}",
                        "publication.name": f"e2e_{variant.replace('-', '_')}",
                        "slot.drop.on.stop": "true",
                        "table.include.list": "public.items_default,public.items_full,public.cdc_marker",
                        "snapshot.include.collection.list": "public.items_default,public.items_full",
                    }
                )
            else:
                p.update(
                    {
                        "database.server.id": str(5400 + i),
                        "table.include.list": "e2e.items,e2e.cdc_marker",
                        "snapshot.include.collection.list": "e2e.items",
                        "bigint.unsigned.handling.mode": "precise",
                        "snapshot.fetch.size": "1000",
                    }
                )
            p.update(props)
            p.update({"capture.out": str(out), "capture.converters": converters, "capture.marker.table": "cdc_marker"})
            path = self.work / f"engine-{variant}.properties"
            path.write_text("".join(f"{k}={v}\n" for k, v in p.items()), encoding="utf-8")
            files.append(path)
        return files

    def start_engine(self, props: list[Path]) -> None:
        classpath = (
            os.environ.get("E2E_CLASSPATH") or (HERE / "capture" / "target" / "run-classpath.txt").read_text().strip()
        )
        log_file = open(self.work / "engine.log", "wb")  # noqa: SIM115 - the engine writes it while it runs
        self.java = subprocess.Popen(
            [
                "java",
                "-Xmx1g",
                "-XX:+UseSerialGC",
                f"-Dcapture.stop={self.stop_file}",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                classpath,
                "cdc.e2e.Capture",
                *map(str, props),
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )

    def stop_engine(self) -> None:
        if self.java is None:
            return
        self.stop_file.touch()
        try:
            self.java.wait(timeout=90)
        except subprocess.TimeoutExpired:
            self.java.kill()
            self.java.wait(timeout=30)
        self.java = None

    # -- checkpoints --

    def checkpoint_lines(self, variant: str, n: int) -> dict[str, int] | None:
        path = self.variant_dirs[variant] / "checkpoints.jsonl"
        if not path.exists():
            return None
        for line in path.read_text().splitlines():
            if line.strip():
                entry = json.loads(line)
                if entry["n"] == n:
                    return {k: int(v) for k, v in entry["lines"].items()}
        return None

    def wait_checkpoint(self, n: int, timeout: float, retry: float | None = None) -> None:
        """Wait until every engine has written marker n. With ``retry``, insert another marker n every
        ``retry`` seconds: the first one may predate an engine's replication slot / binlog position."""
        deadline = time.monotonic() + timeout
        next_retry = time.monotonic() + retry if retry else None
        attempt = 0
        pending = list(self.variant_dirs)
        while pending:
            for variant in list(pending):
                err = self.variant_dirs[variant] / "error.txt"
                if err.exists():
                    raise HarnessError(
                        f"Debezium engine {variant} failed: {err.read_text()[:2000]}\n(log: {self.work / 'engine.log'})"
                    )
                if self.checkpoint_lines(variant, n) is not None:
                    pending.remove(variant)
            if not pending:
                return
            if self.java is not None and self.java.poll() is not None:
                raise HarnessError(f"the Debezium JVM exited ({self.java.returncode}); see {self.work / 'engine.log'}")
            if next_retry is not None and time.monotonic() > next_retry:
                attempt += 1
                self.db.sql(f"INSERT INTO cdc_marker (id, n) VALUES ({1_000_000 + attempt}, {n});")
                next_retry = time.monotonic() + (retry or 0)
            if time.monotonic() > deadline:
                raise HarnessError(
                    f"checkpoint {n}: engines {pending} did not emit the marker within {timeout:.0f}s; "
                    f"see {self.work / 'engine.log'}"
                )
            time.sleep(0.1)

    def checkpoint(self, n: int, tables: list[W.Table]) -> None:
        self.db.sql(f"INSERT INTO cdc_marker (id, n) VALUES ({n}, {n});")
        dumps = {}
        for t in tables:
            path = self.work / f"expected-{n}-{t.name}.jsonl"
            rows = self.db.dump(t.name) if self.db.name == "postgres" else self.db.dump(t.name, W.maria_select())
            with open(path, "w", encoding="utf-8") as f:
                for line in rows:  # the database's JSON text as it came
                    f.write(line + "\n")
            dumps[t.name] = path
        self.expected[n] = dumps
        # Marker 0 is written while the engines start: repeat it until each engine has streamed one.
        self.wait_checkpoint(n, timeout=240, retry=3.0 if n == 0 else None)

    # -- the workload --

    def drive(self) -> None:
        args = self.args
        started = time.monotonic()
        self.db.start()
        tables = self.create_schema()
        wl = W.Workload(args.seed, tables)
        initial = max(20, args.changes // 20)
        for t in tables:  # the rows the initial snapshot reads
            stmts = [wl.insert(t, snapshot=True) for _ in range(initial)]
            for i in range(0, len(stmts), 200):
                self.db.sql("BEGIN;\n" + "\n".join(stmts[i : i + 200]) + "\nCOMMIT;")
        snapshot_rows = {t.name: len(t.live) for t in tables}
        self.start_engine(self.engine_properties())
        self.checkpoint(0, tables)
        log(f"  snapshot read: {snapshot_rows} ({time.monotonic() - started:.1f}s)")
        n_checkpoints = max(2, args.checkpoints)
        every = max(1, args.changes // n_checkpoints)
        truncate_at = {max(1, n_checkpoints * 2 // 5), max(2, n_checkpoints * 3 // 4)} if args.changes >= 100 else set()
        ck = 0
        next_ck = every
        transactions = 0
        while min(t.changes for t in tables) < args.changes:
            batch = []
            for _ in range(10):
                for t in tables:
                    if t.changes >= args.changes:
                        continue
                    sql, n = wl.transaction(t)
                    t.changes += n
                    transactions += 1
                    batch.append(sql)
            self.db.sql("\n".join(batch))
            if min(t.changes for t in tables) >= next_ck or min(t.changes for t in tables) >= args.changes:
                ck += 1
                if ck in truncate_at:  # a TRUNCATE in its own transaction, then a fresh checkpoint
                    for t in tables:
                        sql, n = wl.transaction(t, truncate_now=True)
                        t.changes += n
                        self.db.sql(sql)
                    self.figures.setdefault("truncates", 0)
                    self.figures["truncates"] += len(tables)
                self.checkpoint(ck, tables)
                log(f"  checkpoint {ck}: changes {[t.changes for t in tables]} ({time.monotonic() - started:.1f}s)")
                next_ck += every
        self.stop_engine()
        self.db.stop()
        self.figures.update(
            {
                "snapshot_rows": snapshot_rows,
                "changes": {t.name: t.changes for t in tables},
                "transactions": transactions,
                "checkpoints": ck + 1,
                "capture_seconds": round(time.monotonic() - started, 1),
            }
        )

    # -- checks --

    def decode_args(self, target: Target, key: bool | None = None) -> list[str]:
        use_key = target.decode_key if key is None else key
        return ["--on-truncate", "delete", *(["--key", "id"] if use_key else [])]

    def table_of(
        self, target: Target, events: Path, out: Path, extra: list[str] | None = None, key: bool | None = None
    ) -> list[str]:
        return sh(
            [
                [*self.cdc, "debezium-decode", events, *self.decode_args(target, key), *(extra or [])],
                [*self.cdc, "materialize", "--key", "id"],
            ],
            out,
        )

    def check_table(
        self,
        name: str,
        target: Target,
        events: Path,
        expected: Path,
        modes: dict[str, str],
        extra: list[str] | None = None,
        key: bool | None = None,
    ) -> None:
        out = events.with_suffix(".table.jsonl")
        err = self.table_of(target, events, out, extra, key)
        if err:
            self.results.add(name, err)
            return
        dbkind = "mariadb" if self.db.name == "mariadb" else "postgres"
        diffs = compare.compare_tables(read_rows(expected), read_rows(out), target.types, modes, dbkind)
        self.results.add(name, diffs)

    def run_checks(self) -> None:
        final = max(self.expected)
        events_count: dict[str, int] = {}
        for target in self.targets():
            label = target.label
            schema_file = self.variant_dirs["main"] / f"{target.table}.schema.jsonl"
            checks_dir = self.work / "checks"
            checks_dir.mkdir(exist_ok=True)
            # 1. every checkpoint: the prefix the engine had written when the marker arrived
            for n in sorted(self.expected):
                lines = (self.checkpoint_lines("main", n) or {}).get(f"{target.table}.schema.jsonl", 0)
                prefix = head(schema_file, lines, checks_dir / f"{target.table}-main-ck{n}.jsonl")
                self.check_table(
                    f"{label}: checkpoint {n} ({lines} events) equals the database",
                    target,
                    prefix,
                    self.expected[n][target.table],
                    {},
                )
            with open(schema_file, "rb") as events:
                total = sum(1 for _ in events)
            events_count[target.table] = total
            # 2. the JsonConverter settings at the end
            numeric = self.variant_dirs["main"] / f"{target.table}.numeric.jsonl"
            self.check_table(
                f"{label}: decimal.format=NUMERIC, final table equals the database",
                target,
                numeric,
                self.expected[final][target.table],
                {},
            )
            self.check_noschema(label, target)
            # 3. connector settings at the end (and at a middle checkpoint)
            for variant, props, _ in VARIANTS[1:]:
                modes = {
                    "decimal": props.get("decimal.handling.mode", "precise"),
                    "time": props.get("time.precision.mode", "adaptive"),
                }
                vfile = self.variant_dirs[variant] / f"{target.table}.schema.jsonl"
                mid = sorted(self.expected)[len(self.expected) // 2]
                for n in sorted({mid, final}):
                    lines = (self.checkpoint_lines(variant, n) or {}).get(f"{target.table}.schema.jsonl", 0)
                    prefix = head(vfile, lines, checks_dir / f"{target.table}-{variant}-ck{n}.jsonl")
                    what = "final table" if n == final else f"checkpoint {n}"
                    self.check_table(
                        f"{label}: {', '.join(f'{k}={v}' for k, v in props.items())}, {what} equals the database",
                        target,
                        prefix,
                        self.expected[n][target.table],
                        modes,
                    )
            # 4. FULL images decode without a key as well as with one
            if not target.decode_key:
                self.check_table(
                    f"{label}: decoded with --key id too, final table equals the database",
                    target,
                    schema_file,
                    self.expected[final][target.table],
                    {},
                    key=True,
                )
            # 5. the changelog is consistent (every -U/-D retracts exactly the stored row)
            changelog = checks_dir / f"{target.table}.changelog.jsonl"
            err = sh([[*self.cdc, "debezium-decode", schema_file, *self.decode_args(target)]], changelog)
            if not err:
                err = sh(
                    [[*self.cdc, "materialize", changelog, "--key", "id", "--strict"]],
                    checks_dir / f"{target.table}.strict.jsonl",
                )
            if not err:
                err = retractions_match(changelog)
            self.results.add(
                f"{label}: the decoded changelog is consistent (materialize --strict; every -U/-D "
                "is the row last written for its key)",
                err,
            )
            # 6. debezium-encode → debezium-decode round trip on the real events
            self.check_round_trip(label, target, changelog)
        self.figures["events"] = events_count

    def check_noschema(self, label: str, target: Target) -> None:
        """schemas.enable=false: cdc cannot know the logical types, so the values stay raw — they
        must equal the schema-carrying file decoded with --raw-values, row for row."""
        d = self.variant_dirs["main"]
        a = d / f"{target.table}.noschema.table.jsonl"
        b = d / f"{target.table}.schema-raw.table.jsonl"
        err = self.table_of(target, d / f"{target.table}.noschema.jsonl", a)
        err = err or self.table_of(target, d / f"{target.table}.schema.jsonl", b, ["--raw-values"])
        if not err:
            ra, rb = read_rows(a), read_rows(b)
            if ra != rb:
                err = [
                    f"{len(ra)} rows vs {len(rb)} rows; first difference: "
                    + next((f"{x} vs {y}" for x, y in zip(ra, rb, strict=False) if x != y), "row count")[:400]
                ]
        self.results.add(f"{label}: schemas.enable=false equals the schema'd events read --raw-values", err)

    def check_round_trip(self, label: str, target: Target, changelog: Path) -> None:
        checks_dir = changelog.parent
        again = checks_dir / f"{target.table}.roundtrip.jsonl"
        err = sh([[*self.cdc, "debezium-encode", changelog], [*self.cdc, "debezium-decode"]], again)
        if not err:
            ra, rb = read_rows(changelog), read_rows(again)
            if ra != rb:
                first = next((i for i, (x, y) in enumerate(zip(ra, rb, strict=False)) if x != y), min(len(ra), len(rb)))
                x = ra[first] if first < len(ra) else None
                y = rb[first] if first < len(rb) else None
                err = [
                    f"{len(ra)} changelog rows, {len(rb)} after the round trip; first difference at row {first + 1}:",
                    f"before: {str(x)[:300]}",
                    f"after:  {str(y)[:300]}",
                ]
                if len(ra) == len(rb) and all(_as_floats(x) == _as_floats(y) for x, y in zip(ra, rb, strict=True)):
                    err.append("known findings: 03")  # equal once every number is a double
        self.results.add(f"{label}: debezium-encode → debezium-decode gives the same changelog", err)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--changes", type=int, default=10_000, help="row changes per captured table (after the snapshot)")
    ap.add_argument("--only", choices=["postgres", "mariadb"])
    ap.add_argument("--checkpoints", type=int, default=8, help="checkpoints during the workload")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (events, dumps, logs)")
    ap.add_argument("--workdir", type=Path, help="where to put the work directory (default: a new one in /tmp)")
    ap.add_argument("--report", type=Path, help="write the checks and figures here as JSON")
    args = ap.parse_args()

    base = Path(tempfile.mkdtemp(prefix="cdc-e2e-", dir=args.workdir))
    os.chmod(base, 0o755)  # the postgres user reads its data directory below it
    results = Results()
    t0 = time.monotonic()
    log(f"e2e: seed {args.seed}, {args.changes} changes per table, work directory {base}")
    failed_setup = []
    try:
        for name in ("postgres", "mariadb"):
            if args.only and args.only != name:
                continue
            work = base / name
            work.mkdir()
            db = dbs.Postgres(work) if name == "postgres" else dbs.MariaDB(work)
            run = Run(args, db, work, results)
            log(f"{name}:")
            started = time.monotonic()
            try:
                run.drive()
            except HarnessError as exc:
                failed_setup.append(name)
                results.add(f"{name}: capture", [str(exc)])
                continue
            finally:
                run.stop_engine()
                db.stop()
            capture = time.monotonic() - started
            run.run_checks()
            run.figures["wall_seconds"] = round(time.monotonic() - started, 1)
            run.figures["check_seconds"] = round(time.monotonic() - started - capture, 1)
            results.figures[name] = run.figures
            log(f"  figures: {json.dumps(run.figures)}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    passed = sum(c.ok for c in results.checks)
    total = len(results.checks)
    known = [c for c in results.checks if not c.ok and c.finding()]
    if args.report:
        args.report.write_text(
            json.dumps(
                {
                    "seed": args.seed,
                    "changes": args.changes,
                    "wall_seconds": round(time.monotonic() - t0, 1),
                    "figures": results.figures,
                    "checks": [
                        {"name": c.name, "ok": c.ok, "detail": c.detail[:10], "finding": c.finding()}
                        for c in results.checks
                    ],
                },
                indent=2,
                default=str,
            )
            + "\n"
        )
    if known:
        found = sorted({t for c in known for t in (c.finding() or "").split(", ") if t})
        log(
            f"e2e: {len(known)} of {total - passed} failing checks are explained by known cdc findings "
            f"(e2e/findings/{{{','.join(found)}}}-*); the exit code still counts them"
        )
    if args.keep:
        log(f"e2e: work directory kept: {base}")
    log(f"e2e: total wall time {time.monotonic() - t0:.0f}s")
    log(f"e2e: {passed}/{total} checks pass")
    return 0 if passed == total and total > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
