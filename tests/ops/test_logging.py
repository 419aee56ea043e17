"""Logs that explain: formatters, redaction, a skill's traceback, the access log, no secrets."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from peerwire import Agent, Client, TaskContext, TaskState
from peerwire.ops import (
    ACCESS_LOGGER,
    JSONFormatter,
    RepeatLimitingHandler,
    TextFormatter,
    configure_logging,
    redact_url,
)
from peerwire.security import APIKeyVerifier
from peerwire.server import PushSettings
from peerwire.testing import live_server
from peerwire.types import (
    APIKeySecurityScheme,
    AuthenticationInfo,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

WAIT_S = 15.0


def _record(**extra: object) -> logging.LogRecord:
    try:
        raise KeyError("missing")
    except KeyError:
        exc_info = sys.exc_info()
    record = logging.getLogger("peerwire.runner").makeRecord(
        "peerwire.runner", logging.ERROR, __file__, 1, "task %s failed", ("t-1",), exc_info
    )
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_json_formatter_writes_one_object_a_line_with_extras_and_the_traceback() -> None:
    line = JSONFormatter().format(_record(task_id="t-1", skill="lookup", tenant="acme"))
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["level"] == "ERROR" and parsed["logger"] == "peerwire.runner"
    assert parsed["message"] == "task t-1 failed"
    assert parsed["time"].endswith("Z") and parsed["time"][10] == "T"
    assert (parsed["task_id"], parsed["skill"], parsed["tenant"]) == ("t-1", "lookup", "acme")
    assert "Traceback" in parsed["exception"] and "KeyError: 'missing'" in parsed["exception"]


def test_text_formatter_appends_what_the_message_does_not_say() -> None:
    text = TextFormatter().format(_record(task_id="t-1", context_id="c-9", tenant=""))
    first = text.splitlines()[0]
    assert first.endswith("ERROR peerwire.runner: task t-1 failed [context_id=c-9]"), first
    assert "KeyError: 'missing'" in text


def test_configure_logging_replaces_its_own_handler_and_refuses_unknown_names() -> None:
    target = logging.getLogger("peerwire.test_configure")
    stream = io.StringIO()
    try:
        configure_logging("debug", "text", logger=target.name)
        configure_logging("info", "json", stream=stream, logger=target.name)
        assert len(target.handlers) == 1 and target.level == logging.INFO
        target.info("hello", extra={"operation": "SendMessage"})
        assert json.loads(stream.getvalue())["operation"] == "SendMessage"
        with pytest.raises(ValueError, match="log format"):
            configure_logging("info", "xml", logger=target.name)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="log level"):
            configure_logging("loud", logger=target.name)
    finally:
        for handler in list(target.handlers):
            target.removeHandler(handler)
        target.setLevel(logging.NOTSET)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://app:s3cret@db:5432/tasks", "postgresql://app:***@db:5432/tasks"),
        ("redis://:s3cret@cache:6379/0?prefix=pw", "redis://:***@cache:6379/0?prefix=pw"),
        (
            "postgresql://db/tasks?password=s3cret&schema=x",
            "postgresql://db/tasks?password=***&schema=x",
        ),
        ("postgresql://postgres@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test"),
        ("sqlite:./peerwire.db", "sqlite:./peerwire.db"),
    ],
)
def test_redact_url_hides_passwords_and_keeps_the_rest(url: str, shown: str) -> None:
    assert redact_url(url) == shown


# -- a skill that raises ----------------------------------------------------------------------


def _failing_agent() -> Agent:
    agent = Agent("Failing", description="Looks up what is not there")

    @agent.skill("lookup", description="Looks a key up")
    async def lookup(text: str) -> str:
        return {"present": "here"}[text]  # KeyError('missing') for "missing"

    return agent


async def test_a_skill_that_raises_logs_its_traceback_with_the_task_and_the_caller_gets_the_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="peerwire.runner")
    async with live_server(_failing_agent()) as url, Client.connect(url) as client:
        task = await client.send("missing")
    assert task.status.state is TaskState.FAILED
    # What the caller gets is what it got before: the exception's message, no traceback.
    said = task.status.message.parts[0].text if task.status.message else ""
    assert said == "'missing'"
    assert "Traceback" not in json.dumps(str(task))
    [record] = [r for r in caplog.records if r.name == "peerwire.runner"]
    assert record.levelno == logging.ERROR
    assert record.getMessage() == f"task {task.id}: skill 'lookup' raised KeyError"
    assert record.__dict__["task_id"] == task.id
    assert record.__dict__["context_id"] == task.context_id
    assert record.__dict__["skill"] == "lookup" and record.__dict__["tenant"] == ""
    assert record.exc_info is not None and isinstance(record.exc_info[1], KeyError)
    line = json.loads(JSONFormatter().format(record))
    assert line["task_id"] == task.id
    assert "KeyError: 'missing'" in line["exception"] and "in lookup" in line["exception"]


# -- the access log ---------------------------------------------------------------------------


def _echo_agent() -> Agent:
    agent = Agent("Echo", description="Says it back")

    @agent.skill("echo", description="Echoes")
    async def echo(text: str) -> str:
        return text

    return agent


def _access_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == ACCESS_LOGGER]


@pytest.mark.parametrize("http", ["peerwire", "uvicorn"])
async def test_the_access_log_says_method_path_binding_operation_status_duration_and_task(
    http: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    async with (
        live_server(_echo_agent(), http=http, access_log=True) as url,  # type: ignore[arg-type]
        Client.connect(url, bindings=["JSONRPC"]) as client,
        httpx.AsyncClient(base_url=url, trust_env=False) as web,
    ):
        task = await client.send("hello")
        got = await web.get(f"/rest/tasks/{task.id}", headers={"A2A-Version": "1.0"})
        assert got.status_code == 200
        missing = await web.get("/nowhere?api_key=query-secret")
        assert missing.status_code == 404
    records = _access_records(caplog)
    by_operation = {r.__dict__["operation"]: r for r in records}
    send = by_operation["SendMessage"]
    assert send.__dict__["method"] == "POST" and send.__dict__["binding"] == "jsonrpc"
    assert send.__dict__["status"] == 200 and send.__dict__["task_id"] == task.id
    assert send.__dict__["duration_ms"] >= 0
    get = by_operation["GetTask"]
    assert get.__dict__["binding"] == "rest" and get.__dict__["task_id"] == task.id
    assert get.__dict__["path"] == f"/rest/tasks/{task.id}"
    assert get.getMessage().startswith(f"GET /rest/tasks/{task.id} rest GetTask 200 ")
    assert get.getMessage().endswith(f" ms task {task.id}")
    [other] = [r for r in records if r.__dict__["path"] == "/nowhere"]
    assert other.__dict__["status"] == 404 and other.__dict__["operation"] == ""
    assert other.__dict__["binding"] == ""
    [card] = [r for r in records if r.__dict__["path"] == "/.well-known/agent-card.json"]
    assert card.__dict__["binding"] == "card" and card.__dict__["status"] == 200
    assert not any("query-secret" in r.getMessage() for r in records)


async def test_no_access_log_unless_asked(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    async with live_server(_echo_agent()) as url, Client.connect(url) as client:
        await client.send("hello")
    assert _access_records(caplog) == []


# -- nothing secret is ever logged ------------------------------------------------------------

API_KEY = "key-live-7c1d9e"
WRONG_KEY = "key-wrong-44af02"
PUSH_TOKEN = "push-token-5a9b31"
PUSH_CREDENTIALS = "push-credentials-e83f10"
URL_TOKEN = "url-token-0d6c4e"
SECRETS = (API_KEY, WRONG_KEY, PUSH_TOKEN, PUSH_CREDENTIALS, URL_TOKEN)


def _secured_agent() -> Agent:
    agent = Agent(
        "Keeper",
        description="Requires an API key",
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill("ask", description="Asks, then answers")
    async def ask(ctx: TaskContext) -> str:
        answer = await ctx.ask("Which one?")
        return f"you said {answer.text}"

    return agent


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed once this returns: connections are refused


def _every_line(records: list[logging.LogRecord]) -> Iterator[str]:
    for formatter in (JSONFormatter(), TextFormatter()):
        for record in records:
            yield formatter.format(record)


async def test_secrets_are_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="peerwire")
    hook = f"http://127.0.0.1:{_closed_port()}/hook?token={URL_TOKEN}"
    push = PushSettings(allow=("127.0.0.1",), max_attempts=2, retry_delay=0.05)
    auth = {"key": APIKeyVerifier({API_KEY: "alice"})}
    async with (
        live_server(_secured_agent(), auth=auth, push=push, access_log=True) as url,
        Client.connect(url, headers={"X-Key": API_KEY}) as client,
        httpx.AsyncClient(base_url=url, trust_env=False) as web,
    ):
        asked = await client.send("start")
        assert asked.status.state is TaskState.INPUT_REQUIRED
        await client.create_push_config(
            asked.id,
            hook,
            token=PUSH_TOKEN,
            authentication=AuthenticationInfo(scheme="Bearer", credentials=PUSH_CREDENTIALS),
        )
        done = await client.send("this one", task_id=asked.id)
        assert done.status.state is TaskState.COMPLETED
        refused = await web.post(
            "/",
            headers={
                "X-Key": WRONG_KEY,
                "A2A-Version": "1.0",
                "Authorization": f"Bearer {API_KEY}",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": asked.id}},
        )
        assert refused.status_code == 401
        [line] = [
            r for r in caplog.records if r.name == ACCESS_LOGGER and r.__dict__["status"] == 401
        ]
        assert (line.__dict__["binding"], line.__dict__["operation"]) == ("jsonrpc", "")
        # The deliverer tries the webhook (refused: nothing listens) and logs its attempts.
        for _ in range(int(WAIT_S / 0.05)):
            if any(r.name.startswith("peerwire.push") for r in caplog.records):
                break
            await asyncio.sleep(0.05)
    lines = list(_every_line(caplog.records))
    assert any("peerwire.access" in line for line in lines)  # requests were logged...
    assert any("peerwire.push" in line for line in lines)  # ...and delivery attempts
    for secret in SECRETS:
        leaked = [line for line in lines if secret in line]
        assert not leaked, (secret, leaked)


# -- identical records written once per window ------------------------------------------------


def _pool_warning(created: float, port: int = 5432) -> logging.LogRecord:
    try:
        raise ConnectionRefusedError(111, f"Connect call failed ('127.0.0.1', {port})")
    except ConnectionRefusedError:
        exc_info = sys.exc_info()
    record = logging.getLogger("asyncpg.pool").makeRecord(
        "asyncpg.pool",
        logging.WARNING,
        __file__,
        1,
        "Failed to restore the pool connection floor; retrying",
        (),
        exc_info,
    )
    record.created = created
    return record


def test_identical_warnings_are_written_once_a_window_with_the_count_of_the_others() -> None:
    stream = io.StringIO()
    handler = RepeatLimitingHandler(stream, window=60.0)
    handler.setFormatter(JSONFormatter())
    start = 1_000_000.0
    for second in range(10):  # a pool retrying every second: one line, nine counted
        handler.handle(_pool_warning(start + second))
    handler.handle(_pool_warning(start + 5, port=6543))  # another error: written
    info = logging.getLogger("peerwire.access").makeRecord(
        "peerwire.access", logging.INFO, __file__, 1, "GET /", (), None
    )
    info.created = start + 6
    for _ in range(3):  # below WARNING: every one written
        handler.handle(info)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [r["logger"] for r in lines] == [
        "asyncpg.pool",
        "asyncpg.pool",
        *["peerwire.access"] * 3,
    ]
    assert "ConnectionRefusedError" in lines[0]["exception"] and "6543" in lines[1]["exception"]
    assert not any("repeats_suppressed" in r for r in lines)

    stream.seek(0)
    stream.truncate()
    handler.handle(_pool_warning(start + 61))  # the window ended: its count, then the record
    first, again = (json.loads(line) for line in stream.getvalue().splitlines())
    assert (first["logger"], first["level"]) == ("asyncpg.pool", "WARNING")
    assert (first["repeats_suppressed"], first["repeat_window_s"]) == (9, 60.0)
    assert first["message"] == (
        "9 identical records in 60 s not written: "
        "Failed to restore the pool connection floor; retrying"
    )
    assert "exception" not in first
    assert "exception" in again and "repeats_suppressed" not in again

    stream.seek(0)
    stream.truncate()
    handler.handle(_pool_warning(start + 62))
    handler.close()  # at exit, a window still open says its count
    [summary] = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert summary["repeats_suppressed"] == 1


def test_records_about_different_tasks_are_never_folded() -> None:
    stream = io.StringIO()
    handler = RepeatLimitingHandler(stream, window=60.0)
    handler.setFormatter(JSONFormatter())
    for task in ("t-1", "t-2", "t-2"):
        record = _record(task_id=task)
        handler.handle(record)
    written = [json.loads(line)["task_id"] for line in stream.getvalue().splitlines()]
    assert written == ["t-1", "t-2"]
    with pytest.raises(ValueError, match="repeat window"):
        RepeatLimitingHandler(window=0)


# -- trace context on every record inside a span ----------------------------------------------


def test_records_inside_a_span_carry_its_trace_and_span_ids() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("test")  # not the global provider: this test's own
    stream = io.StringIO()
    target = logging.getLogger("peerwire.test_trace_ids")
    handler = configure_logging("info", "json", stream=stream, logger=target.name)
    text = io.StringIO()
    text_handler = logging.StreamHandler(text)
    text_handler.setFormatter(TextFormatter())
    target.addHandler(text_handler)
    try:
        target.info("before")
        with tracer.start_as_current_span("outer") as outer:
            target.info("in outer")
            with tracer.start_as_current_span("inner") as inner:
                target.warning("in inner")
        target.info("after")
    finally:
        target.removeHandler(handler)
        target.removeHandler(text_handler)
        target.setLevel(logging.NOTSET)
    before, in_outer, in_inner, after = (json.loads(x) for x in stream.getvalue().splitlines())
    assert "trace_id" not in before and "span_id" not in after
    trace_id = f"{outer.get_span_context().trace_id:032x}"
    assert (in_outer["trace_id"], in_outer["span_id"]) == (
        trace_id,
        f"{outer.get_span_context().span_id:016x}",
    )
    assert (in_inner["trace_id"], in_inner["span_id"]) == (
        trace_id,
        f"{inner.get_span_context().span_id:016x}",
    )
    lines = text.getvalue().splitlines()
    assert lines[0].endswith("before") and lines[3].endswith("after")
    assert lines[1].endswith(
        f"in outer [trace_id={trace_id} span_id={outer.get_span_context().span_id:016x}]"
    )


# -- on the root logger, nothing reaches stderr around it -------------------------------------

STRAY = textwrap.dedent(
    """
    import asyncio, gc, logging, threading, warnings
    from peerwire.ops import configure_logging

    configure_logging("info", "json", logger="")
    logging.getLogger("asyncpg.pool").warning("a library's warning")
    warnings.warn("a deprecated thing", UserWarning)
    thread = threading.Thread(target=lambda: 1 / 0, name="doomed")
    thread.start()
    thread.join()


    class Ignored:
        def __del__(self):
            raise RuntimeError("raised in __del__")


    Ignored()


    async def main():
        async def fails():
            raise ValueError("never retrieved")

        task = asyncio.get_running_loop().create_task(fails())
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        del task
        gc.collect()


    asyncio.run(main())
    raise LookupError("uncaught at the top")
    """
)


def test_on_the_root_logger_warnings_and_uncaught_exceptions_are_json_lines_too(
    tmp_path: Path,
) -> None:
    script = tmp_path / "stray.py"
    script.write_text(STRAY)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    records = [json.loads(line) for line in lines]  # every line of stderr is one object
    said = {r["logger"]: r for r in records}
    assert said["asyncpg.pool"]["message"] == "a library's warning"
    assert "a deprecated thing" in said["py.warnings"]["message"]
    uncaught = [r for r in records if r["logger"] == "peerwire.uncaught"]
    messages = [r["message"] for r in uncaught]
    assert "uncaught ZeroDivisionError in thread doomed" in messages
    assert "uncaught LookupError" in messages
    assert any(m.startswith("Exception ignored in") for m in messages), messages
    assert "RuntimeError: raised in __del__" in "".join(r.get("exception", "") for r in uncaught)
    [never] = [r for r in records if r["logger"] == "asyncio"]
    assert "Task exception was never retrieved" in never["message"]
    assert "ValueError: never retrieved" in never["exception"]
