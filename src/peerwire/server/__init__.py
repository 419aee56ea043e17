"""Hosting agents: the Agent API, the task runner, stores, the event bus and the ASGI app."""

from .agent import Agent, AgentExecutor, Skill, default_router
from .app import Listening, create_app, serve
from .asgi import A2AApp
from .context import Caller, TaskContext
from .dispatch import CallContext, Dispatcher, TaskStream

__all__ = [
    "A2AApp",
    "Agent",
    "AgentExecutor",
    "CallContext",
    "Caller",
    "Dispatcher",
    "Listening",
    "Skill",
    "TaskContext",
    "TaskStream",
    "create_app",
    "default_router",
    "serve",
]
