"""Every example of the documentation runs as written against the public API.

The examples live in docs/examples/ and the pages include them whole (pymdownx.snippets), so
the code a reader copies is the code run here: each example's ``main(url)`` against the
example's agent on a real loopback server, its printed lines checked against what the page
says they print. The tutorial's own tests (docs/examples/test_tutorial_agent.py) run here
too, and the tutorial's ``peerwire send`` lines through the installed command.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import httpx
import pytest

from peerwire.errors import PeerwireError
from peerwire.testing import live_server

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
TIMEOUT_S = 30.0
Load = Callable[[str], ModuleType]


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Load]:
    """Import docs/examples modules as a reader's script would, in an empty working folder
    (examples that write files, keys or certificates, write them there)."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.chdir(tmp_path)
    before = set(sys.modules)

    def load(name: str) -> ModuleType:
        return importlib.import_module(name)

    yield load
    for name in set(sys.modules) - before:
        module = sys.modules[name]
        if Path(getattr(module, "__file__", None) or "/").parent == EXAMPLES:
            del sys.modules[name]


def printed(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


@contextlib.asynccontextmanager
async def serve_plain_asgi(factory: Callable[[str], Any]) -> AsyncIterator[tuple[str, Any]]:
    """``factory(url)``'s ASGI app on uvicorn at 127.0.0.1 and a free port (the local
    issuer, a host application); yields the URL and the app."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    with sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        app = factory(url)
        config = uvicorn.Config(app, lifespan="on", log_config=None, access_log=False)
        server = uvicorn.Server(config)
        task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
        try:
            with anyio.fail_after(TIMEOUT_S):
                while not server.started and not task.done():  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            assert server.started, "the local issuer did not start"
            yield url, app
        finally:
            server.should_exit = True
            with anyio.CancelScope(shield=True):
                await asyncio.wait({task}, timeout=TIMEOUT_S)
                if not task.done():
                    task.cancel()
                    await asyncio.wait({task})


# -- the tutorial ------------------------------------------------------------------------------


async def test_tutorial_client(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    agent = example("tutorial_agent").agent
    async with live_server(agent) as url:
        with anyio.fail_after(TIMEOUT_S):
            await example("tutorial_client").main(url)
    assert printed(capsys) == [
        "TaskState.COMPLETED 4 words",
        "chunk: W",
        "chunk: I",
        "chunk: R",
        "chunk: E",
        "What is your name?",
        "TaskState.COMPLETED Hello, Ada!",
    ]


def _tutorial_tests() -> list[str]:
    source = (EXAMPLES / "test_tutorial_agent.py").read_text()
    return [
        line[len("async def ") :].split("(")[0]
        for line in source.splitlines()
        if line.startswith("async def test_")
    ]


@pytest.mark.parametrize("name", _tutorial_tests())
async def test_the_tutorials_tests_pass(example: Load, name: str) -> None:
    test = getattr(example("test_tutorial_agent"), name)
    assert inspect.iscoroutinefunction(test)
    with anyio.fail_after(TIMEOUT_S):
        await test()


async def _peerwire(*arguments: str) -> tuple[int, str]:
    """Run the installed ``peerwire`` command; its exit code and what it printed (both
    streams)."""
    command = [str(Path(sys.executable).with_name("peerwire")), *arguments]
    with anyio.fail_after(TIMEOUT_S):
        done = await anyio.run_process(command, check=False, stderr=subprocess.STDOUT)
    return done.returncode, done.stdout.decode()


async def test_tutorial_command_lines(example: Load) -> None:
    async with live_server(example("tutorial_agent").agent) as url:
        code, out = await _peerwire("send", url, "the quick brown fox")
        assert code == 0 and "completed" in out and "result: 4 words" in out, out
        code, out = await _peerwire("send", url, "wire", "--skill", "spell", "--stream")
        assert code == 0 and "letters: WIRE" in out, out
        code, out = await _peerwire("send", url, "", "--skill", "greet")
        assert code == 3 and "question: What is your name?" in out, out
        task_id = out.split()[1]
        code, out = await _peerwire("send", url, "Ada", "--task", task_id)
        assert code == 0 and "result: Hello, Ada!" in out, out


# -- authentication ---------------------------------------------------------------------------


async def test_api_key(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    module = example("auth_api_key")
    async with live_server(module.agent, auth=module.AUTH) as url:
        await module.main(url)
        code, out = await _peerwire("send", url, "who am I?", "--api-key", "k-billing-2f7c")
        assert code == 0 and "You are billing, with scopes []" in out, out
        code, out = await _peerwire("send", url, "who am I?", "--api-key", "wrong")
        assert code == 1, out
    assert printed(capsys) == ["You are ops, with scopes ['ledger.write']"]


async def test_bearer_jwt_with_a_local_key(
    example: Load, capsys: pytest.CaptureFixture[str]
) -> None:
    module = example("auth_bearer")
    async with live_server(module.agent, auth=module.verifiers()) as url:
        await module.main(url)
        token = module.mint_token("bob")
        code, out = await _peerwire("send", url, "who am I?", "--bearer", token)
        assert code == 0 and "You are bob" in out, out
    assert printed(capsys) == ["You are alice, with scopes ['ledger.read']"]


async def test_oauth2_client_credentials(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    issuer_module, module = example("local_issuer"), example("auth_oauth2")
    async with serve_plain_asgi(issuer_module.LocalIssuer) as (_, issuer):
        agent = module.oauth2_agent(issuer.url)
        async with live_server(agent, auth=module.verifiers(issuer.url)) as url:
            await module.main(url, issuer.url)
            # A token without the skill's scope is refused (403: exit code 1).
            token = issuer.mint("reader", scope="ledger.read")
            code, out = await _peerwire("send", url, "x", "--bearer", token)
            assert code == 1 and "ledger.write" in out, out
    assert printed(capsys) == ["partner posted 'INV-1042 paid'"]


async def test_oidc_discovery(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    issuer_module, module = example("local_issuer"), example("auth_oidc")
    async with (
        serve_plain_asgi(issuer_module.LocalIssuer) as (_, issuer),
        live_server(module.oidc_agent(issuer.url), auth=module.AUTH) as url,
    ):
        await module.main(url, issuer.url)
    assert printed(capsys) == ["Balance for partner: 1,204.00 EUR"]


async def test_mutual_tls(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    certs = example("make_certs").make_certs()
    module = example("auth_mtls")
    tls = module.server_tls(certs)
    async with live_server(module.agent, tls=tls, auth=module.verifiers(certs)) as url:
        await module.main(url, certs)
    assert printed(capsys) == ["You are billing"]


# -- mounting ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["mount_starlette", "mount_fastapi", "mount_litestar", "mount_graceful"]
)
async def test_two_agents_mounted_in_a_host(example: Load, host: str) -> None:
    from peerwire import Client

    module = example(host)
    # Built without public_url: the cards name the host and port the server was reached on.
    async with (
        serve_plain_asgi(lambda url: module.build()) as (base, _),
        httpx.AsyncClient() as http,
    ):
        card = await http.get(f"{base}/a2a/weather/.well-known/agent-card.json")
        assert card.status_code == 200 and card.json()["name"] == "Weather Agent"
        assert card.json()["supportedInterfaces"][0]["url"] == f"{base}/a2a/weather/"
        for prefix, text, answer in (
            ("glossary", "record", "record: a word worth defining."),
            ("weather", "Porto", "Sunny in Porto tomorrow."),
        ):
            async with Client.connect(f"{base}/a2a/{prefix}") as client:
                task = await client.send(text)
                assert task.artifacts[0].text == answer


# -- limits -----------------------------------------------------------------------------------


async def test_limits(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    module = example("limits_example")
    assert module.HTTP_LIMITS.max_head_bytes == 16 * 1024
    async with live_server(module.agent, **module.APP_LIMITS) as url:
        await module.main(url)
        async with httpx.AsyncClient() as http:
            too_large = await http.post(
                url + "/",
                content=b"{" + b" " * module.APP_LIMITS["max_body_bytes"] + b"}",
                headers={"content-type": "application/json", "A2A-Version": "1.0"},
            )
        assert too_large.status_code == 413
    assert printed(capsys) == ["within every limit"]


# -- the inspector's self-check ---------------------------------------------------------------


async def test_self_check(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    module = example("selfcheck_example")
    async with live_server(module.agent) as url:
        await module.main(url)
    assert printed(capsys) == ["nothing breaks a client"]


# -- push notifications -----------------------------------------------------------------------


async def test_push_notifications(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    module = example("push_example")
    webhook = module.webhook
    async with (
        serve_plain_asgi(lambda _url: webhook) as (hook_base, _),
        live_server(module.agent, push=module.PUSH) as url,
    ):
        task_id = await module.main(url, f"{hook_base}/hook")
        with anyio.fail_after(TIMEOUT_S):
            while webhook.seen.get(task_id, [""])[-1] != "COMPLETED":  # noqa: ASYNC110
                await anyio.sleep(0.02)
        # A notification without the token is refused, and not taken for one.
        async with httpx.AsyncClient() as http:
            forged = await http.post(f"{hook_base}/hook/{task_id}", content=b"{}")
        assert forged.status_code == 401
    assert webhook.seen[task_id][-2:] == ["artifact 'Report on Q3: all good.'", "COMPLETED"]
    lines = printed(capsys)
    assert lines[0].startswith("registered ") and lines[0].endswith(f" for task {task_id}")
    assert lines[-1] == "webhook: COMPLETED"


# -- validation and logging -------------------------------------------------------------------


async def test_validation(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    from peerwire import Client

    module = example("validation_example")
    async with live_server(module.agent) as url:
        await module.main(url)
        async with Client.connect(url) as client:
            listed = await client.list_tasks()
    assert len(listed) == 1  # the refused message created no task
    assert printed(capsys) == [
        "[pt] good morning",
        "refused: Cannot translate into 'de'; supported: en, fr, pt",
    ]


async def test_app_state(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    module = example("app_state_example")
    async with live_server(module.agent) as url:
        await module.main(url)
    assert printed(capsys) == [
        "widget: 12 in stock (lookup 1)",
        "gadget: 0 in stock (lookup 2)",
        "2 lookups so far",
    ]
    with pytest.raises(PeerwireError, match="its lifespan is not running"):
        print(module.agent.app_state)  # closed on shutdown


async def test_logging(example: Load, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from peerwire import Client, TaskState

    module = example("logging_example")
    names = ("peerwire.runner", "peerwire.security")
    levels = {name: logging.getLogger(name).level for name in names}
    try:
        module.configure_logging()
        async with live_server(module.agent) as url, Client.connect(url) as client:
            task = await client.send("")
        assert task.status.state is TaskState.FAILED
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
    assert any(
        record.name == "peerwire.runner"
        and record.levelno == logging.ERROR
        and record.getMessage() == f"task {task.id}: skill 'echo' raised ValueError"
        and getattr(record, "task_id", None) == task.id
        and record.exc_info is not None
        for record in caplog.records
    )
