"""The tracing how-to (docs/howto/tracing.md) as written: ``peerwire serve traced_agent:agent
--tracing console|otlp --log-format json`` and ``peerwire send``, real processes. The
console's spans and the OTLP export (to a collector stand-in of the test's own, on
loopback) hold the request's SERVER span, and the skill's log line carries its ids."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
PAGE = Path(__file__).resolve().parents[2] / "docs" / "howto" / "tracing.md"
PEERWIRE = str(Path(sys.executable).with_name("peerwire"))
WAIT_S = 60.0


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("OTEL_")}
    return {**env, **extra}


@contextlib.asynccontextmanager
async def _serving(*options: str, env: dict[str, str]) -> AsyncIterator[tuple[str, Any]]:
    """``peerwire serve traced_agent:agent --port 0 OPTIONS`` in docs/examples: its URL and
    the process (stdout and stderr piped); stopped with SIGTERM, as the page's ``kill``."""
    process = await asyncio.create_subprocess_exec(
        *(PEERWIRE, "serve", "traced_agent:agent", "--store", "memory", "--port", "0"),
        *("--no-grpc", *options),
        cwd=EXAMPLES,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        async with asyncio.timeout(WAIT_S):
            while True:
                line = await process.stderr.readline()
                assert line, "peerwire serve ended before serving"
                if b"serving 'Inventory'" in line:
                    break
        yield json.loads(line)["url"], process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _stop(process: Any) -> tuple[str, list[dict[str, Any]]]:
    """SIGTERM, then the rest of stdout and stderr's lines as JSON objects."""
    process.send_signal(signal.SIGTERM)
    async with asyncio.timeout(WAIT_S):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode(), [json.loads(line) for line in err.decode().splitlines() if line]


async def _send(url: str, text: str) -> str:
    done = await asyncio.create_subprocess_exec(
        PEERWIRE, "send", url, text, env=_env(), stdout=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(WAIT_S):
        out, _ = await done.communicate()
    assert done.returncode == 0, out
    return out.decode()


def _console_spans(out: str) -> list[dict[str, Any]]:
    """The console exporter's output: JSON objects, one after another, each over lines."""
    decoder, spans, at = json.JSONDecoder(), [], 0
    while at < len(out):
        if out[at].isspace():
            at += 1
            continue
        span, at = decoder.raw_decode(out, at)
        spans.append(span)
    return spans


def _low_stock(records: list[dict[str, Any]]) -> dict[str, Any]:
    [line] = [r for r in records if r["logger"] == "traced_agent"]
    assert (line["level"], line["message"]) == ("WARNING", "low stock of bolts: 3 left")
    return line


def test_the_page_serves_the_example_and_says_what_it_prints() -> None:
    page = PAGE.read_text()
    assert '--8<-- "traced_agent.py"' in page
    flat = page.replace("\\\n    ", "")
    assert (
        "peerwire serve traced_agent:agent --store memory --port 8000 --tracing console "
        "--log-format json --access-log > spans.json 2> log.jsonl &"
    ) in flat
    assert "peerwire send http://127.0.0.1:8000 bolts      # completed, result: 3 bolts" in page


async def test_console_spans_and_the_log_line_share_the_trace() -> None:
    options = ("--tracing", "console", "--log-format", "json", "--access-log")
    async with _serving(*options, env=_env()) as (
        url,
        process,
    ):
        said = await _send(url, "bolts")
        assert "completed" in said and "3 bolts" in said, said
        out, records = await _stop(process)
    spans = _console_spans(out)
    [server] = [s for s in spans if s["kind"] == "SpanKind.SERVER"]
    assert server["name"] == "SendStreamingMessage"  # peerwire send streams: it can here
    [run] = [s for s in spans if s["name"] == "invoke_agent Inventory"]
    assert run["kind"] == "SpanKind.INTERNAL" and run["parent_id"] == server["context"]["span_id"]
    assert run["attributes"]["a2a.skill.id"] == "count"
    assert run["attributes"]["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert {s["resource"]["attributes"]["service.name"] for s in spans} == {"Inventory"}
    line = _low_stock(records)
    assert "0x" + line["trace_id"] == run["context"]["trace_id"] == server["context"]["trace_id"]
    assert "0x" + line["span_id"] == run["context"]["span_id"]
    lines = [r for r in records if r["logger"] == "peerwire.access"]
    [access] = [r for r in lines if r["operation"] == "SendStreamingMessage"]
    assert [r for r in lines if r["binding"] == "card" and "trace_id" not in r], "no span"
    assert "0x" + access["trace_id"] == server["context"]["trace_id"]
    assert "0x" + access["span_id"] == server["context"]["span_id"]
    started = [r for r in records if "serving" in r["message"]]
    assert all("trace_id" not in r for r in started), "outside a span: no ids"


class _Collector:
    """An OTLP/HTTP trace receiver on loopback: keeps every ExportTraceServiceRequest."""

    def __init__(self) -> None:
        self.exports: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *fields = head.decode("latin-1").split("\r\n")
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (f.partition(":") for f in fields if f)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.paths.append(request_line.split()[1])
                self.exports.append(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\n"
                    + f"content-length: {len(answer)}\r\n\r\n".encode()
                    + answer
                )
                await writer.drain()
        writer.close()


async def test_otlp_spans_reach_the_collector_with_the_service_name_and_the_logs_trace() -> None:
    collector = _Collector()
    server = await asyncio.start_server(collector.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    env = _env(
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}", OTEL_SERVICE_NAME="inventory"
    )
    async with (
        server,
        _serving("--tracing", "otlp", "--log-format", "json", env=env) as (
            url,
            process,
        ),
    ):
        said = await _send(url, "bolts")
        assert "3 bolts" in said, said
        _, records = await _stop(process)  # the pending batch is sent at the stop
    assert collector.paths and set(collector.paths) == {"/v1/traces"}
    spans = [
        (resource, span)
        for export in collector.exports
        for resource in export.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    [(resource, run)] = [(r, s) for r, s in spans if s.name == "invoke_agent Inventory"]
    names = {a.key: a.value.string_value for a in resource.resource.attributes}
    assert names["service.name"] == "inventory"
    assert any(s.name == "SendStreamingMessage" for _, s in spans)
    line = _low_stock(records)
    assert (run.trace_id.hex(), run.span_id.hex()) == (line["trace_id"], line["span_id"])
