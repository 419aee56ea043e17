"""The tutorial's agent: three skills that show what a skill can do."""

import asyncio

from peerwire import Agent, Message, TaskContext

agent = Agent("Word Agent", description="Counts, spells and greets")


@agent.router
def route(message: Message) -> str:
    """``metadata["skill"]`` names the skill; a message without one is counted."""
    named = (message.metadata or {}).get("skill")
    return named if isinstance(named, str) else "count"


@agent.skill(examples=["the quick brown fox"])
async def count(text: str) -> str:
    """Counts the words of a message."""
    return f"{len(text.split())} words"


@agent.skill(examples=["peerwire"])
async def spell(text: str, ctx: TaskContext) -> None:
    """Spells a word out, one letter at a time, as one artifact streamed in chunks."""
    await ctx.start_work(f"Spelling {text!r}")
    letters = list(text.strip())
    for i, letter in enumerate(letters):
        await asyncio.sleep(0.01)  # some real work would happen here
        await ctx.add_artifact(
            letter.upper(),
            name="letters",
            artifact_id="letters",
            append=i > 0,
            last_chunk=i == len(letters) - 1,
        )
    await ctx.complete()


@agent.skill()
async def greet(text: str, ctx: TaskContext) -> str:
    """Greets someone by name, asking for the name when the message has none."""
    name = text.strip()
    while not name:
        answer = await ctx.ask("What is your name?")  # INPUT_REQUIRED until the caller answers
        name = answer.text.strip()
    return f"Hello, {name}!"
