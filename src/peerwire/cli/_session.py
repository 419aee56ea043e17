"""How a command talks to an agent: connect per ``--binding``, run, and end with an exit code.

Exit codes (the same for every command)::

    0  the task completed, the agent replied with a message, or the command did what it said
    1  an error: unreachable agent, invalid card, protocol error, task not found, ...
    2  usage: a bad argument or option (typer reports these itself)
    3  the task needs you: INPUT_REQUIRED or AUTH_REQUIRED
    4  the task did not succeed: FAILED, REJECTED or CANCELED

Errors are reported as one line on stderr; a traceback is shown only with ``PEERWIRE_DEBUG=1``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import NoReturn

import anyio
import httpx
import typer

from ..client import Client, default_card_cache
from ..client._card import card_url
from ..client._client import DEFAULT_BINDINGS
from ..errors import A2AError, PeerwireError
from ..protocol import INTERRUPTED, TERMINAL
from ..server.app import INTERFACE_NAMES
from ..types import AgentCard, TaskState
from ._options import BindingName

__all__ = [
    "EXIT_CODES_HELP",
    "EXIT_ERROR",
    "EXIT_NEEDS_INPUT",
    "EXIT_OK",
    "EXIT_UNSUCCESSFUL",
    "EXIT_USAGE",
    "CommandError",
    "connect",
    "exit_code",
    "fetch_card",
    "run",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NEEDS_INPUT = 3
EXIT_UNSUCCESSFUL = 4
_EXIT_INTERRUPTED = 130  # the shell's convention for Ctrl-C


# For the help of the commands whose exit code says how the task went.
EXIT_CODES_HELP = (
    "Exit codes: 0 completed (or a message reply), 3 input or auth required, "
    "4 failed, rejected or canceled, 1 an error, 2 bad usage."
)


class CommandError(Exception):
    """A problem the command found itself (not the agent): reported as one line, exit 1."""


def exit_code(state: TaskState) -> int:
    """The exit code for a task that ended (or paused) in ``state``."""
    if state in INTERRUPTED:
        return EXIT_NEEDS_INPUT
    if state in TERMINAL and state is not TaskState.COMPLETED:
        return EXIT_UNSUCCESSFUL
    # COMPLETED, or still SUBMITTED/WORKING (get/list of a running task): nothing went wrong.
    return EXIT_OK


def run(main: Callable[[], Awaitable[int]]) -> NoReturn:
    """Run a command's coroutine; report any error as one line and exit with its code."""
    try:
        code = anyio.run(main)
    except KeyboardInterrupt:
        report("interrupted")
        code = _EXIT_INTERRUPTED
    except Exception as exc:  # every failure becomes one line, never a traceback
        if os.environ.get("PEERWIRE_DEBUG"):
            raise
        report(describe(_single(exc)))
        code = EXIT_ERROR
    raise typer.Exit(code)


def report(problem: str) -> None:
    """One line on stderr."""
    typer.echo("error: " + " ".join(problem.split()), err=True)


def describe(exc: BaseException) -> str:
    """What went wrong, in words a user can act on."""
    if isinstance(exc, CommandError):
        return str(exc)
    if isinstance(exc, A2AError):
        # The agent's error: its class says what kind (TaskNotFoundError, ...), its message why.
        return f"{exc.message} ({type(exc).__name__})"
    if isinstance(exc, PeerwireError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    text = str(exc) or "no details"
    return f"unexpected {type(exc).__name__}: {text} (PEERWIRE_DEBUG=1 shows the traceback)"


def _single(exc: BaseException) -> BaseException:
    """The error inside task-group wrappers, when there is exactly one."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def fetch_card(http: httpx.AsyncClient, url: str, timeout: float) -> AgentCard:
    """The agent's card (validated; cached for the client that connects next)."""
    return await default_card_cache.fetch(http, card_url(url), timeout=timeout)


@contextlib.asynccontextmanager
async def connect(
    url: str,
    binding: BindingName | None,
    timeout: float,
    *,
    http: httpx.AsyncClient | None = None,
) -> AsyncIterator[Client]:
    """A client for the agent at ``url``, on the card's interface of ``binding`` if given.

    ``http`` is the HTTP client to use (the demo's records the wire); by default one is made
    and closed here.
    """
    async with contextlib.AsyncExitStack() as stack:
        if http is None:
            http = await stack.enter_async_context(httpx.AsyncClient(timeout=timeout))
        bindings: tuple[str, ...] = DEFAULT_BINDINGS
        if binding is not None:
            wanted = INTERFACE_NAMES[binding.value]
            card = await fetch_card(http, url, timeout)
            offered = [i.protocol_binding for i in card.supported_interfaces]
            if wanted not in offered:
                raise CommandError(
                    f"the agent card of {url} offers no {wanted} interface "
                    f"(it offers {', '.join(offered) or 'none'}); drop --binding or choose "
                    "another"
                )
            bindings = (wanted,)
        client = await stack.enter_async_context(
            Client.connect(
                url,
                bindings=bindings,
                timeout=timeout,
                stream_idle_timeout=timeout,
                http_client=http,
            )
        )
        yield client
