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
this module adds is the clock, the retention, the bound on a message id's length
(``MAX_MESSAGE_ID_LENGTH``: a caller's id is a key the store keeps) and the sweep of expired
claims: off the send path, on a timer the app's lifespan owns (``async with ledger``), every
``sweep_every`` seconds (a minute), each sweep removing every claim expired by then, in
bounded batches, so the claims kept stay those of the retention window and one sweep
interval whatever the rate of sends. Retention of finished tasks
(``retain_finished``) removes their claims with them (``TaskStore.delete_terminal_before``).

Decisions where the spec is silent: a repeat whose content differs is answered with the
first task all the same (the message id names the message; reusing it for another message is
the caller's error, and comparing contents would cost every send); a message skill's inline
reply is not remembered (it creates nothing to duplicate: the skill runs again); a follow-up
to a task whose history already holds that message id is not appended again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import timedelta
from types import TracebackType

from ..errors import FieldViolation, InvalidParamsError
from ..protocol import TaskRecord
from ..protocol.extensions import IDEMPOTENT_SEND_EXTENSION
from ..types import AgentExtension, Message
from .stores.base import TaskStore

__all__ = [
    "DEFAULT_MESSAGE_RETENTION",
    "IDEMPOTENT_SEND_EXTENSION",
    "MAX_MESSAGE_ID_LENGTH",
    "MessageLedger",
    "check_message_id",
    "holds_message",
    "idempotent_send_extension",
]

log = logging.getLogger("peerwire.server")

DEFAULT_MESSAGE_RETENTION = timedelta(hours=24)
"""How long a first message's id names its task (``create_app(message_retention=...)``,
``peerwire serve --message-retention HOURS``)."""

MAX_MESSAGE_ID_LENGTH = 256
"""The longest ``messageId`` a send may carry, in characters: longer is refused with
invalid params before anything is stored (the id is kept as a key, docs/LIMITS.md)."""

# Expired claims removed per store call (one short hold of the store each), and the longest
# time between sweeps.
_SWEEP_LIMIT = 1000
_SWEEP_EVERY_S = 60.0


def check_message_id(message: Message, field: str = "message.messageId") -> None:
    """Refuse a message whose id is longer than ``MAX_MESSAGE_ID_LENGTH`` (InvalidParams)."""
    if len(message.message_id) > MAX_MESSAGE_ID_LENGTH:
        raise InvalidParamsError(
            f"{field} is {len(message.message_id)} characters long; this agent accepts at most "
            f"{MAX_MESSAGE_ID_LENGTH}",
            field_violations=(
                FieldViolation(
                    field=field, description=f"longer than {MAX_MESSAGE_ID_LENGTH} characters"
                ),
            ),
        )


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
    """Creates tasks through ``TaskStore.create_once`` and sweeps the expired claims.

    ``async with ledger`` runs the sweep on a timer (at once, then ``sweep_every`` seconds
    after each sweep ends) until the block ends; the app's lifespan holds it.
    ``sweep_limit`` is how many claims one store call removes.
    """

    __slots__ = (
        "_clock",
        "_retention",
        "_store",
        "_timer",
        "sweep_every",
        "sweep_limit",
        "swept",
    )

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
        if sweep_every <= 0:
            raise ValueError(f"sweep_every must be positive, got {sweep_every}")
        if sweep_limit < 1:
            raise ValueError(f"sweep_limit must be at least 1, got {sweep_limit}")
        self._store = store
        self._retention = retention.total_seconds()
        self._clock = clock
        self.sweep_every = sweep_every
        self.sweep_limit = sweep_limit
        self.swept = 0
        """Claims the sweeps removed so far."""
        self._timer: asyncio.Task[None] | None = None

    @property
    def retention(self) -> timedelta:
        return timedelta(seconds=self._retention)

    @property
    def sweeping(self) -> bool:
        """Whether the timer runs (inside ``async with``)."""
        return self._timer is not None and not self._timer.done()

    async def __aenter__(self) -> MessageLedger:
        if self._timer is not None:
            raise RuntimeError("this MessageLedger is already sweeping")
        self._timer = asyncio.create_task(self._sweeping(), name="peerwire-message-id-sweep")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timer

    async def _sweeping(self) -> None:
        while True:
            try:
                await self.sweep()
            except Exception as exc:  # an outage: the next sweep takes what this one left
                log.warning("peerwire: sweeping expired message ids failed: %s", exc)
            await asyncio.sleep(self.sweep_every)

    async def sweep(self) -> int:
        """Remove every claim expired by now, ``sweep_limit`` per store call until a call
        comes back short; how many went. The cut-off is fixed when the sweep starts, so it
        ends however fast new claims arrive."""
        now = self._clock()
        removed = 0
        while True:
            batch = await self._store.forget_message_ids(now, limit=self.sweep_limit)
            removed += batch
            self.swept += batch
            if batch < self.sweep_limit:
                return removed
            await asyncio.sleep(0)  # a store that never suspends must not hold the loop

    async def create(self, record: TaskRecord, *, tenant: str, owner: str, message: Message) -> str:
        """Store ``record`` as the task of ``message`` unless a task already holds its id;
        returns the id of the task that does (``record.id`` when this created it)."""
        if not message.message_id:
            # Nothing to key on (the spec requires the id; a lenient decoder may let it be).
            await self._store.create(record, tenant=tenant, owner=owner)
            return record.id
        now = self._clock()
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
