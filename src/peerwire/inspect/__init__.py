"""The inspector: a local web page that shows what any A2A agent says on the wire.

``run_inspector(url)`` serves the page (``peerwire inspect``); ``serve_inspector`` does it in
a running event loop; ``InspectorApp`` is its backend (raw ASGI). ``run_self_check(url)``
runs a quick check against an agent and reports, as ``Finding`` values in a
``SelfCheckReport``, what would break an interoperating client: its card, its interfaces,
version negotiation, error shapes and a stream's order (docs/INSPECTOR.md). ``peerwire check
URL`` runs it from the command line.
"""

from .app import InspectorApp
from .selfcheck import Finding, SelfCheckReport, run_self_check
from .server import DEFAULT_PORT, run_inspector, serve_inspector

__all__ = [
    "DEFAULT_PORT",
    "Finding",
    "InspectorApp",
    "SelfCheckReport",
    "run_inspector",
    "run_self_check",
    "serve_inspector",
]
