"""Glossary Agent served by the official a2a-sdk 0.3: the A2A 0.3 reference server of the
interop tests.

Run with the a2a-sdk 0.3 venv's python (tests/interop/sdk03_env.py), never inside the
peerwire test process (both register the ``a2a.v1`` proto package):

    glossary_server.py --port P --grpc-port G

Serves JSON-RPC at ``/``, HTTP+JSON at ``/rest`` (routes ``/rest/v1/...``), gRPC on
127.0.0.1:G, and the 0.3 card at ``/.well-known/agent-card.json``: ``url`` the JSON-RPC
endpoint (``preferredTransport`` JSONRPC), ``additionalInterfaces`` all three. Binds
127.0.0.1 only.

Agent behaviour (message text, stripped and lower-cased), as sdk_peer/glossary_server.py:
  * ``record``       -> completed, one artifact (id and name "definition") in two chunks:
                        "A record is a final class that is a transparent", then (append,
                        lastChunk) " carrier for its components."
  * ``sealed class`` -> completed, one chunk "A sealed class restricts which other classes
                        may extend it."
  * empty text       -> input-required, status message "Which term should I define?"; a
                        follow-up on that task with a term continues it as above.
  * ``slow``         -> a working status update every 500 ms for 5 s, then completed;
                        cancellable.
  * anything else    -> failed, status message "I do not know the term '<term>'."
  * a file part with bytes (whatever the text) -> completed, one artifact "mirror": a text
                        part with the file's ``bytes`` as the SDK read them (base64 text),
                        then a file part "out.bin" holding "got:" and the file's content.

Push notifications are on (the SDK's in-memory config store and its BasePushNotificationSender:
the 0.3 Task as JSON, the token in ``X-A2A-Notification-Token``).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import logging

import grpc
import httpx
import uvicorn
from a2a.grpc import a2a_pb2_grpc
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    FilePart,
    FileWithBytes,
    Part,
    Task,
    TaskState,
    TaskStatus,
    TextPart,
)

HOST = "127.0.0.1"
ARTIFACT_ID = "definition"
DEFINITIONS: dict[str, list[str]] = {
    "record": [
        "A record is a final class that is a transparent",
        " carrier for its components.",
    ],
    "sealed class": ["A sealed class restricts which other classes may extend it."],
}
ASK_FOR_TERM = "Which term should I define?"
SLOW_STEPS = 10
SLOW_STEP_S = 0.5


class GlossaryExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            # Not a2a.utils.new_task: it refuses a message whose text is empty.
            task = Task(
                id=context.task_id or "",
                context_id=context.context_id or "",
                status=TaskStatus(state=TaskState.submitted),
                history=[context.message] if context.message is not None else [],
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()

        term = context.get_user_input().strip()
        key = term.lower()

        def say(text: str):
            return updater.new_agent_message(parts=[Part(root=TextPart(text=text))])

        parts = context.message.parts if context.message is not None else []
        files = [
            p.root.file
            for p in parts
            if isinstance(p.root, FilePart) and isinstance(p.root.file, FileWithBytes)
        ]
        if files:
            received = files[0]
            got = b"got:" + base64.b64decode(received.bytes)
            out = FileWithBytes(
                bytes=base64.b64encode(got).decode(),
                mime_type="application/octet-stream",
                name="out.bin",
            )
            await updater.add_artifact(
                parts=[Part(root=TextPart(text=received.bytes)), Part(root=FilePart(file=out))],
                artifact_id="mirror",
                name="mirror",
            )
            await updater.complete()
        elif not key:
            await updater.requires_input(say(ASK_FOR_TERM), final=True)
        elif key == "slow":
            # Cancellation arrives as asyncio.CancelledError in one of these sleeps.
            for step in range(1, SLOW_STEPS + 1):
                await asyncio.sleep(SLOW_STEP_S)
                if step < SLOW_STEPS:
                    await updater.update_status(
                        TaskState.working, say(f"thinking ({step}/{SLOW_STEPS})")
                    )
            await updater.complete(say("Done thinking."))
        elif key in DEFINITIONS:
            chunks = DEFINITIONS[key]
            for i, chunk in enumerate(chunks):
                await updater.add_artifact(
                    parts=[Part(root=TextPart(text=chunk))],
                    artifact_id=ARTIFACT_ID,
                    name=ARTIFACT_ID,
                    append=i > 0,
                    last_chunk=i == len(chunks) - 1,
                )
            await updater.complete()
        else:
            await updater.failed(say(f"I do not know the term '{term}'."))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        task_id = task.id if task is not None else (context.task_id or "")
        context_id = task.context_id if task is not None else (context.context_id or "")
        await TaskUpdater(event_queue, task_id, context_id).cancel()


def build_card(port: int, grpc_port: int) -> AgentCard:
    base = f"http://{HOST}:{port}"
    return AgentCard(
        name="Glossary Agent (a2a-sdk 0.3)",
        description="Defines programming terms; the A2A 0.3 peer of peerwire's interop tests.",
        url=f"{base}/",
        preferred_transport="JSONRPC",
        additional_interfaces=[
            AgentInterface(transport="JSONRPC", url=f"{base}/"),
            AgentInterface(transport="HTTP+JSON", url=f"{base}/rest"),
            AgentInterface(transport="GRPC", url=f"{HOST}:{grpc_port}"),
        ],
        protocol_version="0.3.0",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain", "application/octet-stream"],
        default_output_modes=["text/plain", "application/octet-stream"],
        skills=[
            AgentSkill(
                id="define",
                name="define",
                description="Define a programming term.",
                tags=["glossary"],
                examples=["record", "sealed class"],
            )
        ],
    )


async def serve(port: int, grpc_port: int) -> None:
    card = build_card(port, grpc_port)
    push_configs = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandler(
        agent_executor=GlossaryExecutor(),
        task_store=InMemoryTaskStore(),
        push_config_store=push_configs,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=10), push_configs),
    )
    # REST under /rest; JSON-RPC and the card added to the same app.
    app = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler).build(rpc_url="/rest")
    A2AStarletteApplication(agent_card=card, http_handler=handler).add_routes_to_app(
        app, rpc_url="/"
    )

    # gRPC is up before the card answers, so "card answers" means "all ready".
    grpc_server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(card, handler), grpc_server)
    if grpc_server.add_insecure_port(f"{HOST}:{grpc_port}") == 0:
        raise SystemExit(f"cannot bind gRPC port {grpc_port}")
    await grpc_server.start()

    config = uvicorn.Config(
        app,
        host=HOST,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=2,  # open SSE streams must not hold up a test's teardown
    )
    try:
        await uvicorn.Server(config).serve()
    finally:
        await grpc_server.stop(grace=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(args.port, args.grpc_port))


if __name__ == "__main__":
    main()
