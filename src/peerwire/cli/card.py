"""``peerwire card URL``: the agent's card — who it is, its skills, where to reach it."""

from __future__ import annotations

from typing import Annotated

import httpx
import typer

from ..types import AgentCard
from ._app import app
from ._auth import caller_auth
from ._exits import EXIT_OK
from ._options import (
    ApiKeyOption,
    BearerOption,
    HeaderOption,
    JsonOption,
    TimeoutOption,
    UrlArgument,
)
from ._render import console, print_card, print_json
from ._session import CommandError, connect, fetch_card, note, run


@app.command("card")
def card_command(
    url: UrlArgument,
    extended: Annotated[
        bool,
        typer.Option(
            "--extended",
            help=(
                "Show the extended card the agent gives authenticated callers "
                "(GetExtendedAgentCard), with the credentials given."
            ),
        ),
    ] = False,
    json: JsonOption = False,
    timeout: TimeoutOption = 30.0,
    header: HeaderOption = None,
    bearer: BearerOption = None,
    api_key: ApiKeyOption = None,
) -> None:
    """Show an agent's card: its skills, security, capabilities and interfaces.

    Each skill is shown with the scopes it requires, the card with its security schemes (what
    credential each takes, and where it goes) and what a call requires of them. --json
    prints the card itself.
    """
    auth = caller_auth(header, bearer, api_key)

    async def main() -> int:
        card: AgentCard
        if extended:
            async with connect(url, None, timeout, auth=auth) as client:
                if not client.card.capabilities.extended_agent_card:
                    raise CommandError(
                        f"{client.card.name} offers no extended card (its card says "
                        "capabilities.extendedAgentCard is not true); drop --extended"
                    )
                card = await client.get_extended_card()
        else:
            async with httpx.AsyncClient(timeout=timeout) as http:
                card = await fetch_card(http, url, timeout, auth.headers)
            if auth.flags:
                note(
                    f"{' and '.join(auth.flags)} not sent: the public card needs no "
                    "credentials (--extended fetches the card they give you)",
                    auth,
                )
        if json:
            print_json(card)
        else:
            print_card(console(), card)
        return EXIT_OK

    run(main, auth)
