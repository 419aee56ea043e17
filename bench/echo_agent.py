"""The benchmark agent, following the bench contract of bench/README.md.

SendMessage echoes the text as one artifact (submitted -> working -> artifact -> completed);
``message.metadata.chunks = N`` sends the artifact as N appended chunks instead.

    peerwire serve bench.echo_agent:agent --store memory --port 8000
"""

from __future__ import annotations

import gc
import os

from peerwire import Agent, Message, TaskContext
from peerwire.server import A2AApp, create_app

agent = Agent(
    "Echo Agent (peerwire)",
    description="Echoes the input text as a task artifact (benchmark agent).",
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
)


@agent.skill(
    "echo", name="echo", description="Echo the input.", tags=["echo", "bench"], examples=["hello"]
)
async def echo(message: Message, ctx: TaskContext) -> str | None:
    text = message.text
    chunks = (message.metadata or {}).get("chunks", 0)
    if not isinstance(chunks, int | float) or chunks <= 0:
        return text
    count = int(chunks)
    artifact_id = f"{ctx.task_id}-echo"
    for i in range(count):
        await ctx.add_artifact(
            f"{text}[{i}]",
            artifact_id=artifact_id,
            name="echo",
            append=i > 0,
            last_chunk=i == count - 1,
        )
    return None


def uvicorn_app() -> A2AApp:
    """The same agent as an ASGI app for uvicorn (``uvicorn --factory``): the bench's
    ``peerwire-uvicorn`` target, measuring peerwire's own HTTP server against uvicorn.
    Collects garbage as ``peerwire serve`` does, so only the HTTP server differs; the card
    advertises ``$PEERWIRE_BENCH_URL`` (the address uvicorn was told to bind)."""
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)
    public_url = os.environ.get("PEERWIRE_BENCH_URL", "http://127.0.0.1:8000")
    return create_app(agent, store="memory", public_url=public_url)
