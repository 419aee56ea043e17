"""``peerwire check URL``: the self-check's report as a table or as JSON, and its exit code
(0 when nothing of severity error failed, 1 otherwise)."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from peerwire.client import CardCache, Client
from peerwire.samples.glossary import agent as glossary_agent
from peerwire.testing import live_server
from tests.inspector.broken_agent import serve_broken_agent

from ._secured import ALICE_TOKEN
from .conftest import invoke

TIMEOUT = "5"


@pytest.mark.asyncio(loop_scope="module")
async def test_a_healthy_agent_exits_0_with_every_check_passed(glossary_url: str) -> None:
    ran = await invoke("check", glossary_url, "--timeout", TIMEOUT)

    assert ran.code == 0, (ran.out, ran.err)
    marks = [line[:1] for line in ran.out.splitlines() if line[:1] in ("✓", "✗", "!", "i")]
    assert marks and set(marks) == {"✓"}, ran.out
    for check in ("card.fields", "interfaces.reachable", "version.missing", "stream.order"):
        assert check in ran.out
    assert "0 error(s), 0 warning(s)" in ran.out
    assert "nothing found that breaks an interoperating client" in ran.out


@pytest.mark.asyncio(loop_scope="module")
async def test_json_is_the_report_document(glossary_url: str) -> None:
    ran = await invoke("check", glossary_url, "--json", "--timeout", TIMEOUT)

    assert ran.code == 0, ran.err
    document = json.loads(ran.out)
    assert document["url"] == glossary_url and document["ok"] is True
    checks = {f["check"] for f in document["findings"]}
    assert {"card.fetch", "errors.unknown_task", "errors.bad_request", "stream.order"} <= checks
    bindings = {f["interface"].split()[0] for f in document["findings"] if f["interface"]}
    assert bindings == {"JSONRPC", "HTTP+JSON", "GRPC"}


async def test_an_error_finding_exits_1_and_is_explained() -> None:
    async with serve_broken_agent({"refuses_patch_version"}) as url:
        ran = await invoke("check", url, "--timeout", TIMEOUT)

    assert ran.code == 1, (ran.out, ran.err)
    assert "✗ version.patch" in ran.out
    assert "A2A-Version: 1.0.3 is refused" in ran.out
    assert "rule: A2A spec §3.6" in ran.out
    assert "an interoperating client would break" in ran.out


async def test_warnings_alone_exit_0() -> None:
    async with serve_broken_agent({"ignores_missing_version"}) as url:
        ran = await invoke("check", url, "--json", "--timeout", TIMEOUT)

    assert ran.code == 0, (ran.out, ran.err)
    document = json.loads(ran.out)
    assert document["ok"] is True and document["failed"]["warning"] == 2
    assert {f["check"] for f in document["findings"] if not f["ok"]} == {"version.missing"}


async def test_an_agent_that_is_down_exits_1() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ran = await invoke("check", f"http://127.0.0.1:{port}", "--json", "--timeout", TIMEOUT)

    assert ran.code == 1
    document = json.loads(ran.out)
    assert [(f["check"], f["ok"]) for f in document["findings"]] == [("card.fetch", False)]


@pytest.mark.asyncio(loop_scope="module")
async def test_bearer_is_presented_where_the_card_asks(vault_url: str) -> None:
    without = await invoke("check", vault_url, "--json", "--timeout", TIMEOUT)
    refused = [f for f in json.loads(without.out)["findings"] if not f["ok"]]
    assert refused and all("credentials" in f["title"] for f in refused)

    ran = await invoke("check", vault_url, "--bearer", ALICE_TOKEN, "--timeout", TIMEOUT)

    assert ran.code == 0, (ran.out, ran.err)
    assert "0 error(s), 0 warning(s)" in ran.out
    assert ALICE_TOKEN not in ran.out + ran.err


async def test_a_timeout_of_zero_is_bad_usage() -> None:
    ran = await invoke("check", "http://127.0.0.1:1", "--timeout", "0")

    assert ran.code == 2


def _error_counts(metrics_text: str) -> list[str]:
    """The request counter's lines for refused or failed requests (outcome other than ok)."""
    return sorted(
        line
        for line in metrics_text.splitlines()
        if line.startswith("peerwire_requests_total{") and 'outcome="ok"' not in line
    )


async def test_read_only_leaves_the_tasks_and_the_error_counters_as_they_were() -> None:
    async with (
        live_server(glossary_agent, grpc_port=0, shutdown_grace=1.0) as url,
        httpx.AsyncClient() as http,
        Client.connect(url, card_cache=CardCache()) as client,
    ):
        await client.send("agent", skill="define")
        tasks_before = [task.id for task in await client.list_tasks()]
        errors_before = _error_counts((await http.get(url + "/metrics")).text)

        ran = await invoke("check", url, "--read-only", "--timeout", TIMEOUT)

        assert ran.code == 0, (ran.out, ran.err)
        assert "read-only: the card only, nothing sent to the agent" in ran.out
        assert "selfcheck.read_only" in ran.out and "card.fields" in ran.out
        assert "interfaces.reachable" not in ran.out
        assert [task.id for task in await client.list_tasks()] == tasks_before
        assert _error_counts((await http.get(url + "/metrics")).text) == errors_before

        probing = await invoke("check", url, "--json", "--timeout", TIMEOUT)
        assert json.loads(probing.out)["read_only"] is False
        assert _error_counts((await http.get(url + "/metrics")).text) != errors_before
        assert len(await client.list_tasks()) > len(tasks_before)


async def test_check_help_says_that_it_acts_on_the_agent_by_default() -> None:
    ran = await invoke("check", "--help", env={"COLUMNS": "200"})
    said = " ".join(ran.out.split())
    assert "By default this acts on the agent" in said
    assert "--read-only" in said and "Default: the interfaces are probed and messages sent" in said
