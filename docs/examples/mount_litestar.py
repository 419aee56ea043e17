"""Two agents mounted in a Litestar application: ``uvicorn mount_litestar:app``."""

from litestar import Litestar, asgi, get
from litestar.types import Receive, Scope, Send

from peerwire import create_app

from two_agents import glossary, weather


@get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


def build() -> Litestar:
    glossary_app = create_app(glossary)
    weather_app = create_app(weather)

    @asgi("/a2a/glossary", is_mount=True, copy_scope=True)
    async def glossary_mount(scope: Scope, receive: Receive, send: Send) -> None:
        await glossary_app(scope, receive, send)  # type: ignore[arg-type]

    @asgi("/a2a/weather", is_mount=True, copy_scope=True)
    async def weather_mount(scope: Scope, receive: Receive, send: Send) -> None:
        await weather_app(scope, receive, send)  # type: ignore[arg-type]

    return Litestar(route_handlers=[health, glossary_mount, weather_mount])


app = build()
