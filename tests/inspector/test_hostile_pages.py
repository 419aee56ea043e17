"""The inspector's backend against pages that mean harm, in a real browser (the Playwright
set-up of test_inspector_browser.py): a page on another origin firing ``<img>`` GETs, ``fetch``
calls and form posts at every route makes the backend do nothing (no call to any agent, no
state change), whether it listens on loopback or on 0.0.0.0; and cards whose values have
the wrong JSON types are shown with each listed as a problem, never an exception."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from peerwire.inspect import serve_inspector

from .pages import api_client, token_of
from .test_hostile_agents import HEAD, RawAgent
from .test_inspector_browser import WAIT_MS, browser, expect, load_card, page, tab_on

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

__all__ = ["browser", "page"]  # the fixtures, used here by name

ATTACKS = """
<!doctype html><html><body><form id="f" method="post" target="sink"
  enctype="text/plain"><input name='{"url":"LURE","x":"' value='"}'></form>
<iframe name="sink"></iframe><script>
const base = "BASE";
const gets = ["/api/state", "/api/tasks?binding=JSONRPC", "/api/tasks/t1?binding=JSONRPC",
  "/api/tasks/t1/push-configs?binding=JSONRPC", "/api/events", "/api/events?token="];
const done = [];
for (const path of gets) {
  done.push(new Promise((ok) => { const img = new Image(); img.onload = img.onerror = ok;
    img.src = base + path; }));
  done.push(fetch(base + path, { mode: "no-cors", credentials: "include" }).catch(() => {}));
}
for (const [method, path] of [["POST", "/api/connect"], ["POST", "/api/selfcheck"],
    ["POST", "/api/send"], ["POST", "/api/tasks/t1/cancel"], ["DELETE", "/api/wire"],
    ["POST", "/api/credentials"]]) {
  done.push(fetch(base + path, { method, mode: "no-cors", headers: { "Content-Type": "text/plain" },
    body: JSON.stringify({ url: "LURE", binding: "JSONRPC", text: "hi", scheme: "k",
      credential: { kind: "apiKey", key: "k" } }) }).catch(() => {}));
  // With the JSON type: the browser asks first (a preflight), and must not be let through.
  done.push(fetch(base + path, { method, headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ url: "LURE", binding: "JSONRPC", text: "hi" }) }).catch(() => {}));
}
const form = document.getElementById("f");
for (const path of ["/api/connect", "/api/selfcheck", "/api/send"]) {
  form.action = base + path;
  form.submit();
}
Promise.all(done).then(() => { document.title = "done"; });
</script></body></html>
"""

CARD = {
    "name": "Victim",
    "description": "the user's own agent",
    "version": "1.0.0",
    "supportedInterfaces": [{"url": "URL", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
    "capabilities": {},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "s", "name": "s", "description": "d", "tags": ["t"]}],
}


def card_server(card: dict[str, Any]) -> RawAgent:
    """An agent that answers its card (``URL`` in it: its own address) to every request."""

    async def answer(agent: RawAgent, writer: asyncio.StreamWriter) -> None:
        body = json.dumps(card).replace("URL", agent.url).encode()
        await agent.write(writer, HEAD + body)

    return RawAgent(answer)


def page_server(inspector: str, lure: str) -> RawAgent:
    async def answer(agent: RawAgent, writer: asyncio.StreamWriter) -> None:
        html = ATTACKS.replace("BASE", inspector).replace("LURE", lure).encode()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n"
        await agent.write(writer, head + html)

    return RawAgent(answer)


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
async def test_a_page_on_another_origin_makes_the_backend_do_nothing(
    browser: Any, request: pytest.FixtureRequest, host: str
) -> None:
    async with (
        card_server(CARD) as victim,
        card_server(CARD) as lure,
        serve_inspector(host=host, timeout=5.0) as address,
    ):
        port = address.split(":")[2].split("/")[0]
        inspector = f"http://127.0.0.1:{port}"
        own = f"{inspector}/?token={token_of(address)}"
        async with api_client(own) as http:
            connected = await http.post("/api/connect", json={"url": victim.url})
            assert connected.status_code == 200, connected.text
            before = (await http.get("/api/state")).json()
        calls = victim.requests
        async with page_server(inspector, lure.url) as hostile:
            context = await browser.new_context()
            try:
                tab = await context.new_page()
                await tab.goto(hostile.url)
                await expect(tab).to_have_title("done", timeout=WAIT_MS)
                await asyncio.sleep(0.5)  # the form posts, sent after, have landed too
            finally:
                await context.close()
        async with api_client(own) as http:
            after = (await http.get("/api/state")).json()
        assert victim.requests == calls, "no call reached the agent"
        assert lure.requests == 0, "the agent a hostile page named was never fetched"
        assert after == before, "nothing changed"


async def test_a_rebinding_name_or_another_origin_is_refused_without_the_token() -> None:
    async with serve_inspector(host="0.0.0.0", timeout=5.0) as address:
        port = address.split(":")[2].split("/")[0]
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=base) as http:
            # DNS rebinding: any name reaches 0.0.0.0; without the token, nothing is answered.
            rebound = await http.get("/api/state", headers={"Host": f"evil.example:{port}"})
            assert rebound.status_code == 403
            assert "token" in rebound.json()["error"]
            wrong = await http.get("/api/state", headers={"X-Peerwire-Token": "guess"})
            assert wrong.status_code == 403
            token = token_of(address)
            good = await http.get("/api/state", headers={"X-Peerwire-Token": token})
            assert good.status_code == 200
            stream = await http.get("/api/events", headers={"Sec-Fetch-Site": "cross-site"})
            assert stream.status_code == 403
            for site in ("cross-site", "same-site"):
                refused = await http.get(
                    "/api/state", headers={"X-Peerwire-Token": token, "Sec-Fetch-Site": site}
                )
                assert refused.status_code == 403, site
            other = await http.get(
                "/api/state",
                headers={"X-Peerwire-Token": token, "Origin": "http://evil.example"},
            )
            assert other.status_code == 403
            # The page itself may be navigated to from anywhere: it holds nothing.
            navigated = await http.get(
                "/", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
            )
            assert navigated.status_code == 200
    async with serve_inspector(timeout=5.0) as address:
        port = address.split(":")[2].split("/")[0]
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            named = await http.get(
                "/api/state",
                headers={"Host": f"evil.example:{port}", "X-Peerwire-Token": token_of(address)},
            )
            assert named.status_code == 403 and "loopback" in named.json()["error"]


def _with(path: str, value: Any) -> dict[str, Any]:
    card = json.loads(json.dumps(CARD))
    *parents, last = path.split(".")
    node: Any = card
    for name in parents:
        node = node[int(name)] if name.isdigit() else node[name]
    node[int(last) if last.isdigit() else last] = value
    return card


WRONGLY_TYPED = [
    ("skills", {"a": 1}, "skills is an object, not a list"),
    ("skills.0.tags", "t", "skills[0].tags is a string, not a list"),
    ("skills.0.examples", "e", "skills[0].examples is a string, not a list"),
    ("skills", ["s"], "skills[0] is a string, not an object"),
    ("supportedInterfaces", {"url": "x"}, "supportedInterfaces is an object, not a list"),
    ("supportedInterfaces.0.url", 5, "supportedInterfaces[0].url is a number, not text"),
    ("capabilities", [], "capabilities is a list, not an object"),
    ("capabilities.extensions", {"uri": "x"}, "capabilities.extensions is an object, not a list"),
    ("capabilities.streaming", "yes", "capabilities.streaming is a string, not true or false"),
    ("securitySchemes", ["k"], "securitySchemes is a list, not an object"),
    ("securitySchemes", {"k": "x"}, "securitySchemes.k is a string, not an object"),
    ("securityRequirements", {"schemes": {}}, "securityRequirements is an object, not a list"),
    ("defaultInputModes", "text/plain", "defaultInputModes is a string, not a list"),
    ("provider", "acme", "provider is a string, not an object"),
    ("name", 42, "name is a number, not text"),
]


async def test_wrongly_typed_cards_are_listed_problems_never_page_errors(page: Any) -> None:
    # tab_on (the ``page`` fixture) fails the test on any script error in the page.
    for path, value, problem in WRONGLY_TYPED:
        async with card_server(_with(path, value)) as agent:
            await page.fill("#agent-url", agent.url)
            await page.click("#connect")
            await expect(page.locator("#problems")).to_contain_text(problem, timeout=WAIT_MS)
            await expect(page.locator("#card pre.raw")).to_be_attached()


async def test_the_page_sends_its_token_and_drops_it_from_the_address(
    browser: Any, request: pytest.FixtureRequest
) -> None:
    async with (
        card_server(CARD) as agent,
        serve_inspector(timeout=5.0) as address,
        tab_on(browser, address, request) as tab,
    ):
        assert "token" not in tab.url
        await load_card(tab, agent.url)
        await expect(tab.locator("#card-name")).to_contain_text("Victim")
        await tab.reload()  # the tab keeps it (sessionStorage)
        await expect(tab.locator("#card-name")).to_contain_text("Victim", timeout=WAIT_MS)
