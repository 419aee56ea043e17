"""Drive an A2A agent with the official a2a-sdk 1.3.0 client; print what it saw as JSON lines.

Run with the a2a-sdk venv's python (tests/interop/sdk_env.py), never inside the
peerwire test process (both register the ``lf.a2a.v1`` proto package):

    sdk_client.py --url AGENT_BASE_URL --binding jsonrpc|rest|grpc --scenario NAME [--text T]

The card is fetched from AGENT_BASE_URL/.well-known/agent-card.json and the SDK's
client is limited to the one binding asked for. Every stdout line is one JSON
object ``{"op": <operation>, <kind>: <ProtoJSON, camelCase>}``:

    card            {"op": "card", "card": AgentCard}
    send            {"op": "send", "response": {"task": ...} | {"message": ...}}
    stream          {"op": "stream", "event": StreamResponse} per event
    get             send, then {"op": "get", "task": Task}
    list            send, then {"op": "list", "response": ListTasksResponse}
    input_required  send "" (must be INPUT_REQUIRED), then send "record" on that
                    taskId/contextId: two "send" lines
    repeat          send the same message (one messageId) twice: two "send" lines
    cancel          send "slow" returnImmediately, then {"op": "cancel", "task": Task}
    subscribe       send "slow" returnImmediately, then {"op": "subscribe",
                    "event": StreamResponse} per event until the server closes

``--text`` replaces "record" (the term asked for) in send, stream, get, list and
the input_required follow-up.

Exit 0 on success. On an error, the last line is
``{"error": {"type": <exception class>, "message": ..., "code": <if any>}}`` and the
exit code is 3. ``code`` is the JSON-RPC code of the A2A error class the SDK
mapped the failure to on any binding (else the HTTP status or gRPC status name);
``status`` adds the HTTP status / gRPC status name underneath, ``data`` the
error's ErrorInfo metadata or validation details.

a2a-sdk 1.3.0 client behaviour worth knowing:
  * ``Client.send_message`` silently falls back to a blocking SendMessage when the
    card says ``capabilities.streaming`` is false, so "stream" then prints one event;
    ``subscribe`` raises NotImplementedError in that case.
  * The REST transport subscribes with ``POST /tasks/{id}:subscribe`` (the
    proto's http rule says GET, the spec text POST).
  * The gRPC transport hands ``AgentInterface.url`` unchanged to
    ``ClientConfig.grpc_channel_factory``; ours strips a scheme, so both card
    forms (``host:port`` and a URL) work.
  * It sends ``A2A-Version: 1.0`` on every request (HTTP header / gRPC metadata).
  * Of the allowed binding's interfaces it takes the first with protocolVersion
    1.0, else the first above 1.0, else the first >= 0.3 (which gets the SDK's 0.3
    compat transport), else one without a version.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any
from uuid import uuid4

import grpc
import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP
from google.protobuf.json_format import MessageToDict

BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON", "grpc": "GRPC"}
OVERALL_TIMEOUT_S = 50  # below the harness's 60 s subprocess timeout, so we report why


class ScenarioError(Exception):
    """The agent answered, but not in a way the scenario can go on from."""


def emit(op: str, kind: str, value: Any) -> None:
    payload = MessageToDict(value) if hasattr(value, "DESCRIPTOR") else value
    print(json.dumps({"op": op, kind: payload}), flush=True)


def grpc_target(url: str) -> str:
    # The SDK passes AgentInterface.url straight to grpc; accept "host:port" or a URL.
    for scheme in ("grpc://", "grpcs://", "http://", "https://"):
        if url.startswith(scheme):
            return url[len(scheme) :].rstrip("/")
    return url


class Scenarios:
    def __init__(self, card, binding: str, text: str) -> None:
        self.card = card
        self.binding = BINDINGS[binding]
        self.text = text

    def client(self, *, streaming: bool) -> Client:
        config = ClientConfig(
            streaming=streaming,
            supported_protocol_bindings=[self.binding],
            grpc_channel_factory=lambda url: grpc.aio.insecure_channel(grpc_target(url)),
        )
        return ClientFactory(config).create(self.card)

    @staticmethod
    def request(text: str, *, task=None, return_immediately: bool = False) -> SendMessageRequest:
        message = Message(message_id=str(uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
        if task is not None:
            message.task_id = task.id
            message.context_id = task.context_id
        req = SendMessageRequest(message=message)
        if return_immediately:
            req.configuration.return_immediately = True
        return req

    async def send(self, text: str, **kwargs: Any):
        """Blocking (or returnImmediately) SendMessage; prints and returns the response."""
        async with self.client(streaming=False) as client:
            responses = [r async for r in client.send_message(self.request(text, **kwargs))]
        for response in responses:
            emit("send", "response", response)
        if len(responses) != 1:
            raise ScenarioError(f"SendMessage gave {len(responses)} responses, expected 1")
        return responses[0]

    async def send_for_task(self, text: str, **kwargs: Any):
        response = await self.send(text, **kwargs)
        if not response.HasField("task"):
            raise ScenarioError("SendMessage answered with a message, expected a task")
        return response.task

    async def run_card(self) -> None:
        emit("card", "card", self.card)

    async def run_send(self) -> None:
        await self.send(self.text)

    async def run_stream(self) -> None:
        async with self.client(streaming=True) as client:
            async for event in client.send_message(self.request(self.text)):
                emit("stream", "event", event)

    async def run_get(self) -> None:
        task = await self.send_for_task(self.text)
        async with self.client(streaming=False) as client:
            emit("get", "task", await client.get_task(GetTaskRequest(id=task.id)))

    async def run_list(self) -> None:
        await self.send_for_task(self.text)
        async with self.client(streaming=False) as client:
            emit("list", "response", await client.list_tasks(ListTasksRequest()))

    async def run_input_required(self) -> None:
        task = await self.send_for_task("")
        if task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            state = TaskState.Name(task.status.state)
            raise ScenarioError(f"expected TASK_STATE_INPUT_REQUIRED, got {state}")
        await self.send(self.text, task=task)

    async def run_repeat(self) -> None:
        request = self.request(self.text)
        for _ in range(2):
            async with self.client(streaming=False) as client:
                async for response in client.send_message(request):
                    emit("send", "response", response)

    async def run_cancel(self) -> None:
        task = await self.send_for_task("slow", return_immediately=True)
        async with self.client(streaming=False) as client:
            emit("cancel", "task", await client.cancel_task(CancelTaskRequest(id=task.id)))

    async def run_subscribe(self) -> None:
        task = await self.send_for_task("slow", return_immediately=True)
        async with self.client(streaming=True) as client:
            async for event in client.subscribe(SubscribeToTaskRequest(id=task.id)):
                emit("subscribe", "event", event)


SCENARIOS = sorted(name.removeprefix("run_") for name in vars(Scenarios) if name.startswith("run_"))


async def run(url: str, binding: str, scenario: str, text: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
    await getattr(Scenarios(card, binding, text), f"run_{scenario}")()


def transport_status(exc: BaseException) -> int | str | None:
    """The HTTP status or gRPC status name under an SDK exception, if any."""
    cause = exc.__cause__
    if isinstance(cause, httpx.HTTPStatusError):
        return cause.response.status_code
    if isinstance(cause, grpc.aio.AioRpcError):
        return cause.code().name
    return None


def describe_error(exc: BaseException) -> dict[str, Any]:
    error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    # The SDK maps every binding's A2A error to one exception class; its JSON-RPC
    # code is the binding-neutral name for it.
    code = JSON_RPC_ERROR_CODE_MAP.get(type(exc)) or transport_status(exc)
    if code is not None:
        error["code"] = code
    status = transport_status(exc)
    if status is not None:
        error["status"] = status
    data = getattr(exc, "data", None)
    if data:
        error["data"] = data
    return error


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="agent base URL (card at /.well-known/...)")
    parser.add_argument("--binding", required=True, choices=sorted(BINDINGS))
    parser.add_argument("--scenario", required=True, choices=SCENARIOS)
    parser.add_argument("--text", default="record", help='the term to send (default "record")')
    args = parser.parse_args()
    scenario = run(args.url, args.binding, args.scenario, args.text)
    try:
        asyncio.run(asyncio.wait_for(scenario, OVERALL_TIMEOUT_S))
    except Exception as exc:
        print(json.dumps({"error": describe_error(exc)}, default=str), flush=True)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
