"""Typed skills: what a skill's annotations make of its parameters, its return and its card.

A parameter annotated with a typed value's type (``protocol.typed``: a pydantic model, a
dataclass, a msgspec ``Struct``, ``int``/``float``/``bool``, ``bytes`` or ``File``) receives
the message's input decoded to it; at most one parameter may be typed, the others being the
injectable ``str``/``dict``/``Message``/``TaskContext``. A return annotated with such a type
becomes a data part (files: a file part). The input and output schemas are published on the
card under ``SKILL_SCHEMAS_EXTENSION``. Anything else is refused at decoration.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..protocol.extensions import SKILL_SCHEMAS_EXTENSION
from ..protocol.typed import TYPED_KINDS, TypedValue, typed_value
from ..types import AgentExtension, Message, Part
from .context import TaskContext

__all__ = ["TYPED", "Signature", "schemas_extension", "signature"]

TYPED = "typed"
"""The argument kind of the typed parameter."""

_INJECTABLE: dict[Any, str] = {
    str: "text",
    dict: "data",
    Message: "message",
    TaskContext: "context",
}
# Returns the runner turns into an artifact without a type (``context.to_parts``), or that
# end the task themselves (``None``, a ``Message``).
_PLAIN_RETURNS: tuple[Any, ...] = (str, dict, list, Part, Message, type(None), None, Any)


@dataclass(frozen=True, slots=True)
class Signature:
    arguments: tuple[str, ...]
    replies_with_message: bool
    input_type: TypedValue | None
    output_type: TypedValue | None


def signature(function: Callable[..., Any], state_type: type | None = None) -> Signature:
    """What each parameter of the skill ``function`` receives and what it returns;
    ``TypeError`` for an annotation a skill cannot have (``state_type``: the agent lifespan's,
    whose parameters receive the app state)."""
    hints = typing.get_type_hints(function)
    name = function.__name__
    arguments: list[str] = []
    input_type: TypedValue | None = None
    for parameter in inspect.signature(function).parameters.values():
        annotation = hints.get(parameter.name)
        kind = _INJECTABLE.get(typing.get_origin(annotation) or annotation)
        if kind is None and state_type is not None and annotation is state_type:
            kind = "state"  # checked before typed inputs: a state class may be a dataclass
        if kind is None:
            typed = typed_value(annotation)
            if typed is None:
                state = "" if state_type is None else f", {state_type.__name__} (the app state)"
                raise TypeError(
                    f"parameter {parameter.name!r} of skill {name} must be annotated str, "
                    f"dict, Message, TaskContext{state}, or a typed input ({TYPED_KINDS}), "
                    f"not {annotation!r}"
                )
            if input_type is not None:
                raise TypeError(
                    f"skill {name} has more than one typed parameter; a message carries one "
                    "input (group them in one model)"
                )
            input_type, kind = typed, TYPED
        arguments.append(kind)
    returned = hints.get("return")
    output_type = _output(returned, name) if "return" in hints else None
    return Signature(tuple(arguments), returned is Message, input_type, output_type)


def _output(annotation: Any, name: str) -> TypedValue | None:
    typed = typed_value(annotation)
    if typed is not None:
        return typed
    members = _union_members(annotation)
    if members is not None:
        typed_members = [t for t in (typed_value(m) for m in members) if t is not None]
        for member in members:
            if typed_value(member) is None:
                _check_plain(member, name)
        # A single typed member (``Model | None``) is the published output.
        return typed_members[0] if len(typed_members) == 1 else None
    _check_plain(annotation, name)
    return None


def _check_plain(annotation: Any, name: str) -> None:
    if annotation in _PLAIN_RETURNS or (typing.get_origin(annotation) in (dict, list)):
        return
    raise TypeError(
        f"skill {name} is annotated to return {annotation!r}; a skill returns str, dict, "
        f"list, Part, Message, None, or a typed output ({TYPED_KINDS})"
    )


def _union_members(annotation: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(annotation)
    return None


def decode_input(input_type: TypedValue, skill_id: str, message: Message) -> Any:
    """The typed argument of skill ``skill_id`` from ``message``, or ``InvalidParamsError``."""
    return input_type.decode(message.parts, f"input of skill {skill_id!r}")


def input_modes(input_type: TypedValue) -> tuple[str, ...]:
    """The media types a typed input is read from, when the skill declares none."""
    if input_type.part == "file":
        return ("*/*",)
    return ("application/json", "text/plain")


def output_modes(output_type: TypedValue) -> tuple[str, ...]:
    if output_type.part == "file":
        return ()  # a file's media type is the skill's to say
    return ("application/json",)


def schemas_extension(
    skills: Iterable[tuple[str, TypedValue | None, TypedValue | None]],
) -> list[AgentExtension]:
    """The card's entry listing each typed skill's input and output (none when no skill
    is typed): a declaration of the agent, nothing a caller activates."""
    described: dict[str, dict[str, Any]] = {}
    for skill_id, input_type, output_type in skills:
        entry: dict[str, Any] = {}
        if input_type is not None:
            entry["input"] = input_type.describe()
        if output_type is not None:
            entry["output"] = output_type.describe()
        if entry:
            described[skill_id] = entry
    if not described:
        return []
    return [
        AgentExtension(
            uri=SKILL_SCHEMAS_EXTENSION,
            description=(
                "The input and output of these skills: the part that carries each and, for a "
                "data part, its JSON Schema"
            ),
            required=False,
            params={"skills": described},
        )
    ]
