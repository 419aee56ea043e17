"""The ``TaskStore`` extension points are checked: an incomplete store cannot be made, the app
takes only stores, and a subclass that wraps ``append`` sees every write of events."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from peerwire import Agent, TaskContext
from peerwire.protocol import Event, TaskRecord
from peerwire.server import create_app
from peerwire.server.stores import MemoryTaskStore, SQLiteTaskStore, TaskStore
from peerwire.testing import in_process

HEADERS = {"A2A-Version": "1.0"}


def test_a_store_missing_a_method_cannot_be_instantiated() -> None:
    class OnlyLoads(TaskStore):
        async def load(
            self, task_id: str, *, tenant: str, owner: str | None = None
        ) -> TaskRecord | None:
            return None

    with pytest.raises(TypeError, match="abstract") as caught:
        OnlyLoads()  # type: ignore[abstract]
    assert "append" in str(caught.value) and "claim_due" in str(caught.value)


def test_the_app_takes_only_task_stores() -> None:
    class LooksLikeAStore:
        async def load(self, task_id: str, *, tenant: str, owner: str | None = None) -> None:
            return None

    with pytest.raises(TypeError, match="TaskStore"):
        create_app(Agent("a"), store=LooksLikeAStore())  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_subclass_wrapping_append_sees_every_event_written(
    kind: str, tmp_path: Path
) -> None:
    """The runner's writes (with their commit hook) go through ``append`` like any other: a
    subclass that observes ``append`` misses none of a task's events."""
    seen: list[str] = []

    def observing(base: type[TaskStore]) -> type[TaskStore]:
        class Observing(base):  # type: ignore[valid-type, misc]
            async def append(
                self,
                task_id: str,
                events: Sequence[Event],
                *,
                expected_version: int | None = None,
                on_durable: Callable[[int], None] | None = None,
            ) -> int:
                seen.extend(type(event).__name__ for event in events)
                return await super().append(
                    task_id, events, expected_version=expected_version, on_durable=on_durable
                )

        return Observing

    store = (
        observing(MemoryTaskStore)()
        if kind == "memory"
        else observing(SQLiteTaskStore)(tmp_path / "tasks.db")
    )
    agent = Agent("observed")

    @agent.skill()
    async def work(ctx: TaskContext) -> str:
        await ctx.start_work("on it")
        await ctx.add_artifact("part", name="notes")
        return "done"

    async with in_process(agent, store=store) as http:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "go"}]}
            },
        }
        answer = (await http.post("/", json=body, headers=HEADERS)).json()
    task = answer["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    # WORKING (the runner's, then the skill's with its message), the artifact, the result's
    # artifact with COMPLETED: every one through append.
    assert seen == [
        "TaskStatusUpdateEvent",
        "TaskStatusUpdateEvent",
        "TaskArtifactUpdateEvent",
        "TaskArtifactUpdateEvent",
        "TaskStatusUpdateEvent",
    ]
