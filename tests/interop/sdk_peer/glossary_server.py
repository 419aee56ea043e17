"""Glossary Agent served by the official a2a-sdk 1.3.0: the reference server for interop tests.

Run with the a2a-sdk venv's python (tests/interop/sdk_env.py), never inside the
peerwire test process (both register the ``lf.a2a.v1`` proto package):

    glossary_server.py --port P [--grpc-port G]

Serves JSON-RPC at ``/``, HTTP+JSON at ``/rest``, gRPC on 127.0.0.1:G (if given),
and the card at ``/.well-known/agent-card.json`` listing the interfaces in that
order (JSONRPC, HTTP+JSON, GRPC as ``127.0.0.1:G``). Binds 127.0.0.1 only.

Agent behaviour (message text, stripped and lower-cased):
  * ``record``       -> COMPLETED, one artifact (id and name "definition") in two
                        chunks: "A record is a final class that is a transparent",
                        then (append, lastChunk) " carrier for its components."
  * ``sealed class`` -> COMPLETED, one chunk "A sealed class restricts which
                        other classes may extend it."
  * empty text       -> INPUT_REQUIRED, agent status message "Which term should I
                        define?"; a follow-up message on that task with a term
                        continues it as above.
  * ``slow``         -> WORKING status update every 500 ms for 5 s, then
                        COMPLETED; cancellable.
  * anything else    -> FAILED, status message "I do not know the term '<term>'."

a2a-sdk 1.3.0 server wire behaviour, as observed (2026-11-30):
  * Deviations: timestamps carry microseconds ("...T19:15:23.387964Z"; spec SHOULD
    is milliseconds), and ListTasks (JSON-RPC and REST) emits default-valued
    members in nested messages ("filename": "", "mediaType": "", "extensions": [],
    "referenceTaskIds": []) that ProtoJSON, and its own other responses, omit.
  * Contrary to what is said of earlier a2a-sdk versions (InvalidParamsError), a message
    to a terminal task IS refused with UnsupportedOperationError (-32004; REST 400
    FAILED_PRECONDITION / UNSUPPORTED_OPERATION), as the spec says.
  * Choices the spec leaves open: CancelTask on a CANCELED task is
    TaskNotCancelableError (-32002); the stream closes at INPUT_REQUIRED; REST
    subscribe answers both GET and POST; the first streamed event is the Task in
    SUBMITTED; a missing A2A-Version is taken as 0.3 and refused (-32009).
  * JSON-RPC SSE ``data:`` lines are ``json.dumps`` with spaces, not compact.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging

import grpc
import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
    a2a_pb2_grpc,
)
from starlette.applications import Starlette

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
        task_id = context.task_id or ""
        context_id = context.context_id or ""
        if context.current_task is None:
            # A new task: publish its snapshot first, as the SDK's own samples do.
            history = [context.message] if context.message is not None else []
            await event_queue.enqueue_event(
                Task(
                    id=task_id,
                    context_id=context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=history,
                )
            )
        updater = TaskUpdater(event_queue=event_queue, task_id=task_id, context_id=context_id)
        await updater.start_work()

        term = context.get_user_input().strip()
        key = term.lower()

        def say(text: str):
            return updater.new_agent_message(parts=[Part(text=text)])

        if not key:
            await updater.requires_input(say(ASK_FOR_TERM))
        elif key == "slow":
            # Cancellation arrives as asyncio.CancelledError in one of these sleeps.
            for step in range(1, SLOW_STEPS + 1):
                await asyncio.sleep(SLOW_STEP_S)
                if step < SLOW_STEPS:
                    await updater.update_status(
                        TaskState.TASK_STATE_WORKING, say(f"thinking ({step}/{SLOW_STEPS})")
                    )
            await updater.complete(say("Done thinking."))
        elif key in DEFINITIONS:
            chunks = DEFINITIONS[key]
            for i, chunk in enumerate(chunks):
                await updater.add_artifact(
                    parts=[Part(text=chunk)],
                    artifact_id=ARTIFACT_ID,
                    name=ARTIFACT_ID,
                    append=i > 0,
                    last_chunk=i == len(chunks) - 1,
                )
            await updater.complete()
        else:
            await updater.failed(say(f"I do not know the term '{term}'."))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(
            event_queue=event_queue,
            task_id=context.task_id or "",
            context_id=context.context_id or "",
        )
        await updater.cancel()


def build_card(port: int, grpc_port: int | None) -> AgentCard:
    base = f"http://{HOST}:{port}"
    interfaces = [
        AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=f"{base}/"),
        AgentInterface(protocol_binding="HTTP+JSON", protocol_version="1.0", url=f"{base}/rest"),
    ]
    if grpc_port is not None:
        interfaces.append(
            AgentInterface(
                protocol_binding="GRPC", protocol_version="1.0", url=f"{HOST}:{grpc_port}"
            )
        )
    return AgentCard(
        name="Glossary Agent (a2a-sdk)",
        description="Defines programming terms; the reference peer of peerwire's interop tests.",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="define",
                name="define",
                description="Define a programming term.",
                tags=["glossary"],
                examples=["record", "sealed class"],
            )
        ],
        supported_interfaces=interfaces,
    )


async def serve(port: int, grpc_port: int | None) -> None:
    card = build_card(port, grpc_port)
    handler = DefaultRequestHandler(
        agent_executor=GlossaryExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        await handler.aclose()

    app = Starlette(
        routes=[
            *create_agent_card_routes(agent_card=card),
            *create_rest_routes(request_handler=handler, path_prefix="/rest"),
            *create_jsonrpc_routes(request_handler=handler, rpc_url="/"),
        ],
        lifespan=lifespan,
    )

    grpc_server = None
    if grpc_port is not None:
        # gRPC is up before the card answers, so "card answers" means "all ready".
        grpc_server = grpc.aio.server()
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
        if grpc_server.add_insecure_port(f"{HOST}:{grpc_port}") == 0:
            raise SystemExit(f"cannot bind gRPC port {grpc_port}")
        await grpc_server.start()

    config = uvicorn.Config(
        app,
        host=HOST,
        port=port,
        log_level="warning",
        access_log=False,
        # Open SSE streams must not hold up a test's teardown.
        timeout_graceful_shutdown=2,
    )
    try:
        await uvicorn.Server(config).serve()
    finally:
        if grpc_server is not None:
            await grpc_server.stop(grace=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(args.port, args.grpc_port))


if __name__ == "__main__":
    main()
