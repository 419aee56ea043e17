"""Task state names on the command line: printed one way, read in every spelling.

Printed as the A2A documentation writes them in prose: lowercase, hyphenated
(``input-required``). Read case-insensitively, with hyphens or underscores, with or
without the ``TASK_STATE_`` prefix of the wire value: ``input-required``, ``input_required``,
``INPUT_REQUIRED`` and ``TASK_STATE_INPUT_REQUIRED`` are the same state.
"""

from __future__ import annotations

from ..types import TaskState

__all__ = ["STATE_NAMES", "parse_state", "state_name"]

_PREFIX = "TASK_STATE_"


def state_name(state: TaskState) -> str:
    """``input-required``."""
    return state.value.removeprefix(_PREFIX).lower().replace("_", "-")


_BY_NAME = {state_name(s): s for s in TaskState if s is not TaskState.UNSPECIFIED}

STATE_NAMES: tuple[str, ...] = tuple(_BY_NAME)
"""Every state a task can be in, as printed."""


def parse_state(text: str) -> TaskState | None:
    """The state ``text`` names in any accepted spelling; ``None`` if it names none."""
    name = text.strip().upper().replace("-", "_").removeprefix(_PREFIX)
    return _BY_NAME.get(name.lower().replace("_", "-"))
