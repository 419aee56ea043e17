"""The in-memory ``TaskStore``: for tests, benchmarks and agents whose tasks may die with them."""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import ClassVar

import msgspec

from ...errors import TaskNotFoundError, VersionConflictError
from ...protocol import (
    PROTOCOL_VERSION,
    TERMINAL,
    Event,
    ListQuery,
    TaskRecord,
    is_interrupted,
    select_page,
    sort_key,
    trim_history,
)
from ...types import (
    Encoded,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    decode_canonical,
    encode,
    now_timestamp,
)
from ._rows import event_body, outbox_row_id, push_body
from .base import EventsAfter, OutboxRow, PushTarget, StoredTaskInfo, TaskStore

__all__ = ["MemoryTaskStore"]


class _Entry:
    """A task that can still change (or finished a moment ago): its mutable record, and once
    it has finished, its snapshot encoded for the readers (``GetTask``) and the compaction."""

    __slots__ = ("_encoded", "owner", "record", "tenant")

    def __init__(self, record: TaskRecord, tenant: str, owner: str) -> None:
        self.record = record
        self.tenant = tenant
        self.owner = owner
        self._encoded: bytes | None = None

    def visible(self, tenant: str, owner: str | None) -> bool:
        # Both comparisons always run (``&``, not ``and``): how long a check of a task the
        # caller may not see takes must not depend on which of the two failed.
        return (self.tenant == tenant) & (owner is None or self.owner == owner)

    def finished_snapshot(self) -> bytes:
        """The finished task's whole snapshot as ProtoJSON, encoded once: it never changes."""
        assert self.record.terminal
        if self._encoded is None:
            self._encoded = encode(self.record.snapshot())
        return self._encoded


class _Header(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """What listing and access checks read of a compacted task, without its snapshot."""

    status_key: str
    state: int  # TaskState.number: one byte packed, where the name takes twenty
    version: int
    context_id: str
    tenant: str
    owner: str

    def visible(self, tenant: str, owner: str | None) -> bool:
        return (self.tenant == tenant) & (owner is None or self.owner == owner)  # as _Entry's


class _Compacted(_Header, array_like=True, frozen=True, gc=False):
    """A finished task as one MessagePack ``bytes``: its header, then its snapshot's ProtoJSON.

    A finished task never changes again, so it needs no record, lists and dicts: one object per
    task, which the garbage collector does not track (its work over many stored tasks once
    dominated a busy server's profile), in about 600 bytes for a small task.
    """

    snapshot: bytes

    @classmethod
    def of(cls, entry: _Entry) -> bytes:
        record = entry.record
        return _pack(
            cls(
                status_key=sort_key(record.status.timestamp),
                state=record.state.number,
                version=record.version,
                context_id=record.context_id,
                tenant=entry.tenant,
                owner=entry.owner,
                snapshot=entry.finished_snapshot(),
            )
        )

    def record(self) -> TaskRecord:
        return TaskRecord.from_task(decode_canonical(self.snapshot, Task), version=self.version)

    def task(self, history_length: int | None, include_artifacts: bool = True) -> Task:
        # The snapshot decodes straight into the Task the API hands out: no record is built.
        task = decode_canonical(self.snapshot, Task)
        if history_length is None and include_artifacts:
            return task
        return msgspec.structs.replace(
            task,
            history=trim_history(task.history, history_length),
            artifacts=task.artifacts if include_artifacts else [],
        )


_encoder = msgspec.msgpack.Encoder()


def _pack(compacted: _Compacted) -> bytes:
    # msgspec returns its output in the buffer it grew, half as large again as the output: the
    # stored copy is exact (about 280 bytes less per task).
    return bytes(memoryview(_encoder.encode(compacted)))


_unpack = msgspec.msgpack.Decoder(_Compacted).decode
_unpack_header = msgspec.msgpack.Decoder(_Header).decode  # skips the snapshot

# Stand-ins for the checks a lookup that finds nothing visible does not need for its answer
# (``MemoryTaskStore._visible``): an expanded task and a compacted one's header, with fields
# of the usual sizes. Neither is ever taken for a match.
_NOBODY = _pack(
    _Compacted(
        status_key=sort_key(now_timestamp()),
        state=TaskState.UNSPECIFIED.number,
        version=0,
        context_id="00000000-0000-4000-8000-000000000000",
        tenant="-",
        owner="00000000-0000-4000-8000-000000000000",
        snapshot=b"{}",
    )
)
_ABSENT = _Entry(
    TaskRecord(
        "00000000-0000-4000-8000-000000000000",
        "00000000-0000-4000-8000-000000000000",
        TaskStatus(state=TaskState.SUBMITTED, timestamp=now_timestamp()),
    ),
    tenant="-",
    owner="00000000-0000-4000-8000-000000000000",
)


def _compacted_if_visible(stored: _Entry | bytes, tenant: str, owner: str | None) -> bytes | None:
    """The rest of ``MemoryTaskStore._visible``, once ``stored`` was found not to be a visible
    expanded task: a compacted task if its header says it is visible. The checks a path does
    not need for its answer run on stand-ins that never match (``_NOBODY``, ``_ABSENT``), so
    every path that finds nothing costs the same."""
    if isinstance(stored, _Entry):  # another caller's, or ``_ABSENT``: none at all
        _unpack_header(_NOBODY).visible(tenant, owner)
        return None
    if _unpack_header(stored).visible(tenant, owner):
        return stored
    _ABSENT.visible(tenant, owner)
    return None


class MemoryTaskStore(TaskStore):
    """Tasks in a dict. Appends fold in place; nothing is copied per event.

    A finished task is compacted once ``expanded_finished`` more tasks have finished after it:
    whoever waited for a task (a blocking send, a stream) reads it as soon as it finishes, and
    compacting it at once would mean decoding it again right away.
    """

    # ``append`` never awaits anything that suspends: a cancel cannot land between storing an
    # event and its publication (the runner skips shielding that pair for such stores).
    appends_never_suspend: ClassVar[bool] = True

    def __init__(self, *, expanded_finished: int = 256) -> None:
        # A task is an ``_Entry`` until it has finished and is compacted into ``bytes``.
        self._tasks: dict[str, _Entry | bytes] = {}
        # The recently finished, oldest first: at most ``expanded_finished`` of them.
        self._expanded_finished: deque[_Entry] = deque()
        self._expanded_limit = expanded_finished
        self._push: dict[str, dict[str, TaskPushNotificationConfig]] = {}
        # The A2A version each config was registered over, where it is not 1.0.
        self._push_versions: dict[tuple[str, str], str] = {}
        self._outbox: dict[str, OutboxRow] = {}
        # The ids of pending rows in the order they were written, "oldest first" (a dict as an
        # ordered set, each with when it was written): claiming never walks the delivered rows
        # that pile up, and the first is the oldest (``outbox_backlog``).
        self._pending: dict[str, float] = {}
        self._outbox_listener: Callable[[], None] | None = None
        # Message-id claims (``create_once``): claim key -> task id, in the order they were
        # made. Nothing is allocated per claim beyond the dict's slot: the key is the
        # message's own id string (for the anonymous caller of the default tenant), the value
        # the task's id. A claim per request that left tuples and floats behind cost ~10% of
        # a SendMessage (memory traffic, not instructions). Expiries are kept per batch,
        # [expires_at, count], for runs of claims made within _CLAIM_BATCH_S of each other
        # (one retention for all, so in order): a claim expires with the first of its batch,
        # at most that much early.
        self._message_ids: dict[str, str] = {}
        self._claim_batches: deque[list[float]] = deque()
        # The callers recorded per task (``save_caller``): task id -> message id -> body.
        self._callers: dict[str, dict[str, bytes]] = {}

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def create(self, record: TaskRecord, *, tenant: str, owner: str) -> None:
        self._create(record, tenant, owner)

    def _create(self, record: TaskRecord, tenant: str, owner: str) -> None:
        stored = self._tasks.get(record.id)
        if stored is not None:
            actual = (
                stored.record.version
                if isinstance(stored, _Entry)
                else _unpack_header(stored).version
            )
            raise VersionConflictError(record.id, expected=0, actual=actual)
        entry = self._tasks[record.id] = _Entry(record, tenant, owner)
        if record.terminal:
            self._finished(entry)

    async def create_once(
        self,
        record: TaskRecord,
        *,
        tenant: str,
        owner: str,
        message_id: str,
        now: float,
        expires_at: float,
    ) -> str:
        # The check, the task and the claim are one step on the event loop, with no await
        # between them, so no duplicate can come between them.
        key = _claim_key(tenant, owner, message_id)
        claims = self._message_ids
        held = claims.get(key)
        if held is not None and self._claim_batches[0][0] <= now:
            # A repeat, and some claims have expired: is this one of them? Those go first
            # (each claim is forgotten once: amortised, nothing per ordinary send).
            self._forget_message_ids(now, len(claims))
            held = claims.get(key)
        if held is not None and held in self._tasks:
            return held
        self._create(record, tenant, owner)  # no await: nothing can come between
        if held is not None:
            # Its task is gone (retention): the claim names the new one, keeping its place
            # (and so its batch's expiry, the earlier one).
            claims[key] = record.id
            return record.id
        claims[key] = record.id
        batches = self._claim_batches
        if batches and expires_at - batches[-1][0] < _CLAIM_BATCH_S:
            batches[-1][1] += 1
        else:
            batches.append([expires_at, 1])
        return record.id

    async def forget_message_ids(self, before: float, *, limit: int) -> int:
        return self._forget_message_ids(before, limit)

    def _forget_message_ids(self, before: float, limit: int) -> int:
        """Drop up to ``limit`` of the oldest claims whose batch expires at ``before`` or
        earlier; how many went."""
        batches, claims = self._claim_batches, self._message_ids
        forgotten = 0
        while batches and batches[0][0] <= before and forgotten < limit:
            batch = batches[0]
            take = min(int(batch[1]), limit - forgotten)
            for key in list(itertools.islice(claims, take)):
                del claims[key]
            forgotten += take
            batch[1] -= take
            if not batch[1]:
                batches.popleft()
        return forgotten

    async def load(
        self, task_id: str, *, tenant: str, owner: str | None = None
    ) -> TaskRecord | None:
        stored = self._tasks.get(task_id, _ABSENT)
        if isinstance(stored, _Entry) and stored.visible(tenant, owner) and stored is not _ABSENT:
            return stored.record  # the common case first, without a call (``_visible``)
        found = _compacted_if_visible(stored, tenant, owner)
        return None if found is None else _unpack(found).record()

    async def owner_of(self, task_id: str, *, tenant: str) -> str | None:
        stored = self._tasks.get(task_id)
        if stored is None:
            return None
        header = stored if isinstance(stored, _Entry) else _unpack_header(stored)
        return header.owner if header.tenant == tenant else None

    async def load_snapshot(
        self, task_id: str, *, tenant: str, owner: str | None, history_length: int | None
    ) -> Task | None:
        found = self._visible(task_id, tenant, owner)
        if found is None:
            return None
        if isinstance(found, _Entry):
            return found.record.snapshot(history_length=history_length)
        return _unpack(found).task(history_length)

    async def load_encoded_snapshot(
        self, task_id: str, *, tenant: str, owner: str | None
    ) -> Task | Encoded[Task] | None:
        stored = self._tasks.get(task_id, _ABSENT)
        if isinstance(stored, _Entry) and stored.visible(tenant, owner) and stored is not _ABSENT:
            # ``_visible`` inlined: GetTask's common case.
            record = stored.record
            if record.terminal:
                return Encoded(stored.finished_snapshot(), Task)
            return record.snapshot()  # still changing: encoded afresh for every reader
        found = _compacted_if_visible(stored, tenant, owner)
        return None if found is None else Encoded(_unpack(found).snapshot, Task)

    async def events_after(self, task_id: str, version: int) -> EventsAfter | None:
        stored = self._tasks.get(task_id)
        if stored is None:
            return None
        if isinstance(stored, _Entry):
            current = stored.record.version
            if current <= version:
                return EventsAfter(current, [])
            # Folded in place as they came: the store keeps the task, never its events.
            return EventsAfter(current, None, stored.record.snapshot())
        compacted = _unpack(stored)
        if compacted.version <= version:
            return EventsAfter(compacted.version, [])
        return EventsAfter(compacted.version, None, compacted.task(None))

    def _visible(self, task_id: str, tenant: str, owner: str | None) -> _Entry | bytes | None:
        """The stored task if ``tenant``/``owner`` may see it.

        Whatever hides a task (another caller's, expanded or compacted, or none at all), the
        lookup takes the same steps: one dict lookup, one ``_Entry.visible``, one header
        decoded and checked (``_compacted_if_visible``). So a caller cannot tell the ids of
        other callers' tasks from unused ones by how long the answer takes (docs/SECURITY.md).
        """
        stored = self._tasks.get(task_id, _ABSENT)
        if isinstance(stored, _Entry) and stored.visible(tenant, owner) and stored is not _ABSENT:
            return stored
        return _compacted_if_visible(stored, tenant, owner)

    async def append(
        self,
        task_id: str,
        events: Sequence[Event],
        *,
        expected_version: int | None = None,
        on_durable: Callable[[int], None] | None = None,
    ) -> int:
        stored = self._tasks.get(task_id)
        if stored is None:
            raise TaskNotFoundError(f"Task {task_id} was not found", metadata={"taskId": task_id})
        entry: _Entry | None = None
        if isinstance(stored, _Entry):
            entry, record = stored, stored.record
        else:  # finished and compacted: its record only serves to refuse the events
            record = _unpack(stored).record()
        if expected_version is not None and expected_version != record.version:
            raise VersionConflictError(task_id, expected=expected_version, actual=record.version)
        base = record.version
        if events:
            record.apply_all(events)  # a bad event leaves the stored record untouched
        if entry is not None and record.status.state in TERMINAL:
            self._finished(entry)
        configs = self._push.get(task_id)
        if configs:
            self._queue_notifications(task_id, base, events, list(configs))
        if on_durable is not None and events:
            on_durable(record.version)  # as durable as this store gets: applied
        return record.version

    def _finished(self, entry: _Entry) -> None:
        """``entry``'s task has just finished: compact the oldest of the recently finished."""
        recent = self._expanded_finished
        recent.append(entry)
        if len(recent) > self._expanded_limit:
            oldest = recent.popleft()
            task_id = oldest.record.id
            if self._tasks.get(task_id) is oldest:  # not removed by retention meanwhile
                self._tasks[task_id] = _Compacted.of(oldest)

    def _queue_notifications(
        self, task_id: str, base: int, events: Sequence[Event], config_ids: list[str]
    ) -> None:
        now = time.time()
        written = False
        for seq, event in enumerate(events, start=base + 1):
            body = push_body(*event_body(event))
            if body is None:
                continue
            written = True
            for config_id in config_ids:
                row_id = outbox_row_id(task_id, config_id, seq)
                self._pending[row_id] = now
                self._outbox[row_id] = OutboxRow(
                    id=row_id,
                    task_id=task_id,
                    config_id=config_id,
                    seq=seq,
                    body=body,
                    attempts=0,
                    next_attempt_at=now,
                    state="pending",
                    last_error="",
                )
        if written and self._outbox_listener is not None:
            self._outbox_listener()

    async def list_tasks(
        self, query: ListQuery, *, tenant: str, owner: str | None
    ) -> tuple[list[Task], str, int]:
        candidates: list[tuple[str, str, TaskState, str, _Entry | bytes]] = []
        for task_id, stored in self._tasks.items():
            if isinstance(stored, _Entry):
                if stored.visible(tenant, owner):
                    record = stored.record
                    key = sort_key(record.status.timestamp)
                    candidates.append((key, task_id, record.state, record.context_id, stored))
            else:
                header = _unpack_header(stored)
                if header.visible(tenant, owner):
                    state = TaskState.from_number(header.state)
                    candidates.append(
                        (header.status_key, task_id, state, header.context_id, stored)
                    )
        page, token, total = select_page(query, candidates)
        history_length, include_artifacts = query.history_length, query.include_artifacts
        tasks = [
            stored.record.snapshot(
                history_length=history_length, include_artifacts=include_artifacts
            )
            if isinstance(stored, _Entry)
            else _unpack(stored).task(history_length, include_artifacts)
            for stored in page
        ]
        return tasks, token, total

    async def unfinished(self) -> list[StoredTaskInfo]:
        # Compacted tasks are all finished.
        return [
            StoredTaskInfo(task_id, e.record.context_id, e.tenant, e.owner, e.record.state)
            for task_id, e in self._tasks.items()
            if isinstance(e, _Entry) and not e.record.terminal
        ]

    async def delete_terminal_before(self, status_key: str) -> int:
        doomed = [
            task_id
            for task_id, stored in self._tasks.items()
            if _finished_before(stored, status_key)
        ]
        for task_id in doomed:
            del self._tasks[task_id]
            self._callers.pop(task_id, None)
            for config_id in self._push.pop(task_id, {}):
                self._push_versions.pop((task_id, config_id), None)
        gone = set(doomed)
        self._drop_outbox(lambda row: row.task_id in gone)
        if gone:
            self._drop_claims_of(gone)
        return len(doomed)

    def _drop_claims_of(self, gone: set[str]) -> None:
        """Remove the message-id claims naming a task in ``gone``: one walk over the claims
        (as the walk over the tasks above), keeping the order and each batch's count."""
        kept: dict[str, str] = {}
        batches: deque[list[float]] = deque()
        claims = iter(self._message_ids.items())
        for expires_at, count in self._claim_batches:
            left = 0
            for key, task_id in itertools.islice(claims, int(count)):
                if task_id not in gone:
                    kept[key] = task_id
                    left += 1
            if left:
                batches.append([expires_at, left])
        self._message_ids, self._claim_batches = kept, batches

    async def save_caller(self, task_id: str, message_id: str, caller: bytes) -> None:
        if task_id not in self._tasks:
            raise TaskNotFoundError(f"Task {task_id} was not found", metadata={"taskId": task_id})
        self._callers.setdefault(task_id, {})[message_id] = caller

    async def load_callers(self, task_id: str) -> dict[str, bytes]:
        return dict(self._callers.get(task_id, {}))

    async def save_push_config(
        self, config: TaskPushNotificationConfig, *, protocol_version: str = PROTOCOL_VERSION
    ) -> None:
        if config.task_id not in self._tasks:
            raise TaskNotFoundError(
                f"Task {config.task_id} was not found", metadata={"taskId": config.task_id}
            )
        self._push.setdefault(config.task_id, {})[config.id] = config
        key = (config.task_id, config.id)
        if protocol_version == PROTOCOL_VERSION:
            self._push_versions.pop(key, None)
        else:
            self._push_versions[key] = protocol_version

    async def get_push_target(self, task_id: str, config_id: str) -> PushTarget | None:
        config = self._push.get(task_id, {}).get(config_id)
        stored = self._tasks.get(task_id)
        if config is None or stored is None:
            return None
        tenant = stored.tenant if isinstance(stored, _Entry) else _unpack_header(stored).tenant
        version = self._push_versions.get((task_id, config_id), PROTOCOL_VERSION)
        return PushTarget(config, version, tenant)

    async def get_push_config(
        self, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        return self._push.get(task_id, {}).get(config_id)

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        return list(self._push.get(task_id, {}).values())

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        self._push.get(task_id, {}).pop(config_id, None)
        self._push_versions.pop((task_id, config_id), None)
        self._drop_outbox(
            lambda row: (
                row.task_id == task_id and row.config_id == config_id and row.state == "pending"
            )
        )

    def _drop_outbox(self, doomed: Callable[[OutboxRow], bool]) -> None:
        for row_id in [row_id for row_id, row in self._outbox.items() if doomed(row)]:
            del self._outbox[row_id]
            self._pending.pop(row_id, None)

    # -- the push outbox ----------------------------------------------------------------------

    def on_outbox(self, listener: Callable[[], None] | None) -> None:
        self._outbox_listener = listener

    async def claim_due(self, now: float, *, limit: int, lease: float) -> list[OutboxRow]:
        heads: set[tuple[str, str]] = set()
        claimed: list[OutboxRow] = []
        for row_id in self._pending:
            if len(claimed) >= limit:
                break
            row = self._outbox[row_id]
            pair = (row.task_id, row.config_id)
            if pair in heads:
                continue  # a config's later rows wait for its earliest pending one
            heads.add(pair)
            if row.next_attempt_at <= now:
                taken = dataclasses.replace(
                    row, attempts=row.attempts + 1, next_attempt_at=now + lease
                )
                self._outbox[row.id] = taken
                claimed.append(taken)
        return claimed

    async def mark_delivered(self, row_id: str) -> None:
        self._settle(row_id, state="delivered", body=b"", last_error="")

    async def mark_retry(self, row_id: str, next_attempt_at: float, error: str) -> None:
        self._settle(row_id, next_attempt_at=next_attempt_at, last_error=error)

    async def release_claim(self, row_id: str, next_attempt_at: float) -> None:
        row = self._outbox.get(row_id)
        if row is not None and row.attempts > 0:
            self._settle(row_id, attempts=row.attempts - 1, next_attempt_at=next_attempt_at)

    async def mark_failed(self, row_id: str, error: str) -> None:
        self._settle(row_id, state="failed", last_error=error)

    def _settle(self, row_id: str, **changes: object) -> None:
        row = self._outbox.get(row_id)
        if row is not None and row.state == "pending":
            settled = dataclasses.replace(row, **changes)  # type: ignore[arg-type]
            self._outbox[row_id] = settled
            if settled.state != "pending":
                del self._pending[row_id]

    async def count_waiting(self) -> dict[TaskState, int] | None:
        counts: dict[TaskState, int] = {}
        for entry in self._tasks.values():
            # Compacted tasks (bytes) are all finished.
            if isinstance(entry, _Entry) and is_interrupted(state := entry.record.state):
                counts[state] = counts.get(state, 0) + 1
        return counts

    async def outbox_backlog(self) -> tuple[int, float | None] | None:
        pending = self._pending
        return len(pending), next(iter(pending.values()), None)

    async def outbox(self, task_id: str) -> list[OutboxRow]:
        rows = [row for row in self._outbox.values() if row.task_id == task_id]
        return sorted(rows, key=lambda row: (row.seq, row.config_id))


def _finished_before(stored: _Entry | bytes, status_key: str) -> bool:
    """Whether the task is terminal with a status sort key older than ``status_key``."""
    if isinstance(stored, _Entry):
        record = stored.record
        return record.terminal and sort_key(record.status.timestamp) < status_key
    return _unpack_header(stored).status_key < status_key


# Claims made within this many seconds of a batch's first share its expiry.
_CLAIM_BATCH_S = 0.001


def _claim_key(tenant: str, owner: str, message_id: str) -> str:
    """The claim's key: the message id itself for the anonymous caller of the default
    tenant when it holds no separator (no string built), else the three, length-prefixed so
    no two triples share a key."""
    if not tenant and not owner and "\x1f" not in message_id:
        return message_id
    return f"\x1f{len(tenant)}:{tenant}{len(owner)}:{owner}{message_id}"
