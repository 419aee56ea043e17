"""The ``TaskStore`` conformance suite: what every store must do, as pytest tests.

Subclass ``StoreSuite`` in a test module and give it a ``store`` fixture that yields an opened,
empty store (and closes it afterwards)::

    import pytest
    from peerwire.testing.store_suite import StoreSuite

    class TestMyStore(StoreSuite):
        @pytest.fixture
        async def store(self, tmp_path):
            store = MyStore(tmp_path / "tasks")
            await store.open()
            yield store
            await store.close()

The tests are async; they carry the ``asyncio`` mark, so they run with pytest-asyncio in its
strict mode too (there, declare the fixture with ``@pytest_asyncio.fixture``). A test here
fails with an ordinary assertion that says which rule of the interface was broken.

The rules covered: creating and loading (one task, or several: ``load_many``), appending (one
event or an all-or-nothing batch, validated by the task state machine, one version per event,
the ``on_durable`` hook), history
and chunked artifacts, compare-and-swap versions under concurrency (of answers to one question,
one is recorded), the events after a version (``events_after``), ListTasks
filters/ordering/paging, scoping by tenant and owner (loads and snapshots), restart recovery
(``unfinished``), retention, message-id claims (``create_once``: one task per repeated
message id, scoped, race-free, expiring, swept in bounded steps, removed with their task),
callers recorded per message (``save_caller``: replaced, refused for a missing task, removed
with their task), push-config storage and the push outbox (rows written with the events,
claimed in order one per config, leased, retried, failed, delivered, dropped with their
config).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest

from ..errors import IllegalTransitionError, TaskNotFoundError, VersionConflictError
from ..protocol import TERMINAL, Event, ListQuery, TaskRecord, fold_events, list_query, sort_key
from ..server.stores.base import EventsAfter, OutboxRow, TaskStore
from ..types import (
    Artifact,
    AuthenticationInfo,
    ListTasksRequest,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    decode,
)

__all__ = ["StoreSuite", "artifact_event", "message", "new_record", "status_event", "timestamp"]

S = TaskState
_ids = itertools.count(1)


# -- building blocks (public: handy for a store's own extra tests) ------------------------------


def timestamp(second: int, millisecond: int = 0) -> str:
    """A status timestamp ``second`` seconds into 2026: tests order tasks with these."""
    minutes, seconds = divmod(second, 60)
    hours, minutes = divmod(minutes, 60)
    return f"2026-01-01T{hours:02d}:{minutes:02d}:{seconds:02d}.{millisecond:03d}Z"


def message(
    text: str, *, task_id: str = "", context_id: str = "", role: Role = Role.USER
) -> Message:
    return Message(
        message_id=f"msg-{next(_ids)}",
        task_id=task_id,
        context_id=context_id,
        role=role,
        parts=[Part(text=text)],
    )


def new_record(
    *,
    task_id: str | None = None,
    context_id: str = "ctx-1",
    state: TaskState = S.SUBMITTED,
    at: int = 0,
    text: str = "hello",
    metadata: dict[str, Any] | None = None,
) -> TaskRecord:
    """A task as a dispatcher creates it: the first user message in history, version 1."""
    task_id = task_id or f"task-{next(_ids):06d}"
    return TaskRecord(
        task_id,
        context_id,
        TaskStatus(state=state, timestamp=timestamp(at)),
        history=[message(text, task_id=task_id, context_id=context_id)],
        metadata=metadata,
        version=1,
    )


def status_event(
    record: TaskRecord, state: TaskState, *, at: int = 0, text: str | None = None
) -> TaskStatusUpdateEvent:
    said = (
        None
        if text is None
        else message(text, task_id=record.id, context_id=record.context_id, role=Role.AGENT)
    )
    return TaskStatusUpdateEvent(
        task_id=record.id,
        context_id=record.context_id,
        status=TaskStatus(state=state, message=said, timestamp=timestamp(at)),
    )


def artifact_event(
    record: TaskRecord,
    artifact_id: str,
    *texts: str,
    append: bool = False,
    last_chunk: bool = False,
    name: str = "",
) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=record.id,
        context_id=record.context_id,
        artifact=Artifact(artifact_id=artifact_id, name=name, parts=[Part(text=t) for t in texts]),
        append=append,
        last_chunk=last_chunk,
    )


def _query(**fields: Any) -> ListQuery:
    return list_query(ListTasksRequest(**fields))


def _push(
    task_id: str, config_id: str, url: str = "https://example.com/hook"
) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(id=config_id, task_id=task_id, url=url, token="t")


def _check_events_after(
    found: EventsAfter | None, after: int, version: int, then: Task, now: Task
) -> None:
    """``found`` (``events_after(task, after)``) takes the task from ``then`` (at ``after``) to
    ``now`` (at ``version``)."""
    assert found is not None, "a stored task has events after any version"
    assert found.version == version, (after, found.version)
    if found.events is None:
        assert found.task == now, f"after {after}: without the events, the task as it is now"
        return
    versions = [v for v, _ in found.events]
    assert versions == list(range(after + 1, version + 1)), (after, versions)
    folded = fold_events(then, [event for _, event in found.events])
    assert folded == now, f"after {after}: the events fold into the task as it is now"


async def _stored(store: TaskStore, record: TaskRecord, tenant: str = "", owner: str = "") -> Task:
    """``record`` as the store now has it (a snapshot, so later appends do not change it)."""
    loaded = await store.load(record.id, tenant=tenant, owner=owner)
    assert loaded is not None, f"task {record.id} should be stored"
    return loaded.snapshot()


@pytest.mark.asyncio
class StoreSuite:
    """Conformance tests for a ``TaskStore``; see the module docstring for how to use it."""

    # -- create and load -------------------------------------------------------------------

    async def test_create_then_load(self, store: TaskStore) -> None:
        record = new_record(metadata={"origin": "suite"})
        expected = record.snapshot()
        await store.create(record, tenant="", owner="alice")
        loaded = await store.load(record.id, tenant="", owner="alice")
        assert loaded is not None
        assert loaded.version == 1
        assert loaded.snapshot() == expected

    async def test_load_of_a_missing_task_is_none(self, store: TaskStore) -> None:
        assert await store.load("no-such-task", tenant="") is None

    async def test_an_open_store_is_healthy_and_its_check_changes_nothing(
        self, store: TaskStore
    ) -> None:
        # ``check_health`` is what readiness (/readyz) calls: it returns on a working store.
        record = new_record()
        await store.create(record, tenant="", owner="alice")
        await store.check_health()
        await store.check_health()
        found = await store.load(record.id, tenant="")
        assert found is not None and found.version == record.version

    async def test_create_twice_is_a_conflict(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        with pytest.raises(VersionConflictError):
            await store.create(new_record(task_id=record.id), tenant="", owner="")
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 1

    async def test_a_task_may_be_created_terminal(self, store: TaskStore) -> None:
        record = new_record(state=S.REJECTED)
        await store.create(record, tenant="", owner="")
        assert (await _stored(store, record)).status.state is S.REJECTED

    # -- append ------------------------------------------------------------------------------

    async def test_each_event_raises_the_version_by_one(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        assert await store.append(record.id, [status_event(record, S.WORKING, at=1)]) == 2
        version = await store.append(
            record.id,
            [
                artifact_event(record, "a1", "x"),
                status_event(record, S.COMPLETED, at=2, text="done"),
            ],
        )
        assert version == 4
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 4
        task = loaded.snapshot()
        assert task.status.state is S.COMPLETED
        assert task.status.timestamp == timestamp(2)
        assert [a.artifact_id for a in task.artifacts] == ["a1"]

    async def test_appending_nothing_changes_nothing(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        assert await store.append(record.id, []) == 1

    async def test_status_messages_and_user_messages_join_history(self, store: TaskStore) -> None:
        record = new_record(text="start")
        await store.create(record, tenant="", owner="")
        reply = message("red", task_id=record.id, context_id=record.context_id)
        await store.append(
            record.id, [status_event(record, S.INPUT_REQUIRED, at=1, text="Colour?")]
        )
        await store.append(record.id, [reply, status_event(record, S.WORKING, at=2)])
        task = await _stored(store, record)
        assert [m.text for m in task.history] == ["start", "Colour?", "red"]
        assert [m.role for m in task.history] == [Role.USER, Role.AGENT, Role.USER]
        assert task.history[2] == reply

    async def test_chunked_artifacts_are_assembled(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, S.WORKING, at=1)])
        await store.append(record.id, [artifact_event(record, "doc", "one ", name="report")])
        await store.append(record.id, [artifact_event(record, "doc", "two ", append=True)])
        await store.append(record.id, [artifact_event(record, "other", "x")])
        await store.append(
            record.id, [artifact_event(record, "doc", "three", append=True, last_chunk=True)]
        )
        await store.append(record.id, [artifact_event(record, "other", "replaced")])
        await store.append(record.id, [status_event(record, S.COMPLETED, at=2)])
        task = await _stored(store, record)
        assert [a.artifact_id for a in task.artifacts] == ["doc", "other"]
        assert [p.text for p in task.artifacts[0].parts] == ["one ", "two ", "three"]
        assert task.artifacts[0].name == "report"
        assert [p.text for p in task.artifacts[1].parts] == ["replaced"]

    async def test_many_events_survive_intact(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, S.WORKING, at=1)])
        for i in range(150):
            await store.append(record.id, [artifact_event(record, "log", f"{i};", append=True)])
        await store.append(record.id, [status_event(record, S.COMPLETED, at=2)])
        task = await _stored(store, record)
        assert "".join(p.text or "" for p in task.artifacts[0].parts) == "".join(
            f"{i};" for i in range(150)
        )
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 153

    async def test_an_illegal_event_is_refused(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, S.WORKING, at=1)])
        with pytest.raises(IllegalTransitionError):
            await store.append(record.id, [status_event(record, S.SUBMITTED, at=2)])
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 2 and loaded.state is S.WORKING

    async def test_terminal_is_terminal(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, S.COMPLETED, at=1)])
        for event in (
            status_event(record, S.WORKING, at=2),
            artifact_event(record, "late", "x"),
            message("more", task_id=record.id, context_id=record.context_id),
        ):
            with pytest.raises(IllegalTransitionError):
                await store.append(record.id, [event])
        task = await _stored(store, record)
        assert task.status.state is S.COMPLETED and task.artifacts == []
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 2

    async def test_a_batch_is_all_or_nothing(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        before = await _stored(store, record)
        with pytest.raises(IllegalTransitionError):
            await store.append(
                record.id,
                [
                    artifact_event(record, "a", "kept?"),
                    status_event(record, S.COMPLETED, at=1),
                    status_event(record, S.WORKING, at=2),  # after terminal: refused
                ],
            )
        assert await _stored(store, record) == before
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 1
        # The task is still usable afterwards.
        assert await store.append(record.id, [status_event(record, S.WORKING, at=3)]) == 2

    async def test_an_event_for_another_task_is_refused(self, store: TaskStore) -> None:
        first, second = new_record(), new_record()
        await store.create(first, tenant="", owner="")
        await store.create(second, tenant="", owner="")
        with pytest.raises(IllegalTransitionError):
            await store.append(first.id, [status_event(second, S.WORKING, at=1)])

    async def test_append_to_a_missing_task(self, store: TaskStore) -> None:
        ghost = new_record()
        with pytest.raises(TaskNotFoundError):
            await store.append(ghost.id, [status_event(ghost, S.WORKING, at=1)])

    async def test_the_durable_hook_hears_each_committed_append(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        heard: list[int] = []
        working = [status_event(record, S.WORKING, at=1)]
        assert await store.append(record.id, working, on_durable=heard.append) == 2
        assert heard == [2], "on_durable runs with the new version before append returns"
        two: list[Event] = [
            artifact_event(record, "a", "x"),
            status_event(record, S.COMPLETED, at=2),
        ]
        assert await store.append(record.id, two, on_durable=heard.append) == 4
        assert await store.append(record.id, [], on_durable=heard.append) == 4
        with pytest.raises(IllegalTransitionError):
            await store.append(
                record.id, [status_event(record, S.WORKING, at=3)], on_durable=heard.append
            )
        assert heard == [2, 4], "nothing written (no events, or refused), nothing heard"

    # -- versions: compare-and-swap ------------------------------------------------------------

    async def test_expected_version_must_match(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        assert (
            await store.append(
                record.id, [status_event(record, S.WORKING, at=1)], expected_version=1
            )
            == 2
        )
        with pytest.raises(VersionConflictError) as caught:
            await store.append(record.id, [artifact_event(record, "a", "x")], expected_version=1)
        assert caught.value.expected == 1 and caught.value.actual == 2
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 2 and loaded.artifacts == []

    async def test_two_writers_one_wins(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        outcomes = await asyncio.gather(
            store.append(record.id, [status_event(record, S.WORKING, at=1)], expected_version=1),
            store.append(record.id, [status_event(record, S.REJECTED, at=1)], expected_version=1),
            return_exceptions=True,
        )
        wins = [o for o in outcomes if o == 2]
        conflicts = [o for o in outcomes if isinstance(o, VersionConflictError)]
        assert len(wins) == 1 and len(conflicts) == 1, outcomes
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 2
        winner = S.WORKING if outcomes[0] == 2 else S.REJECTED
        assert loaded.state is winner

    async def test_two_answers_to_one_question_one_is_recorded(self, store: TaskStore) -> None:
        """A follow-up answers an interrupted task by compare-and-swap on the version it found
        the task at: of answers sent at once, one is recorded, whole; the others conflict."""
        record = new_record()
        await store.create(record, tenant="", owner="")
        asked = [status_event(record, S.INPUT_REQUIRED, at=1, text="Colour?")]
        waiting = await store.append(record.id, asked)
        answers = [
            message(colour, task_id=record.id, context_id=record.context_id)
            for colour in ("red", "green", "blue", "mauve")
        ]
        outcomes = await asyncio.gather(
            *(
                store.append(
                    record.id,
                    [answer, status_event(record, S.WORKING, at=2)],
                    expected_version=waiting,
                )
                for answer in answers
            ),
            return_exceptions=True,
        )
        wins = [i for i, outcome in enumerate(outcomes) if outcome == waiting + 2]
        conflicts = [o for o in outcomes if isinstance(o, VersionConflictError)]
        assert len(wins) == 1 and len(conflicts) == 3, outcomes
        assert all(c.expected == waiting and c.actual == waiting + 2 for c in conflicts)
        task = await _stored(store, record)
        assert [m.text for m in task.history] == ["hello", "Colour?", answers[wins[0]].text]
        assert task.status.state is S.WORKING

    async def test_concurrent_appends_are_serialised(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, S.WORKING, at=1)])
        versions = await asyncio.gather(
            *(
                store.append(record.id, [artifact_event(record, f"a{i:02d}", str(i))])
                for i in range(20)
            )
        )
        assert sorted(versions) == list(range(3, 23))
        task = await _stored(store, record)
        assert sorted(a.artifact_id for a in task.artifacts) == [f"a{i:02d}" for i in range(20)]
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 22

    async def test_concurrent_tasks_do_not_interfere(self, store: TaskStore) -> None:
        records = [new_record() for _ in range(12)]
        await asyncio.gather(*(store.create(r, tenant="", owner="") for r in records))

        async def run(record: TaskRecord, n: int) -> int:
            await store.append(record.id, [status_event(record, S.WORKING, at=1)])
            for i in range(n):
                await store.append(record.id, [artifact_event(record, "out", str(i), append=True)])
            return await store.append(record.id, [status_event(record, S.COMPLETED, at=2)])

        versions = await asyncio.gather(*(run(r, i) for i, r in enumerate(records)))
        assert versions == [i + 3 for i in range(12)]
        for i, record in enumerate(records):
            task = await _stored(store, record)
            assert task.status.state is S.COMPLETED
            parts = [p.text for a in task.artifacts for p in a.parts]
            assert parts == [str(k) for k in range(i)]

    # -- the events after a version (a subscriber filling a gap) ------------------------------

    async def test_events_after_a_version_rebuild_the_task(self, store: TaskStore) -> None:
        """From every version on, what ``events_after`` gives brings the task as it was then
        to the task now: its events one by one, in order with their versions, or (folded
        into the snapshot) the task itself."""
        record = new_record()
        await store.create(record, tenant="", owner="")
        then = {1: await _stored(store, record)}
        steps: list[list[Event]] = [
            [status_event(record, S.WORKING, at=1)],
            [artifact_event(record, "log", "a", name="log")],
            [artifact_event(record, "log", "b", append=True)],
            [message("more", task_id=record.id, context_id=record.context_id)],
            [artifact_event(record, "log", "c", append=True), status_event(record, S.WORKING)],
        ]
        for step in steps:
            version = await store.append(record.id, step)
            then[version] = await _stored(store, record)
        now = await _stored(store, record)
        for after, task in then.items():
            found = await store.events_after(record.id, after)
            _check_events_after(found, after, 7, task, now)
        nothing = await store.events_after(record.id, 7)
        assert nothing == EventsAfter(7, []), "nothing newer: no events, no task"

    async def test_events_after_a_settled_task(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        before = await _stored(store, record)
        await store.append(record.id, [status_event(record, S.WORKING, at=1)])
        await store.append(
            record.id,
            [artifact_event(record, "out", "x"), status_event(record, S.COMPLETED, at=2)],
        )
        now = await _stored(store, record)
        _check_events_after(await store.events_after(record.id, 1), 1, 4, before, now)
        assert await store.events_after(record.id, 4) == EventsAfter(4, [])
        assert await store.events_after(record.id, 9) == EventsAfter(4, []), "ahead of the task"

    async def test_events_after_for_a_missing_task_is_none(self, store: TaskStore) -> None:
        assert await store.events_after("no-such-task", 0) is None

    # -- scoping -----------------------------------------------------------------------------

    async def test_another_tenant_or_owner_sees_nothing(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="acme", owner="alice")
        assert await store.load(record.id, tenant="acme", owner="alice") is not None
        assert await store.load(record.id, tenant="acme") is not None  # internal: any owner
        assert await store.load(record.id, tenant="acme", owner="bob") is None
        assert await store.load(record.id, tenant="other", owner="alice") is None
        assert await store.load(record.id, tenant="") is None
        for tenant, owner, expected in (
            ("acme", "alice", 1),
            ("acme", None, 1),
            ("acme", "bob", 0),
            ("other", None, 0),
        ):
            tasks, _, total = await store.list_tasks(_query(), tenant=tenant, owner=owner)
            assert (len(tasks), total) == (expected, expected), (tenant, owner)

    async def test_load_many_is_load_of_each_in_order(self, store: TaskStore) -> None:
        first, second, elsewhere = new_record(), new_record(), new_record()
        await store.create(first, tenant="acme", owner="alice")
        await store.create(second, tenant="acme", owner="bob")
        await store.create(elsewhere, tenant="other", owner="alice")
        await store.append(first.id, [status_event(first, S.WORKING, at=1)])
        asked = [
            (second.id, "acme"),
            ("no-such-task", "acme"),
            (first.id, "acme"),
            (elsewhere.id, "acme"),  # another tenant's: as missing
        ]
        found = await store.load_many(asked)
        assert len(found) == len(asked), "one answer per task asked for"
        expected = [await store.load(task_id, tenant=tenant) for task_id, tenant in asked]
        assert [None if r is None else (r.version, r.snapshot()) for r in found] == [
            None if r is None else (r.version, r.snapshot()) for r in expected
        ], "load_many answers as load does, in the order asked"
        assert [r is None for r in found] == [False, True, False, True]
        # Read again after a change: what the store has now, not what it had.
        await store.append(second.id, [status_event(second, S.WORKING, at=2)])
        again = await store.load_many([(first.id, "acme"), (second.id, "acme")])
        assert [r is not None and r.version for r in again] == [2, 2]

    async def test_snapshots_are_scoped_like_load(self, store: TaskStore) -> None:
        running, finished = new_record(), new_record()
        for record in (running, finished):
            await store.create(record, tenant="acme", owner="alice")
        await store.append(finished.id, [status_event(finished, S.COMPLETED, at=1)])
        for record in (running, finished):
            for tenant, owner, visible in (
                ("acme", "alice", True),
                ("acme", None, True),
                ("acme", "bob", False),
                ("other", "alice", False),
            ):
                whole = await store.load_encoded_snapshot(record.id, tenant=tenant, owner=owner)
                cut = await store.load_snapshot(
                    record.id, tenant=tenant, owner=owner, history_length=0
                )
                assert (whole is not None, cut is not None) == (visible, visible)
                if cut is not None:
                    assert cut.id == record.id and cut.history == []
        ghost = "00000000-0000-4000-8000-000000000000"
        assert await store.load_encoded_snapshot(ghost, tenant="acme", owner="alice") is None

    # -- ListTasks -----------------------------------------------------------------------------

    async def _five(self, store: TaskStore) -> list[TaskRecord]:
        """Five tasks with status timestamps 10..14, in two contexts, mixed states."""
        records = [
            new_record(context_id="ctx-a" if i % 2 == 0 else "ctx-b", at=10 + i) for i in range(5)
        ]
        for record in records:
            await store.create(record, tenant="t", owner="o")
        await store.append(records[1].id, [status_event(records[1], S.WORKING, at=11)])
        await store.append(records[3].id, [status_event(records[3], S.COMPLETED, at=13)])
        return records

    async def test_list_newest_first_with_total(self, store: TaskStore) -> None:
        records = await self._five(store)
        tasks, token, total = await store.list_tasks(_query(), tenant="t", owner="o")
        assert [t.id for t in tasks] == [r.id for r in reversed(records)]
        assert token == "" and total == 5

    async def test_list_orders_ties_by_id_descending(self, store: TaskStore) -> None:
        records = [new_record(task_id=f"tie-{c}", at=5) for c in "bca"]
        for record in records:
            await store.create(record, tenant="t", owner="")
        tasks, _, _ = await store.list_tasks(_query(), tenant="t", owner=None)
        assert [t.id for t in tasks] == ["tie-c", "tie-b", "tie-a"]

    async def test_list_follows_status_updates(self, store: TaskStore) -> None:
        records = await self._five(store)
        await store.append(records[0].id, [status_event(records[0], S.WORKING, at=99)])
        tasks, _, _ = await store.list_tasks(_query(page_size=1), tenant="t", owner="o")
        assert tasks[0].id == records[0].id and tasks[0].status.state is S.WORKING

    async def test_list_filters(self, store: TaskStore) -> None:
        records = await self._five(store)
        by_context, _, total = await store.list_tasks(
            _query(context_id="ctx-a"), tenant="t", owner="o"
        )
        assert [t.id for t in by_context] == [records[4].id, records[2].id, records[0].id]
        assert total == 3
        by_state, _, total = await store.list_tasks(
            _query(status=S.SUBMITTED), tenant="t", owner="o"
        )
        assert {t.id for t in by_state} == {records[0].id, records[2].id, records[4].id}
        assert total == 3
        recent, _, total = await store.list_tasks(
            _query(status_timestamp_after=timestamp(13)), tenant="t", owner="o"
        )
        assert [t.id for t in recent] == [records[4].id, records[3].id] and total == 2
        both, _, total = await store.list_tasks(
            _query(context_id="ctx-b", status=S.COMPLETED), tenant="t", owner="o"
        )
        assert [t.id for t in both] == [records[3].id] and total == 1

    async def test_list_pages(self, store: TaskStore) -> None:
        records = await self._five(store)
        seen: list[str] = []
        token = ""
        for _ in range(5):
            tasks, token, total = await store.list_tasks(
                _query(page_size=2, page_token=token), tenant="t", owner="o"
            )
            assert total == 5
            assert len(tasks) <= 2
            seen.extend(t.id for t in tasks)
            if not token:
                break
        assert seen == [r.id for r in reversed(records)]

    async def test_list_page_filter_and_token_combine(self, store: TaskStore) -> None:
        records = await self._five(store)
        first, token, total = await store.list_tasks(
            _query(page_size=2, context_id="ctx-a"), tenant="t", owner="o"
        )
        assert [t.id for t in first] == [records[4].id, records[2].id] and total == 3 and token
        rest, token, total = await store.list_tasks(
            _query(page_size=2, context_id="ctx-a", page_token=token), tenant="t", owner="o"
        )
        assert [t.id for t in rest] == [records[0].id] and token == "" and total == 3

    async def test_list_shapes_each_task(self, store: TaskStore) -> None:
        record = new_record(text="first", at=1)
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, S.WORKING, at=2, text="busy")])
        await store.append(record.id, [artifact_event(record, "a", "x")])
        bare, _, _ = await store.list_tasks(_query(), tenant="", owner=None)
        assert bare[0].artifacts == [] and [m.text for m in bare[0].history] == ["first", "busy"]
        full, _, _ = await store.list_tasks(
            _query(include_artifacts=True, history_length=1), tenant="", owner=None
        )
        assert [a.artifact_id for a in full[0].artifacts] == ["a"]
        assert [m.text for m in full[0].history] == ["busy"]
        assert full[0].status.state is S.WORKING

    async def test_list_of_nothing(self, store: TaskStore) -> None:
        assert await store.list_tasks(_query(), tenant="", owner=None) == ([], "", 0)

    # -- restart recovery ------------------------------------------------------------------------

    async def test_unfinished_lists_every_task_not_terminal(self, store: TaskStore) -> None:
        states = [state for state in TaskState if state is not S.UNSPECIFIED]
        records = {}
        for state in states:
            record = new_record(context_id=f"ctx-{state.name}")
            await store.create(record, tenant="acme", owner=f"owner-{state.name}")
            if state is not S.SUBMITTED:
                await store.append(record.id, [status_event(record, state, at=1)])
            records[record.id] = state
        infos = {info.task_id: info for info in await store.unfinished()}
        assert set(infos) == {i for i, s in records.items() if s not in TERMINAL}
        for task_id, info in infos.items():
            assert info.state is records[task_id]
            assert info.tenant == "acme"
            assert info.owner == f"owner-{info.state.name}"
            assert info.context_id == f"ctx-{info.state.name}"

    # -- retention ---------------------------------------------------------------------------------

    async def test_retention_removes_old_terminal_tasks_only(self, store: TaskStore) -> None:
        old_done, old_working, new_done, old_waiting = (new_record() for _ in range(4))
        for record in (old_done, old_working, new_done, old_waiting):
            await store.create(record, tenant="", owner="")
        await store.append(old_done.id, [status_event(old_done, S.COMPLETED, at=10)])
        await store.append(old_working.id, [status_event(old_working, S.WORKING, at=10)])
        await store.append(old_waiting.id, [status_event(old_waiting, S.INPUT_REQUIRED, at=10)])
        await store.append(new_done.id, [status_event(new_done, S.FAILED, at=30)])
        await store.save_push_config(_push(old_done.id, "hook"))
        assert await store.delete_terminal_before(sort_key(timestamp(20))) == 1
        assert await store.load(old_done.id, tenant="") is None
        assert await store.get_push_config(old_done.id, "hook") is None
        assert await store.list_push_configs(old_done.id) == []
        for kept in (old_working, new_done, old_waiting):
            assert await store.load(kept.id, tenant="") is not None
        _, _, total = await store.list_tasks(_query(), tenant="", owner=None)
        assert total == 3
        assert await store.delete_terminal_before(sort_key(timestamp(20))) == 0

    # -- recorded callers (save_caller, load_callers) ----------------------------------------------

    async def test_callers_are_recorded_per_message_and_replaced(self, store: TaskStore) -> None:
        record, other = new_record(), new_record()
        for created in (record, other):
            await store.create(created, tenant="t", owner="alice")
        assert await store.load_callers(record.id) == {}, "nothing recorded yet"
        await store.save_caller(record.id, "m-1", b'{"id":"alice"}')
        await store.save_caller(record.id, "m-2", b'{"id":"bob"}')
        await store.save_caller(record.id, "m-2", b'{"id":"carol"}')
        await store.save_caller(other.id, "m-1", b'{"id":"dave"}')
        assert await store.load_callers(record.id) == {
            "m-1": b'{"id":"alice"}',
            "m-2": b'{"id":"carol"}',
        }, "one record per message id, the latest kept; other tasks' records apart"
        assert await store.load_callers(other.id) == {"m-1": b'{"id":"dave"}'}
        assert await store.load_callers("no-such-task") == {}

    async def test_the_owner_of_a_task_is_known_within_its_tenant(self, store: TaskStore) -> None:
        record, done = new_record(), new_record()
        await store.create(record, tenant="t", owner="alice")
        await store.create(done, tenant="t", owner="bob")
        await store.append(done.id, [status_event(done, S.COMPLETED, at=10)])
        assert await store.owner_of(record.id, tenant="t") == "alice"
        assert await store.owner_of(record.id, tenant="u") is None, "another tenant's"
        assert await store.owner_of("no-such-task", tenant="t") is None
        finished = await store.owner_of(done.id, tenant="t")
        assert finished in ("bob", None), "a finished task's owner, where the store keeps it"

    async def test_callers_recorded_at_once_each_land_on_their_task(self, store: TaskStore) -> None:
        records = [new_record() for _ in range(5)]
        for record in records:
            await store.create(record, tenant="", owner="")
        saves = [
            store.save_caller(record.id, f"m-{i}", f'{{"id":"p{i}"}}'.encode())
            for i, record in enumerate(records)
        ]
        saves.append(store.save_caller(records[0].id, "m-0b", b'{"id":"again"}'))
        saves.append(store.save_caller(records[2].id, "m-2", b'{"id":"later"}'))
        missing = store.save_caller("no-such-task", "m-9", b"{}")
        outcomes = await asyncio.gather(*saves, missing, return_exceptions=True)
        assert outcomes[:-1] == [None] * 7, "each save of an existing task succeeds"
        assert isinstance(outcomes[-1], TaskNotFoundError), "the missing task's alone fails"
        assert await store.load_callers(records[2].id) == {"m-2": b'{"id":"later"}'}
        for i, record in enumerate(records[1:], start=1):
            if i != 2:
                expected = {f"m-{i}": f'{{"id":"p{i}"}}'.encode()}
                assert await store.load_callers(record.id) == expected
        assert await store.load_callers(records[0].id) == {
            "m-0": b'{"id":"p0"}',
            "m-0b": b'{"id":"again"}',
        }

    async def test_a_caller_of_a_missing_task_is_refused(self, store: TaskStore) -> None:
        with pytest.raises(TaskNotFoundError):
            await store.save_caller("no-such-task", "m-1", b"{}")
        assert await store.load_callers("no-such-task") == {}

    async def test_retention_removes_the_callers_of_the_tasks_it_removes(
        self, store: TaskStore
    ) -> None:
        done, kept = new_record(), new_record()
        for record in (done, kept):
            await store.create(record, tenant="", owner="")
            await store.save_caller(record.id, "m-1", b'{"id":"alice"}')
        await store.append(done.id, [status_event(done, S.COMPLETED, at=10)])
        assert await store.delete_terminal_before(sort_key(timestamp(20))) == 1
        assert await store.load_callers(done.id) == {}
        assert await store.load_callers(kept.id) == {"m-1": b'{"id":"alice"}'}

    # -- message ids (create_once) -----------------------------------------------------------------

    async def test_the_first_message_creates_the_task_a_repeat_gets_its_id(
        self, store: TaskStore
    ) -> None:
        now = time.time()
        first, again = new_record(), new_record()
        held = await store.create_once(
            first, tenant="t", owner="alice", message_id="m-1", now=now, expires_at=now + 60
        )
        assert held == first.id, "the first message creates its task"
        held = await store.create_once(
            again, tenant="t", owner="alice", message_id="m-1", now=now + 1, expires_at=now + 61
        )
        assert held == first.id, "a repeated message id answers with the first task's id"
        assert await store.load(again.id, tenant="t") is None, "and creates no second task"
        loaded = await store.load(first.id, tenant="t", owner="alice")
        assert loaded is not None and loaded.version == 1

    async def test_message_ids_are_scoped_by_tenant_and_owner(self, store: TaskStore) -> None:
        now = time.time()
        scopes = [("t", "alice"), ("t", "bob"), ("u", "alice"), ("t", "")]
        records = [new_record() for _ in scopes]
        for (tenant, owner), record in zip(scopes, records, strict=True):
            held = await store.create_once(
                record, tenant=tenant, owner=owner, message_id="m", now=now, expires_at=now + 60
            )
            assert held == record.id, f"{tenant}/{owner} has a message-id space of its own"

    async def test_concurrent_duplicates_make_one_task(self, store: TaskStore) -> None:
        now = time.time()
        records = [new_record() for _ in range(20)]
        held = await asyncio.gather(
            *(
                store.create_once(
                    record, tenant="", owner="", message_id="dup", now=now, expires_at=now + 60
                )
                for record in records
            )
        )
        assert len(set(held)) == 1, f"duplicates sent at once agree on one task, got {held}"
        created = [r for r in records if await store.load(r.id, tenant="") is not None]
        assert [r.id for r in created] == [held[0]], "exactly one task was created"

    async def test_an_expired_message_id_makes_a_new_task(self, store: TaskStore) -> None:
        now = time.time()
        first, later = new_record(), new_record()
        await store.create_once(
            first, tenant="", owner="", message_id="m", now=now, expires_at=now + 10
        )
        held = await store.create_once(
            later, tenant="", owner="", message_id="m", now=now + 10, expires_at=now + 20
        )
        assert held == later.id, "past its expiry a message id no longer names the old task"
        assert await store.load(first.id, tenant="") is not None, "the old task stays"
        again = await store.create_once(
            new_record(), tenant="", owner="", message_id="m", now=now + 11, expires_at=now + 21
        )
        assert again == later.id, "the new claim holds in its turn"

    async def test_a_message_id_whose_task_is_gone_makes_a_new_task(self, store: TaskStore) -> None:
        now = time.time()
        first, later = new_record(), new_record()
        await store.create_once(
            first, tenant="", owner="", message_id="m", now=now, expires_at=now + 600
        )
        await store.append(first.id, [status_event(first, S.COMPLETED, at=10)])
        assert await store.delete_terminal_before(sort_key(timestamp(20))) == 1
        held = await store.create_once(
            later, tenant="", owner="", message_id="m", now=now + 1, expires_at=now + 601
        )
        assert held == later.id, "a claim whose task retention removed is not an answer"

    async def test_forgetting_expired_message_ids_is_bounded(self, store: TaskStore) -> None:
        now = time.time()
        for n in range(5):
            await store.create_once(
                new_record(), tenant="", owner="", message_id=f"m{n}", now=now, expires_at=now + n
            )
        assert await store.forget_message_ids(now + 3, limit=2) == 2, "at most the limit"
        assert await store.forget_message_ids(now + 3, limit=10) == 2, "then the rest expired"
        assert await store.forget_message_ids(now + 3, limit=10) == 0
        # m4 is still live: a repeat of it names its task; m0 was forgotten: a new task.
        live = new_record()
        held = await store.create_once(
            live, tenant="", owner="", message_id="m4", now=now + 3, expires_at=now + 9
        )
        assert held != live.id
        fresh = new_record()
        held = await store.create_once(
            fresh, tenant="", owner="", message_id="m0", now=now + 3, expires_at=now + 9
        )
        assert held == fresh.id

    async def test_retention_removes_the_message_ids_of_the_tasks_it_removes(
        self, store: TaskStore
    ) -> None:
        now = time.time()
        done, kept = new_record(), new_record()
        for record, message_id in ((done, "m-done"), (kept, "m-kept")):
            await store.create_once(
                record, tenant="", owner="", message_id=message_id, now=now, expires_at=now + 600
            )
        await store.append(done.id, [status_event(done, S.COMPLETED, at=10)])
        assert await store.delete_terminal_before(sort_key(timestamp(20))) == 1
        # Every claim left is past due an hour on: the removed task's claim went with it.
        assert await store.forget_message_ids(now + 3600, limit=10) == 1, (
            "delete_terminal_before removes the message-id claims of the tasks it removes"
        )
        again = new_record()
        held = await store.create_once(
            again, tenant="", owner="", message_id="m-kept", now=now + 1, expires_at=now + 601
        )
        assert held == again.id, "the kept task's claim was the one forgotten above"

    # -- push configs ------------------------------------------------------------------------------

    async def test_push_configs_are_stored_per_task(self, store: TaskStore) -> None:
        record, other = new_record(), new_record()
        await store.create(record, tenant="", owner="")
        await store.create(other, tenant="", owner="")
        first = _push(record.id, "c1")
        second = TaskPushNotificationConfig(
            id="c2",
            task_id=record.id,
            url="https://example.com/other",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="secret"),
        )
        await store.save_push_config(first)
        await store.save_push_config(second)
        await store.save_push_config(_push(other.id, "c1", "https://example.com/elsewhere"))
        assert await store.get_push_config(record.id, "c1") == first
        assert await store.get_push_config(record.id, "c2") == second
        assert await store.get_push_config(record.id, "c3") is None
        assert await store.list_push_configs(record.id) == [first, second]
        assert [c.url for c in await store.list_push_configs(other.id)] == [
            "https://example.com/elsewhere"
        ]

    async def test_saving_a_push_config_again_replaces_it_in_place(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.save_push_config(_push(record.id, "c1"))
        await store.save_push_config(_push(record.id, "c2"))
        replaced = _push(record.id, "c1", "https://example.com/new")
        await store.save_push_config(replaced)
        assert [c.id for c in await store.list_push_configs(record.id)] == ["c1", "c2"]
        assert await store.get_push_config(record.id, "c1") == replaced

    async def test_a_push_target_carries_its_version_and_tenant(self, store: TaskStore) -> None:
        """What the deliverer reads: the config, the A2A version it was registered over (1.0
        unless said; saving it again says it again) and its task's tenant."""
        record = new_record()
        await store.create(record, tenant="acme", owner="ann")
        config = _push(record.id, "c1")
        await store.save_push_config(config)
        target = await store.get_push_target(record.id, "c1")
        assert target is not None
        assert (target.config, target.protocol_version, target.tenant) == (config, "1.0", "acme")
        await store.save_push_config(config, protocol_version="0.3")
        target = await store.get_push_target(record.id, "c1")
        assert target is not None and target.protocol_version == "0.3"
        await store.append(record.id, [status_event(record, S.COMPLETED, at=1)])
        target = await store.get_push_target(record.id, "c1")  # a finished task's too
        assert target is not None and (target.protocol_version, target.tenant) == ("0.3", "acme")
        await store.save_push_config(config)
        target = await store.get_push_target(record.id, "c1")
        assert target is not None and target.protocol_version == "1.0"
        await store.delete_push_config(record.id, "c1")
        assert await store.get_push_target(record.id, "c1") is None
        assert await store.get_push_target("no-such-task", "c1") is None

    async def test_deleting_push_configs_is_idempotent(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.save_push_config(_push(record.id, "c1"))
        await store.delete_push_config(record.id, "c1")
        await store.delete_push_config(record.id, "c1")
        await store.delete_push_config("no-such-task", "c1")
        assert await store.get_push_config(record.id, "c1") is None
        assert await store.list_push_configs(record.id) == []

    async def test_push_config_for_a_missing_task(self, store: TaskStore) -> None:
        with pytest.raises(TaskNotFoundError):
            await store.save_push_config(_push("no-such-task", "c1"))

    async def test_push_configs_outlive_the_task_finishing(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.save_push_config(_push(record.id, "c1"))
        await store.append(record.id, [status_event(record, S.COMPLETED, at=1)])
        assert await store.get_push_config(record.id, "c1") is not None
        # A config may be added to a finished task too (A2A spec §3.1.7).
        await store.save_push_config(_push(record.id, "c2"))
        assert len(await store.list_push_configs(record.id)) == 2

    # -- the push outbox ---------------------------------------------------------------------------

    async def _pushed_task(self, store: TaskStore, *config_ids: str) -> TaskRecord:
        """A working task (version 2) with ``config_ids`` registered: no rows yet."""
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, S.WORKING, at=1)])
        for config_id in config_ids:
            await store.save_push_config(_push(record.id, config_id))
        return record

    async def test_no_outbox_rows_without_push_configs(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, S.WORKING, at=1)])
        await store.append(record.id, [status_event(record, S.COMPLETED, at=2)])
        assert await store.outbox(record.id) == []
        assert await store.claim_due(_later(), limit=10, lease=30) == []

    async def test_each_pushed_event_is_a_row_per_config(self, store: TaskStore) -> None:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.save_push_config(_push(record.id, "c1"))
        await store.save_push_config(_push(record.id, "c2"))
        started = status_event(record, S.WORKING, at=1)
        chunk = artifact_event(record, "a", "x")
        question = status_event(record, S.INPUT_REQUIRED, at=2, text="Which?")
        answer = message("this", task_id=record.id, context_id=record.context_id)
        resumed = status_event(record, S.WORKING, at=3)
        batches: list[list[Event]] = [[started], [chunk], [question], [answer, resumed]]
        for batch in batches:
            await store.append(record.id, batch)  # the caller's own message is not pushed
        rows = await store.outbox(record.id)
        assert [(r.seq, r.config_id) for r in rows] == [
            (seq, config) for seq in (2, 3, 4, 6) for config in ("c1", "c2")
        ]
        assert len({r.id for r in rows}) == 8, "every row has an id of its own"
        assert all(r.state == "pending" and r.attempts == 0 and r.last_error == "" for r in rows)
        assert all(r.task_id == record.id for r in rows)
        bodies = [decode(r.body, StreamResponse) for r in rows[::2]]
        assert bodies == [
            StreamResponse(status_update=started),
            StreamResponse(artifact_update=chunk),
            StreamResponse(status_update=question),
            StreamResponse(status_update=resumed),
        ]
        assert rows[0].body == rows[1].body

    async def test_rows_are_written_with_a_settling_event(self, store: TaskStore) -> None:
        record = await self._pushed_task(store)  # no config yet: nothing queued
        await store.save_push_config(_push(record.id, "late"))
        done = status_event(record, S.COMPLETED, at=3, text="done")
        await store.append(record.id, [artifact_event(record, "a", "x"), done])
        rows = await store.outbox(record.id)
        assert [(r.seq, r.config_id) for r in rows] == [(3, "late"), (4, "late")]
        assert decode(rows[1].body, StreamResponse) == StreamResponse(status_update=done)

    async def test_claims_take_each_configs_earliest_row_only(self, store: TaskStore) -> None:
        record = await self._pushed_task(store, "c1", "c2")
        for i in range(3):
            await store.append(record.id, [artifact_event(record, f"a{i}", str(i))])
        now = _later()
        first = await store.claim_due(now, limit=10, lease=30)
        assert sorted((r.config_id, r.seq) for r in first) == [("c1", 3), ("c2", 3)]
        assert all(r.attempts == 1 for r in first)
        # Claimed rows are leased: nothing of those configs is due while they are in flight.
        assert await store.claim_due(now, limit=10, lease=30) == []
        by_config = {r.config_id: r for r in first}
        await store.mark_delivered(by_config["c1"].id)
        again = await store.claim_due(now, limit=10, lease=30)
        assert [(r.config_id, r.seq) for r in again] == [("c1", 4)]

    async def test_claims_respect_the_limit_oldest_first(self, store: TaskStore) -> None:
        older = await self._pushed_task(store, "c")
        newer = await self._pushed_task(store, "c")
        await store.append(older.id, [artifact_event(older, "a", "x")])
        await store.append(newer.id, [artifact_event(newer, "a", "x")])
        [claimed] = await store.claim_due(_later(), limit=1, lease=30)
        assert claimed.task_id == older.id
        [claimed] = await store.claim_due(_later(), limit=1, lease=30)
        assert claimed.task_id == newer.id

    async def test_a_lapsed_lease_makes_the_row_due_again(self, store: TaskStore) -> None:
        record = await self._pushed_task(store, "c")
        await store.append(record.id, [artifact_event(record, "a", "x")])
        now = _later()
        [claimed] = await store.claim_due(now, limit=5, lease=10)
        assert await store.claim_due(now + 9, limit=5, lease=10) == []
        [again] = await store.claim_due(now + 11, limit=5, lease=10)
        assert (again.id, again.attempts) == (claimed.id, 2)

    async def test_a_retry_waits_and_keeps_later_rows_waiting(self, store: TaskStore) -> None:
        record = await self._pushed_task(store, "c")
        await store.append(record.id, [artifact_event(record, "a", "x")])
        await store.append(record.id, [artifact_event(record, "b", "y")])
        now = _later()
        [claimed] = await store.claim_due(now, limit=5, lease=1)
        await store.mark_retry(claimed.id, now + 60, "HTTP 503")
        assert await store.claim_due(now + 30, limit=5, lease=1) == []
        [again] = await store.claim_due(now + 61, limit=5, lease=1)
        assert (again.id, again.attempts, again.last_error) == (claimed.id, 2, "HTTP 503")

    async def test_a_claim_given_back_is_not_counted_and_waits(self, store: TaskStore) -> None:
        """``release_claim``: the row is due again at the given time, with the attempts it
        had before the claim and its last error; the config's later rows keep waiting."""
        record = await self._pushed_task(store, "c")
        await store.append(record.id, [artifact_event(record, "a", "x")])
        await store.append(record.id, [artifact_event(record, "b", "y")])
        now = _later()
        [claimed] = await store.claim_due(now, limit=5, lease=1)
        await store.mark_retry(claimed.id, now, "HTTP 503")
        [again] = await store.claim_due(now, limit=5, lease=30)
        assert again.attempts == 2
        await store.release_claim(again.id, now + 60)
        assert await store.claim_due(now + 59, limit=5, lease=30) == []
        [back] = await store.claim_due(now + 61, limit=5, lease=30)
        assert (back.id, back.attempts, back.last_error) == (claimed.id, 2, "HTTP 503")
        await store.mark_delivered(back.id)
        await store.release_claim(back.id, now)  # late: a delivered row stays delivered
        delivered = _row(await store.outbox(record.id), back.id)
        assert (delivered.state, delivered.attempts) == ("delivered", 2)
        await store.release_claim("no-such-row", now)

    async def test_a_failed_row_keeps_its_reason_and_lets_the_next_go(
        self, store: TaskStore
    ) -> None:
        record = await self._pushed_task(store, "c")
        await store.append(record.id, [artifact_event(record, "a", "x")])
        await store.append(record.id, [artifact_event(record, "b", "y")])
        now = _later()
        [claimed] = await store.claim_due(now, limit=5, lease=30)
        await store.mark_failed(claimed.id, "gave up after 1 attempt: HTTP 500")
        [following] = await store.claim_due(now, limit=5, lease=30)
        assert following.seq == claimed.seq + 1
        failed = _row(await store.outbox(record.id), claimed.id)
        assert (failed.state, failed.last_error) == ("failed", "gave up after 1 attempt: HTTP 500")
        assert failed.body == claimed.body, "a failed row keeps what it would have sent"

    async def test_a_delivered_row_is_never_claimed_again(self, store: TaskStore) -> None:
        record = await self._pushed_task(store, "c")
        await store.append(record.id, [artifact_event(record, "a", "x")])
        now = _later()
        [claimed] = await store.claim_due(now, limit=5, lease=1)
        await store.mark_delivered(claimed.id)
        # Outcomes arriving late (a lapsed lease, a second worker) change nothing now.
        await store.mark_retry(claimed.id, now, "late")
        await store.mark_failed(claimed.id, "late")
        assert await store.claim_due(now + 3600, limit=5, lease=1) == []
        delivered = _row(await store.outbox(record.id), claimed.id)
        assert (delivered.state, delivered.attempts, delivered.last_error) == ("delivered", 1, "")
        assert delivered.body == b""

    async def test_outcomes_of_unknown_rows_are_ignored(self, store: TaskStore) -> None:
        await store.mark_delivered("no-such-row")
        await store.mark_retry("no-such-row", _later(), "x")
        await store.mark_failed("no-such-row", "x")

    async def test_deleting_a_config_drops_its_pending_rows(self, store: TaskStore) -> None:
        record = await self._pushed_task(store, "gone", "kept")
        await store.append(record.id, [artifact_event(record, "a", "x")])
        now = _later()
        claimed = await store.claim_due(now, limit=5, lease=30)
        delivered = next(r for r in claimed if r.config_id == "gone")
        await store.mark_delivered(delivered.id)
        await store.append(record.id, [artifact_event(record, "b", "y")])
        await store.delete_push_config(record.id, "gone")
        await store.append(record.id, [artifact_event(record, "c", "z")])
        rows = await store.outbox(record.id)
        assert [(r.config_id, r.seq, r.state) for r in rows if r.config_id == "gone"] == [
            ("gone", 3, "delivered")
        ]
        assert [r.seq for r in rows if r.config_id == "kept"] == [3, 4, 5]
        due = await store.claim_due(now + 60, limit=5, lease=30)
        assert [(r.config_id, r.seq) for r in due] == [("kept", 3)]

    async def test_the_listener_hears_of_new_rows(self, store: TaskStore) -> None:
        calls: list[int] = []
        store.on_outbox(lambda: calls.append(1))
        try:
            quiet = new_record()
            await store.create(quiet, tenant="", owner="")
            await store.append(quiet.id, [status_event(quiet, S.WORKING, at=1)])
            assert calls == [], "a task without push configs queues nothing"
            record = await self._pushed_task(store, "c")
            await store.append(record.id, [artifact_event(record, "a", "x")])
            assert calls, "an append that queued rows tells the listener"
            calls.clear()
            await store.append(
                record.id, [message("hi", task_id=record.id, context_id=record.context_id)]
            )
            assert calls == [], "an append of nothing pushed queues nothing"
        finally:
            store.on_outbox(None)
        await store.append(record.id, [artifact_event(record, "b", "y")])
        assert calls == []

    async def test_retention_removes_outbox_rows(self, store: TaskStore) -> None:
        record = await self._pushed_task(store, "c")
        await store.append(record.id, [status_event(record, S.COMPLETED, at=10)])
        assert len(await store.outbox(record.id)) == 1
        assert await store.delete_terminal_before(sort_key(timestamp(20))) == 1
        assert await store.outbox(record.id) == []
        assert await store.claim_due(_later(), limit=5, lease=30) == []


def _later() -> float:
    """A claim time after every row a test has written so far."""
    return time.time() + 1.0


def _row(rows: list[OutboxRow], row_id: str) -> OutboxRow:
    found = [row for row in rows if row.id == row_id]
    assert len(found) == 1, f"outbox row {row_id} should be listed once"
    return found[0]
