"""How a command talks to an agent: connect per ``--binding`` with the caller's headers and
credentials, run, and end with an exit code (the table of ``_exits``).

Errors are reported as one line on stderr; a traceback is shown only with ``PEERWIRE_DEBUG=1``.
Both pass through ``CallerAuth.redact``: no secret given on the command line is printed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import NoReturn

import anyio
import httpx
import typer

from ..client import Client, default_card_cache
from ..client._card import card_url
from ..client._client import DEFAULT_BINDINGS
from ..compat.v03.files import FileBytes
from ..errors import A2AError, AuthenticationError, PeerwireError
from ..server.app import INTERFACE_NAMES
from ..types import AgentCard, TaskState
from ._auth import NO_AUTH, CallerAuth
from ._exits import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_RUNNING
from ._options import BindingName
from ._render import follow_hint
from ._states import state_name

__all__ = [
    "CommandError",
    "connect",
    "fetch_card",
    "note",
    "report",
    "run",
    "still_running",
]


class CommandError(PeerwireError):
    """A problem the command found itself (not the agent): reported as one line, exit 1."""


def run(main: Callable[[], Awaitable[int]], auth: CallerAuth = NO_AUTH) -> NoReturn:
    """Run a command's coroutine; report any error as one line and exit with its code."""
    try:
        code = anyio.run(main)
    except KeyboardInterrupt:
        report("interrupted")
        code = EXIT_INTERRUPTED
    except Exception as exc:  # every failure becomes one line, never a traceback
        if os.environ.get("PEERWIRE_DEBUG"):
            sys.stderr.write(auth.redact("".join(traceback.format_exception(exc))))
        problem = _single(exc)
        said = describe(problem)
        if isinstance(problem, AuthenticationError) and not (auth.credentials or auth.headers):
            said += (
                "; give credentials with --bearer, --api-key or --header "
                "('peerwire card' shows what the agent takes)"
            )
        report(said, auth)
        code = EXIT_ERROR
    raise typer.Exit(code)


def report(problem: str, auth: CallerAuth = NO_AUTH) -> None:
    """One line on stderr, secrets hidden."""
    typer.echo(auth.redact("error: " + " ".join(problem.split())), err=True)


def note(text: str, auth: CallerAuth = NO_AUTH) -> None:
    """A remark on stderr that is not an error (stdout stays the result)."""
    typer.echo(auth.redact("note: " + " ".join(text.split())), err=True)


def still_running(
    url: str,
    task_id: str,
    state: TaskState | None,
    why: str,
    *,
    streaming: bool = True,
    auth: CallerAuth = NO_AUTH,
) -> int:
    """Say that the wait for a task ran out (``why``) while it runs, and how to follow it;
    exit 5."""
    said = "running" if state is None else state_name(state)
    note(
        f"{why} (the --timeout); task {task_id} is still {said}. "
        f"Follow it with: {follow_hint(url, task_id, streaming)}",
        auth,
    )
    return EXIT_RUNNING


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


async def fetch_card(
    http: httpx.AsyncClient, url: str, timeout: float, headers: Mapping[str, str] | None = None
) -> AgentCard:
    """The agent's card (validated; cached for the client that connects next)."""
    return await default_card_cache.fetch(http, card_url(url), headers=headers, timeout=timeout)


@contextlib.asynccontextmanager
async def connect(
    url: str,
    binding: BindingName | None,
    timeout: float,
    *,
    auth: CallerAuth = NO_AUTH,
    http: httpx.AsyncClient | None = None,
    v03_file_bytes: FileBytes = "auto",
) -> AsyncIterator[Client]:
    """A client for the agent at ``url``, on the card's interface of ``binding`` if given,
    sending ``auth``'s headers and the credentials of it the card asks for.

    ``http`` is the HTTP client to use (the demo's records the wire); by default one is made
    and closed here. ``v03_file_bytes``: as for ``Client.connect``.
    """
    async with contextlib.AsyncExitStack() as stack:
        if http is None:
            http = await stack.enter_async_context(httpx.AsyncClient(timeout=timeout))
        bindings: tuple[str, ...] = DEFAULT_BINDINGS
        if binding is not None:
            wanted = INTERFACE_NAMES[binding.value]
            card = await fetch_card(http, url, timeout, auth.headers)
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
                # The commands bound a stream's silence themselves (``follow(idle=)``), so
                # that a silent agent ends the command after --timeout and not after the
                # client's rounds of resubscribing.
                stream_idle_timeout=None,
                headers=auth.headers,
                http_client=http,
                credentials=auth.credentials,
                v03_file_bytes=v03_file_bytes,
            )
        )
        unused = auth.unused_flags(client.card)
        if unused:
            note(
                f"the card of {client.card.name} asks for no credentials, so "
                f"{' and '.join(unused)} {'is' if len(unused) == 1 else 'are'} not sent "
                "(--header sends a header whatever the card says)",
                auth,
            )
        yield client
