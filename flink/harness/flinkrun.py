"""Run a Flink SQL script in PyFlink's local mini-cluster, the way ``sql-client.sh -f`` runs it.

Only for the harness (``flink_check.py``) and the experiments (``experiments.py``); it needs the
PyFlink venv that ``setup.sh`` makes. Not part of the ``cdc`` package.

The SQL client splits a script on ``;``, applies ``SET 'key' = 'value'`` to the session and runs
every other statement in a table environment built from the session's configuration at that
point. Here the environment is built at the first statement that is not a SET, from a *base*
configuration (by default the cluster-wide ``execution.runtime-mode: batch`` a user may have, so a
script that does not set streaming itself fails as it would there) plus the script's SETs.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

KINDS = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}
SET_RE = re.compile(r"^SET\s+'((?:[^']|'')*)'\s*=\s*'((?:[^']|'')*)'$", re.IGNORECASE | re.DOTALL)


def split_statements(sql: str) -> list[str]:
    """Statements of a script: ``--`` comments dropped, split on ``;`` outside quotes."""
    out: list[str] = []
    current: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(sql):
        ch = sql[i]
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'`\"":
            quote = ch
            current.append(ch)
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = len(sql) if end < 0 else end
            continue
        elif ch == ";":
            text = "".join(current).strip()
            if text:
                out.append(text)
            current = []
        else:
            current.append(ch)
        i += 1
    tail = "".join(current).strip()
    if tail:
        out.append(tail)
    return out


@dataclass
class Outcome:
    columns: list[str] = field(default_factory=list)
    rows: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: str | None = None  # the innermost cause's message when Flink failed
    phase: str = ""  # "plan" when a statement was rejected, "run" when the job failed
    seconds: float = 0.0
    job: Any = None  # detach=True: the JobClient of the last INSERT, still running


def cause_of(exc: BaseException) -> str:
    """The deepest 'Caused by' line of a Java exception, else the first line of the message."""
    text = str(exc)
    causes = [line.strip() for line in text.splitlines() if line.strip().startswith("Caused by:")]
    if causes:
        return causes[-1][len("Caused by:") :].strip()
    lines = [line.strip().lstrip(": ") for line in text.splitlines() if line.strip()]
    java = [line for line in lines if re.match(r"^[\w.$]+(Exception|Error)\b", line)]
    return (java or lines or [text])[0]


def _env(conf: dict[str, str], jars: list[str]) -> Any:
    from pyflink.common import Configuration
    from pyflink.table import EnvironmentSettings, TableEnvironment

    config = Configuration()
    for k, v in conf.items():
        config.set_string(k, v)
    if jars:
        config.set_string("pipeline.jars", ";".join("file://" + j for j in jars))
    streaming = conf.get("execution.runtime-mode", "streaming").lower() == "streaming"
    builder = EnvironmentSettings.new_instance().with_configuration(config)
    settings = (builder.in_streaming_mode() if streaming else builder.in_batch_mode()).build()
    return TableEnvironment.create(settings)


def _collectable(env: Any, query: str) -> str:
    """PyFlink's collect() cannot hand TIMESTAMP_LTZ values to Python (a PickleException on
    java.time.Instant): such columns are collected as the text the SQL client shows (CAST AS
    STRING, in the session time zone). Nothing else of the query changes."""
    schema = env.sql_query(query).get_schema()
    names, types = schema.get_field_names(), [str(t) for t in schema.get_field_data_types()]
    if not any("LOCALZONEDTIMESTAMP" in t.upper() for t in types):
        return query
    items = [
        f"CAST(`{n}` AS STRING) AS `{n}`" if ("LOCALZONEDTIMESTAMP" in t.upper()) else f"`{n}`"
        for n, t in zip(names, types, strict=True)
    ]
    return f"SELECT {', '.join(items)} FROM (\n{query}\n)"


def _collect(result: Any, columns: list[str], out: Outcome, idle: float, limit: float, expect: int | None) -> None:
    """Collect rows with their kinds; a job that does not end (Kafka) is cancelled once it has
    sent ``expect`` rows (or any, when None) and then nothing for ``idle`` seconds."""
    rows: list[tuple[str, dict[str, Any]]] = []
    failure: list[BaseException] = []
    last = [time.monotonic()]

    def pull() -> None:
        try:
            with result.collect() as it:
                for row in it:
                    kind = KINDS[row.get_row_kind().name]
                    rows.append((kind, dict(zip(columns, list(row), strict=True))))
                    last[0] = time.monotonic()
        except BaseException as exc:  # noqa: BLE001 - reported, not swallowed
            failure.append(exc)

    thread = threading.Thread(target=pull, daemon=True)
    start = time.monotonic()
    thread.start()
    while thread.is_alive():
        thread.join(0.2)
        now = time.monotonic()
        enough = len(rows) >= expect if expect is not None else bool(rows)
        if (idle and enough and now - last[0] > idle) or now - start > limit:
            client = result.get_job_client()
            if client is not None:
                client.cancel().result()
            thread.join(10)
            break
    out.rows = rows
    if failure and not (idle and "cancel" in str(failure[0]).lower()):
        out.error = cause_of(failure[0])
        out.phase = "run"


def run_script(
    sql: str,
    parallelism: int,
    base_conf: dict[str, str] | None = None,
    jars: list[str] | None = None,
    idle: float = 0.0,
    limit: float = 120.0,
    expect: int | None = None,
    detach: bool = False,
) -> Outcome:
    """Run every statement; the last SELECT's rows are collected (``idle`` > 0: stop after that
    many seconds without a row, for unbounded sources). An INSERT is waited for, unless
    ``detach`` (an unbounded source: the caller reads the sink, then cancels ``Outcome.job``)."""
    conf = {"execution.runtime-mode": "batch"}
    conf.update(base_conf or {})
    conf["parallelism.default"] = str(parallelism)
    out = Outcome()
    start = time.monotonic()
    env = None
    try:
        for statement in split_statements(sql):
            m = SET_RE.match(statement)
            if m:
                key, value = m.group(1).replace("''", "'"), m.group(2).replace("''", "'")
                if env is None:
                    conf[key] = value
                else:
                    env.get_config().set(key, value)
                continue
            if env is None:
                env = _env(conf, jars or [])
            head = statement.lstrip().split(None, 1)[0].upper()
            if head in ("SELECT", "WITH"):
                statement = _collectable(env, statement)
            result = env.execute_sql(statement)
            if head in ("SELECT", "WITH"):
                out.columns = list(result.get_table_schema().get_field_names())
                _collect(result, out.columns, out, idle, limit, expect)
            elif head == "INSERT" and detach:
                out.job = result.get_job_client()
            elif head == "INSERT":
                result.wait()
    except Exception as exc:  # noqa: BLE001 - Flink's answer is the outcome
        out.error = cause_of(exc)
        out.phase = out.phase or ("run" if "JobExecutionException" in str(exc) else "plan")
    out.seconds = time.monotonic() - start
    return out
