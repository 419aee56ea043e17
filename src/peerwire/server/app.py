"""Putting an agent on the network: ``create_app`` builds the ASGI app, ``serve`` runs it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from ..types import AgentInterface, Binding
from .agent import Agent
from .asgi import A2AApp
from .bus import EventBus, MemoryBus
from .dispatch import Dispatcher
from .runner import Runner
from .stores import TaskStore, open_store

__all__ = ["create_app", "serve"]


def create_app(
    agent: Agent,
    *,
    store: TaskStore | str = "memory",
    bus: EventBus | None = None,
    public_url: str = "http://127.0.0.1:8000",
    rpc_path: str = "/",
    lenient_version: bool = False,
    max_working: int = 10_000,
    shutdown_grace: float = 10.0,
    max_body_bytes: int = 10 * 1024 * 1024,
    card_max_age: int = 300,
) -> A2AApp:
    """An ASGI application serving ``agent`` over JSON-RPC, with its card.

    ``store`` is a ``TaskStore`` or a spec: ``"memory"``, ``"sqlite:PATH"``.
    ``public_url`` is the base URL the card advertises. ``lenient_version`` accepts requests
    without ``A2A-Version`` as 1.0 (strictly, a missing header means 0.3 and is refused).
    """
    task_store = open_store(store) if isinstance(store, str) else store
    event_bus = bus if bus is not None else MemoryBus()
    runner = Runner(
        agent, task_store, event_bus, max_working=max_working, shutdown_grace=shutdown_grace
    )
    interfaces = [
        AgentInterface(
            url=public_url.rstrip("/") + rpc_path,
            protocol_binding=Binding.JSONRPC,
            protocol_version="1.0",
        )
    ]
    card = agent.card(interfaces)
    dispatcher = Dispatcher(agent, task_store, event_bus, runner, lambda: card)

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        await task_store.open()
        try:
            async with runner:
                await runner.recover()
                yield
        finally:
            await event_bus.close()
            await task_store.close()

    return A2AApp(
        dispatcher,
        rpc_path=rpc_path,
        max_body_bytes=max_body_bytes,
        lenient_version=lenient_version,
        card_max_age=card_max_age,
        lifespan=lifespan,
    )


def serve(
    agent: Agent,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    public_url: str | None = None,
    log_level: str = "warning",
    **options: object,
) -> None:
    """Serve ``agent`` with uvicorn (uvloop and httptools when installed) until interrupted."""
    import uvicorn

    if public_url is None:
        shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        public_url = f"http://{shown}:{port}"
    app = create_app(agent, public_url=public_url, **options)  # type: ignore[arg-type]
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(app.dispatcher.runner.shutdown_grace) + 5,
    )
