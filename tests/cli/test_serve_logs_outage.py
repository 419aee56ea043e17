"""``peerwire serve --log-format json`` while its PostgreSQL is cut off: every line of stderr is
one JSON object (asyncpg's and the other libraries' records too, tracebacks as a member), and
an error repeating is written once per window (``peerwire.ops.REPEAT_WINDOW_S``) with the
count of the repeats not written. A serve that stops saying why says it as a JSON record.

The database is reached through a TCP proxy of the test's own, which the test cuts: the
machine's PostgreSQL is never touched but for the schema the test drops at the end."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from peerwire.ops import REPEAT_WINDOW_S

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
WAIT_S = 60.0
OUTAGE_S = 20.0  # below the repeat window: each distinct error is written once in it
assert OUTAGE_S < REPEAT_WINDOW_S

AGENT = textwrap.dedent(
    """
    from peerwire import Agent

    agent = Agent("Lookup", description="Looks keys up")


    @agent.skill("lookup", description="Looks a key up")
    async def lookup(text: str) -> str:
        return {"present": "here"}[text]
    """
)


class CuttableProxy:
    """Forwards loopback TCP connections to PostgreSQL until ``cut``: then it stops listening
    (new connections are refused) and resets the connections it carries."""

    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", 5432)
        self._writers |= {writer, up_writer}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[CuttableProxy]:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        try:
            yield self
        finally:
            self.cut()

    def cut(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            transport = writer.transport
            if isinstance(transport, asyncio.Transport):
                transport.abort()  # a reset, as a network failure leaves it
        self._writers.clear()


async def _read_until(stream: asyncio.StreamReader, lines: list[str], marker: str) -> str:
    async with asyncio.timeout(WAIT_S):
        while True:
            raw = await stream.readline()
            assert raw, "peerwire serve ended early:\n" + "\n".join(lines)
            line = raw.decode().rstrip("\n")
            lines.append(line)
            if marker in line:
                return line


async def _collect(stream: asyncio.StreamReader, lines: list[str]) -> None:
    while raw := await stream.readline():
        lines.append(raw.decode().rstrip("\n"))


def _send(text: str) -> dict[str, Any]:
    message = {"role": "ROLE_USER", "messageId": secrets.token_hex(8), "parts": [{"text": text}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


async def test_with_postgresql_cut_off_every_stderr_line_is_json_and_repeats_are_limited(
    tmp_path: Path,
) -> None:
    (tmp_path / "lookup_agent.py").write_text(AGENT)
    schema = f"pwtest_outage_{secrets.token_hex(6)}"
    proxy = CuttableProxy()
    lines: list[str] = []
    async with proxy.running():
        store = f"postgresql://postgres@127.0.0.1:{proxy.port}/test?schema={schema}"
        command = [
            str(Path(sys.executable).with_name("peerwire")),
            *("serve", "lookup_agent:agent", "--port", "0", "--grpc-port", "0"),
            *("--store", store, "--log-format", "json", "--access-log"),
        ]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        process = await asyncio.create_subprocess_exec(
            *command,
            cwd=tmp_path,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            assert process.stderr is not None
            started = json.loads(await _read_until(process.stderr, lines, "serving 'Lookup'"))
            collecting = asyncio.create_task(_collect(process.stderr, lines))
            answers: collections.Counter[int] = collections.Counter()
            async with httpx.AsyncClient(
                base_url=started["url"], trust_env=False, timeout=30
            ) as web:
                headers = {"A2A-Version": "1.0"}
                sent = await web.post("/", json=_send("present"), headers=headers)
                assert sent.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
                proxy.cut()
                loop = asyncio.get_running_loop()
                ends = loop.time() + OUTAGE_S
                while loop.time() < ends:  # callers keep calling through the outage
                    for body in (_send("present"), _send("missing")):
                        answer = await web.post("/", json=body, headers=headers)
                        answers[answer.status_code] += 1
                    answers[(await web.get("/readyz")).status_code] += 1
                    await asyncio.sleep(0.25)
            assert answers[503] > 0, answers  # readiness saw the outage
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(WAIT_S):
                await collecting
                await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    connection = await asyncpg.connect(PG_DSN)
    try:
        await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await connection.close()

    shown = "\n".join(lines[-40:])
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"not one JSON object: {line!r}\n{shown}") from None
    assert all(isinstance(r, dict) for r in records)
    problems = [r for r in records if r["level"] in ("WARNING", "ERROR", "CRITICAL")]
    # Third-party records reached the one handler (asyncpg's pool retrying its floor).
    assert any(r["logger"].startswith("asyncpg") for r in problems), shown
    # Within the window each identical problem is written once; the others are counted, and
    # said when the window ends (at the latest at exit).
    written = collections.Counter(
        (r["logger"], r["level"], r["message"], r.get("exception", "").rsplit("\n", 1)[-1])
        for r in problems
        if "repeats_suppressed" not in r and "task_id" not in r
    )
    repeated = {key: count for key, count in written.items() if count > 1}
    assert not repeated, repeated
    summaries = [r for r in problems if "repeats_suppressed" in r]
    assert summaries, shown
    assert all(r["repeats_suppressed"] >= 1 for r in summaries)
    assert all(r["repeat_window_s"] == REPEAT_WINDOW_S for r in summaries)
    # Counted: the pool's retries were one line, and one more that says how many were not.
    floor = [r for r in problems if "Failed to restore the pool connection floor" in r["message"]]
    assert len(floor) == 2 and floor[1]["repeats_suppressed"] >= 1, floor


def test_an_exit_that_says_why_is_a_json_line_too() -> None:
    # A port already taken ends `peerwire serve` with one line saying so: with JSON logs it
    # is a record like any other (a log pipeline parses every line); in text, the text.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        said = {}
        for fmt in ("json", "text"):
            done = subprocess.run(
                [
                    str(Path(sys.executable).with_name("peerwire")),
                    *("serve", "peerwire.samples.glossary:agent", "--port", port, "--no-grpc"),
                    *("--store", "memory", "--log-format", fmt),
                ],
                capture_output=True,
                text=True,
                timeout=WAIT_S,
                check=False,
            )
            assert done.returncode == 1, done.stderr
            said[fmt] = done.stderr.splitlines()
    [record] = [json.loads(line) for line in said["json"]]
    assert (record["level"], record["logger"]) == ("CRITICAL", "peerwire.cli")
    assert record["message"].startswith(f"peerwire: cannot listen on 127.0.0.1:{port}: ")
    assert said["text"] == [record["message"]]
