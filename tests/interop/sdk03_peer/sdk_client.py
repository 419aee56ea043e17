"""Drive an A2A agent with the official a2a-sdk 0.3 client; print what it saw as JSON lines.

Run with the a2a-sdk 0.3 venv's python (tests/interop/sdk03_env.py), never inside the
peerwire test process (both register the ``a2a.v1`` proto package):

    sdk_client.py --url AGENT_BASE_URL --binding jsonrpc|rest|grpc --scenario NAME|all
    sdk_client.py --grpc-address HOST:PORT --binding grpc --scenario NAME|all

The 0.3 card is fetched from AGENT_BASE_URL/.well-known/agent-card.json, or with the gRPC
GetAgentCard rpc from HOST:PORT, and the SDK's client is limited to the one binding asked
for (its ``supported_transports``). Every stdout line is
one JSON object ``{"scenario": S, "op": <operation>, <kind>: <0.3 JSON, camelCase>}``:

    card            {"op": "card", "card": AgentCard}
    send            "record": {"op": "send", "result": Task | Message}
    stream          "record" streamed: {"op": "stream", "event": Task | status-update |
                    artifact-update | Message} per event
    get             send, then {"op": "get", "task": Task}
    input_required  send "" (must be input-required), then "record" on that task: two sends
    cancel          send "slow" with blocking false, then {"op": "cancel", "task": Task}
    subscribe       send "slow" with blocking false, resubscribe: {"op": "subscribe",
                    "event": ...} for the first event, then cancel it ({"op": "cancel"}) and
                    the rest of the events until the server closes the stream
    errors          get and cancel an unknown task: {"op": "error", "call": ..., "error": E}
    ask             send "" (the agent asks for input): one send, the task left waiting
    continue        with --task-id and --context-id: send "record" on that task, then get it
    files           a message with one file part (bytes FILE_B64, "in.bin"), sent: {"op":
                    "send"}, then got ({"op": "get"}), then streamed ({"op": "stream"})
    push            a webhook receiver of the SDK's own web framework (Starlette, on a free
                    loopback port) reads what arrives as the SDK's Task; "record" is sent
                    with a push config (url, token PUSH_TOKEN) in its configuration, and
                    once a notification of the finished task came (or 15 s passed):
                    {"op": "notification", "notification": {"contentType", "token",
                    "a2aVersion", "task"}} per notification received

``all`` runs the first eight in this order, in one process; ``--scenario`` also takes a
comma-separated list. A scenario that fails prints
``{"scenario": S, "error": {"type", "message", "code"?}}`` and the next one runs; the exit
code is 3 if any failed. ``code`` is the JSON-RPC error code, the HTTP status, or the gRPC
status name underneath the SDK's exception.

a2a-sdk 0.3 client behaviour worth knowing:
  * It sends no ``A2A-Version`` (0.3 had none); every send carries a configuration with
    ``blocking`` (true unless asked otherwise).
  * Its gRPC transport does not map errors: an ``AioRpcError`` surfaces as it is.
  * ``resubscribe`` needs ``capabilities.streaming``; for a non-streaming card, "stream"
    falls back to one blocking send.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import sys
from typing import Any
from uuid import uuid4

import grpc
import httpx
import uvicorn
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.client.transports.grpc import GrpcTransport
from a2a.types import (
    FilePart,
    FileWithBytes,
    Message,
    MessageSendConfiguration,
    Part,
    PushNotificationConfig,
    Role,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskState,
    TaskStatus,
    TextPart,
)
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON", "grpc": "GRPC"}
SCENARIOS = ("card", "send", "stream", "get", "input_required", "cancel", "subscribe", "errors")
SINGLE = ("ask", "continue", "files", "push")  # not in "all"
FILE_B64 = "AAH+/yBwZWVyd2lyZSCA"  # b"\x00\x01\xfe\xff peerwire \x80": not base64 text
PUSH_TOKEN = "push-token-0.3"
PUSH_WAIT_S = 15
SCENARIO_TIMEOUT_S = 20
UNKNOWN_TASK = "00000000-0000-4000-8000-000000000000"


class ScenarioError(Exception):
    """The agent answered, but not in a way the scenario can go on from."""


def to_json(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def grpc_target(url: str) -> str:
    # The SDK hands AgentInterface.url to the channel factory; accept host:port or a URL.
    for scheme in ("grpc://", "grpcs://", "http://", "https://"):
        if url.startswith(scheme):
            return url[len(scheme) :].rstrip("/")
    return url


def describe_error(exc: BaseException) -> dict[str, Any]:
    error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    for candidate in (exc, exc.__cause__):
        if isinstance(candidate, A2AClientJSONRPCError):
            error["code"] = candidate.error.code
            error["message"] = candidate.error.message
        elif isinstance(candidate, A2AClientHTTPError):
            error["code"] = candidate.status_code
        elif isinstance(candidate, grpc.aio.AioRpcError):
            error["code"] = candidate.code().name
            error["message"] = candidate.details() or ""
        else:
            continue
        break
    return error


class Scenarios:
    def __init__(
        self, card: Any, binding: str, http: httpx.AsyncClient, task: Task | None = None
    ) -> None:
        self.card = card
        self.binding = BINDINGS[binding]
        self.http = http
        self.scenario = ""
        self.task = task  # the task "continue" continues

    def emit(self, op: str, kind: str, value: Any) -> None:
        line = {"scenario": self.scenario, "op": op, kind: to_json(value)}
        print(json.dumps(line), flush=True)

    def client(self, *, streaming: bool, push: PushNotificationConfig | None = None) -> Client:
        # A push config goes in the ClientConfig, as the SDK means it: one in a send's own
        # configuration is turned into a dict by its merge (model_copy), which its REST and
        # gRPC transports then fail on.
        config = ClientConfig(
            streaming=streaming,
            supported_transports=[self.binding],
            httpx_client=self.http,
            grpc_channel_factory=lambda url: grpc.aio.insecure_channel(grpc_target(url)),
            push_notification_configs=[push] if push is not None else [],
        )
        return ClientFactory(config).create(self.card)

    @staticmethod
    def message(text: str, task: Task | None = None) -> Message:
        return Message(
            message_id=str(uuid4()),
            role=Role.user,
            parts=[Part(root=TextPart(text=text))],
            task_id=task.id if task is not None else None,
            context_id=task.context_id if task is not None else None,
        )

    async def send(self, text: str, *, task: Task | None = None, blocking: bool = True) -> Any:
        configuration = MessageSendConfiguration(blocking=blocking)
        client = self.client(streaming=False)
        results = [
            r
            async for r in client.send_message(
                self.message(text, task), configuration=configuration
            )
        ]
        if len(results) != 1:
            raise ScenarioError(f"send_message gave {len(results)} results, expected 1")
        result = results[0]
        value = result[0] if isinstance(result, tuple) else result
        self.emit("send", "result", value)
        return value

    async def send_for_task(self, text: str, **kwargs: Any) -> Task:
        value = await self.send(text, **kwargs)
        if not isinstance(value, Task):
            raise ScenarioError("send_message answered with a message, expected a task")
        return value

    def emit_event(self, op: str, event: Any) -> None:
        if isinstance(event, tuple):
            task, update = event
            self.emit(op, "event", update if update is not None else task)
        else:
            self.emit(op, "event", event)

    async def run_card(self) -> None:
        self.emit("card", "card", self.card)

    async def run_send(self) -> None:
        await self.send("record")

    async def run_stream(self) -> None:
        client = self.client(streaming=True)
        async for event in client.send_message(self.message("record")):
            self.emit_event("stream", event)

    async def run_get(self) -> None:
        task = await self.send_for_task("record")
        got = await self.client(streaming=False).get_task(TaskQueryParams(id=task.id))
        self.emit("get", "task", got)

    async def run_input_required(self) -> None:
        task = await self.send_for_task("")
        if task.status.state != TaskState.input_required:
            raise ScenarioError(f"expected input-required, got {task.status.state.value}")
        await self.send("record", task=task)

    async def run_cancel(self) -> None:
        task = await self.send_for_task("slow", blocking=False)
        canceled = await self.client(streaming=False).cancel_task(TaskIdParams(id=task.id))
        self.emit("cancel", "task", canceled)

    async def run_subscribe(self) -> None:
        task = await self.send_for_task("slow", blocking=False)
        events = self.client(streaming=True).resubscribe(TaskIdParams(id=task.id))
        self.emit_event("subscribe", await anext(events))
        canceled = await self.client(streaming=False).cancel_task(TaskIdParams(id=task.id))
        self.emit("cancel", "task", canceled)
        async for event in events:
            self.emit_event("subscribe", event)

    async def run_errors(self) -> None:
        client = self.client(streaming=False)
        for call, request in (
            ("get", client.get_task(TaskQueryParams(id=UNKNOWN_TASK))),
            ("cancel", client.cancel_task(TaskIdParams(id=UNKNOWN_TASK))),
        ):
            try:
                value = await request
            except Exception as exc:  # the point: what the SDK raises
                print(
                    json.dumps(
                        {
                            "scenario": self.scenario,
                            "op": "error",
                            "call": call,
                            "error": describe_error(exc),
                        }
                    ),
                    flush=True,
                )
            else:
                raise ScenarioError(f"{call} of an unknown task answered {to_json(value)}")

    async def run_files(self) -> None:
        file = FileWithBytes(bytes=FILE_B64, mime_type="application/octet-stream", name="in.bin")

        def message() -> Message:
            return Message(
                message_id=str(uuid4()), role=Role.user, parts=[Part(root=FilePart(file=file))]
            )

        configuration = MessageSendConfiguration(blocking=True)
        sent = [
            r
            async for r in self.client(streaming=False).send_message(
                message(), configuration=configuration
            )
        ]
        value = sent[0][0] if isinstance(sent[0], tuple) else sent[0]
        self.emit("send", "result", value)
        if not isinstance(value, Task):
            raise ScenarioError("send_message answered with a message, expected a task")
        got = await self.client(streaming=False).get_task(TaskQueryParams(id=value.id))
        self.emit("get", "task", got)
        async for event in self.client(streaming=True).send_message(message()):
            self.emit_event("stream", event)

    async def run_push(self) -> None:
        received: list[dict[str, Any]] = []
        finished = asyncio.Event()

        async def hook(request: Request) -> Response:
            try:
                task = Task.model_validate_json(await request.body())
            except ValidationError as exc:
                received.append({"error": str(exc)})
                return Response(status_code=400)
            received.append(
                {
                    "contentType": request.headers.get("content-type"),
                    "token": request.headers.get("x-a2a-notification-token"),
                    "a2aVersion": request.headers.get("a2a-version"),
                    "task": to_json(task),
                }
            )
            if task.status.state in (TaskState.completed, TaskState.failed, TaskState.canceled):
                finished.set()
            return Response(status_code=200)

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        receiver = uvicorn.Server(
            uvicorn.Config(
                Starlette(routes=[Route("/hook", hook, methods=["POST"])]),
                log_level="warning",
                access_log=False,
            )
        )
        serving = asyncio.create_task(receiver.serve(sockets=[sock]))
        try:
            while not receiver.started:
                if serving.done():
                    serving.result()
                await asyncio.sleep(0.02)
            push = PushNotificationConfig(url=f"http://127.0.0.1:{port}/hook", token=PUSH_TOKEN)
            configuration = MessageSendConfiguration(blocking=True)
            client = self.client(streaming=False, push=push)
            sent = [
                r
                async for r in client.send_message(
                    self.message("record"), configuration=configuration
                )
            ]
            value = sent[0][0] if isinstance(sent[0], tuple) else sent[0]
            self.emit("send", "result", value)
            with contextlib.suppress(TimeoutError):  # the test says what did (not) arrive
                await asyncio.wait_for(finished.wait(), PUSH_WAIT_S)
            for notification in received:
                self.emit("notification", "notification", notification)
        finally:
            receiver.should_exit = True
            await serving
            sock.close()

    async def run_ask(self) -> None:
        await self.send_for_task("")

    async def run_continue(self) -> None:
        if self.task is None:
            raise ScenarioError("continue needs --task-id and --context-id")
        await self.send("record", task=self.task)
        got = await self.client(streaming=False).get_task(TaskQueryParams(id=self.task.id))
        self.emit("get", "task", got)

    async def run(self, scenario: str) -> bool:
        self.scenario = scenario
        try:
            await asyncio.wait_for(getattr(self, f"run_{scenario}")(), SCENARIO_TIMEOUT_S)
        except Exception as exc:
            line = {"scenario": scenario, "error": describe_error(exc)}
            print(json.dumps(line, default=str), flush=True)
            return False
        return True


async def card_over_grpc(address: str) -> Any:
    """The card as the SDK's gRPC transport fetches it (GetAgentCard), without a card first."""
    transport = GrpcTransport(grpc.aio.insecure_channel(address), None)
    try:
        return await transport.get_card()
    finally:
        await transport.close()


async def run(args: argparse.Namespace, scenarios: list[str]) -> bool:
    task = None
    if args.task_id is not None:
        task = Task(
            id=args.task_id,
            context_id=args.context_id or "",
            status=TaskStatus(state=TaskState.input_required),
        )
    async with httpx.AsyncClient(timeout=30) as http:
        if args.grpc_address is not None:
            card = await card_over_grpc(args.grpc_address)
        else:
            card = await A2ACardResolver(http, args.url).get_agent_card()
        runner = Scenarios(card, args.binding, http, task)
        results = [await runner.run(scenario) for scenario in scenarios]
    return all(results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="agent base URL (card at /.well-known/agent-card.json)")
    where.add_argument("--grpc-address", help="host:port: fetch the card with GetAgentCard")
    parser.add_argument("--binding", required=True, choices=sorted(BINDINGS))
    parser.add_argument(
        "--scenario", required=True, help="a scenario, a list of them (a,b), or all"
    )
    parser.add_argument("--task-id", help="the task the continue scenario continues")
    parser.add_argument("--context-id", help="its context")
    args = parser.parse_args()
    scenarios = list(SCENARIOS) if args.scenario == "all" else args.scenario.split(",")
    unknown = [s for s in scenarios if s not in (*SCENARIOS, *SINGLE)]
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}")
    try:
        ok = asyncio.run(run(args, scenarios))
    except Exception as exc:  # the card could not be had
        print(json.dumps({"scenario": "card", "error": describe_error(exc)}, default=str))
        return 3
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
