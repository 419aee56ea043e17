"""Two agents in a FastAPI host that drains them on shutdown: ``uvicorn mount_graceful:app``."""

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI

from peerwire import create_app

from two_agents import glossary, weather


def build() -> FastAPI:
    agents = {
        "/a2a/glossary": create_app(glossary),
        "/a2a/weather": create_app(weather),
    }

    @contextlib.asynccontextmanager
    async def lifespan(host: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for agent_app in agents.values():
                await stack.enter_async_context(agent_app.lifespan())  # started here
            yield  # on shutdown: working tasks get their grace, then the stores close

    api = FastAPI(lifespan=lifespan)
    for prefix, agent_app in agents.items():
        api.mount(prefix, agent_app)
    return api


app = build()
