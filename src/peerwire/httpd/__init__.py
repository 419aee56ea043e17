"""peerwire's HTTP/1.1 server: serves any ASGI app that has a lifespan and a runner to drain
(``A2AApp``), with the limits and shutdown order an A2A server needs.

It is not the agent-hosting core (``peerwire.server``) and imports nothing from it: the app is
plain ASGI, so the same app also runs under uvicorn or any other ASGI server.
"""

from ._connection import DISCONNECT_EXTENSION, answer_whole, drained, take_whole_body, write_part
from .server import CannotListenError, HTTPLimits, HTTPServer, ServedApp
from .tls import ServerTLS

__all__ = [
    "DISCONNECT_EXTENSION",
    "CannotListenError",
    "HTTPLimits",
    "HTTPServer",
    "ServedApp",
    "ServerTLS",
    "answer_whole",
    "drained",
    "take_whole_body",
    "write_part",
]
