"""Cut a kept scenarios run (``scenarios.py --keep``) into tests/conformance/debezium-scenarios/.

    python3 e2e/vendor_scenarios.py /tmp/cdc-e2e-sc-XXXX

Per database: the engines' event files that hold every topic (``all.*``), the line counts of those
files at each checkpoint, the database's own tables (SELECT *) at each checkpoint, and what each
table is (key, column types after each checkpoint). The quick test suite replays them through the
cdc command (tests/test_real_streams.py) without a database.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import scenarios as S

HERE = Path(__file__).resolve().parent
DEST = HERE.parent / "tests" / "conformance" / "debezium-scenarios"
FILES = {
    "precise": ["all.schema.jsonl", "all.numeric.jsonl", "all.noschema.jsonl", "all.kcat.jsonl", "all.console.txt"],
    "string": ["all.schema.jsonl", "all.numeric.jsonl"],
    "double": ["all.schema.jsonl", "all.numeric.jsonl"],
    "unwrap": ["all.schema.jsonl"],
}


def types_by_checkpoint(db: str) -> dict[str, dict[str, dict[str, str]]]:
    """Replays the scenario's ALTER steps to know each table's columns after each checkpoint."""
    sc = S._pg() if db == "postgres" else S._maria()
    out = {"0": {t.name: dict(t.types) for t in sc.tables}}
    for i, group in enumerate(sc.steps, start=1):
        for step in group:
            for table, cols in step.retype.items():
                t = next(t for t in sc.tables if t.name == table)
                for col, kind in cols.items():
                    if kind is None:
                        t.types.pop(col, None)
                    else:
                        t.types[col] = kind
        out[str(i)] = {t.name: dict(t.types) for t in sc.tables}
    return out


def main(kept: Path) -> None:
    for db in ("postgres", "mariadb"):
        src = kept / db
        if not src.exists():
            continue
        dest = DEST / db
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        sc = S._pg() if db == "postgres" else S._maria()
        counts: dict[str, dict[str, dict[str, int]]] = {}
        for variant, names in FILES.items():
            vdir = src / f"events-{variant}"
            for name in names:
                if (vdir / name).exists():
                    shutil.copy(vdir / name, dest / f"{variant}.{name}")
            seen: dict[int, dict[str, int]] = {}
            for line in (vdir / "checkpoints.jsonl").read_text().splitlines():
                entry = json.loads(line)
                seen.setdefault(entry["n"], {k: v for k, v in entry["lines"].items() if k in names})
            counts[variant] = {str(n): lines for n, lines in sorted(seen.items())}
        for expected in sorted(src.glob("expected-*.jsonl")):
            shutil.copy(expected, dest / expected.name)
        tables = {
            "tables": [
                {"name": t.name, "key": list(t.key), "decode_key": t.decode_key, "edge": t.edge} for t in sc.tables
            ],
            "types": types_by_checkpoint(db),
            "checkpoint_lines": counts,
        }
        (dest / "scenario.json").write_text(json.dumps(tables, indent=1) + "\n")
        print(f"{db}: {sum(f.stat().st_size for f in dest.iterdir()) / 1e6:.1f} MB in {dest}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
