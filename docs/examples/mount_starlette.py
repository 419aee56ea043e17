"""Two agents mounted in a Starlette application: ``uvicorn mount_starlette:app``."""

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from peerwire import create_app

from two_agents import glossary, weather


async def home(request: object) -> PlainTextResponse:
    return PlainTextResponse("The host's own pages live beside the agents.")


def build(public_url: str = "http://127.0.0.1:8000") -> Starlette:
    return Starlette(
        routes=[
            Route("/", home),
            Mount("/a2a/glossary", create_app(glossary, public_url=public_url)),
            Mount("/a2a/weather", create_app(weather, public_url=public_url)),
        ]
    )


app = build()
