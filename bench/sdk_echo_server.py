"""The bench contract's echo agent on the official a2a-sdk: the reference implementation.

    $REF_PYTHON bench/sdk_echo_server.py --port 8000 [--http h11|httptools] [--loop ...]

A reference target of the bench harness, run ONLY in its reference venv (a2a-sdk 1.3.0:
bench/harness/venvs.py), never in peerwire's: both register the ``lf.a2a.v1`` protobuf
package. The SDK as a user would deploy it: ``DefaultRequestHandler`` over its
``InMemoryTaskStore``, the JSON-RPC routes at ``/`` and HTTP+JSON at ``/rest`` on Starlette
and uvicorn, its OpenTelemetry wrappers on as shipped (``sdk-notrace`` turns them off with
``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=false``).

The agent (bench/README.md): the message's text comes back as one artifact through
submitted, working, the artifact, completed; with ``message.metadata.chunks = N`` the
artifact comes as N appended chunks ("TEXT[0]" ... "TEXT[N-1]"), the last one lastChunk.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import AsyncIterator

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette


def chunks_asked(message: Message | None) -> int:
    if message is None or not message.HasField("metadata"):
        return 0
    value = message.metadata.fields.get("chunks")
    return int(value.number_value) if value is not None else 0


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        message = context.message
        submitted = Task(
            id=task_id,
            context_id=context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[message] if message is not None else [],
        )
        await event_queue.enqueue_event(submitted)
        task = TaskUpdater(event_queue=event_queue, task_id=task_id, context_id=context_id)
        await task.start_work()
        text = context.get_user_input()
        count = chunks_asked(message)
        if count <= 0:
            await task.add_artifact(parts=[Part(text=text)], name="echo", last_chunk=True)
        for i in range(count):
            await task.add_artifact(
                parts=[Part(text=f"{text}[{i}]")],
                artifact_id=f"{task_id}-echo",
                name="echo",
                append=i > 0,
                last_chunk=i == count - 1,
            )
        await task.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        await TaskUpdater(event_queue=event_queue, task_id=task_id, context_id=context_id).cancel()


def agent_card(base: str) -> AgentCard:
    return AgentCard(
        name="Echo Agent (a2a-sdk)",
        description="Echoes the input text as a task artifact (benchmark agent).",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="echo",
                name="echo",
                description="Echo the input.",
                tags=["echo", "bench"],
                examples=["hello"],
            )
        ],
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=f"{base}/"),
            AgentInterface(
                protocol_binding="HTTP+JSON", protocol_version="1.0", url=f"{base}/rest"
            ),
        ],
    )


def build_app(base: str) -> Starlette:
    card = agent_card(base)
    handler = DefaultRequestHandler(
        agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await handler.aclose()

    routes = [
        *create_agent_card_routes(agent_card=card),
        *create_rest_routes(request_handler=handler, path_prefix="/rest"),
        *create_jsonrpc_routes(request_handler=handler, rpc_url="/"),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--http", choices=["auto", "h11", "httptools"], default="auto")
    ap.add_argument("--loop", choices=["auto", "asyncio", "uvloop"], default="auto")
    a = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    app = build_app(f"http://{a.host}:{a.port}")
    uvicorn.run(
        app,
        host=a.host,
        port=a.port,
        http=a.http,
        loop=a.loop,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
