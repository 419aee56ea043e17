"""Identifiers: random version-4 UUIDs (122 bits from the OS CSPRNG), made cheaply.

Every id peerwire mints (tasks, contexts, messages, artifacts, push configs) comes from here.
Ids must be unguessable: one caller must not be able to name another's task or count the
traffic by comparing the ids it is given. ``str(uuid.uuid4())`` is that, but costs a system
call and a ``UUID`` object per id (about 2 µs here, 7% of a busy server's SendMessage). This
module draws the randomness for a batch of ids in one ``os.urandom`` call and formats the
whole batch at once with a few C-level operations over one buffer (hex, then strided writes
of the dashes, the version and the variant), then hands the ids out one ``list.pop`` at a
time: about a tenth of ``uuid4``'s cost per id.

Threads: ``list.pop`` is atomic, so no id is handed out twice; two threads finding the batch
empty at once both refill, and one of the fresh batches is dropped (waste, not a repeat).
Processes: a forked child starts with an empty batch (``os.register_at_fork``), so it never
repeats the ids its parent holds; a spawned one starts afresh anyway.
"""

from __future__ import annotations

import os
import uuid

__all__ = ["new_id", "step_id"]

# The namespace of the ids derived from a task's (``step_id``): a fixed random UUID.
_STEPS = uuid.UUID("6f3c1f9e-2a57-4d0b-9f0e-8b1d52c4a7e3")

_BATCH = 512
"""Ids formatted per ``os.urandom`` call: the refill's cost spread over them (about 40 KB)."""

# One record per id in the batch buffer: 19 random bytes as 38 hex digits. Digits 0-35 become
# the id, with its four dashes, the version and the variant written over the digits at those
# places; digits 36 and 37 become the spaces ``split`` cuts the batch at. Of the 32 digits left,
# 30 stay whole and the variant digit keeps 2 of its 4 bits: 122 random bits per id.
_RECORD = 38
_DASHES = (8, 13, 18, 23)
_VERSION = 14
_VARIANT = 19
_GAPS = (36, 37)
# A hex digit (as ASCII) turned into the digit of its low two bits under the variant bits 10
# (RFC 9562): 8, 9, a or b. Only hex digits are ever translated.
_VARIANT_DIGITS = bytes.maketrans(b"0123456789abcdef", b"89ab" * 4)


def _batch(count: int) -> list[str]:
    """``count`` fresh ids, in the canonical textual form of a version-4 UUID."""
    buffer = bytearray(os.urandom(count * _RECORD // 2).hex(), "ascii")
    dash = b"-" * count
    for place in _DASHES:
        buffer[place::_RECORD] = dash
    buffer[_VERSION::_RECORD] = b"4" * count
    buffer[_VARIANT::_RECORD] = buffer[_VARIANT::_RECORD].translate(_VARIANT_DIGITS)
    gap = b" " * count
    for place in _GAPS:
        buffer[place::_RECORD] = gap
    return buffer.decode("ascii").split()


_ready: list[str] = []


def new_id() -> str:
    """A fresh random identifier in the textual form of a version-4 UUID."""
    try:
        return _ready.pop()
    except IndexError:
        return _refill()


def step_id(task_id: str, kind: str, step: int) -> str:
    """The id of the ``step``-th thing of ``kind`` a task's handler makes (a version-5 UUID of
    the three): the same on every run of the handler, so a replay makes it again under the
    same id. Only the server's own ids go in (the task's is one of ours, never the caller's),
    and the task id, unguessable, keeps the derived id unguessable too."""
    return str(uuid.uuid5(_STEPS, f"{task_id}/{kind}/{step}"))


def _refill() -> str:
    global _ready
    fresh = _batch(_BATCH)
    first = fresh.pop()
    _ready = fresh
    return first


def _forget_after_fork() -> None:
    """In a forked child: drop the parent's unused ids, which the parent still hands out."""
    global _ready
    _ready = []


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
