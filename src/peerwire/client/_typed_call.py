"""``Client.call``: send a typed value to a typed skill and decode its result to a type.

The value goes as the parts ``protocol.typed`` gives it (a ``str`` as text, a ``dict``/
``list`` as a data part); the result is read from the reply message, or from the completed
task's artifacts, with the same codec the server uses for its inputs.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidParamsError, InvalidResponseError, TaskNotCompletedError
from ..protocol.typed import TYPED_KINDS, TypedValue, typed_value, value_parts
from ..types import Message, Part, Task, TaskState

__all__ = ["call_parts", "call_result", "result_codec"]


def result_codec(returns: Any) -> TypedValue:
    """The codec of a ``returns=`` type; ``TypeError`` when it is not a typed value's."""
    codec = typed_value(returns)
    if codec is None:
        raise TypeError(f"returns= takes {TYPED_KINDS}, not {returns!r}")
    return codec


def call_parts(value: Any) -> list[Part]:
    """The parts that carry ``value`` to the skill."""
    if isinstance(value, str):
        return [Part(text=value)]
    if isinstance(value, Part):
        return [value]
    if isinstance(value, dict | list):
        return [Part(data=value, media_type="application/json")]
    parts = value_parts(value)
    if parts is None:
        raise TypeError(
            f"call() sends a str, dict, list, Part or typed value, not {type(value).__name__}"
        )
    return parts


def call_result(answer: Task | Message, codec: TypedValue, skill: str, url: str | None) -> Any:
    """The typed result of ``answer``: ``TaskNotCompletedError`` for a task that did not
    complete, ``InvalidResponseError`` naming the field for a result that does not decode."""
    if isinstance(answer, Message):
        parts, where = answer.parts, "message.parts"
    else:
        if answer.status.state is not TaskState.COMPLETED:
            said = answer.status.message.text if answer.status.message is not None else ""
            raise TaskNotCompletedError(
                f"the task {answer.id} of skill {skill!r} ended {answer.status.state.name}"
                + (f": {said}" if said else ""),
                task=answer,
                url=url,
            )
        parts = [part for artifact in answer.artifacts for part in artifact.parts]
        where = "task.artifacts.parts"
    try:
        return codec.decode(parts, f"answer of skill {skill!r}", where)
    except InvalidParamsError as exc:
        raise InvalidResponseError(
            exc.message,
            url=url,
            field_violations=exc.field_violations,
        ) from None
