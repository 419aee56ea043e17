"""The system under test (SUT) for the official A2A TCK (github.com/a2aproject/a2a-tck, the
1.0-dev line): a peerwire agent doing what the TCK's scenarios (its ``scenarios/*.feature``)
ask for, served with every peerwire default on, on JSON-RPC, HTTP+JSON and gRPC.

The TCK signals the behaviour it wants by the message's ``messageId`` prefix
(``tck-complete-task-<session>``, ...). Everything else (errors, capabilities, task ids and
contexts, history, push configs) is peerwire's own behaviour, not this file's.

Run it (README.md beside this file says how to point the TCK at it)::

    python tests/tck_sut/agent.py --port 9999 --grpc-port 10000
"""

from __future__ import annotations

import argparse
import asyncio
import uuid

from peerwire import Agent, Message, Part, Role, TaskContext, serve
from peerwire.server import PushSettings
from peerwire.server.ssrf import UnresolvableHost, system_resolver

# What the scenarios call "the streaming timeout" is 2 s; the resubscription scenario works
# for twice that, so a subscriber has time to join while the task is still WORKING.
RESUBSCRIBE_WORK_S = 4.0

# The TCK's webhook receiver listens on this machine ("localhost" by default): the SSRF guard
# refuses loopback webhooks unless they are allowed.
WEBHOOK_HOSTS = ("127.0.0.1", "::1", "localhost")

# The TCK registers push configs for https://example.com/... (a name RFC 2606 reserves) that
# it never expects to be called; the SSRF guard resolves a webhook's host when a config is
# registered. On a machine without DNS that fails (the config is refused), so there, and only
# for that name, the guard gets a public address (example.com's own): nothing listens there
# for the TCK either way.
PLACEHOLDER_HOST = "example.com"
PLACEHOLDER_ADDRESS = "93.184.215.14"


async def resolve(host: str, port: int) -> list[str]:
    try:
        return await system_resolver(host, port)
    except UnresolvableHost:
        if host.lower().rstrip(".") != PLACEHOLDER_HOST:
            raise
        return [PLACEHOLDER_ADDRESS]


def build_agent() -> Agent:
    # Every other setting is peerwire's default: input modes text/plain and application/json
    # (so CORE-SEND-003's application/x-unsupported-tck-type part is refused), streaming on.
    agent = Agent(
        "peerwire TCK SUT",
        description="A peerwire agent for the A2A TCK: behaviours chosen by messageId prefix",
    )

    @agent.router
    def route(message: Message) -> str:
        return "message" if message.message_id.startswith("tck-message-response") else "tck"

    @agent.skill(description="Returns a message instead of a task (tck-message-response)")
    async def message(text: str) -> Message:
        return Message(
            message_id=str(uuid.uuid4()),
            role=Role.AGENT,
            parts=[Part(text="Direct message response")],
        )

    @agent.skill(description="Handles the TCK's messages by their messageId prefix")
    async def tck(ctx: TaskContext) -> None:
        latest = ctx.message
        while latest.message_id.startswith("tck-input-required"):
            # A follow-up with this prefix asks again; any other one is handled below.
            latest = await ctx.ask("The TCK asked for input: send a follow-up")
        await behave(ctx, latest.message_id)

    return agent


async def behave(ctx: TaskContext, message_id: str) -> None:
    """What the scenario named by ``message_id``'s prefix does (most specific prefix first,
    as ``tck-artifact-file-url`` also starts with ``tck-artifact-file``)."""
    if message_id.startswith("tck-stream-artifact-chunked"):
        chunk = await ctx.add_artifact("chunk-1 ")
        await ctx.add_artifact("chunk-2", artifact_id=chunk, append=True, last_chunk=True)
    elif message_id.startswith("test-resubscribe-message-id"):
        await asyncio.sleep(RESUBSCRIBE_WORK_S)
    elif message_id.startswith("tck-stream-artifact-text"):
        await ctx.add_artifact("Streamed text content")
    elif message_id.startswith("tck-artifact-file-url"):
        await ctx.add_artifact(
            Part(
                url="https://example.com/output.txt",
                media_type="text/plain",
                filename="output.txt",
            )
        )
    elif message_id.startswith(("tck-stream-artifact-file", "tck-artifact-file")):
        await ctx.add_artifact(Part(raw=b"tck", media_type="text/plain", filename="output.txt"))
    elif message_id.startswith("tck-stream-ordering-001"):
        await ctx.add_artifact("Ordered output")
    elif message_id.startswith("tck-artifact-text"):
        await ctx.add_artifact("Generated text content")
    elif message_id.startswith("tck-artifact-data"):
        await ctx.add_artifact(Part(data={"key": "value", "count": 42}))
    elif message_id.startswith("tck-reject-task"):
        await ctx.reject("rejected")
        return
    elif message_id.startswith("tck-stream-001"):
        await ctx.add_artifact("Stream hello from TCK")
    elif message_id.startswith("tck-stream-003"):
        await ctx.add_artifact("Stream task lifecycle")
    elif message_id.startswith("tck-complete-task"):
        await ctx.complete("Hello from TCK")
        return
    elif not message_id.startswith("tck-stream-002"):
        await ctx.complete(f"Unhandled messageId prefix: {message_id}")
        return
    await ctx.complete()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9999)
    parser.add_argument("--grpc-port", type=int, default=0, help="0: a free port")
    arguments = parser.parse_args()
    serve(
        build_agent(),
        host=arguments.host,
        port=arguments.port,
        grpc_port=arguments.grpc_port,
        push=PushSettings(allow=WEBHOOK_HOSTS, resolver=resolve),
    )


if __name__ == "__main__":
    main()
