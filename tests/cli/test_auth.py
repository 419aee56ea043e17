"""``--bearer``, ``--api-key``, ``--header`` and their variables, on every calling command,
against agents that require credentials (_secured.py); and that no secret is ever printed."""

from __future__ import annotations

import pytest

from peerwire import Client, Task
from peerwire.client.auth import BearerToken, Credentials
from peerwire.types import AgentCard, ListTasksResponse, SendMessageResponse, TaskState, decode

from ._secured import (
    ALICE_TOKEN,
    BOB_KEY,
    CAROL_TOKEN,
    ECHOED_TOKEN,
    LEDGER_KEY,
)
from .conftest import Ran, assert_one_error_line, invoke

pytestmark = pytest.mark.asyncio(loop_scope="module")

WHOAMI = ("hi", "--skill", "whoami")


def assert_usage_error(ran: Ran, *fragments: str, hidden: str = "") -> None:
    """Exit 2 with typer's usage message, which names the problem and never the value."""
    assert ran.code == 2, ran.err
    err = ran.err
    flat = " ".join(err.replace("│", " ").split())
    for fragment in fragments:
        assert fragment in flat, flat
    if hidden:
        assert hidden not in err


async def test_without_credentials_the_agent_refuses(vault_url: str) -> None:
    ran = await invoke("send", vault_url, *WHOAMI)
    assert_one_error_line(ran, "AuthenticationError", "give credentials with --bearer, --api-key")


@pytest.mark.parametrize("binding", ["jsonrpc", "rest", "grpc"])
async def test_a_bearer_token_and_a_header_reach_the_agent(vault_url: str, binding: str) -> None:
    ran = await invoke(
        "send", vault_url, *WHOAMI, "--bearer", ALICE_TOKEN, "-H", "X-Trace: t-42",
        "--binding", binding,
    )  # fmt: skip
    assert ran.code == 0, ran.err
    assert "alice via bearer; trace=t-42" in ran.out
    assert ran.err == ""


async def test_an_api_key_goes_in_the_header_the_card_names(vault_url: str) -> None:
    ran = await invoke("send", vault_url, *WHOAMI, "--api-key", BOB_KEY)
    assert ran.code == 0, ran.err
    assert "bob via key" in ran.out


async def test_an_api_key_goes_in_the_query_when_the_card_says_so(ledger_url: str) -> None:
    ran = await invoke("send", ledger_url, "x", "--api-key", LEDGER_KEY, "--json")
    assert ran.code == 0, ran.err
    task = decode(ran.out, SendMessageResponse).task
    assert task is not None and task.artifacts[0].text == "balance of dora"
    refused = await invoke("send", ledger_url, "x", "--api-key", "not-the-key")
    assert_one_error_line(refused, "AuthenticationError")
    assert "not-the-key" not in refused.err


async def test_a_header_is_sent_as_given_whatever_the_card_says(vault_url: str) -> None:
    ran = await invoke(
        "send", vault_url, *WHOAMI, "--header", f"Authorization: Bearer {ALICE_TOKEN}"
    )
    assert ran.code == 0, ran.err
    assert "alice via bearer" in ran.out


async def test_the_environment_variables(vault_url: str) -> None:
    headers = "X-Trace: from-env\n\nX-Other: 1\n"
    ran = await invoke(
        "send",
        vault_url,
        *WHOAMI,
        env={"PEERWIRE_BEARER": ALICE_TOKEN, "PEERWIRE_HEADERS": headers},
    )
    assert ran.code == 0, ran.err
    assert "alice via bearer; trace=from-env" in ran.out
    keyed = await invoke("send", vault_url, *WHOAMI, env={"PEERWIRE_API_KEY": BOB_KEY})
    assert keyed.code == 0, keyed.err
    assert "bob via key" in keyed.out


async def test_a_flag_wins_over_its_variable(vault_url: str) -> None:
    ran = await invoke(
        "send", vault_url, *WHOAMI, "--bearer", ALICE_TOKEN, "--header", "x-trace: flag",
        env={"PEERWIRE_BEARER": CAROL_TOKEN, "PEERWIRE_HEADERS": "X-Trace: env"},
    )  # fmt: skip
    assert ran.code == 0, ran.err
    assert "alice via bearer; trace=flag" in ran.out


async def test_a_skill_needs_the_scopes_its_card_entry_names(vault_url: str) -> None:
    granted = await invoke("send", vault_url, "x", "--skill", "reports", "--bearer", ALICE_TOKEN)
    assert granted.code == 0, granted.err
    assert "2 reports for alice" in granted.out
    denied = await invoke("send", vault_url, "x", "--skill", "reports", "--bearer", CAROL_TOKEN)
    assert_one_error_line(denied, "reports.read")


async def test_get_list_subscribe_and_cancel_take_the_credentials(vault_url: str) -> None:
    async with Client.connect(
        vault_url, credentials=Credentials(BearerToken(ALICE_TOKEN))
    ) as client:
        asked = await client.send("x", skill="ask")
        held = await client.send("x", skill="hold", return_immediately=True)
    assert isinstance(asked, Task) and isinstance(held, Task)
    alice = ("--bearer", ALICE_TOKEN)

    got = await invoke("get", vault_url, asked.id, *alice, "--json")
    assert got.code == 3, got.err
    assert decode(got.out, Task).status.state is TaskState.INPUT_REQUIRED
    assert_one_error_line(await invoke("get", vault_url, asked.id), "AuthenticationError")
    # Tasks belong to their caller: Carol does not see Alice's.
    assert_one_error_line(
        await invoke("get", vault_url, asked.id, "--bearer", CAROL_TOKEN), "TaskNotFoundError"
    )

    listed = await invoke("list", vault_url, "--state", "input-required", *alice, "--json")
    assert listed.code == 0, listed.err
    assert asked.id in [t.id for t in decode(listed.out, ListTasksResponse).tasks]
    bobs = await invoke("list", vault_url, "--api-key", BOB_KEY, "--json")
    assert asked.id not in [t.id for t in decode(bobs.out, ListTasksResponse).tasks]

    subscribed = await invoke("subscribe", vault_url, asked.id, *alice)
    assert subscribed.code == 3, subscribed.err
    assert "Which report?" in subscribed.out

    canceled = await invoke("cancel", vault_url, held.id, *alice)
    assert canceled.code == 0, canceled.err
    assert f"Task {held.id}  canceled" in canceled.out


async def test_card_takes_a_header_and_fetches_the_extended_card_with_credentials(
    vault_url: str,
) -> None:
    public = await invoke("card", vault_url, "-H", "X-Trace: card")
    assert public.code == 0, public.err
    assert "Vault Agent" in public.out and "members" not in public.out

    extended = await invoke("card", vault_url, "--extended", "--bearer", ALICE_TOKEN)
    assert extended.code == 0, extended.err
    assert "Vault Agent (members)" in extended.out and "for alice" in extended.out
    as_json = await invoke("card", vault_url, "--extended", "--api-key", BOB_KEY, "--json")
    assert decode(as_json.out, AgentCard).description == "for bob"
    assert_one_error_line(await invoke("card", vault_url, "--extended"), "AuthenticationError")

    unsent = await invoke("card", vault_url, "--bearer", ALICE_TOKEN)
    assert unsent.code == 0, unsent.err
    assert unsent.err.startswith("note: --bearer not sent")
    assert ALICE_TOKEN not in unsent.err


async def test_an_extended_card_the_agent_does_not_offer(glossary_url: str) -> None:
    ran = await invoke("card", glossary_url, "--extended")
    assert_one_error_line(ran, "offers no extended card")


async def test_credentials_for_an_agent_whose_card_asks_for_none(glossary_url: str) -> None:
    flagged = await invoke("send", glossary_url, "record", "--bearer", "tok-unused-1234")
    assert flagged.code == 0, flagged.err
    assert "--bearer is not sent" in flagged.err and flagged.err.startswith("note: ")
    assert "tok-unused-1234" not in flagged.err
    # A variable is set for every agent: no note each time one needs nothing.
    quiet = await invoke("send", glossary_url, "record", env={"PEERWIRE_BEARER": "tok-unused-1234"})
    assert quiet.code == 0 and quiet.err == ""


async def test_no_secret_is_printed_even_when_the_agent_quotes_it(vault_url: str) -> None:
    ran = await invoke("send", vault_url, *WHOAMI, "--bearer", ECHOED_TOKEN)
    assert_one_error_line(ran, "The token *** was revoked", "AuthenticationError")
    as_header = await invoke(
        "send", vault_url, *WHOAMI, "-H", f"Authorization: Bearer {ECHOED_TOKEN}"
    )
    assert_one_error_line(as_header, "The token *** was revoked")
    as_json = await invoke("send", vault_url, *WHOAMI, "--json", "--bearer", ECHOED_TOKEN)
    assert as_json.out == ""
    debug = await invoke(
        "send", vault_url, *WHOAMI, "--bearer", ECHOED_TOKEN, env={"PEERWIRE_DEBUG": "1"}
    )
    assert debug.code == 1 and "Traceback" in debug.err
    for printed in (ran, as_header, as_json, debug):
        assert ECHOED_TOKEN not in printed.out + printed.err


@pytest.mark.parametrize(
    ("given", "says"),
    [
        (ALICE_TOKEN, "must be given as NAME:VALUE"),  # a token pasted without its name
        ("Bad Name: x", "must be given as NAME:VALUE"),
        ("Content-Length: 3", "is set by peerwire itself"),
        ("A2A-Version: 0.3", "is set by peerwire itself"),
        ("X-Trace: a\rb", "control character"),
    ],
)
async def test_a_malformed_header_is_a_usage_error(vault_url: str, given: str, says: str) -> None:
    ran = await invoke("send", vault_url, *WHOAMI, "--header", given)
    assert_usage_error(ran, "--header", says, hidden=ALICE_TOKEN)


async def test_other_malformed_credentials_are_usage_errors(vault_url: str) -> None:
    twice = await invoke("get", vault_url, "t", "-H", "X-A: 1", "-H", "x-a: 2")
    assert_usage_error(twice, "'x-a' is given twice")
    empty = await invoke("list", vault_url, "--bearer", " ")
    assert_usage_error(empty, "--bearer", "must not be empty")
    prefixed = await invoke("subscribe", vault_url, "t", "--bearer", f"Bearer {ALICE_TOKEN}")
    assert_usage_error(prefixed, "without 'Bearer '", hidden=ALICE_TOKEN)
    from_env = await invoke(
        "cancel", vault_url, "t", env={"PEERWIRE_HEADERS": f"X-A: 1\n{BOB_KEY}"}
    )
    assert_usage_error(from_env, "PEERWIRE_HEADERS (line 2)", hidden=BOB_KEY)
    key = await invoke("card", vault_url, env={"PEERWIRE_API_KEY": "a\nb"})
    assert_usage_error(key, "PEERWIRE_API_KEY", "control character")
