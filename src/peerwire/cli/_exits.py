"""The exit codes of the ``peerwire`` commands: one table, for the code, ``--help`` and README.

A command that reports a task exits with the code of the state the task is in when the
command returns; other outcomes have codes of their own. The README's table is this one
(tests/cli/test_exit_codes.py compares them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol import ACTIVE, INTERRUPTED, TERMINAL
from ..types import TaskState

__all__ = [
    "EXIT_CODES",
    "EXIT_CODES_HELP",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NEEDS_YOU",
    "EXIT_OK",
    "EXIT_RUNNING",
    "EXIT_UNSUCCESSFUL",
    "EXIT_USAGE",
    "ExitCode",
    "exit_code",
    "exit_codes_markdown",
]


@dataclass(frozen=True, slots=True)
class ExitCode:
    """One exit code: what it means, and the task states that end a command with it."""

    code: int
    meaning: str
    states: frozenset[TaskState] = frozenset()


EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NEEDS_YOU = 3
EXIT_UNSUCCESSFUL = 4
EXIT_RUNNING = 5
EXIT_INTERRUPTED = 130  # the shell's convention for Ctrl-C

_S = TaskState
EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(
        EXIT_OK,
        "completed, or the agent replied with a message (cancel: the task is canceled)",
        frozenset({_S.COMPLETED}),
    ),
    ExitCode(
        EXIT_ERROR,
        "an error: agent unreachable, invalid card, refused credentials, task not found, ...",
    ),
    ExitCode(EXIT_USAGE, "bad usage: an unknown option or a bad value"),
    ExitCode(
        EXIT_NEEDS_YOU,
        "the task needs you: input-required or auth-required",
        INTERRUPTED,
    ),
    ExitCode(
        EXIT_UNSUCCESSFUL,
        "the task failed, was rejected or canceled",
        TERMINAL - {_S.COMPLETED},
    ),
    ExitCode(
        EXIT_RUNNING,
        "the task still runs (submitted, working): send --no-wait, or --timeout ran out",
        ACTIVE,
    ),
    ExitCode(EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
)

_BY_STATE = {state: row.code for row in EXIT_CODES for state in row.states}


def exit_code(state: TaskState) -> int:
    """The exit code of a command that leaves its task in ``state``."""
    # A state outside the table (UNSPECIFIED) is not a task a caller can act on.
    return _BY_STATE.get(state, EXIT_ERROR)


# For the help of every command whose exit code says how its task stands. "\b" keeps the
# help formatter from joining the lines of the table.
EXIT_CODES_HELP = "\b\nExit codes:\n" + "\n".join(
    f"{row.code:>3}  {row.meaning}" for row in EXIT_CODES
)


def exit_codes_markdown() -> str:
    """The table as README shows it."""
    lines = ["| Exit code | Meaning |", "| --- | --- |"]
    lines += [f"| {row.code} | {row.meaning} |" for row in EXIT_CODES]
    return "\n".join(lines)
