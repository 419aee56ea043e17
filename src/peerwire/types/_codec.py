"""ProtoJSON encoding and decoding of the A2A types.

Output is canonical: camelCase names, enum names, proto presence rules (all declared on
``Model``). Input is what ProtoJSON parsers accept. The strict msgspec decoder handles the
canonical form in one pass; anything else a ProtoJSON parser would accept (original snake_case
field names, enum numbers, int32 values as strings, URL-safe or unpadded base64) takes a
slower second pass that rewrites those spellings into the canonical ones first. A value that is
still wrong is reported with the JSON path of the offending member.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Generic, TypeVar

import msgspec

from ..errors import FieldViolation, InvalidParamsError, JSONParseError
from ._base import Role, TaskState

__all__ = ["Encoded", "decode", "decode_canonical", "encode", "from_builtins", "to_builtins"]

T = TypeVar("T")


class Encoded(Generic[T]):
    """An A2A object that is already canonical ProtoJSON (``encode``'s output): a stored
    snapshot handed out as it is, so nothing decodes it only to encode it again.

    ``encode`` returns its bytes as they are (only as the value encoded, not nested in
    another), so a binding splices them into its envelope; one that needs the object itself
    (gRPC) calls ``decode``.
    """

    __slots__ = ("json", "type")

    def __init__(self, json: bytes, type_: type[T]) -> None:
        self.json = json
        self.type = type_

    def decode(self) -> T:
        return decode_canonical(self.json, self.type)

    def __repr__(self) -> str:
        return f"Encoded({self.type.__name__}, {len(self.json)} bytes)"


_encoder = msgspec.json.Encoder()
_builtins_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}

# Members whose value is free-form JSON (Struct / Value): never rewritten.
_FREE_FORM = frozenset({"metadata", "data", "params", "header"})
# Members whose value is a map keyed by user-chosen names: keys kept, values normalised.
_MAPS = frozenset({"securitySchemes", "schemes", "scopes"})
_INT32 = frozenset({"historyLength", "pageSize", "totalSize"})
# A snake_case member name somewhere in the document: the strict pass would silently ignore it.
_SNAKE_KEY = re.compile(rb'"[a-z0-9]+_[a-z0-9_]*"\s*:')
_UNDERSCORE = ord("_")


def encode(value: Any) -> bytes:
    """Encode an A2A object (or a plain JSON value holding them) as compact ProtoJSON bytes;
    an ``Encoded`` one is its bytes already."""
    if isinstance(value, Encoded):
        return value.json
    return _encoder.encode(value)


def to_builtins(value: Any) -> Any:
    """An A2A object as plain JSON values (dicts, lists, str, ...)."""
    return msgspec.to_builtins(value)


def decode(data: bytes | str, type_: type[T], *, path: str = "$") -> T:
    """Decode ProtoJSON bytes into ``type_``.

    Raises ``JSONParseError`` for bytes that are not JSON and ``InvalidParamsError`` naming the
    JSON path for JSON that is not a valid ``type_``.
    """
    raw = data.encode() if isinstance(data, str) else data
    # A document without an underscore has no snake_case key: a byte scan spares the pattern
    # (looking for the byte's value, a memchr, costs a fifth of looking for b"_").
    if _UNDERSCORE not in raw or _SNAKE_KEY.search(raw) is None:
        try:
            return _decoder(type_).decode(raw)
        except msgspec.ValidationError:
            pass  # maybe a non-canonical spelling: retried below
        except msgspec.DecodeError as exc:
            raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    try:
        loose = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    return from_builtins(loose, type_, path=path)


def decode_canonical(data: bytes, type_: type[T]) -> T:
    """Decode bytes that ``encode`` produced (canonical ProtoJSON, e.g. a stored snapshot).

    One strict pass: no search for other spellings, and a failure is a bug, not bad input.
    """
    return _decoder(type_).decode(data)


def from_builtins(value: Any, type_: type[T], *, path: str = "$") -> T:
    """Build ``type_`` from already-parsed JSON values, accepting every ProtoJSON spelling."""
    canonical = _canonicalise(value)
    try:
        return _decoder(type_).decode(_encoder.encode(canonical))
    except msgspec.ValidationError as exc:
        raise _invalid(exc, path) from None


def _decoder(type_: type[T]) -> msgspec.json.Decoder[T]:
    decoder = _builtins_decoders.get(type_)
    if decoder is None:
        decoder = _builtins_decoders[type_] = msgspec.json.Decoder(type_)
    return decoder


def _invalid(exc: msgspec.ValidationError, path: str) -> InvalidParamsError:
    text = str(exc)
    reason, _, where = text.rpartition(" - at `")
    if not reason:
        reason, where = text, "$`"
    field = path + where.rstrip("`")[1:]
    return InvalidParamsError(
        f"Invalid parameters: {reason} (at {field})",
        field_violations=(FieldViolation(field=field, description=reason),),
    )


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _canonicalise(value: Any) -> Any:
    if isinstance(value, list):
        return [_canonicalise(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, member in value.items():
        name = _camel(key) if isinstance(key, str) and "_" in key else key
        if name in _FREE_FORM:
            out[name] = member
        elif member is None:
            continue  # ProtoJSON: null for any field but a Value (``data``) means "not set"
        elif name in _MAPS and isinstance(member, dict):
            out[name] = {k: _canonicalise(v) for k, v in member.items()}
        else:
            out[name] = _canonical_scalar(name, _canonicalise(member))
    return out


def _canonical_scalar(name: str, value: Any) -> Any:
    if name == "role" and _is_int(value):
        return _enum_name(Role, value)
    if name in ("state", "status") and _is_int(value):
        return _enum_name(TaskState, value)
    if name in _INT32 and isinstance(value, str) and re.fullmatch(r"-?\d+", value):
        return int(value)
    if name == "raw" and isinstance(value, str):
        return _standard_base64(value)
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _enum_name(enum: type[Role] | type[TaskState], number: int) -> Any:
    try:
        return enum.from_number(number).value
    except KeyError:
        return number  # left as is: the strict pass reports it with its path


def _standard_base64(text: str) -> str:
    cleaned = text.replace("-", "+").replace("_", "/").rstrip("=")
    padded = cleaned + "=" * (-len(cleaned) % 4)
    try:
        base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return text  # not base64 at all: the strict pass reports it
    return padded
