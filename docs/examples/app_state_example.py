"""Sharing a resource between skills: the agent's lifespan and its app state.

``python app_state_example.py serve`` serves the agent; ``python app_state_example.py``
asks it twice.
"""

import contextlib
import sys
from collections.abc import AsyncIterator

import anyio

from peerwire import Agent, Client, TaskContext, serve


class Inventory:
    """Stands for a database pool or an API client: opened once, shared by every task."""

    def __init__(self) -> None:
        self.stock = {"widget": 12, "gadget": 0}
        self.lookups = 0

    async def close(self) -> None:
        self.stock.clear()


@contextlib.asynccontextmanager
async def lifespan(agent: Agent) -> AsyncIterator[Inventory]:
    inventory = Inventory()  # e.g. await asyncpg.create_pool(...)
    try:
        yield inventory  # the app state, while the server (or worker) runs
    finally:
        await inventory.close()  # on shutdown, after the last task stopped


agent = Agent("Stock", description="Says what is in stock", lifespan=lifespan)


@agent.skill()
async def stock(text: str, inventory: Inventory) -> str:
    """Annotated with the type the lifespan yields: this parameter receives the state."""
    inventory.lookups += 1
    return f"{text}: {inventory.stock.get(text, 0)} in stock (lookup {inventory.lookups})"


@agent.skill()
async def lookups(ctx: TaskContext) -> str:
    """The same state through the context (as an executor gets it)."""
    inventory: Inventory = ctx.app_state
    return f"{inventory.lookups} lookups so far"


async def main(url: str = "http://127.0.0.1:8000") -> None:
    async with Client.connect(url) as client:
        for item in ("widget", "gadget"):
            task = await client.send(item, skill="stock")
            print(task.artifacts[0].text)  # widget: 12 in stock (lookup 1)
        task = await client.send("", skill="lookups")
        print(task.artifacts[0].text)  # 2 lookups so far


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8000)
    else:
        anyio.run(main)
