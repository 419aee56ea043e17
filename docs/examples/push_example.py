"""Push notifications end to end: an agent that offers them, a webhook that checks them, and
a client that starts a task and registers the webhook for it.

Run the webhook with ``uvicorn push_example:webhook --port 9100``, the agent with
``python push_example.py serve``, then ``python push_example.py``: the webhook prints the
task's updates as they arrive.
"""

import asyncio
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

from peerwire import Agent, Client, PushSettings, TaskContext, serve
from peerwire.errors import A2AError, wire_info
from peerwire.push import NotificationVerifier

TOKEN = "a secret only the webhook knows"
WEBHOOK_URL = "http://127.0.0.1:9100/hook"  # + "/<task id>"

agent = Agent("Reporter", description="Writes reports, slowly")


@agent.skill()
async def report(text: str, ctx: TaskContext) -> None:
    await ctx.start_work("Gathering figures")
    await asyncio.sleep(0.5)  # long enough for the caller to register its webhook
    await ctx.add_artifact(f"Report on {text}: all good.", name="report")
    await ctx.complete()


# Webhooks on internal addresses are refused unless allowed: loopback, to try it here.
PUSH = PushSettings(allow=("127.0.0.1",))

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class Webhook:
    """A webhook as an ASGI app. Each task gets its own URL, ``/hook/<task id>``, and a
    notification must be about the task its URL names and carry the token."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan to run
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        task_id = scope["path"].rpartition("/")[2]
        verifier = NotificationVerifier(token=TOKEN, expected_task_ids={task_id})
        headers = [
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]
        ]
        try:
            update = await verifier.verify(headers, body)
        except A2AError as refused:  # 401, 403 or 400, as the error says
            status = wire_info(refused).http_status
        else:
            status = 204  # any 2xx acknowledges; otherwise the agent retries
            if update.status_update is not None:
                seen = update.status_update.status.state.name
            elif update.artifact_update is not None:
                seen = f"artifact {update.artifact_update.artifact.text!r}"
            else:
                seen = "something else"  # agents push status and artifact updates only
            self.seen.setdefault(task_id, []).append(seen)
            print("webhook:", seen)
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})


webhook = Webhook()


async def main(url: str = "http://127.0.0.1:8000", webhook_url: str = WEBHOOK_URL) -> str:
    async with Client.connect(url) as client:
        task = await client.send("Q3", return_immediately=True)  # the task's id at once
        hook = f"{webhook_url}/{task.id}"
        config = await client.create_push_config(task.id, hook, token=TOKEN)
        print("registered", config.id, "for task", task.id)
        return task.id


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8000, push=PUSH)
    else:
        anyio.run(main)
