"""Replay safety: what runs again, stable artifact ids, idempotent side effects.

A handler that asks runs again from its start when the answer reaches a process that does not
hold it (a restart, another worker): ``ask`` returns the recorded answers, everything before
them happens again. This one takes a deposit before it asks, so the charge is keyed by the
task and step: a replay finds it made and charges nothing.

``python replay_example.py serve`` serves the agent on ``bookings.db``;
``python replay_example.py start`` books (it waits for a confirmation) and prints the task id;
stop the server, start it again, then ``python replay_example.py finish TASK_ID``.
"""

import sqlite3
import sys
from pathlib import Path

import anyio

from peerwire import Agent, Client, TaskContext, serve
from peerwire.client.auth import APIKey, Credentials
from peerwire.security import APIKeyVerifier, Principal
from peerwire.types import APIKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList

LEDGER = Path("charges.db")  # the side effect's own record: one row per key

agent = Agent(
    "Bookings",
    description="Books rooms, with a deposit",
    on_restart="resume",  # a task working when the process died runs again at start-up
    security_schemes={
        "key": SecurityScheme(
            api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
        )
    },
    security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
)
AUTH = {"key": APIKeyVerifier({"k-ana": Principal("ana", claims={"name": "Ana"})})}


def charge(key: str, cents: int) -> bool:
    """Charge once per key (True: charged now). A payment API's idempotency key does this."""
    with sqlite3.connect(LEDGER) as ledger:
        ledger.execute("CREATE TABLE IF NOT EXISTS charges (key TEXT PRIMARY KEY, cents INT)")
        inserted = ledger.execute("INSERT OR IGNORE INTO charges VALUES (?, ?)", (key, cents))
        return inserted.rowcount == 1


@agent.skill()
async def book(ctx: TaskContext) -> None:
    guest = ctx.caller.principal.claims["name"]  # recorded with the task: the same on a replay
    await ctx.update("checking availability")  # runs again on a replay: progress, not a record
    await ctx.add_artifact(f"quote for {guest}: 2 nights, 240 EUR")  # no id: the same each run
    charge(f"{ctx.task_id}/deposit", 5000)  # keyed by task and step: charged once
    answer = await ctx.ask(f"Confirm 2 nights for {guest}? (yes/no)")
    if answer.text != "yes":
        await ctx.reject("not confirmed")
        return
    await ctx.add_artifact(f"booking for {guest}", name="booking")
    await ctx.complete(f"booked for {guest}")


def client(url: str) -> Client:
    return Client.connect(url, credentials=Credentials(APIKey("k-ana")))


async def start(url: str = "http://127.0.0.1:8000") -> str:
    async with client(url) as ana:
        task = await ana.send("2 nights")
        print(task.status.state.name, "-", task.status.message.text)
        return task.id


async def finish(task_id: str, url: str = "http://127.0.0.1:8000") -> None:
    async with client(url) as ana:
        task = await ana.send("yes", task_id=task_id)  # the handler runs again from its start
        print(task.status.state.name, "-", task.status.message.text)
        print("artifacts:", [a.parts[0].text for a in task.artifacts])
        progress = [m.text for m in task.history].count("checking availability")
        print("'checking availability' sent", progress, "times")
    with sqlite3.connect(LEDGER) as ledger:
        print("deposits charged:", ledger.execute("SELECT count(*) FROM charges").fetchone()[0])


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8000, store="sqlite:bookings.db", auth=AUTH)
    elif sys.argv[1:] == ["start"]:
        print(anyio.run(start))
    else:
        anyio.run(finish, sys.argv[2])
