"""Two agents mounted in a FastAPI application: ``uvicorn mount_fastapi:app``."""

from fastapi import FastAPI

from peerwire import create_app

from two_agents import glossary, weather


def build() -> FastAPI:
    api = FastAPI()

    @api.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    api.mount("/a2a/glossary", create_app(glossary))
    api.mount("/a2a/weather", create_app(weather))
    return api


app = build()
