"""The harness's cases: every command that has ``--print-sql``, over the conformance inputs of the
kind it reads and over the bundled samples it applies to, each as the cdc command line a user
types (``cdc COMMAND INPUT FLAGS``; the script is that line plus ``--print-sql`` and the case's
SQL flags).

Which command reads which input:

- ``from-changelog``: rows with an op-code column — flink-oracle ``from_*``, the change feeds
  (their presets), samples with an op column or a preset that fits;
- ``to-changelog``, ``materialize``, ``debezium-encode``: changelog rows (a kind column) —
  flink-oracle ``to_*``, the changelog inputs of flink-aggregate (materialize), the change feeds
  as cdc's from-changelog writes them (materialize with commit columns), samples; and envelopes
  through ``--input-format`` (to-changelog);
- ``decode`` / ``debezium-decode``: envelopes — flink-oracle ``dbz_*``, Flink's own test data of
  debezium-json / canal-json / maxwell-json / ogg-json, every documented case of
  flink-canal|maxwell|ogg ``doc-cases.jsonl``, samples;
- ``aggregate``: every flink-aggregate case (its ``args.json``), samples;
- ``replay``: append rows with a time column (``--order-by``), upsert rows, changelog rows.

The CSV copies of flink-oracle inputs (``*.csv``) exercise defect 5 (the header line).
"""

from __future__ import annotations

import csv
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CONFORMANCE = REPO / "tests" / "conformance"
ORACLE = CONFORMANCE / "flink-oracle"
AGGREGATE = CONFORMANCE / "flink-aggregate"
FEEDS = CONFORMANCE / "change-feeds"
SAMPLES = REPO / "samples"


@dataclass
class Case:
    group: str  # where the input comes from: conformance/<folder> or samples
    name: str  # the input (and a variant)
    command: str  # the cdc command
    inputs: list[Path]
    flags: list[str] = field(default_factory=list)  # the job's flags: for cdc's run and for --print-sql
    # changelog: rows with a kind column | append: every row +I | table: the rows of a table | events: Debezium
    output: str = "changelog"
    sql_flags: list[str] = field(default_factory=list)  # added to --print-sql only (--sql-sink …)
    keys: list[str] = field(default_factory=list)  # table: netted by key (else a multiset); else: order per key
    defect: str = ""  # issue #11's defect the case exercises
    note: str = ""
    sink_dir: Path | None = None  # a filesystem sink: its files are Flink's rows
    kafka: Any = None  # Kafka cases: how the input reaches the topic (kafka_cases.Feed)

    @property
    def label(self) -> str:
        return f"{self.group}/{self.name}"

    @property
    def upsert_sink(self) -> bool:
        return "upsert-kafka" in self.sql_flags or getattr(self.kafka, "sink", "") == "upsert-kafka"

    def argv(self) -> list[str]:
        return [self.command, *map(str, self.inputs), *self.flags]

    def sql_flags_shown(self) -> list[str]:
        """The SQL flags as the results table shows them (paths relative to the repository)."""
        return [f.replace(str(REPO) + "/", "") for f in self.sql_flags]


# ------------------------------------------------------------------------------------- inputs


def csv_copy(src: Path, out: Path) -> Path:
    """A JSON-lines input as a CSV file with a header line (values as text, null as empty)."""
    rows = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    columns = list(dict.fromkeys(c for r in rows for c in r))
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow(["" if r.get(c) is None else _text(r[c]) for c in columns])
    return out


def _text(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _doc_flags(options: dict[str, Any] | None) -> list[str]:
    """EnvelopeOptions fields of a doc case → decode flags."""
    flags: list[str] = []
    for name, value in (options or {}).items():
        if name == "key":
            flags += ["--key", ",".join(value)]
        elif name == "raw_values":
            flags += ["--raw-values"] if value else []
        elif name in ("on_truncate", "bootstrap", "table_include", "database_include"):
            flags += ["--" + name.replace("_", "-"), str(value)]
        else:
            raise ValueError(f"doc case option {name!r} has no flag here")
    return flags


def _flag(flags: list[str], name: str) -> str | None:
    return flags[flags.index(name) + 1] if name in flags else None


# ------------------------------------------------------------------------------------- commands


def from_changelog(work: Path) -> list[Case]:
    cases = []
    for d in sorted(ORACLE.glob("from_*")):
        flags = json.loads((d / "args.json").read_text())["flags"]
        cases.append(Case("conformance/flink-oracle", d.name, "from-changelog", [d / "input.jsonl"], flags))
    for name in ("from_default_0", "from_custom_0"):
        d = ORACLE / name
        flags = json.loads((d / "args.json").read_text())["flags"]
        path = csv_copy(d / "input.jsonl", work / f"{name}.csv")
        cases.append(Case("conformance/flink-oracle", f"{name}.csv", "from-changelog", [path], flags, defect="5"))
    for feed, preset in (
        ("delta-cdf/feed.csv", "delta-cdf"),
        ("delta-cdf-keyless/feed.csv", "delta-cdf"),
        ("ducklake/changes.csv", "ducklake"),
        ("iceberg/changes.csv", "iceberg"),
    ):
        path = FEEDS / feed
        cases.append(Case("conformance/change-feeds", feed, "from-changelog", [path], ["--preset", preset]))
        cases.append(
            Case(
                "conformance/change-feeds",
                feed + " (no pairing)",
                "from-changelog",
                [path],
                ["--preset", preset, "--commit-columns", ""],
                defect="5",
            )
        )
    s = SAMPLES
    retract = ["--op", "__op", "-m", "c, r=INSERT", "-m", "x=UPDATE_BEFORE", "-m", "u=UPDATE_AFTER", "-m", "d=DELETE"]
    cases += [
        Case("samples", "flat-cdc.jsonl", "from-changelog", [s / "flat-cdc.jsonl"], ["--preset", "debezium"]),
        Case(
            "samples",
            "flat-cdc.jsonl",
            "from-changelog",
            [s / "flat-cdc.jsonl"],
            ["--preset", "debezium", "--key", "id"],
            defect="1",
        ),
        Case(
            "samples", "flat-cdc.jsonl", "from-changelog", [s / "flat-cdc.jsonl"], [*retract, "--key", "id"], defect="1"
        ),
        Case("samples", "orders-bad-op.jsonl", "from-changelog", [s / "orders-bad-op.jsonl"]),
        Case(
            "samples",
            "orders-bad-op.jsonl",
            "from-changelog",
            [s / "orders-bad-op.jsonl"],
            ["--on-error", "skip"],
            defect="2",
        ),
        Case(
            "samples",
            "orders-bad-op.jsonl",
            "from-changelog",
            [s / "orders-bad-op.jsonl"],
            ["--on-error", "skip", "--drop", "INSERT"],
            defect="2",
        ),
        Case(
            "samples",
            "orders-bad-op.jsonl → filesystem",
            "from-changelog",
            [s / "orders-bad-op.jsonl"],
            ["--on-error", "skip"],
            sql_flags=["--sql-sink", "filesystem", "--sink-path", str(work / "sink" / "from-changelog")],
            sink_dir=work / "sink" / "from-changelog",
            defect="2",
        ),
        Case("samples", "orders-ops.csv", "from-changelog", [s / "orders-ops.csv"], defect="5"),
        Case(
            "samples",
            "product-prices.jsonl",
            "from-changelog",
            [s / "product-prices.jsonl"],
            ["--preset", "flink-short"],
        ),
    ]
    for name, preset in (("delta-cdf-orders.csv", "delta-cdf"), ("ducklake-changes.csv", "ducklake")):
        cases.append(Case("samples", name, "from-changelog", [s / name], ["--preset", preset]))
        cases.append(
            Case(
                "samples",
                name + " (no pairing)",
                "from-changelog",
                [s / name],
                ["--preset", preset, "--commit-columns", ""],
                defect="5",
            )
        )
    return cases


def to_changelog(work: Path) -> list[Case]:
    cases = []
    for d in sorted(ORACLE.glob("to_*")):
        flags = json.loads((d / "args.json").read_text())["flags"]
        cases.append(Case("conformance/flink-oracle", d.name, "to-changelog", [d / "input.jsonl"], flags, "append"))
    for name in ("to_default", "to_delflag"):
        d = ORACLE / name
        flags = json.loads((d / "args.json").read_text())["flags"]
        path = csv_copy(d / "input.jsonl", work / f"{name}.csv")
        cases.append(
            Case("conformance/flink-oracle", f"{name}.csv", "to-changelog", [path], flags, "append", defect="5")
        )
    for d in sorted(ORACLE.glob("dbz_*")):
        defect = "3" if "schema" in d.name else ""
        cases.append(
            Case(
                "conformance/flink-oracle",
                d.name,
                "to-changelog",
                [d / "input.jsonl"],
                ["--input-format", "debezium"],
                "append",
                defect=defect,
            )
        )
    for group, path, fmt in (
        ("flink-canal", CONFORMANCE / "flink-canal" / "canal-data.txt", "canal"),
        ("flink-maxwell", CONFORMANCE / "flink-maxwell" / "maxwell-data.txt", "maxwell"),
        ("flink-ogg", CONFORMANCE / "flink-ogg" / "ogg-data.txt", "ogg"),
    ):
        cases.append(Case(f"conformance/{group}", path.name, "to-changelog", [path], ["--input-format", fmt], "append"))
    s = SAMPLES
    cases += [
        Case("samples", "product-prices.jsonl", "to-changelog", [s / "product-prices.jsonl"], [], "append"),
        Case(
            "samples",
            "product-prices.jsonl",
            "to-changelog",
            [s / "product-prices.jsonl"],
            ["--drop", "UPDATE_BEFORE"],
            "append",
        ),
        Case(
            "samples",
            "product-prices.jsonl → filesystem",
            "to-changelog",
            [s / "product-prices.jsonl"],
            ["--op", "deleted", "-m", "INSERT, UPDATE_AFTER=false", "-m", "DELETE=true"],
            "append",
            sql_flags=["--sql-sink", "filesystem", "--sink-path", str(work / "sink" / "to-changelog")],
            sink_dir=work / "sink" / "to-changelog",
        ),
        Case(
            "samples",
            "mysql-inventory.jsonl",
            "to-changelog",
            [s / "mysql-inventory.jsonl"],
            ["--input-format", "debezium"],
            "append",
            defect="3, 4",
        ),
        Case(
            "samples",
            "postgres-default-identity.jsonl",
            "to-changelog",
            [s / "postgres-default-identity.jsonl"],
            ["--input-format", "debezium"],
            "append",
        ),
        Case(
            "samples", "canal-products.jsonl", "to-changelog", [s / "canal-products.jsonl"], ["-i", "canal"], "append"
        ),
        Case(
            "samples",
            "maxwell-products.jsonl",
            "to-changelog",
            [s / "maxwell-products.jsonl"],
            ["-i", "maxwell"],
            "append",
        ),
        Case("samples", "ogg-products.jsonl", "to-changelog", [s / "ogg-products.jsonl"], ["-i", "ogg"], "append"),
    ]
    return cases


def debezium_decode(work: Path) -> list[Case]:
    cases = [
        Case("conformance/flink-oracle", d.name, "debezium-decode", [d / "input.jsonl"])
        for d in sorted(ORACLE.glob("dbz_*"))
    ]
    s = SAMPLES
    inv = s / "mysql-inventory.jsonl"
    pg = s / "postgres-default-identity.jsonl"
    cases += [
        Case("samples", inv.name, "debezium-decode", [inv], defect="4"),
        Case("samples", inv.name, "debezium-decode", [inv], ["--raw-values"], defect="4"),
        Case("samples", inv.name, "debezium-decode", [inv], ["--raw-values", "--on-error", "skip"], defect="4"),
        Case(
            "samples",
            inv.name,
            "debezium-decode",
            [inv],
            ["--raw-values", "--on-error", "skip", "--metadata", "source.table=tbl"],
        ),
        Case("samples", pg.name, "debezium-decode", [pg]),
        Case("samples", pg.name, "debezium-decode", [pg], ["--key", "id"], keys=["id"]),
    ]
    return cases


# Doc cases cdc refuses with a hint, run again with the hint followed (flags added).
HINTS_FOLLOWED = {
    "canal/truncate-delete": [["--on-truncate", "skip", "--on-error", "skip"]],
    "canal/decimal-and-bool-by-sqltype": [["--raw-values"]],
    "maxwell/maxwell-docs-bootstrap-skip": [["--on-error", "skip"]],
    "ogg/truncate-skip": [["--on-error", "skip"]],
}


def decode(work: Path) -> list[Case]:
    cases = []
    for path in sorted((CONFORMANCE / "flink-debezium").glob("*.txt")):
        cases.append(Case("conformance/flink-debezium", path.name, "decode", [path], ["--envelope", "debezium"]))
    canal = CONFORMANCE / "flink-canal"
    cases += [
        Case(
            "conformance/flink-canal", "canal-data.txt", "decode", [canal / "canal-data.txt"], ["--envelope", "canal"]
        ),
        Case(
            "conformance/flink-canal",
            "canal-data-filter-table.txt",
            "decode",
            [canal / "canal-data-filter-table.txt"],
            ["--envelope", "canal", "--database-include", "^my.*", "--table-include", "^prod.*"],
        ),
        Case(
            "conformance/flink-maxwell",
            "maxwell-data.txt",
            "decode",
            [CONFORMANCE / "flink-maxwell" / "maxwell-data.txt"],
            ["--envelope", "maxwell"],
        ),
        Case(
            "conformance/flink-ogg",
            "ogg-data.txt",
            "decode",
            [CONFORMANCE / "flink-ogg" / "ogg-data.txt"],
            ["--envelope", "ogg"],
        ),
    ]
    (work / "doc-cases").mkdir(parents=True, exist_ok=True)
    for envelope in ("canal", "maxwell", "ogg"):
        for line in (CONFORMANCE / f"flink-{envelope}" / "doc-cases.jsonl").read_text().splitlines():
            doc = json.loads(line)
            path = work / "doc-cases" / f"{envelope}-{doc['case']}.jsonl"
            path.write_text("".join(json.dumps(e) + "\n" for e in doc["events"]))
            flags = ["--envelope", envelope, *_doc_flags(doc.get("options"))]
            key = _flag(flags, "--key")
            for extra in [[], *HINTS_FOLLOWED.get(f"{envelope}/{doc['case']}", [])]:
                cases.append(
                    Case(
                        f"conformance/flink-{envelope}",
                        f"doc-cases: {doc['case']}",
                        "decode",
                        [path],
                        [*flags, *extra],
                        keys=key.split(",") if key else [],
                        note="the refusal's hint followed" if extra else "",
                    )
                )
    s = SAMPLES
    cases += [
        Case("samples", "canal-products.jsonl", "decode", [s / "canal-products.jsonl"], ["--envelope", "canal"]),
        Case(
            "samples",
            "canal-products.jsonl",
            "decode",
            [s / "canal-products.jsonl"],
            ["--envelope", "canal", "--table-include", "products", "--on-error", "skip"],
        ),
        Case("samples", "maxwell-products.jsonl", "decode", [s / "maxwell-products.jsonl"], ["--envelope", "maxwell"]),
        Case(
            "samples",
            "maxwell-products.jsonl",
            "decode",
            [s / "maxwell-products.jsonl"],
            ["--envelope", "maxwell", "--bootstrap", "skip", "--on-error", "skip"],
        ),
        Case("samples", "ogg-products.jsonl", "decode", [s / "ogg-products.jsonl"], ["--envelope", "ogg"]),
        Case(
            "samples",
            "ogg-products.jsonl",
            "decode",
            [s / "ogg-products.jsonl"],
            ["--envelope", "ogg", "--key", "ID"],
            keys=["ID"],
        ),
        Case(
            "samples",
            "mysql-inventory.jsonl",
            "decode",
            [s / "mysql-inventory.jsonl"],
            ["--envelope", "debezium", "--raw-values", "--on-error", "skip"],
        ),
        Case(
            "samples",
            "postgres-default-identity.jsonl",
            "decode",
            [s / "postgres-default-identity.jsonl"],
            ["--key", "id"],
            keys=["id"],
            note="--envelope auto",
        ),
    ]
    return cases


def _changelog_inputs() -> list[tuple[str, Path, list[str]]]:
    """(group, input, key) of the conformance changelog-row inputs."""
    out = [("conformance/flink-oracle", d / "input.jsonl", ["id"]) for d in sorted(ORACLE.glob("to_*"))]
    for d in sorted(AGGREGATE.iterdir()):
        if (d / "args.json").is_file() and "changelog" in json.loads((d / "args.json").read_text())["flags"]:
            out.append(("conformance/flink-aggregate", d / "input.jsonl", []))
    return out


def materialize(work: Path) -> list[Case]:
    cases = []
    for group, path, key in _changelog_inputs():
        name = path.parent.name
        cases.append(Case(group, name, "materialize", [path], [], "table"))
        if key:
            cases.append(Case(group, name, "materialize", [path], ["--key", ",".join(key)], "table", keys=key))
    # The change feeds as cdc's from-changelog writes them (commit columns kept), as the tests run them.
    for case in json.loads((FEEDS / "cases.json").read_text()):
        feed = FEEDS / case["feed"]
        changes = work / "feeds" / (case["feed"].replace("/", "-") + ".jsonl")
        if not changes.exists():
            changes.parent.mkdir(parents=True, exist_ok=True)
            run = subprocess.run(
                [*cdc_argv(), "from-changelog", "--preset", case["preset"], str(feed)], capture_output=True
            )
            changes.write_bytes(run.stdout)
        commit = {
            "delta-cdf": "_commit_version,_commit_timestamp",
            "ducklake": "snapshot_id",
            "iceberg": "_change_ordinal,_commit_snapshot_id",
        }
        flags = ["--commit-columns", commit[case["preset"]]]
        if case["key"]:
            flags += ["--key", ",".join(case["key"])]
        if "as_of" in case:
            flags += ["--as-of", case["as_of"], "--time-column", case["time_column"]]
        cases.append(
            Case(
                "conformance/change-feeds",
                case["case"],
                "materialize",
                [changes],
                flags,
                "table",
                keys=case["key"],
                note=f"cdc from-changelog --preset {case['preset']} {case['feed']}, then materialize",
            )
        )
    dbz = ORACLE / "dbz_0" / "input.jsonl"
    cases += [
        Case("conformance/flink-oracle", "dbz_0", "materialize", [dbz], ["-i", "debezium"], "table"),
        Case("conformance/flink-oracle", "dbz_0", "materialize", [dbz], ["-i", "debezium", "--key", "id"], "table"),
    ]
    s = SAMPLES
    pp = s / "product-prices.jsonl"
    cases += [
        Case("samples", pp.name, "materialize", [pp], [], "table"),
        Case("samples", pp.name, "materialize", [pp], ["--key", "product_id"], "table", keys=["product_id"]),
        Case(
            "samples",
            pp.name + " → filesystem",
            "materialize",
            [pp],
            ["--key", "product_id"],
            "table",
            keys=["product_id"],
            sql_flags=["--sql-sink", "filesystem", "--sink-path", str(work / "sink" / "materialize")],
            sink_dir=work / "sink" / "materialize",
        ),
        Case("samples", pp.name, "materialize", [pp], ["--key", "product_id", "--dedup"], "table", keys=["product_id"]),
    ]
    return cases


def debezium_encode(work: Path) -> list[Case]:
    cases = []
    inputs = [(g, p) for g, p, _ in _changelog_inputs() if g.endswith("flink-oracle")]
    inputs.append(("samples", SAMPLES / "product-prices.jsonl"))
    for group, path in inputs:
        name = path.parent.name if group != "samples" else path.name
        sink = work / "sink" / f"encode-{name}"
        sql = ["--sql-sink", "filesystem", "--sink-path", str(sink)]
        cases.append(Case(group, name, "debezium-encode", [path], [], "events", sql_flags=sql, sink_dir=sink))
        cases.append(
            Case(group, name, "debezium-encode", [path], ["--split-updates"], "events", sql_flags=sql, sink_dir=sink)
        )
    return cases


def replay(work: Path) -> list[Case]:
    s = SAMPLES
    cases = [
        Case(
            "samples",
            name,
            "replay",
            [s / name],
            ["--input-mode", "append", "--key", "user", "--order-by", "cTime", *emit],
            keys=["user"],
        )
        for name in ("clicks.jsonl", "clicks-continued.jsonl")
        for emit in ([], ["--emit", "upsert"])
    ]
    cases += [
        Case(
            "samples",
            "currency-rates.csv",
            "replay",
            [s / "currency-rates.csv"],
            ["--input-mode", "append", "--key", "currency", "--order-by", "update_time"],
            keys=["currency"],
        ),
        Case(
            "samples",
            "flat-cdc.jsonl",
            "replay",
            [s / "flat-cdc.jsonl"],
            ["--input-mode", "upsert", "--key", "id"],
            keys=["id"],
        ),
        Case(
            "samples",
            "product-prices.jsonl",
            "replay",
            [s / "product-prices.jsonl"],
            ["--key", "product_id"],
            keys=["product_id"],
        ),
    ]
    for d in sorted(ORACLE.glob("to_*")):
        cases.append(
            Case("conformance/flink-oracle", d.name, "replay", [d / "input.jsonl"], ["--key", "id"], keys=["id"])
        )
    up = AGGREGATE / "upsert_input"
    cases.append(
        Case(
            "conformance/flink-aggregate",
            "upsert_input",
            "replay",
            [up / "input.jsonl"],
            ["--input-mode", "upsert", "--key", "id", "--delete-when", "__deleted=true"],
            keys=["id"],
        )
    )
    for name in ("dbz_0", "dbz_schema_0"):
        cases.append(
            Case(
                "conformance/flink-oracle",
                name,
                "replay",
                [ORACLE / name / "input.jsonl"],
                ["-i", "debezium", "--key", "id"],
                keys=["id"],
            )
        )
    ra = AGGREGATE / "random_append"
    cases.append(
        Case(
            "conformance/flink-aggregate",
            "random_append",
            "replay",
            [ra / "input.jsonl"],
            ["--input-mode", "append", "--key", "user", "--order-by", "ts"],
            keys=["user"],
        )
    )
    return cases


def aggregate(work: Path) -> list[Case]:
    cases = []
    for d in sorted(AGGREGATE.iterdir()):
        if not (d / "args.json").is_file():  # a case is a folder with its args (not __pycache__)
            continue
        flags = json.loads((d / "args.json").read_text())["flags"]
        group_by = _flag(flags, "--group-by")
        keys = group_by.split(",") if group_by else []
        cases.append(Case("conformance/flink-aggregate", d.name, "aggregate", [d / "input.jsonl"], flags, keys=keys))
    s = SAMPLES
    clicks = ["--input-mode", "append", "-g", "user", "-a", "cnt=COUNT(*)"]
    cases += [
        Case("samples", "clicks.jsonl", "aggregate", [s / "clicks.jsonl"], clicks, keys=["user"]),
        Case(
            "samples",
            "clicks.jsonl",
            "aggregate",
            [s / "clicks.jsonl"],
            [*clicks, "--where", "url <> './home'"],
            keys=["user"],
        ),
        Case(
            "samples",
            "clicks.jsonl → filesystem",
            "aggregate",
            [s / "clicks.jsonl"],
            clicks,
            keys=["user"],
            sql_flags=["--sql-sink", "filesystem", "--sink-path", str(work / "sink" / "aggregate")],
            sink_dir=work / "sink" / "aggregate",
        ),
        Case(
            "samples",
            "product-prices.jsonl",
            "aggregate",
            [s / "product-prices.jsonl"],
            ["-g", "product_name", "-a", "n=COUNT(*)", "-a", "lo=MIN(price)", "-a", "hi=MAX(price)"],
            keys=["product_name"],
        ),
        Case(
            "conformance/flink-oracle",
            "dbz_0",
            "aggregate",
            [ORACLE / "dbz_0" / "input.jsonl"],
            ["-i", "debezium", "-g", "flag", "-a", "n=COUNT(*)", "-a", "top=MAX(score)"],
            keys=["flag"],
        ),
        Case(
            "samples",
            "flat-cdc.jsonl",
            "aggregate",
            [s / "flat-cdc.jsonl"],
            ["--input-mode", "upsert", "--key", "id", "-g", "plan", "-a", "n=COUNT(*)"],
            keys=["plan"],
        ),
    ]
    return cases


COMMANDS = {
    "from-changelog": from_changelog,
    "to-changelog": to_changelog,
    "decode": decode,
    "debezium-decode": debezium_decode,
    "debezium-encode": debezium_encode,
    "materialize": materialize,
    "replay": replay,
    "aggregate": aggregate,
}


def cdc_argv() -> list[str]:
    import sys

    here = Path(sys.executable).parent / "cdc"
    return [str(here)] if here.exists() else [sys.executable, "-m", "cdc"]


def all_cases(work: Path) -> list[Case]:
    work.mkdir(parents=True, exist_ok=True)
    out: list[Case] = []
    for build in COMMANDS.values():
        out += build(work)
    for case in out:
        if case.output == "events":
            case.note = case.note or "debezium-json files read back; ts_ms/source not compared (Flink writes none)"
    return out
