"""The Glossary Agent: defines Java terms.

Serve it (with ``peerwire[cli]`` installed, from any folder)::

    peerwire serve peerwire.samples.glossary:agent

What it does, by message text:

* a known term ("record", "sealed class", ...) completes with one artifact, ``definition``
  ("record" arrives in two chunks, to show streaming);
* an empty message asks "Which term should I define?"; the answer, sent on the same task,
  completes it;
* an unknown term fails the task with "I do not know the term '<term>'.";
* "slow" (or ``metadata: {"skill": "slow"}``) works for 5 s, reporting progress every 500 ms;
  cancel it to see the cleanup hook run.
"""

from __future__ import annotations

import asyncio
import logging

from peerwire import Agent, Message, TaskContext

log = logging.getLogger(__name__)

agent = Agent(
    "Glossary Agent",
    description="Defines Java terms",
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
)

DEFINITIONS = {
    "record": [
        "A record is a final class that is a transparent",
        " carrier for its components.",
    ],
    "sealed class": ["A sealed class restricts which other classes may extend it."],
    "interface": ["An interface declares methods that implementing classes must provide."],
    "lambda": ["A lambda is an anonymous function implementing a functional interface."],
    "generic": ["A generic class or method takes type parameters, checked at compile time."],
    "stream": ["A stream is a lazy sequence of elements processed by chained operations."],
    "optional": ["An Optional is a container that may or may not hold a non-null value."],
}


@agent.router
def route(message: Message) -> str:
    """``slow`` by its text or by ``metadata["skill"]``; everything else is a term to define."""
    named = (message.metadata or {}).get("skill")
    if named == "slow" or message.text.strip().lower() == "slow":
        return "slow"
    return "define"


@agent.skill(
    description="Defines a Java term in one sentence.",
    tags=["java", "glossary"],
    examples=["record", "sealed class"],
)
async def define(text: str, ctx: TaskContext) -> None:
    term = text.strip()
    while not term:
        # ask() suspends until the caller answers on this task. If the server restarts in
        # between, the answer re-runs this function and ask() returns it straight away.
        term = (await ctx.ask("Which term should I define?")).text.strip()
    chunks = DEFINITIONS.get(term.lower())
    if chunks is None:
        await ctx.fail(f"I do not know the term '{term}'.")
        return
    for i, chunk in enumerate(chunks):
        await ctx.add_artifact(
            chunk,
            name="definition",
            artifact_id="definition",
            append=i > 0,
            last_chunk=i == len(chunks) - 1,
        )
    await ctx.complete()


@agent.skill(
    description="Thinks for 5 seconds, reporting progress; cancel it to stop.",
    tags=["wait", "cancel"],
    examples=["slow"],
)
async def slow(ctx: TaskContext) -> None:
    steps = 10
    for step in range(1, steps + 1):
        await asyncio.sleep(0.5)  # a cancel arrives here, as asyncio.CancelledError
        if step < steps:
            await ctx.update(f"thinking ({step}/{steps})")
    await ctx.complete("Done thinking.")


@agent.on_cancel("slow")
async def stop_thinking(ctx: TaskContext) -> None:
    log.info("task %s: canceled, stopped thinking", ctx.task_id)
