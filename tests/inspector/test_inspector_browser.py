"""The inspector's page in a real browser: headless Chromium (Debian's ``chromium``, which
``.ci/run`` installs with apt) driven by Playwright for Python with its executable path set
to it, so nothing is downloaded (``playwright install`` is never run).

Each scenario asserts on what the page shows and keeps a screenshot of each step in the
artifacts folder: ``$PEERWIRE_TEST_ARTIFACTS`` when set, else ``tests/inspector/artifacts/``
(git ignores it).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from joserfc.jwk import ECKey

from peerwire.inspect import serve_inspector
from peerwire.security import CardSigner, MTLSVerifier
from peerwire.testing import live_server

from .agents import PARTNER_ALICE, VAULT_TOKEN, partner_agent, signed_agent
from .broken_agent import FAULTS, serve_broken_agent
from .delegating import serve_fulfilment

playwright_api = pytest.importorskip("playwright.async_api")

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 20_000  # how long the page may take to show a state: a liveness bound
ARTIFACTS = Path(os.environ.get("PEERWIRE_TEST_ARTIFACTS") or Path(__file__).parent / "artifacts")
DEFINITION = "A record is a final class that is a transparent carrier for its components."


def _chromium_or_skip() -> str:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    found = shutil.which("chromium")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing: .ci/run installs it (apt-get install chromium)")
    pytest.skip("Debian's chromium is not installed (apt-get install chromium chromium-driver)")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser() -> AsyncIterator[Any]:
    executable = _chromium_or_skip()
    async with playwright_api.async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Any, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """A new tab on a fresh inspector; a failing step leaves its screenshot too."""
    async with serve_inspector(timeout=10.0) as address, tab_on(browser, address, request) as tab:
        yield tab


@contextlib.asynccontextmanager
async def tab_on(browser: Any, address: str, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """A new tab on the inspector at ``address``, live; its last screenshot kept."""
    context = await browser.new_context(
        viewport={"width": 1400, "height": 1000},
        permissions=["clipboard-read", "clipboard-write"],
    )
    tab = await context.new_page()
    # A script error on the page fails the test, whatever it shows.
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    await tab.goto(address)
    await playwright_api.expect(tab.locator("#live")).to_have_text("live", timeout=WAIT_MS)
    tab.test_name = request.node.name
    try:
        yield tab
    finally:
        await shoot(tab, "last")
        await context.close()
    assert errors == [], errors


async def shoot(tab: Any, step: str) -> None:
    # Playwright makes the folder it writes the screenshot into.
    await tab.screenshot(path=str(ARTIFACTS / f"{tab.test_name}-{step}.png"), full_page=True)


def expect(locator: Any) -> Any:
    return playwright_api.expect(locator)


async def load_card(tab: Any, url: str) -> None:
    await tab.fill("#agent-url", url)
    await tab.click("#connect")
    await expect(tab.locator("#card-name")).to_be_visible(timeout=WAIT_MS)
    # This card's, not the one shown before it: its location names the URL.
    location = tab.locator("#card .facts code").first
    await expect(location).to_contain_text(url.rstrip("/"), timeout=WAIT_MS)


async def send(tab: Any, text: str, *, streaming: bool = True) -> None:
    await tab.fill("#send-text", text)
    await tab.set_checked("#streaming", streaming)
    await tab.click("#send")


def task_with_state(tab: Any, state: str) -> Any:
    return tab.locator(f'article.task[data-state="{state}"]').first


async def test_the_card_of_a_served_sample_is_shown(page: Any, glossary_url: str) -> None:
    await load_card(page, glossary_url)
    await expect(page.locator("#card-name")).to_contain_text("Glossary Agent")
    await expect(page.locator("#interfaces li")).to_have_count(3)
    interfaces = await page.locator("#interfaces li").all_inner_texts()
    assert [line.split()[0] for line in interfaces] == ["JSONRPC", "HTTP+JSON", "GRPC"]
    await expect(page.locator("#skills")).to_contain_text("record")
    await expect(page.locator("#skills")).to_contain_text("sealed class")
    await expect(page.locator("#signature")).to_have_text("unsigned")
    await expect(page.locator("#card-headers")).to_contain_text("etag:")
    await expect(page.locator("#card-headers")).to_contain_text("cache-control:")
    await expect(page.locator("#problems")).to_have_text("none")
    await shoot(page, "card")


async def test_a_signed_card_shows_its_key_and_verifies_with_it(page: Any) -> None:
    signer = CardSigner(ECKey.generate_key("P-256", parameters={"kid": "card-key-7"}))
    async with live_server(signed_agent(), signing_key=signer, shutdown_grace=1.0) as url:
        await load_card(page, url)
        await expect(page.locator("#signature")).to_have_text("unverified")
        await expect(page.locator(".signature-key").first).to_contain_text("kid card-key-7")
        await page.click(".keys summary")
        await page.fill("#pinned-keys", json.dumps(signer.public_jwks()))
        await page.click("#connect")
        await expect(page.locator("#signature")).to_have_text("valid", timeout=WAIT_MS)
        await shoot(page, "signed")


async def test_a_message_reaches_completed_with_the_artifact_text(
    page: Any, glossary_url: str
) -> None:
    await load_card(page, glossary_url)
    await send(page, "record")
    done = task_with_state(page, "COMPLETED")
    await expect(done).to_be_visible(timeout=WAIT_MS)
    await expect(done.locator(".artifact-text")).to_have_text(DEFINITION)
    # Both chunks are on the timeline, the second appended to the first.
    await expect(done.locator(".entry.kind-artifact")).to_have_count(2)
    await expect(done.locator(".entry.kind-sent")).to_contain_text("record")
    await shoot(page, "completed")
    # The raw wire: the stream with its events, and a curl command for it.
    stream = page.locator(
        '#wire .exchange[data-binding="JSONRPC"][data-operation="SendStreamingMessage"]'
    )
    await stream.locator("summary").click()
    await expect(stream.locator(".sse-event").first).to_be_visible()
    await expect(stream.locator(".curl")).to_contain_text("curl -sS -N -X POST")
    await stream.locator("button.copy-curl").click()
    await expect(stream.locator("button.copy-curl")).to_have_text("copied")
    copied = await page.evaluate("navigator.clipboard.readText()")
    assert copied == await stream.locator(".curl").inner_text()
    assert "SendStreamingMessage" in copied
    await shoot(page, "wire")


async def test_a_message_with_data_and_a_file_is_sent_as_its_parts(
    page: Any, parts_url: str
) -> None:
    await load_card(page, parts_url)
    await page.click("#composer summary")
    await page.fill("#send-data", '{"level": 2}')
    await page.set_input_files(
        "#send-file", files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"hi"}]
    )
    await send(page, "record", streaming=False)
    await expect(task_with_state(page, "COMPLETED")).to_be_visible(timeout=WAIT_MS)
    await expect(page.locator(".run .sent").first).to_have_text(
        'record + data {"level": 2} + file notes.txt (2 bytes)'
    )
    sent = page.locator('#wire .exchange[data-operation="SendMessage"]')
    await sent.locator("summary").click()
    body = sent.locator("pre.body").first
    await expect(body).to_contain_text('"filename": "notes.txt"')
    await expect(body).to_contain_text('"level": 2')
    await shoot(page, "parts")


async def test_an_input_required_question_is_answered(page: Any, glossary_url: str) -> None:
    await load_card(page, glossary_url)
    await send(page, "")
    asked = task_with_state(page, "INPUT_REQUIRED")
    await expect(asked.locator(".question")).to_have_text(
        "Which term should I define?", timeout=WAIT_MS
    )
    task_id = await asked.get_attribute("data-task-id")
    await shoot(page, "asked")
    await asked.locator(".reply-text").fill("record")
    await asked.locator(".reply-send").click()
    same = page.locator(f'article.task[data-task-id="{task_id}"]')
    await expect(same).to_have_attribute("data-state", "COMPLETED", timeout=WAIT_MS)
    await expect(same.locator(".artifact-text")).to_have_text(DEFINITION)
    await expect(page.locator("article.task")).to_have_count(1)  # the answer went to it
    await shoot(page, "answered")


async def test_a_slow_task_is_canceled(page: Any, glossary_url: str) -> None:
    await load_card(page, glossary_url)
    await send(page, "slow")
    working = task_with_state(page, "WORKING")
    await expect(working.locator(".timeline")).to_contain_text("thinking", timeout=WAIT_MS)
    await shoot(page, "working")
    await working.locator("button.resubscribe").click()
    await expect(page.locator(".run", has_text="subscribe").first).to_be_visible()
    await expect(working.locator(".timeline")).to_contain_text("resubscribed over JSONRPC")
    await working.locator("button.cancel").click()
    canceled = task_with_state(page, "CANCELED")
    await expect(canceled).to_be_visible(timeout=WAIT_MS)
    await expect(canceled.locator(".state")).to_have_text("CANCELED")
    await shoot(page, "canceled")


async def test_over_grpc_a_message_completes_and_a_slow_task_is_canceled(
    page: Any, glossary_url: str
) -> None:
    await load_card(page, glossary_url)
    await page.select_option("#binding", "GRPC")
    await send(page, "record")
    done = task_with_state(page, "COMPLETED")
    await expect(done.locator(".artifact-text")).to_have_text(DEFINITION, timeout=WAIT_MS)
    await expect(done).to_contain_text("over GRPC")
    await send(page, "slow")
    working = task_with_state(page, "WORKING")
    await expect(working.locator(".timeline")).to_contain_text("thinking", timeout=WAIT_MS)
    await working.locator("button.cancel").click()
    await expect(task_with_state(page, "CANCELED")).to_be_visible(timeout=WAIT_MS)
    grpc = page.locator('#wire .exchange[data-binding="GRPC"][data-operation="CancelTask"]')
    await grpc.locator("summary").click()
    await expect(grpc.locator(".metadata")).to_contain_text("a2a-version: 1.0")
    await expect(grpc).to_contain_text("/lf.a2a.v1.A2AService/CancelTask")
    await shoot(page, "grpc")


async def test_a_bearer_token_is_used_for_an_agent_that_requires_one(
    page: Any, vault_url: str
) -> None:
    await load_card(page, vault_url)
    form = page.locator('form.credential[data-scheme="bearer"]')
    await expect(form).to_contain_text("Authorization: Bearer")
    await send(page, "who", streaming=False)
    await expect(page.locator(".run-error").first).to_contain_text(
        "AuthenticationError", timeout=WAIT_MS
    )
    await shoot(page, "refused")
    await form.locator('input[name="token"]').fill(VAULT_TOKEN)
    await form.locator('button[type="submit"]').click()
    await expect(page.locator('form.credential[data-scheme="bearer"] .held')).to_have_text(
        "bearer held"
    )
    await send(page, "who", streaming=False)
    done = task_with_state(page, "COMPLETED")
    await expect(done.locator(".artifact-text")).to_have_text(
        "you are inspector-user", timeout=WAIT_MS
    )
    # The token was typed once and is nowhere on the page now, the wire view included.
    assert VAULT_TOKEN not in await page.content()
    await shoot(page, "authenticated")


async def test_security_headings_and_certificate_forms_follow_the_card_and_the_url(
    page: Any, glossary_url: str, vault_url: str, tmp_path: Path
) -> None:
    from security._pki import make_pki  # tests/security's small PKI

    certificate_forms = page.locator('#credentials form.credential:has(input[name="certFile"])')
    # Before a card is read, a certificate form is offered for an https URL only.
    await page.fill("#agent-url", glossary_url)
    await expect(certificate_forms).to_have_count(0)
    await page.fill("#agent-url", "https://127.0.0.1:9")
    await expect(page.locator('form.credential[data-scheme="client-certificate"]')).to_be_visible()
    # A plain-http card without schemes: no empty heading, no form.
    await load_card(page, glossary_url)
    await expect(page.locator("#card")).not_to_contain_text("Security schemes")
    await expect(page.locator("#schemes")).to_have_count(0)
    await expect(page.locator("#credentials form.credential")).to_have_count(0)
    await expect(page.locator("#credentials")).to_contain_text("declares no security schemes")
    # Schemes declared: the heading lists them, and still no certificate form over http.
    await load_card(page, vault_url)
    await expect(page.locator("#card-name")).to_contain_text("Vault Agent")
    await expect(page.locator("#schemes-heading")).to_have_text("Security schemes")
    await expect(page.locator("#schemes li")).to_have_count(2)
    await expect(page.locator('form.credential[data-scheme="bearer"]')).to_be_visible()
    await expect(certificate_forms).to_have_count(0)
    await shoot(page, "no-certificate")

    pki = make_pki(tmp_path)
    verifier = MTLSVerifier([pki.client_ca.pem], principals={PARTNER_ALICE: "alice"})
    # mTLS declared on a plain-http agent: there is no TLS connection to present it on.
    async with live_server(partner_agent(), auth={"mtls": verifier}, shutdown_grace=1.0) as url:
        await load_card(page, url)
        # load_card returns once a card is shown: wait for this one, not the Vault's.
        await expect(page.locator("#card-name")).to_contain_text("Partner Agent")
        await expect(page.locator("#schemes li")).to_have_text("mtls mutual TLS")
        await expect(certificate_forms).to_have_count(0)
    async with live_server(
        partner_agent(), tls=pki.server_tls(), auth={"mtls": verifier}, shutdown_grace=1.0
    ) as url:
        # The card is refused without a certificate; the https URL offers the form for one.
        await page.fill("#agent-url", url)
        await page.click("#connect")
        await expect(page.locator("#error-banner")).to_contain_text("cannot fetch the agent card")
        bootstrap = page.locator('form.credential[data-scheme="client-certificate"]')
        alice = pki.client("alice")
        await bootstrap.locator('input[name="certFile"]').fill(str(alice.certfile))
        await bootstrap.locator('input[name="keyFile"]').fill(str(alice.keyfile))
        await bootstrap.locator('input[name="caFile"]').fill(str(pki.server_ca_file))
        await bootstrap.locator('button[type="submit"]').click()
        await expect(bootstrap.locator(".held")).to_have_text("mtls held", timeout=WAIT_MS)
        await load_card(page, url)
        # Declared and over TLS: the card's own mTLS scheme has its form.
        await expect(page.locator('form.credential[data-scheme="mtls"]')).to_be_visible()
        await send(page, "who", streaming=False)
        done = task_with_state(page, "COMPLETED")
        await expect(done.locator(".artifact-text")).to_have_text("alice", timeout=WAIT_MS)
        await shoot(page, "certificate")


async def test_a_tasks_delegations_open_from_its_timeline_grouped_per_agent(
    browser: Any, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with (
        serve_fulfilment(tmp_path) as shop,
        serve_inspector(ledger=shop.ledger, timeout=10.0) as address,
        tab_on(browser, address, request) as tab,
    ):
        await load_card(tab, shop.url)
        await send(tab, "order-9", streaming=False)
        failed = task_with_state(tab, "FAILED")
        await expect(failed).to_be_visible(timeout=WAIT_MS)
        section = failed.locator("section.delegations")
        # Asked again until the undo has run (it runs once the task has failed).
        for _ in range(100):
            await failed.locator("button.delegations").click()
            await expect(section).to_be_visible(timeout=WAIT_MS)
            if await section.locator('li[data-key="release"][data-status="completed"]').count():
                break
            await tab.wait_for_timeout(100)
        await expect(section.locator("h4")).to_contain_text("Delegations (3)")
        await expect(section.locator(".delegations-ended")).to_contain_text("FAILED")
        groups = section.locator(".delegation-agent")
        await expect(groups).to_have_count(2)
        inventory = section.locator(f'.delegation-agent[data-agent="{shop.inventory}"]')
        logistics = section.locator(f'.delegation-agent[data-agent="{shop.logistics}"]')
        lock = inventory.locator('li[data-key="lock"]')
        await expect(lock.locator(".delegation-status")).to_have_text("completed")
        await expect(lock.locator(".remote-state")).to_have_text("COMPLETED")
        await expect(lock.locator(".remote-task")).not_to_be_empty()
        await expect(lock.locator(".compensations")).to_contain_text("release completed")
        release = inventory.locator('li[data-key="release"]')
        await expect(release.locator(".undoes")).to_have_text("undoes lock")
        ship = logistics.locator('li[data-key="ship"]')
        await expect(ship.locator(".delegation-status")).to_have_text("failed")
        await expect(ship.locator(".delegation-reason")).to_contain_text("cannot do order-9")
        # A step's undo is one click away.
        await lock.locator("a.compensation-link").click()
        assert await tab.evaluate("location.hash") == f"#{await release.get_attribute('id')}"
        await shoot(tab, "delegations")


async def test_tasks_are_grouped_per_agent_inspected(page: Any, glossary_url: str) -> None:
    async with live_server(signed_agent(), shutdown_grace=1.0) as other_url:
        agents = ((glossary_url, "Glossary Agent"), (other_url, "Signed Agent"))
        for sent, (url, name) in enumerate((*agents, agents[0]), start=1):
            await load_card(page, url)
            # This agent's card, not the last one's: the backend inspects it now.
            await expect(page.locator("#card-name")).to_contain_text(name)
            await send(page, "record", streaming=False)
            done = page.locator('article.task[data-state="COMPLETED"]')
            await expect(done).to_have_count(sent, timeout=WAIT_MS)
        groups = page.locator("#timelines > section.agent-tasks")
        await expect(groups).to_have_count(2, timeout=WAIT_MS)
        glossary = page.locator(f'section.agent-tasks[data-agent="{glossary_url}"]')
        other = page.locator(f'section.agent-tasks[data-agent="{other_url}"]')
        await expect(glossary.locator(".agent-heading")).to_contain_text("Glossary Agent")
        await expect(glossary.locator("article.task")).to_have_count(2, timeout=WAIT_MS)
        await expect(other.locator("article.task")).to_have_count(1)
        await expect(other.locator(".agent-heading")).to_contain_text(other_url)
        await shoot(page, "per-agent")


async def test_without_a_ledger_no_delegations_button_is_offered(
    page: Any, glossary_url: str
) -> None:
    await load_card(page, glossary_url)
    await send(page, "record")
    done = task_with_state(page, "COMPLETED")
    await expect(done).to_be_visible(timeout=WAIT_MS)
    await expect(done.locator("button.refresh")).to_be_visible()
    await expect(done.locator("button.delegations")).to_have_count(0)


# Faults that do not hide one another: each leaves the rest of the agent answering, so each
# check the self-check makes sees its own fault.
SELF_CHECK_FAULTS = (
    "card_without_cache_headers",
    "unknown_binding",
    "duplicate_skill_ids",
    "undeclared_security_scheme",
    "refuses_patch_version",
    "ignores_missing_version",
    "wrong_unknown_task_code",
    "bad_json_500",
    "stream_starts_with_status",
)


async def test_the_self_check_flags_each_fault_of_a_broken_agent(page: Any) -> None:
    async with serve_broken_agent(SELF_CHECK_FAULTS) as url:
        await load_card(page, url)
        await expect(page.locator("#problems .problem").first).to_be_visible()
        await page.click("#selfcheck-run")
        await expect(page.locator("#selfcheck-summary")).to_contain_text(
            "found a fault", timeout=WAIT_MS * 3
        )
        for fault in SELF_CHECK_FAULTS:
            check = FAULTS[fault]
            flagged = page.locator(f'#selfcheck .finding.fail[data-check="{check}"]')
            assert await flagged.count() >= 1, f"{fault}: no failing {check} finding shown"
        await shoot(page, "selfcheck")


async def test_a_healthy_agent_passes_the_self_check(page: Any) -> None:
    async with serve_broken_agent(()) as url:
        await load_card(page, url)
        await page.click("#selfcheck-run")
        await expect(page.locator("#selfcheck-summary")).to_have_text(
            "Nothing found that would break a client.", timeout=WAIT_MS * 3
        )
        await expect(page.locator("#selfcheck .finding.fail")).to_have_count(0)
        await shoot(page, "selfcheck-healthy")


async def test_bad_input_shows_a_clear_error_on_the_page(page: Any, glossary_url: str) -> None:
    await page.fill("#agent-url", "http://127.0.0.1:9")
    await page.click("#connect")
    banner = page.locator("#error-banner")
    await expect(banner).to_contain_text("cannot fetch the agent card", timeout=WAIT_MS)
    await shoot(page, "agent-down")
    await load_card(page, glossary_url)
    await page.fill("#open-task-id", "no-such-task")
    await page.click("#open-task")
    await expect(banner).to_contain_text("TaskNotFoundError")
    assert "Traceback" not in await banner.inner_text()
    await shoot(page, "unknown-task")


async def test_tasks_are_listed_opened_and_their_push_configs_managed(
    page: Any, glossary_url: str
) -> None:
    await load_card(page, glossary_url)
    await send(page, "")
    asked = task_with_state(page, "INPUT_REQUIRED")
    await expect(asked).to_be_visible(timeout=WAIT_MS)
    task_id = await asked.get_attribute("data-task-id")
    await page.select_option("#tasks-state", "INPUT_REQUIRED")
    await page.click("#tasks-list-button")
    row = page.locator(f'#tasks-list .task-row[data-task-id="{task_id}"]')
    await expect(row).to_be_visible(timeout=WAIT_MS)
    await row.locator("button.push").click()
    await page.fill("#push-configs .push-url", "http://127.0.0.1:9/hook")
    await page.fill("#push-configs .push-id", "hook-a")
    await page.click("#push-configs .push-create button")
    config = page.locator('#push-configs .push-config[data-config-id="hook-a"]')
    await expect(config).to_be_visible(timeout=WAIT_MS)
    await config.locator(".push-get").click()
    await expect(page.locator("#push-configs .push-detail")).to_contain_text("127.0.0.1:9/hook")
    await shoot(page, "push-config")
    await config.locator(".push-delete").click()
    await expect(page.locator("#push-configs .push-none")).to_be_visible(timeout=WAIT_MS)
    await shoot(page, "tasks")
