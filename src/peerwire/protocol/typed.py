"""Typed values carried by A2A parts: what a typed skill takes and returns.

A JSON type (a pydantic model, a dataclass, a msgspec ``Struct``, or ``int``/``float``/``bool``)
travels as a data part (``application/json``); on input a text part holding JSON is read the
same way. ``File`` and ``bytes`` travel as a file part. A value that does not match its type
is refused with ``InvalidParamsError`` whose field violations name the offending fields.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from ..errors import FieldViolation, InvalidParamsError
from ..types import File, Model, Part

__all__ = ["TYPED_KINDS", "TypedValue", "typed_value", "value_parts"]

TYPED_KINDS = "a pydantic model, a dataclass, a msgspec Struct, int, float, bool, bytes or File"
"""The types a typed value may have, as every message refusing another one says them."""

_SCALARS = (bool, int, float)
_JSON = "application/json"
# msgspec ends a validation message with where it failed: "... - at `$.items[0].name`".
_AT = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`")


@dataclass(frozen=True, slots=True)
class TypedValue:
    """How values of ``annotation`` become parts and back, and their JSON Schema."""

    annotation: Any
    part: Literal["data", "file"]

    @property
    def is_pydantic(self) -> bool:
        return _is_pydantic(self.annotation)

    def describe(self) -> dict[str, Any]:
        """What the card publishes: the part kind and, for a data part, its JSON Schema."""
        if self.part == "file":
            return {"part": "file"}
        if self.is_pydantic:
            schema: dict[str, Any] = self.annotation.model_json_schema()
        else:
            schema = msgspec.json.schema(self.annotation)
        return {"part": "data", "mediaType": _JSON, "schema": schema}

    def decode(self, parts: Sequence[Part], label: str, where: str = "message.parts") -> Any:
        """The value the first suitable part of ``parts`` carries; ``InvalidParamsError``
        naming the field (under ``where``, the parts' path) when there is none or it does not
        match (``label`` says whose)."""
        if self.part == "file":
            return self._decode_file(parts, label, where)
        for index, part in enumerate(parts):
            if part.kind == "data":
                return self._convert(part.data, f"{where}[{index}].data", label)
        for index, part in enumerate(parts):
            if part.text is not None:
                field = f"{where}[{index}].text"
                try:
                    value = msgspec.json.decode(part.text)
                except msgspec.DecodeError as exc:
                    raise _refused(label, field, f"is not JSON ({exc})") from None
                return self._convert(value, field, label)
        raise _refused(label, where, "holds no data part (nor a text part holding JSON)")

    def encode(self, value: Any) -> list[Part]:
        parts = value_parts(value)
        if parts is None:
            raise TypeError(f"a value of type {type(value).__name__} is not a typed value")
        return parts

    def _convert(self, value: Any, where: str, label: str) -> Any:
        if self.is_pydantic:
            import pydantic

            try:
                return self.annotation.model_validate(value)
            except pydantic.ValidationError as exc:
                violations = [
                    FieldViolation(field=where + _loc(error["loc"]), description=error["msg"])
                    for error in exc.errors()
                ]
                raise _refused_all(label, violations) from None
        try:
            return msgspec.convert(value, self.annotation)
        except msgspec.ValidationError as exc:
            text = str(exc)
            path = ""
            at = _AT.search(text)
            if at is not None:
                path, text = at["path"], text[: at.start()]
            missing = _MISSING.match(text)
            if missing is not None:
                path += "." + missing["name"]
            raise _refused_all(
                label, [FieldViolation(field=where + path, description=text)]
            ) from None

    def _decode_file(self, parts: Sequence[Part], label: str, where: str) -> Any:
        for index, part in enumerate(parts):
            if part.raw is not None:
                if self.annotation is bytes:
                    return part.raw
                return File(data=part.raw, name=part.filename, media_type=part.media_type)
            if part.url is not None:
                if self.annotation is bytes:
                    raise _refused(label, f"{where}[{index}].url", "must be inline bytes (raw)")
                return File(url=part.url, name=part.filename, media_type=part.media_type)
        raise _refused(label, where, "holds no file part")


def typed_value(annotation: Any) -> TypedValue | None:
    """The codec of ``annotation`` when it is a typed value's type, else ``None``."""
    if annotation in (File, bytes):
        return TypedValue(annotation, "file")
    # The protocol's own objects (``Message``, ``Part``...) are Structs too, but never typed.
    if not isinstance(annotation, type) or issubclass(annotation, Model):
        return None
    if (
        annotation in _SCALARS
        or dataclasses.is_dataclass(annotation)
        or issubclass(annotation, msgspec.Struct)
        or _is_pydantic(annotation)
    ):
        return TypedValue(annotation, "data")
    return None


def value_parts(value: Any) -> list[Part] | None:
    """``value`` as parts when it is a typed value (see the module docstring), else ``None``."""
    if isinstance(value, File):
        if value.data is not None:
            return [Part(raw=value.data, filename=value.name, media_type=value.media_type)]
        return [Part(url=value.url, filename=value.name, media_type=value.media_type)]
    if isinstance(value, bytes):
        return [Part(raw=value, media_type="application/octet-stream")]
    if isinstance(value, _SCALARS):
        return [Part(data=value, media_type=_JSON)]
    if isinstance(value, msgspec.Struct) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
        return [Part(data=msgspec.to_builtins(value), media_type=_JSON)]
    if _is_pydantic(type(value)):
        return [Part(data=value.model_dump(mode="json"), media_type=_JSON)]
    return None


def _is_pydantic(annotation: Any) -> bool:
    # A pydantic model exists only once pydantic is imported: no import when it is not.
    pydantic = sys.modules.get("pydantic")
    return (
        pydantic is not None
        and isinstance(annotation, type)
        and issubclass(annotation, pydantic.BaseModel)
    )


def _loc(loc: Sequence[int | str]) -> str:
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in loc)


def _refused(label: str, field: str, description: str) -> InvalidParamsError:
    return _refused_all(label, [FieldViolation(field=field, description=description)])


def _refused_all(label: str, violations: list[FieldViolation]) -> InvalidParamsError:
    first = violations[0]
    return InvalidParamsError(
        f"The {label} is not valid: {first.field} {first.description}",
        field_violations=violations,
    )
