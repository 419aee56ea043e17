"""Two agents mounted in a Starlette application: ``uvicorn mount_starlette:app``."""

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from peerwire import create_app

from two_agents import glossary, weather


async def home(request: object) -> PlainTextResponse:
    return PlainTextResponse("The host's own pages live beside the agents.")


def build() -> Starlette:
    return Starlette(
        routes=[
            Route("/", home),
            Mount("/a2a/glossary", create_app(glossary)),
            Mount("/a2a/weather", create_app(weather)),
        ]
    )


app = build()
