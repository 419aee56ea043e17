"""Hosting agents: the Agent API, the task runner, stores, the event bus and the ASGI app.

Push notifications are configured with ``PushSettings`` (``create_app(push=...)``); its
``resolver`` is a ``Resolver`` (``system_resolver`` is the default one; a resolver that finds
no address raises ``UnresolvableHost``). ``WebhookGuard`` is the SSRF check the server
applies to every webhook URL, usable on its own (``WebhookRefused`` says why a URL is not).
"""

from .agent import Agent, AgentExecutor, Skill, Validator, default_router
from .app import Listening, create_app, serve
from .app_state import AppStateUnavailableError, Lifespan, LifespanStartError
from .asgi import A2AApp
from .context import Caller, TaskContext
from .dispatch import CallContext, Dispatcher, TaskStream
from .idempotency import DEFAULT_MESSAGE_RETENTION, IDEMPOTENT_SEND_EXTENSION
from .push import PushSettings
from .ssrf import Resolver, UnresolvableHost, WebhookGuard, WebhookRefused, system_resolver

__all__ = [
    "DEFAULT_MESSAGE_RETENTION",
    "IDEMPOTENT_SEND_EXTENSION",
    "A2AApp",
    "Agent",
    "AgentExecutor",
    "AppStateUnavailableError",
    "CallContext",
    "Caller",
    "Dispatcher",
    "Lifespan",
    "LifespanStartError",
    "Listening",
    "PushSettings",
    "Resolver",
    "Skill",
    "TaskContext",
    "TaskStream",
    "UnresolvableHost",
    "Validator",
    "WebhookGuard",
    "WebhookRefused",
    "create_app",
    "default_router",
    "serve",
    "system_resolver",
]
