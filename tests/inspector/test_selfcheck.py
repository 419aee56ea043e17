"""The self-check (``peerwire.inspect.run_self_check``) against real agents on loopback: a
healthy peerwire agent on all three bindings passes every check; each fault of the broken
agent (``broken_agent.FAULTS``) is flagged by the check meant for it and by no other; an
agent that is down, stalls or needs credentials yields findings, never an exception."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from peerwire import Agent
from peerwire.client.auth import APIKey, BearerToken
from peerwire.inspect import Finding, SelfCheckReport, run_self_check
from peerwire.security import APIKeyVerifier
from peerwire.testing import live_server
from peerwire.types import APIKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList

from .broken_agent import FAULTS, serve_broken_agent

TIMEOUT = 5.0
# The check ids every run against an agent streaming on JSON-RPC and HTTP+JSON reports.
HTTP_CHECKS = {
    "card.fetch",
    "card.caching",
    "card.fields",
    "card.interfaces",
    "card.skills",
    "card.security",
    "card.signature",
    "interfaces.reachable",
    "version.current",
    "version.patch",
    "version.missing",
    "version.unsupported",
    "errors.unknown_task",
    "errors.bad_request",
    "stream.order",
}


# Faults that hold a request open: the self-check waits its timeout for them.
SLOW_FAULTS = frozenset({"stalls", "stream_stays_open"})


def failing(report: SelfCheckReport) -> set[str]:
    return {f.check for f in report.findings if not f.ok}


def explain(report: SelfCheckReport) -> str:
    return "\n".join(
        f"{'ok ' if f.ok else 'BAD'} {f.severity:7} {f.check:22} {f.interface} | {f.title} | "
        f"{f.detail}"
        for f in report.findings
    )


SECRET_KEY = "k-selfcheck-7e1f"


def keyed_agent() -> Agent:
    """An echo agent that takes callers with an API key in the X-API-Key header only."""
    agent = Agent(
        "Keyed Echo",
        description="Repeats its text, for API key holders",
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill(description="Repeats its text")
    async def echo(text: str) -> str:
        return text

    return agent


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def keyed_url() -> AsyncIterator[str]:
    async with live_server(
        keyed_agent(),
        grpc_port=0,
        auth={"key": APIKeyVerifier({SECRET_KEY: "selfcheck"})},
        shutdown_grace=1.0,
    ) as url:
        yield url


def echo_agent() -> Agent:
    agent = Agent("Echo", description="Repeats its text")

    @agent.skill(description="Repeats its text", examples=["hello"])
    async def echo(text: str) -> str:
        return text

    return agent


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def healthy_url() -> AsyncIterator[str]:
    async with live_server(echo_agent(), grpc_port=0, shutdown_grace=1.0) as url:
        yield url


@pytest.mark.asyncio(loop_scope="module")
async def test_a_healthy_peerwire_agent_passes_every_check_on_every_binding(
    healthy_url: str,
) -> None:
    report = await run_self_check(healthy_url, timeout=TIMEOUT)

    assert report.ok and not failing(report), explain(report)
    assert {f.check for f in report.findings} == HTTP_CHECKS
    # Every wire check ran on each of the three interfaces, the binding named.
    for check in ("interfaces.reachable", "version.missing", "errors.unknown_task", "stream.order"):
        bindings = {f.interface.split()[0] for f in report.by_check(check)}
        assert bindings == {"JSONRPC", "HTTP+JSON", "GRPC"}, (check, explain(report))
    # gRPC has no "body that is not JSON": that check is for the HTTP bindings.
    assert {f.interface.split()[0] for f in report.by_check("errors.bad_request")} == {
        "JSONRPC",
        "HTTP+JSON",
    }
    stream = report.by_check("stream.order")[0]
    assert "COMPLETED" in stream.detail and stream.detail.endswith("closed")


@pytest.mark.asyncio(loop_scope="module")
async def test_the_report_is_json_ready(healthy_url: str) -> None:
    report = await run_self_check(healthy_url, timeout=TIMEOUT)

    document = json.loads(json.dumps(report.to_json()))

    assert document["url"] == healthy_url and document["ok"] is True
    assert document["failed"] == {"error": 0, "warning": 0, "info": 0}
    first = document["findings"][0]
    assert set(first) == {"check", "ok", "severity", "title", "detail", "interface", "rule"}
    assert Finding(**first) == report.findings[0]


async def test_the_broken_agent_without_faults_passes() -> None:
    async with serve_broken_agent() as url:
        report = await run_self_check(url, timeout=TIMEOUT)

    assert report.ok and not failing(report), explain(report)
    assert {f.check for f in report.findings} == HTTP_CHECKS


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_each_fault_is_flagged_by_its_own_check(fault: str) -> None:
    timeout = 1.0 if fault in SLOW_FAULTS else TIMEOUT
    async with serve_broken_agent({fault}) as url:
        report = await run_self_check(url, timeout=timeout)

    assert failing(report) == {FAULTS[fault]}, explain(report)
    flagged = [f for f in report.by_check(FAULTS[fault]) if not f.ok]
    assert all(f.title and f.detail and f.rule for f in flagged)


async def test_a_signed_card_is_verified_with_the_key_at_its_jku() -> None:
    async with serve_broken_agent(signed=True) as url:
        report = await run_self_check(url, timeout=TIMEOUT)

    (signature,) = report.by_check("card.signature")
    assert signature.ok and "verifies" in signature.title, explain(report)
    assert "broken-1" in signature.detail and f"{url}/jwks.json" in signature.detail


async def test_faults_together_are_each_flagged() -> None:
    # Not those that hide the rest: no card, no REST interface, no answer at all.
    together = set(FAULTS) - {"card_not_json", "interface_404", "stalls", "stream_stays_open"}
    async with serve_broken_agent(together) as url:
        report = await run_self_check(url, timeout=TIMEOUT)

    assert failing(report) == {FAULTS[fault] for fault in together}, explain(report)


@pytest.mark.parametrize(
    ("fault", "severity", "words"),
    [
        ("card_missing_fields", "error", "version"),
        ("card_signature_mismatch", "warning", "does not verify"),
        ("interface_404", "error", "HTTP+JSON"),
        ("refuses_patch_version", "error", "1.0.3"),
        ("ignores_missing_version", "warning", "without A2A-Version"),
        ("accepts_any_version", "error", "9.9"),
        ("wrong_unknown_task_code", "error", "TaskNotFoundError"),
        ("bad_json_500", "error", "malformed"),
        ("stream_starts_with_status", "error", "starts with a statusUpdate"),
        ("stream_without_final_state", "error", "without a final state"),
        ("stream_garbage", "error", "not a StreamResponse"),
        ("card_not_json", "error", "not JSON"),
        ("stream_stays_open", "error", "stays open after TASK_STATE_COMPLETED"),
    ],
)
async def test_a_fault_is_named_with_its_severity(fault: str, severity: str, words: str) -> None:
    async with serve_broken_agent({fault}) as url:
        report = await run_self_check(url, timeout=1.0 if fault in SLOW_FAULTS else TIMEOUT)

    flagged = [f for f in report.findings if not f.ok]
    assert flagged and all(f.severity == severity for f in flagged), explain(report)
    assert any(words in f.title for f in flagged), explain(report)
    assert report.ok is (severity != "error")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_agent_that_is_down_yields_an_error_finding() -> None:
    report = await run_self_check(f"http://127.0.0.1:{closed_port()}", timeout=TIMEOUT)

    assert not report.ok
    assert [f.check for f in report.findings] == ["card.fetch"]
    assert "could not be fetched" in report.findings[0].title


async def test_a_stalling_agent_is_bounded_by_the_timeout() -> None:
    started = time.monotonic()
    async with serve_broken_agent({"stalls"}) as url:
        report = await run_self_check(url, timeout=0.5)
    # Generous: the bound is a few timeouts, never the agent's hour of silence.
    assert time.monotonic() - started < 30
    stalled = [f for f in report.by_check("interfaces.reachable") if not f.ok]
    assert [f.interface.split()[0] for f in stalled] == ["JSONRPC"]
    assert "0.5 s" in stalled[0].detail


async def test_not_a_url_is_a_finding() -> None:
    report = await run_self_check("ftp://example.org", timeout=TIMEOUT)

    assert [(f.check, f.ok) for f in report.findings] == [("card.fetch", False)]


@pytest.mark.asyncio(loop_scope="module")
async def test_credentials_are_presented_where_the_card_asks(keyed_url: str) -> None:
    report = await run_self_check(keyed_url, credentials=[APIKey(SECRET_KEY)], timeout=TIMEOUT)

    assert report.ok and not failing(report), explain(report)


@pytest.mark.asyncio(loop_scope="module")
async def test_without_credentials_a_secured_agent_is_reported_as_such(keyed_url: str) -> None:
    report = await run_self_check(keyed_url, timeout=TIMEOUT)

    refused = report.by_check("interfaces.reachable")
    assert len(refused) == 3 and all(not f.ok and f.severity == "warning" for f in refused)
    assert all("credentials" in f.title for f in refused), explain(report)
    assert report.ok  # nothing is known to be broken; the rest was not checked


@pytest.fixture(scope="module")
def sdk_agent() -> Iterator[str]:
    """The official a2a-sdk's Glossary agent (tests/interop/sdk_peer), in its own venv."""
    from tests.interop import sdk_harness

    with sdk_harness.start_glossary_server() as server:
        yield server.base_url


@pytest.mark.interop
async def test_the_a2a_sdk_agent_is_clean_but_for_what_docs_explain(sdk_agent: str) -> None:
    report = await run_self_check(sdk_agent, timeout=TIMEOUT)

    problems = {
        (f.check, f.severity, f.interface.split(" ")[0] if f.interface else "card")
        for f in report.findings
        if not f.ok
    }
    # docs/INSPECTOR.md, "Self-check": a2a-sdk 1.3.0 sends no Cache-Control with its card,
    # and its gRPC binding ignores a2a-version (a missing one, and 9.9, are served as 1.0).
    assert problems == {
        ("card.caching", "warning", "card"),
        ("version.missing", "warning", "GRPC"),
        ("version.unsupported", "error", "GRPC"),
    }, explain(report)
    assert {f.interface.split()[0] for f in report.by_check("stream.order") if f.ok} == {
        "JSONRPC",
        "HTTP+JSON",
        "GRPC",
    }


@pytest.mark.asyncio(loop_scope="module")
async def test_credentials_that_fit_no_scheme_are_a_finding(keyed_url: str) -> None:
    report = await run_self_check(keyed_url, credentials=[BearerToken("tok-1")], timeout=TIMEOUT)

    (unusable,) = report.by_check("credentials")
    assert not unusable.ok and unusable.severity == "warning"
    assert "No credentials" in unusable.detail, explain(report)
    assert "tok-1" not in json.dumps(report.to_json())
