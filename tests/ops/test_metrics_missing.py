"""Without prometheus-client (the ``metrics`` extra not installed) everything works, and there
is no metrics page: in a child process that cannot import it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import asyncio
    import sys

    sys.modules["prometheus_client"] = None  # as if not installed: importing it fails

    from peerwire import Agent, create_app
    from peerwire.ops import MetricsUnavailableError, metrics_available, Metrics
    from peerwire.testing import in_process

    agent = Agent("Unmetered Agent")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    async def main() -> None:
        assert not metrics_available()
        try:
            Metrics()
        except MetricsUnavailableError as exc:
            print("unavailable:", exc)
        try:
            create_app(agent, metrics_port=9)
        except ValueError as exc:
            print("refused:", exc)
        async with in_process(agent) as http:
            page = await http.get("/metrics")
            envelope = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {
                    "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
                },
            }
            sent = await http.post("/", json=envelope, headers={"A2A-Version": "1.0"})
        print("page:", page.status_code)
        print("state:", sent.json()["result"]["task"]["status"]["state"])

    asyncio.run(main())
    """
)


def test_without_prometheus_client_the_agent_serves_and_has_no_metrics_page() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "unavailable: metrics need prometheus-client" in out
    assert "refused: metrics_token= and metrics_port= need metrics on" in out
    assert "pip install 'peerwire[metrics]'" in out
    assert "page: 404" in out
    assert "state: TASK_STATE_COMPLETED" in out
