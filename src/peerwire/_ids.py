"""Identifiers: UUID-shaped, unique across processes and restarts, and cheap.

``uuid.uuid4()`` reads the OS random source for every id, which showed up at about 7% of a
busy server's time. Here each process draws its random bits once: the first four groups of
every id it makes (74 random bits, plus the UUID version and variant), and the last group is a
48-bit counter from a random start. Ids stay unique (two processes collide only if their random
prefixes do) and an id costs one integer format. Ids are identifiers, not secrets: access is
checked on every lookup.
"""

from __future__ import annotations

import itertools
import os

__all__ = ["new_id"]

_COUNTER_BITS = 48
_COUNTER_MASK = (1 << _COUNTER_BITS) - 1


def _random_prefix() -> str:
    """The first four groups of a version-4 UUID, with the separator that follows them."""
    bits = int.from_bytes(os.urandom(10), "big") >> 6  # 74 random bits
    group3 = 0x4000 | (bits & 0x0FFF)  # version nibble 4, then 12 random bits
    group4 = 0x8000 | ((bits >> 12) & 0x3FFF)  # variant bits 10 (RFC 9562), then 14 random bits
    head = bits >> 26  # the remaining 48 random bits: groups one and two
    return f"{head >> 16:08x}-{head & 0xFFFF:04x}-{group3:04x}-{group4:04x}-"


def _random_counter() -> itertools.count[int]:
    # A random start (24 bits) leaves 2**48 - 2**24 ids before the counter would wrap.
    return itertools.count(int.from_bytes(os.urandom(3), "big"))


_prefix = _random_prefix()
_counter = _random_counter()


def new_id() -> str:
    """A fresh identifier in the textual form of a (version 4) UUID."""
    return f"{_prefix}{next(_counter) & _COUNTER_MASK:012x}"


def reseed_after_fork() -> None:
    """Draw new random bits; call in a forked child so it does not repeat its parent's ids."""
    global _prefix, _counter
    _prefix = _random_prefix()
    _counter = _random_counter()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=reseed_after_fork)
