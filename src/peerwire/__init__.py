"""peerwire: the Agent2Agent (A2A) protocol 1.0 for Python — server, client and command line.

A hello-world agent::

    from peerwire import Agent

    agent = Agent("Echo", description="Repeats what it is told")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

Serve it with ``peerwire serve module:agent`` (or ``peerwire.serve(agent)``).
"""

from . import errors, types
from ._version import __version__ as __version__
from .client import Client
from .server import Agent, AgentExecutor, Caller, PushSettings, TaskContext, create_app, serve
from .types import (
    AgentCard,
    Artifact,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = [
    "Agent",
    "AgentCard",
    "AgentExecutor",
    "Artifact",
    "Caller",
    "Client",
    "Message",
    "Part",
    "PushSettings",
    "Role",
    "StreamResponse",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskContext",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
    "create_app",
    "errors",
    "serve",
    "types",
]
