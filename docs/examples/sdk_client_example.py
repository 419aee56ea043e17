"""Calling a peerwire agent from the official a2a-sdk client (1.x), as any A2A client would.

Run it in an environment with ``a2a-sdk[grpc]`` (not peerwire's: see the page), against the
Glossary sample (``peerwire serve peerwire.samples.glossary:agent``)::

    python sdk_client_example.py http://127.0.0.1:8000
"""

import asyncio
import sys
from uuid import uuid4

import grpc
import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState


def request(text: str, task=None) -> SendMessageRequest:
    """A user message; on ``task``, it answers that task (its id and context)."""
    message = Message(message_id=str(uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task is not None:
        message.task_id, message.context_id = task.id, task.context_id
    return SendMessageRequest(message=message)


def state(task) -> str:
    return TaskState.Name(task.status.state).removeprefix("TASK_STATE_")


def text_of(task) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


def client_for(card, binding: str, *, streaming: bool = False):
    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],  # "JSONRPC", "HTTP+JSON" or "GRPC"
        # For gRPC the SDK hands the card's gRPC address to this factory.
        grpc_channel_factory=lambda address: grpc.aio.insecure_channel(address),
    )
    return ClientFactory(config).create(card)


async def send(card, binding: str, message: SendMessageRequest):
    """A blocking SendMessage: the one response is the task (or a direct message)."""
    async with client_for(card, binding) as client:
        (response,) = [r async for r in client.send_message(message)]
    return response.task


async def main(url: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
    print(card.name, [i.protocol_binding for i in card.supported_interfaces])

    # Each binding the card offers, blocking: the task comes back COMPLETED.
    for binding in ("JSONRPC", "HTTP+JSON", "GRPC"):
        task = await send(card, binding, request("sealed class"))
        print(binding, state(task), text_of(task))

    # Streaming: the task first, then its status and artifact updates as they happen.
    async with client_for(card, "JSONRPC", streaming=True) as client:
        async for event in client.send_message(request("record")):
            kind = event.WhichOneof("payload")
            if kind == "task":
                print("stream:", kind, state(event.task))
            elif kind == "status_update":
                print("stream:", kind, state(event.status_update))
            elif kind == "artifact_update":
                chunk = "".join(p.text for p in event.artifact_update.artifact.parts)
                print("stream:", kind, repr(chunk))

    # A question (INPUT_REQUIRED) answered on the same task.
    asked = await send(card, "JSONRPC", request(""))
    print(state(asked), asked.status.message.parts[0].text)
    done = await send(card, "JSONRPC", request("record", task=asked))
    print(state(done), done.id == asked.id)

    # peerwire's errors reach the SDK as the A2A errors they are.
    async with client_for(card, "HTTP+JSON") as client:
        try:
            await client.get_task(GetTaskRequest(id=str(uuid4())))
        except Exception as error:  # the SDK's TaskNotFoundError
            print("GetTask:", type(error).__name__)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"))
