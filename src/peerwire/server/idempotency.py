"""Idempotent sends: a repeated first message gets the task it already created.

A2A says nothing about a SendMessage sent twice: a client that lost the answer (a connection
reset after the request went out, a timeout) and sends again opens a second task, and the
agent may book a second slot. A peerwire server remembers, for ``retention`` (24 h by
default), which task the first message of each caller made, keyed by (tenant, the caller's
principal or none, ``messageId``), and answers a repeat with that task, as it is now (a
blocking send waits as a first one would; a stream gets the task's snapshot and then its
updates, as a resubscription does). The card offers it as the extension
``IDEMPOTENT_SEND_EXTENSION`` (``required: false``), and it applies only to the sends of a
caller that activates it (``A2A-Extensions``; peerwire's ``Client`` does when the card
offers it): A2A 1.0 leaves a repeated ``messageId`` undefined, and a caller that did not ask
gets what 1.0 gives, a new task (docs/DELEGATION.md, "Idempotent retries").

The claim and the task row are written together by the store (``TaskStore.create_once``), so
concurrent duplicates, on one replica or several sharing a database, agree on one task. What
this module adds is the clock, the retention and the sweep of expired claims, a bounded
number at a time, at most every ``sweep_every`` seconds, before a create (so a cancelled
request never leaves a created task without its handler).

Decisions where the spec is silent: a repeat whose content differs is answered with the
first task all the same (the message id names the message; reusing it for another message is
the caller's error, and comparing contents would cost every send); a message skill's inline
reply is not remembered (it creates nothing to duplicate: the skill runs again); a follow-up
to a task whose history already holds that message id is not appended again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

from ..protocol import TaskRecord
from ..protocol.extensions import IDEMPOTENT_SEND_EXTENSION
from ..types import AgentExtension, Message
from .stores.base import TaskStore

__all__ = [
    "DEFAULT_MESSAGE_RETENTION",
    "IDEMPOTENT_SEND_EXTENSION",
    "MessageLedger",
    "holds_message",
    "idempotent_send_extension",
]

DEFAULT_MESSAGE_RETENTION = timedelta(hours=24)
"""How long a first message's id names its task (``create_app(message_retention=...)``,
``peerwire serve --message-retention HOURS``)."""

# Expired claims removed per sweep, and how often one may run: bounded work on the send path.
_SWEEP_LIMIT = 1000
_SWEEP_EVERY_S = 60.0


def idempotent_send_extension(retention: timedelta) -> AgentExtension:
    """The card's entry for this behaviour, with the retention window as its parameter."""
    return AgentExtension(
        uri=IDEMPOTENT_SEND_EXTENSION,
        description=(
            "Activated in A2A-Extensions: a repeated SendMessage or SendStreamingMessage with "
            "the same messageId from the same caller within the retention window answers with "
            "the task the first one created instead of creating another"
        ),
        required=False,
        params={"retentionSeconds": int(retention.total_seconds())},
    )


class MessageLedger:
    """Creates tasks through ``TaskStore.create_once`` and sweeps the expired claims."""

    __slots__ = ("_clock", "_next_sweep", "_retention", "_store", "sweep_every", "sweep_limit")

    def __init__(
        self,
        store: TaskStore,
        retention: timedelta = DEFAULT_MESSAGE_RETENTION,
        *,
        clock: Callable[[], float] = time.time,
        sweep_every: float = _SWEEP_EVERY_S,
        sweep_limit: int = _SWEEP_LIMIT,
    ) -> None:
        if retention <= timedelta(0):
            raise ValueError(f"message_retention must be positive, got {retention}")
        self._store = store
        self._retention = retention.total_seconds()
        self._clock = clock
        self.sweep_every = sweep_every
        self.sweep_limit = sweep_limit
        self._next_sweep = 0.0

    @property
    def retention(self) -> timedelta:
        return timedelta(seconds=self._retention)

    async def create(self, record: TaskRecord, *, tenant: str, owner: str, message: Message) -> str:
        """Store ``record`` as the task of ``message`` unless a task already holds its id;
        returns the id of the task that does (``record.id`` when this created it)."""
        now = self._clock()
        if now >= self._next_sweep:
            self._next_sweep = now + self.sweep_every
            await self._store.forget_message_ids(now, limit=self.sweep_limit)
        if not message.message_id:
            # Nothing to key on (the spec requires the id; a lenient decoder may let it be).
            await self._store.create(record, tenant=tenant, owner=owner)
            return record.id
        return await self._store.create_once(
            record,
            tenant=tenant,
            owner=owner,
            message_id=message.message_id,
            now=now,
            expires_at=now + self._retention,
        )


def holds_message(record: TaskRecord, message_id: str) -> bool:
    """Whether the task's history already holds the message ``message_id`` (a follow-up
    sent again): it is not appended twice."""
    if not message_id:
        return False
    return any(m.message_id == message_id for m in record.history)
