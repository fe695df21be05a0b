"""Run the doc cases of flink-canal, flink-maxwell and flink-ogg through Flink 2.3 itself.

Not part of the test suite (it needs PyFlink and a JVM). To refresh the recorded answers:

    python3 -m venv .flink-venv && .flink-venv/bin/pip install apache-flink==2.3.0
    .flink-venv/bin/python tests/conformance/flink-canal/flink_oracle.py

Each case's events are written to a file and read by the filesystem connector with the
envelope's Flink format (canal-json, maxwell-json, ogg-json) in streaming mode, parallelism 1,
session time zone UTC; ``SELECT *`` is collected with its row kinds. The table schema is made
from the case: for Canal the message's ``sqlType`` (4 INT, 7 FLOAT, 3 DECIMAL(10,2), 16 BOOLEAN,
91 DATE, else STRING), for Maxwell and OGG the JSON types of the images (BIGINT, DOUBLE,
BOOLEAN, STRING). Options Flink has (``canal-json.database.include``/``table.include``) are
passed; options it lacks (key, on_truncate, bootstrap, raw_values) are not. Every value is
recorded as Flink's ``str()``; a failing job records the innermost "Caused by".
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
FORMATS = {"canal": "canal-json", "maxwell": "maxwell-json", "ogg": "ogg-json"}
SQL_TYPES = {4: "INT", 7: "FLOAT", 3: "DECIMAL(10,2)", 16: "BOOLEAN", 91: "DATE", 12: "STRING", -5: "BIGINT"}


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT"
    return "DOUBLE" if isinstance(value, float) else "STRING"


def schema_of(envelope: str, case: dict[str, Any]) -> str:
    columns: dict[str, str] = {}
    for event in case["events"]:
        if not isinstance(event, dict):
            continue
        if envelope == "canal":
            sql_type = event.get("sqlType") or {}
            data = event.get("data")
            for row in data if isinstance(data, list) else []:
                for name in row if isinstance(row, dict) else ():
                    columns.setdefault(name, SQL_TYPES.get(sql_type.get(name), "STRING"))
        else:
            for part in ("data", "before", "after"):
                image = event.get(part)
                for name, value in image.items() if isinstance(image, dict) else ():
                    if value is not None or name not in columns:
                        columns[name] = json_type(value) if value is not None else columns.get(name, "STRING")
    return ", ".join(f"`{c}` {t}" for c, t in (columns or {"id": "INT"}).items())


def main() -> None:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    env.get_config().set("table.local-time-zone", "UTC")
    n = 0
    for envelope, flink_format in FORMATS.items():
        folder = HERE / f"flink-{envelope}"
        answers: dict[str, Any] = {}
        for line in (folder / "doc-cases.jsonl").read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            directory = tempfile.mkdtemp()
            with open(os.path.join(directory, "data.json"), "w", encoding="utf-8") as f:
                f.writelines(json.dumps(e) + "\n" for e in case["events"])
            options = case.get("options", {})
            format_options = {}
            if envelope == "canal":
                for option in ("database_include", "table_include"):
                    if options.get(option):
                        format_options[f"canal-json.{option.replace('_', '.')}"] = options[option]
            extra = "".join(f",'{k}'='{v}'" for k, v in format_options.items())
            schema = schema_of(envelope, case)
            n += 1
            env.execute_sql(
                f"CREATE TABLE t{n} ({schema}) WITH ('connector'='filesystem','path'='{directory}',"
                f"'format'='{flink_format}'{extra})"
            )
            entry: dict[str, Any] = {"schema": schema}
            if format_options:
                entry["format_options"] = format_options
            try:
                with env.execute_sql(f"SELECT * FROM t{n}").collect() as rows:
                    entry["rows"] = [[str(r.get_row_kind()), [None if v is None else str(v) for v in r]] for r in rows]
            except Exception as exc:  # noqa: BLE001 - Flink's failure is the answer
                causes = [x for x in str(exc).splitlines() if "Caused by" in x or "Exception:" in x]
                entry["error"] = causes[-1].split("Caused by: ", 1)[-1][:160] if causes else str(exc)[:160]
            answers[case["case"]] = entry
        lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in answers.items()]
        (folder / "flink-2.3-oracle.json").write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
