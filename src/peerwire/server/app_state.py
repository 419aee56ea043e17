"""An agent's lifespan and the state it yields (``Agent(lifespan=...)``).

The lifespan is a function of the agent returning an async context manager (usually an
``@contextlib.asynccontextmanager`` generator) that opens what skills share, a database
pool or an LLM client, and yields it: the *app state*. It is entered once per process, by
the first runner that starts (a server's or a ``peerwire worker``'s), and exited when the
last one stops, after its handlers drained, whatever they raised. A skill receives the state
by a parameter annotated with its type (the type the lifespan's return annotation yields),
an executor through ``ctx.app_state``.
"""

from __future__ import annotations

import asyncio
import collections.abc
import contextlib
import typing
from collections.abc import Callable
from typing import Any

from ..errors import PeerwireError

__all__ = ["AppState", "AppStateUnavailableError", "Lifespan", "LifespanStartError"]

# Any, not Agent: the agent imports this module (layers go downward).
Lifespan = Callable[[Any], contextlib.AbstractAsyncContextManager[Any]]
"""``lifespan(agent)``: an async context manager whose ``__aenter__`` result is the state."""


class LifespanStartError(PeerwireError, RuntimeError):
    """The agent's lifespan raised while starting: the server or worker does not start."""


class AppStateUnavailableError(PeerwireError, RuntimeError):
    """The app state was asked for while no lifespan of the agent is running."""


# The return annotations that say what a lifespan yields.
_YIELDING = (
    collections.abc.AsyncIterator,
    collections.abc.AsyncGenerator,
    contextlib.AbstractAsyncContextManager,
)


class AppState:
    """One agent's lifespan: entered by the first user in the process, exited by the last."""

    def __init__(self, lifespan: Lifespan, agent_name: str) -> None:
        if not callable(lifespan):
            raise TypeError(f"lifespan must be callable, not {type(lifespan).__name__}")
        self._lifespan = lifespan
        self._agent_name = agent_name
        self.state_type = _yielded_type(lifespan)
        """The type the lifespan's annotation yields (``None``: not annotated, or ``Any``):
        a skill parameter annotated with it receives the state."""
        self._users = 0
        self._running: contextlib.AbstractAsyncContextManager[Any] | None = None
        self._value: Any = None
        self._lock = asyncio.Lock()

    @property
    def value(self) -> Any:
        """The state the running lifespan yielded."""
        if self._running is None:
            raise AppStateUnavailableError(
                f"agent {self._agent_name!r}: its lifespan is not running (the app state "
                "exists while a server or worker serves the agent)"
            )
        return self._value

    async def enter(self, agent: object) -> None:
        """Start the lifespan unless it runs already (count one more user)."""
        async with self._lock:
            if self._users == 0:
                manager = self._lifespan(agent)
                try:
                    value = await manager.__aenter__()
                except Exception as exc:
                    raise LifespanStartError(
                        f"agent {self._agent_name!r}: its lifespan failed to start: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                self._running, self._value = manager, value
            self._users += 1

    async def exit(self) -> None:
        """Count one user less; the last one exits the lifespan."""
        async with self._lock:
            self._users -= 1
            if self._users > 0 or self._running is None:
                return
            manager, self._running, self._value = self._running, None, None
            await manager.__aexit__(None, None, None)


def _yielded_type(lifespan: Lifespan) -> type | None:
    """``X`` of a lifespan annotated ``-> AsyncIterator[X]`` (or ``AsyncGenerator[X, None]``,
    ``AbstractAsyncContextManager[X]``), when ``X`` is a class."""
    try:
        hints = typing.get_type_hints(lifespan)
    except Exception:  # an annotation that does not resolve names no state type
        return None
    returned = hints.get("return")
    if typing.get_origin(returned) not in _YIELDING:
        return None
    args = typing.get_args(returned)
    found = args[0] if args else None
    return found if isinstance(found, type) else None
