"""``stream.order``: what a streamed message looks like on one binding (A2A spec §3.1.2).

The stream must be one ``message`` and then close, or a ``task`` snapshot first, then status
and artifact updates of that task (same ``taskId`` and ``contextId``, appended chunks after
their artifact), ending in a terminal or interrupted state, after which the server closes
it. The self-check reads at most ``MAX_EVENTS`` events for at most ``timeout`` seconds, and
cancels a task it leaves unfinished.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

import httpx

from ..errors import InvalidParamsError, UnsupportedOperationError
from ..protocol import INTERRUPTED, TERMINAL, closes_stream
from ..types import TaskState
from ._findings import Finding, Severity, failed, passed
from ._probes import Prober, StreamItem, excerpt

__all__ = ["MAX_EVENTS", "STREAM_TEXT", "stream_findings"]

MAX_EVENTS = 1000
STREAM_TEXT = "Hello from the peerwire self-check. A short reply is all it needs."
_RULE = (
    "A2A spec §3.1.2: a stream is one Message, or a Task first, then its status and "
    "artifact updates, closed at a terminal or interrupted state"
)
_MAX_PROBLEMS = 5


@dataclass
class _Reading:
    """What the stream showed, as it was read."""

    items: list[StreamItem] = field(default_factory=list)
    closed: bool = False
    timed_out: bool = False
    cut_at_limit: bool = False
    failure: str = ""
    skill: str | None = None
    """The skill the message was addressed to (after a refusal without one)."""


async def stream_findings(
    prober: Prober, timeout: float, skill: str | None = None
) -> list[Finding]:
    """Stream one message and judge the stream. A message the agent refuses as invalid (a
    peerwire agent with several skills wants one named) is sent once more, addressed to
    ``skill`` (the card's first) in ``metadata.skill``."""
    where = {"interface": prober.interface.label}
    reading = await _read(prober, timeout, None)
    if skill is not None and _refused_as_unroutable(reading):
        reading = await _read(prober, timeout, skill)
        reading.skill = skill
    findings, task_id, state = _judge(reading, prober.interface.binding, timeout, where)
    if task_id and (state is None or state not in TERMINAL):
        # Do not leave the agent a task nobody follows (an input-required question, work).
        with contextlib.suppress(Exception):
            async with asyncio.timeout(timeout):
                await prober.cancel(task_id)
    return findings


def _refused_as_unroutable(reading: _Reading) -> bool:
    """The agent refused the message before any event, for its content (invalid params):
    perhaps because it names no skill."""
    first = reading.items[0] if reading.items else None
    return (
        first is not None
        and first.kind == "error"
        and isinstance(first.payload, InvalidParamsError)
    )


async def _read(prober: Prober, timeout: float, skill: str | None) -> _Reading:
    reading = _Reading()
    events = prober.stream(STREAM_TEXT, skill)
    try:
        async with asyncio.timeout(timeout):
            async for item in events:
                reading.items.append(item)
                if len(reading.items) >= MAX_EVENTS:
                    reading.cut_at_limit = True
                    break
            else:
                reading.closed = True
    except TimeoutError:
        reading.timed_out = True
    except httpx.HTTPError as exc:
        reading.failure = excerpt(str(exc) or type(exc).__name__)
    finally:
        with contextlib.suppress(Exception):
            await events.aclose()
    return reading


def _judge(
    reading: _Reading, binding: str, timeout: float, where: dict[str, str]
) -> tuple[list[Finding], str, TaskState | None]:
    """The findings, the task id the stream was about ('' if none), its last state."""
    items = reading.items
    if reading.failure and not items:
        return [_fail("error", f"The {binding} stream failed", reading.failure, where)], "", None
    if not items:
        if reading.timed_out:
            return (
                [
                    _fail(
                        "error",
                        f"The {binding} stream sent nothing in {timeout:g} s",
                        "A client waits for the Task (and its id) that never comes.",
                        where,
                    )
                ],
                "",
                None,
            )
        return (
            [
                _fail(
                    "error",
                    f"The {binding} stream closed without an event",
                    "Expected a Task or a Message first.",
                    where,
                )
            ],
            "",
            None,
        )
    first = items[0]
    if first.kind == "error":
        return [_refused(first, binding, where)], "", None
    if first.kind == "message":
        return _message_reply(reading, binding, where), "", None
    if first.kind != "task":
        what = first.note if first.kind == "invalid" else f"a {first.kind}"
        opening = "an invalid event" if first.kind == "invalid" else what
        problem = _fail(
            "error",
            f"The {binding} stream starts with {opening}",
            f"The first event MUST be a Task (or a single Message); got {what}. A client does "
            "not know which task the updates are about.",
            where,
        )
        task_id = getattr(first.payload, "task_id", "") or ""
        return [problem], task_id, None
    return _task_stream(reading, binding, timeout, where)


def _fail(severity: Severity, title: str, detail: str, where: dict[str, str]) -> Finding:
    return failed("stream.order", severity, title, detail, rule=_RULE, **where)


def _refused(item: StreamItem, binding: str, where: dict[str, str]) -> Finding:
    if isinstance(item.payload, UnsupportedOperationError):
        return _fail(
            "error",
            f"The {binding} interface refuses to stream",
            f"The card declares capabilities.streaming, but SendStreamingMessage got "
            f"UnsupportedOperationError: {item.note}",
            where,
        )
    return _fail(
        "warning",
        f"The {binding} stream could not be checked",
        f"The agent refused the self-check's message ({item.note}); a message it accepts "
        "would be needed to see a stream.",
        where,
    )


def _message_reply(reading: _Reading, binding: str, where: dict[str, str]) -> list[Finding]:
    extra = reading.items[1:]
    if extra:
        return [
            _fail(
                "error",
                f"The {binding} stream goes on after a Message reply",
                f"A Message reply is the only event; {len(extra)} more followed "
                f"(first: {extra[0].kind}).",
                where,
            )
        ]
    if not reading.closed:
        return [
            _fail(
                "error",
                f"The {binding} stream stays open after its Message reply",
                "The server must close the stream after the one Message.",
                where,
            )
        ]
    return [
        passed(
            "stream.order",
            f"The {binding} stream is a single Message, then closes",
            "message → closed",
            rule=_RULE,
            **where,
        )
    ]


def _task_stream(
    reading: _Reading, binding: str, timeout: float, where: dict[str, str]
) -> tuple[list[Finding], str, TaskState | None]:
    task = reading.items[0].payload
    task_id, context_id = task.id, task.context_id
    state: TaskState = task.status.state
    artifacts = {artifact.artifact_id for artifact in task.artifacts}
    path = [f"task({_short(state)})"]
    problems: list[Finding] = []

    def problem(title: str, detail: str) -> None:
        if len(problems) < _MAX_PROBLEMS:
            problems.append(_fail("error", title, detail, where))

    ended_at: int | None = 0 if state in TERMINAL else None
    for number, item in enumerate(reading.items[1:], start=2):
        if ended_at is not None and item.kind != "task":
            problem(
                f"The {binding} stream goes on after {_short(state)}",
                f"Event {number} ({item.kind}) came after the task reached {state.value}.",
            )
        if item.kind in ("error", "invalid"):
            problem(
                f"Event {number} of the {binding} stream is "
                f"{'an error' if item.kind == 'error' else 'not a StreamResponse'}",
                item.note,
            )
            path.append(item.kind)
            continue
        payload = item.payload
        if item.kind == "message":
            problem(
                f"A Message in the middle of the {binding} task stream",
                f"Event {number}: after a Task, only status and artifact updates follow.",
            )
            path.append("message")
            continue
        ids = (
            (payload.id, payload.context_id)
            if item.kind == "task"
            else (payload.task_id, payload.context_id)
        )
        if ids != (task_id, context_id):
            problem(
                f"Event {number} of the {binding} stream is about another task",
                f"taskId/contextId {ids[0]!r}/{ids[1]!r}, but the Task was "
                f"{task_id!r}/{context_id!r}.",
            )
        if item.kind == "task":
            state = payload.status.state
            artifacts |= {artifact.artifact_id for artifact in payload.artifacts}
            path.append(f"task({_short(state)})")
        elif item.kind == "statusUpdate":
            state = payload.status.state
            path.append(_short(state))
        else:
            artifact = payload.artifact
            if payload.append and artifact.artifact_id not in artifacts:
                problem(
                    f"Event {number} of the {binding} stream appends to an unknown artifact",
                    f"append is true for artifactId {artifact.artifact_id!r}, which no "
                    "earlier event started.",
                )
            artifacts.add(artifact.artifact_id)
            path.append("artifact")
        if state is TaskState.UNSPECIFIED:
            problem(
                f"The {binding} stream reports TASK_STATE_UNSPECIFIED",
                "UNSPECIFIED is never a valid state to send.",
            )
        if ended_at is None and state in TERMINAL:
            ended_at = number
    closing = state in TERMINAL or state in INTERRUPTED
    seen = " → ".join(path)
    if reading.closed and not closing:
        problem(
            f"The {binding} stream closed without a final state",
            f"It closed while the task was {state.value}: {seen}. A client cannot tell "
            "whether the task ended; it must subscribe again or poll.",
        )
    elif reading.failure:
        problem(f"The {binding} stream broke off", f"{reading.failure} after {seen}.")
    elif reading.timed_out and closes_stream(state):
        # AUTH_REQUIRED may keep it open: credentials arrive out of band (spec §7.6.1).
        problem(
            f"The {binding} stream stays open after {state.value}",
            f"The server must close the stream at a terminal or interrupted state: {seen}.",
        )
    if problems:
        return problems, task_id, state
    if reading.cut_at_limit:
        return (
            [
                _fail(
                    "warning",
                    f"The {binding} stream was cut off at {MAX_EVENTS} events",
                    f"No closing state by then: {seen}.",
                    where,
                )
            ],
            task_id,
            state,
        )
    if reading.timed_out and not closing:
        return (
            [
                _fail(
                    "warning",
                    f"The {binding} stream did not finish within {timeout:g} s",
                    f"The order was right so far ({seen}); a longer --timeout would see the end.",
                    where,
                )
            ],
            task_id,
            state,
        )
    ending = "closed" if reading.closed else "kept open (AUTH_REQUIRED)"
    return (
        [
            passed(
                "stream.order",
                f"The {binding} stream is a Task, its updates, then closes",
                f"{seen} → {ending}",
                rule=_RULE,
                **where,
            )
        ],
        task_id,
        state,
    )


def _short(state: TaskState) -> str:
    return state.value.removeprefix("TASK_STATE_")
