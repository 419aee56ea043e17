"""Two agents mounted in a FastAPI application: ``uvicorn mount_fastapi:app``."""

from fastapi import FastAPI

from peerwire import create_app

from two_agents import glossary, weather


def build(public_url: str = "http://127.0.0.1:8000") -> FastAPI:
    api = FastAPI()

    @api.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    api.mount("/a2a/glossary", create_app(glossary, public_url=public_url))
    api.mount("/a2a/weather", create_app(weather, public_url=public_url))
    return api


app = build()
