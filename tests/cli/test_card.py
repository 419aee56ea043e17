"""``peerwire card``: the card for people and as JSON, and its errors."""

from __future__ import annotations

import pytest

from peerwire.types import AgentCard, decode

from .conftest import CLI_TIMEOUT, assert_one_error_line, invoke

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_the_card_shows_skills_and_every_interface(glossary_url: str) -> None:
    ran = await invoke("card", glossary_url, "--timeout", CLI_TIMEOUT)
    assert ran.code == 0, ran.err
    assert "Glossary Agent" in ran.out and "Defines Java terms" in ran.out
    assert "streaming yes" in ran.out
    for skill in ("define", "slow", '"sealed class"'):
        assert skill in ran.out
    lines = ran.out.splitlines()
    bindings = [line.split()[0] for line in lines if line.startswith("  ") and "1.0" in line]
    assert bindings == ["JSONRPC", "HTTP+JSON", "GRPC"], "in the card's order of preference"
    assert f"{glossary_url}/rest" in ran.out


async def test_json_is_the_agent_card_itself(glossary_url: str) -> None:
    ran = await invoke("card", glossary_url, "--json")
    assert ran.code == 0, ran.err
    assert ran.out.count("\n") == 1
    card = decode(ran.out, AgentCard)
    assert card.name == "Glossary Agent"
    assert [s.id for s in card.skills] == ["define", "slow"]


async def test_the_card_url_itself_is_accepted(glossary_url: str) -> None:
    ran = await invoke("card", glossary_url + "/.well-known/agent-card.json", "--json")
    assert ran.code == 0, ran.err
    assert decode(ran.out, AgentCard).name == "Glossary Agent"


async def test_an_unreachable_agent_is_one_error_line() -> None:
    ran = await invoke("card", "http://127.0.0.1:9", "--timeout", "5")
    assert_one_error_line(ran, "127.0.0.1:9")


async def test_a_url_without_a_card_is_one_error_line(glossary_url: str) -> None:
    ran = await invoke("card", glossary_url + "/no/agent/here")
    assert_one_error_line(ran, "404")
