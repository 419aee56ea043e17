"""``peerwire card URL``: the agent's card — who it is, its skills, where to reach it."""

from __future__ import annotations

import httpx

from ._app import app
from ._options import JsonOption, TimeoutOption, UrlArgument
from ._render import console, print_card, print_json
from ._session import EXIT_OK, fetch_card, run


@app.command("card")
def card_command(url: UrlArgument, json: JsonOption = False, timeout: TimeoutOption = 30.0) -> None:
    """Show an agent's card: its skills, capabilities and interfaces."""

    async def main() -> int:
        async with httpx.AsyncClient(timeout=timeout) as http:
            card = await fetch_card(http, url, timeout)
        if json:
            print_json(card)
        else:
            print_card(console(), card)
        return EXIT_OK

    run(main)
