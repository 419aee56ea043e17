"""Converters between the generated ``lf.a2a.v1`` protobuf messages and ``peerwire.types``.

Nothing is written per message: each of our types has a plan, built once from its msgspec fields
and the proto descriptor of the message with the same name (the field names match too), saying
how each field crosses over. What a plan knows about the wire:

* presence: ``optional`` scalars, oneof members and message fields are read only when set
  (``HasField``) and written only when ours are (not ``None``; ``Part.data`` not ``UNSET``);
  an empty message we hold (``MutualTlsSecurityScheme()``, ``metadata={}``) is still marked set;
* enums travel by number (``TaskState.number``); an unknown number is a bad field;
* ``google.protobuf.Struct``/``Value`` become plain JSON values. Value numbers are doubles, so
  an integral one comes back as an ``int`` (JSON does not tell ``1`` from ``1.0``, and metadata
  such as ``{"count": 3}`` should stay what the sender wrote); integers beyond 2**53 lose
  precision on this binding, as on any ProtoJSON one;
* ``google.protobuf.Timestamp`` becomes our RFC 3339 string with millisecond precision (more
  digits only when the timestamp has them, so nothing is lost); ``bytes`` stay bytes;
* protobuf maps (``Struct`` members, ``securitySchemes``, ``scopes``) keep no order on the wire
  or in memory, so members are read back sorted by key: deterministic, if not the sender's order.

Reading checks what the proto cannot express (a REQUIRED message present, one member of a oneof
set, at least one part) through our types' own validation, and reports the first problem as
``InvalidParamsError`` with its JSON path (``message.parts[0]``), like the JSON decoder does.
"""

from __future__ import annotations

import enum
import math
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import msgspec
from google.protobuf import struct_pb2
from google.protobuf.message import DecodeError

from ... import types
from ...errors import FieldViolation, InvalidParamsError, InvalidRequestError
from ...types import Model
from ._gen import a2a_pb2

__all__ = [
    "from_bytes",
    "from_proto",
    "proto_class",
    "to_bytes",
    "to_proto",
]

M = TypeVar("M", bound=Model)

# A generated protobuf message; typed loosely because the generated code is not type-checked.
Proto = Any

_ABSENT: Any = object()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SAFE_INTEGER = 2**53
_TIMESTAMP = re.compile(
    r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})", re.IGNORECASE
)


# --- public API ---------------------------------------------------------------------------------


def proto_class(type_: type[Model]) -> Any:
    """The generated message class for one of our types (``Task`` -> ``lf.a2a.v1.Task``)."""
    return _plan(type_).proto


def to_proto(value: Model) -> Proto:
    """``value`` as its ``lf.a2a.v1`` protobuf message.

    Raises ``ValueError`` naming the field when a free-form member (``metadata``, ``data``)
    holds something that is not a JSON value.
    """
    plan = _plan(type(value))
    message = plan.proto()
    try:
        _write(message, value, plan)
    except _BadField as bad:
        raise ValueError(
            f"cannot convert {type(value).__name__} to protobuf: {bad.description} "
            f"(at {bad.path()})"
        ) from None
    return message


def from_proto(message: Proto, type_: type[M]) -> M:
    """The ``lf.a2a.v1`` protobuf ``message`` as ``type_``.

    Raises ``InvalidParamsError`` naming the JSON path of the first invalid field.
    """
    plan = _plan(type_)
    expected = plan.proto.DESCRIPTOR.full_name
    if message.DESCRIPTOR.full_name != expected:
        raise TypeError(f"expected a {expected}, got a {message.DESCRIPTOR.full_name}")
    try:
        return typing.cast(M, _read(message, plan))
    except _BadField as bad:
        field = bad.path()
        raise InvalidParamsError(
            f"Invalid parameters: {bad.description} (at {field})",
            field_violations=(FieldViolation(field=field, description=bad.description),),
        ) from None


def to_bytes(value: Model) -> bytes:
    """``value`` serialized as its protobuf message."""
    data: bytes = to_proto(value).SerializeToString()
    return data


def from_bytes(data: bytes, type_: type[M]) -> M:
    """Parse a serialized protobuf message into ``type_``.

    Raises ``InvalidRequestError`` when ``data`` is not a valid serialized message (truncated,
    wrong wire types, strings that are not UTF-8) and ``InvalidParamsError`` when it parses but
    is not a valid ``type_``.
    """
    plan = _plan(type_)
    message = plan.proto()
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise InvalidRequestError(
            f"Request payload validation error: the bytes are not a valid "
            f"{plan.proto.DESCRIPTOR.full_name} protobuf message ({exc})"
        ) from None
    return from_proto(message, type_)


# --- plans --------------------------------------------------------------------------------------


class _BadField(Exception):
    """A field that cannot be converted; the path grows as the error leaves nested messages."""

    def __init__(self, description: str, *where: str) -> None:
        super().__init__(description)
        self.description = description
        self.where = list(where)

    def inside(self, name: str) -> _BadField:
        self.where.insert(0, name)
        return self

    def path(self) -> str:
        return "".join(p if p.startswith("[") else f".{p}" for p in self.where).lstrip(".")


Reader = Callable[[Proto], Any]
Writer = Callable[[Proto, Any], None]


@dataclass(frozen=True, slots=True)
class _Field:
    name: str  # the Python attribute, also the proto field name
    json_name: str  # for error paths
    read: Reader  # returns _ABSENT when the proto field is not set
    write: Writer
    required_message: bool  # a REQUIRED message field: absence is an error, not a default


@dataclass(frozen=True, slots=True)
class _Plan:
    model: type[Model]
    proto: Any
    fields: tuple[_Field, ...]


_plans: dict[type[Model], _Plan] = {}


def _plan(type_: type[Model]) -> _Plan:
    plan = _plans.get(type_)
    if plan is None:
        plan = _plans[type_] = _build_plan(type_)
    return plan


def _build_plan(type_: type[Model]) -> _Plan:
    proto = getattr(a2a_pb2, type_.__name__, None)
    if proto is None or getattr(types, type_.__name__, None) is not type_:
        raise TypeError(f"{type_.__name__} is not an A2A message type of peerwire.types")
    by_name = proto.DESCRIPTOR.fields_by_name
    fields = []
    for info in msgspec.structs.fields(type_):
        descriptor = by_name[info.name]
        read, write = _converters(info, descriptor)
        required_message = info.required and descriptor.message_type is not None
        fields.append(_Field(info.name, info.encode_name, read, write, required_message))
    return _Plan(type_, proto, tuple(fields))


def _converters(info: msgspec.structs.FieldInfo, fd: Any) -> tuple[Reader, Writer]:
    """How one field is read from and written to protobuf, chosen from its descriptor."""
    name = info.name
    message_type = fd.message_type
    if message_type is None:
        enum_type = _enum_in(info.type)
        if enum_type is not None:
            return _enum_field(name, enum_type)
        if fd.is_repeated:
            return _repeated_scalar_field(name)
        if fd.has_presence:
            return _optional_scalar_field(name)
        return _scalar_field(name)
    if message_type.GetOptions().map_entry:
        value_type = message_type.fields_by_name["value"].message_type
        if value_type is None:
            return _string_map_field(name)
        return _message_map_field(name, _model_in(info.type))
    well_known = message_type.full_name
    if well_known == "google.protobuf.Struct":
        return _struct_field(name)
    if well_known == "google.protobuf.Value":
        return _value_field(name)
    if well_known == "google.protobuf.Timestamp":
        return _timestamp_field(name)
    model = _model_in(info.type)
    if fd.is_repeated:
        return _repeated_message_field(name, model)
    return _message_field(name, model)


def _model_in(annotation: Any) -> type[Model]:
    """The Model subclass named by an annotation such as ``Message | None`` or ``list[Part]``."""
    if isinstance(annotation, type) and issubclass(annotation, Model):
        return annotation
    for argument in typing.get_args(annotation):
        try:
            return _model_in(argument)
        except TypeError:
            continue
    raise TypeError(f"no A2A model type in {annotation!r}")


def _enum_in(annotation: Any) -> type[Any] | None:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return annotation
    return None


# --- reading and writing whole messages ---------------------------------------------------------


def _read(message: Proto, plan: _Plan) -> Model:
    values: dict[str, Any] = {}
    for field in plan.fields:
        try:
            value = field.read(message)
        except _BadField as bad:
            raise bad.inside(field.json_name) from None
        except (ValueError, KeyError, OverflowError) as exc:
            raise _BadField(_describe(exc), field.json_name) from None
        if value is not _ABSENT:
            values[field.name] = value
        elif field.required_message:
            raise _BadField("required field is missing", field.json_name)
    try:
        return plan.model(**values)
    except (TypeError, ValueError) as exc:
        raise _BadField(_describe(exc)) from None


def _write(message: Proto, value: Model, plan: _Plan) -> None:
    for field in plan.fields:
        try:
            field.write(message, getattr(value, field.name))
        except _BadField as bad:
            raise bad.inside(field.json_name) from None
        except (ValueError, TypeError) as exc:
            raise _BadField(_describe(exc), field.json_name) from None


def _describe(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, KeyError):
        return f"unknown value {text}"
    return text or type(exc).__name__


# --- one converter pair per kind of field -------------------------------------------------------


def _scalar_field(name: str) -> tuple[Reader, Writer]:
    def read(message: Proto) -> Any:
        return getattr(message, name)

    def write(message: Proto, value: Any) -> None:
        if value:  # every proto3 scalar default is falsy, and setting it is a no-op
            setattr(message, name, value)

    return read, write


def _optional_scalar_field(name: str) -> tuple[Reader, Writer]:
    def read(message: Proto) -> Any:
        return getattr(message, name) if message.HasField(name) else _ABSENT

    def write(message: Proto, value: Any) -> None:
        if value is not None:
            setattr(message, name, value)

    return read, write


def _repeated_scalar_field(name: str) -> tuple[Reader, Writer]:
    def read(message: Proto) -> Any:
        return list(getattr(message, name))

    def write(message: Proto, value: Any) -> None:
        if value:
            getattr(message, name).extend(value)

    return read, write


def _enum_field(name: str, enum_type: Any) -> tuple[Reader, Writer]:
    def read(message: Proto) -> Any:
        number = getattr(message, name)
        try:
            return enum_type.from_number(number)
        except KeyError:
            raise _BadField(f"{number} is not a {enum_type.__name__} number") from None

    def write(message: Proto, value: Any) -> None:
        setattr(message, name, value.number)

    return read, write


def _string_map_field(name: str) -> tuple[Reader, Writer]:
    def read(message: Proto) -> Any:
        return dict(sorted(getattr(message, name).items()))

    def write(message: Proto, value: Any) -> None:
        if value:
            getattr(message, name).update(value)

    return read, write


def _message_map_field(name: str, model: type[Model]) -> tuple[Reader, Writer]:
    def read(message: Proto) -> Any:
        plan = _plan(model)
        out = {}
        for key, item in sorted(getattr(message, name).items()):
            try:
                out[key] = _read(item, plan)
            except _BadField as bad:
                raise bad.inside(key) from None
        return out

    def write(message: Proto, value: Any) -> None:
        if not value:
            return
        plan = _plan(model)
        entries = getattr(message, name)
        for key, item in value.items():
            try:
                _write(entries[key], item, plan)  # indexing creates the entry, even when empty
            except _BadField as bad:
                raise bad.inside(key) from None

    return read, write


def _message_field(name: str, model: type[Model]) -> tuple[Reader, Writer]:
    def read(message: Proto) -> Any:
        if not message.HasField(name):
            return _ABSENT
        return _read(getattr(message, name), _plan(model))

    def write(message: Proto, value: Any) -> None:
        if value is not None:
            target = getattr(message, name)
            target.SetInParent()  # present even when every field of it is a default
            _write(target, value, _plan(model))

    return read, write


def _repeated_message_field(name: str, model: type[Model]) -> tuple[Reader, Writer]:
    def read(message: Proto) -> Any:
        plan = _plan(model)
        out = []
        for index, item in enumerate(getattr(message, name)):
            try:
                out.append(_read(item, plan))
            except _BadField as bad:
                raise bad.inside(f"[{index}]") from None
        return out

    def write(message: Proto, value: Any) -> None:
        if not value:
            return
        plan = _plan(model)
        container = getattr(message, name)
        for index, item in enumerate(value):
            try:
                _write(container.add(), item, plan)
            except _BadField as bad:
                raise bad.inside(f"[{index}]") from None

    return read, write


def _struct_field(name: str) -> tuple[Reader, Writer]:
    def read(message: Proto) -> Any:
        if not message.HasField(name):
            return _ABSENT
        return _struct_to_dict(getattr(message, name))

    def write(message: Proto, value: Any) -> None:
        if value is not None:
            target = getattr(message, name)
            target.SetInParent()
            _fill_struct(target, value)

    return read, write


def _value_field(name: str) -> tuple[Reader, Writer]:
    def read(message: Proto) -> Any:
        if not message.HasField(name):
            return msgspec.UNSET
        return _value_to_python(getattr(message, name))

    def write(message: Proto, value: Any) -> None:
        if value is not msgspec.UNSET:
            _fill_value(getattr(message, name), value)

    return read, write


def _timestamp_field(name: str) -> tuple[Reader, Writer]:
    def read(message: Proto) -> Any:
        if not message.HasField(name):
            return _ABSENT
        stamp = getattr(message, name)
        return _format_timestamp(stamp.seconds, stamp.nanos)

    def write(message: Proto, value: Any) -> None:
        if value is not None:
            stamp = getattr(message, name)
            stamp.seconds, stamp.nanos = _parse_timestamp(value)

    return read, write


# --- well-known types ---------------------------------------------------------------------------


def _value_to_python(value: Any) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        number: float = value.number_value
        if math.isfinite(number) and number.is_integer() and abs(number) <= _SAFE_INTEGER:
            return int(number)
        return number
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return _struct_to_dict(value.struct_value)
    if kind == "list_value":
        return [_value_to_python(item) for item in value.list_value.values]
    return None  # null_value, or a Value with no kind set (the proto's way of saying null)


def _struct_to_dict(struct: Any) -> dict[str, Any]:
    return {key: _value_to_python(item) for key, item in sorted(struct.fields.items())}


def _fill_value(target: Any, value: Any) -> None:
    if value is None:
        target.null_value = struct_pb2.NULL_VALUE
    elif isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int | float):
        target.number_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, dict):
        target.struct_value.SetInParent()
        _fill_struct(target.struct_value, value)
    elif isinstance(value, list | tuple):
        target.list_value.SetInParent()
        for index, item in enumerate(value):
            try:
                _fill_value(target.list_value.values.add(), item)
            except _BadField as bad:
                raise bad.inside(f"[{index}]") from None
    else:
        raise _BadField(f"{type(value).__name__} is not a JSON value")


def _fill_struct(target: Any, value: Any) -> None:
    if not isinstance(value, dict):
        raise _BadField(f"expected a JSON object, got {type(value).__name__}")
    fields = target.fields
    for key, item in value.items():
        if not isinstance(key, str):
            raise _BadField(f"object keys must be strings, got {key!r}")
        try:
            _fill_value(fields[key], item)
        except _BadField as bad:
            raise bad.inside(key) from None


def _format_timestamp(seconds: int, nanos: int) -> str:
    """A Timestamp as RFC 3339 in UTC: milliseconds, or 6 or 9 digits when they are needed."""
    if not 0 <= nanos < 1_000_000_000:
        raise _BadField(f"timestamp nanos {nanos} is out of range")
    try:
        moment = _EPOCH + timedelta(seconds=seconds)
    except OverflowError:
        raise _BadField(f"timestamp seconds {seconds} is out of range") from None
    if nanos % 1_000_000 == 0:
        fraction = f"{nanos // 1_000_000:03d}"
    elif nanos % 1_000 == 0:
        fraction = f"{nanos // 1_000:06d}"
    else:
        fraction = f"{nanos:09d}"
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}.{fraction}Z"
    )


def _parse_timestamp(text: str) -> tuple[int, int]:
    """Seconds and nanos of an RFC 3339 timestamp (any offset, up to 9 fractional digits)."""
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        raise _BadField(f"{text!r} is not an RFC 3339 timestamp")
    base, fraction, offset = match.groups()
    offset = "+00:00" if offset in ("Z", "z") else offset
    try:
        moment = datetime.fromisoformat(base.replace("t", "T") + offset)
    except ValueError as exc:
        raise _BadField(f"{text!r} is not a valid timestamp: {exc}") from None
    whole = moment - _EPOCH
    seconds = whole.days * 86_400 + whole.seconds
    nanos = int((fraction or "").ljust(9, "0"))
    return seconds, nanos
