"""Helpers for testing agents (peerwire's own tests use them too).

``live_server`` runs an agent on peerwire's HTTP server (or on uvicorn: ``http="uvicorn"``) on
loopback and yields its base URL; ``in_process`` yields an ``httpx.AsyncClient`` that calls
the app without a network::

    from peerwire.testing import live_server

    async def test_echo() -> None:
        async with live_server(agent) as url:
            ...  # talk to url with any A2A client
"""

from .servers import in_process, live_server

__all__ = ["in_process", "live_server"]
