"""``new_id``: UUID-shaped (version 4), unique, and fresh in a forked child."""

from __future__ import annotations

import uuid

from peerwire import _ids
from peerwire._ids import new_id


def test_ids_are_version_4_uuids_in_canonical_form() -> None:
    for value in (new_id() for _ in range(100)):
        parsed = uuid.UUID(value)
        assert str(parsed) == value
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_ids_are_unique() -> None:
    assert len({new_id() for _ in range(10_000)}) == 10_000


def test_reseeding_draws_new_random_groups() -> None:
    before = new_id()
    _ids.reseed_after_fork()
    after = new_id()
    assert before.rsplit("-", 1)[0] != after.rsplit("-", 1)[0]
    assert uuid.UUID(after).version == 4
