"""ProtoJSON encoding and decoding of the A2A types.

Output is canonical: camelCase names, enum names, proto presence rules (all declared on
``Model``). Input is what ProtoJSON parsers accept. The strict msgspec decoder handles the
canonical form in one pass; anything else a ProtoJSON parser would accept (original snake_case
field names, enum numbers, int32 values as strings, URL-safe or unpadded base64) takes a
slower second pass that rewrites those spellings into the canonical ones first. A value that is
still wrong is reported with the JSON path of the offending member.

The bindings screen every request body with ``check_document`` first, for what msgspec does
not check itself: how deeply it nests (``MAX_JSON_DEPTH``; the parser's own guard is Python's
recursion limit, which answers a deep document with ``RecursionError``, and lets data through
that no protobuf reader can take), and that members it skips unread are UTF-8 too.
``decode`` still maps a ``RecursionError`` to ``JSONParseError`` for documents nobody
screened (a client reading a response).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Generic, TypeVar

import msgspec

from ..errors import FieldViolation, InvalidParamsError, JSONParseError
from ._base import Role, TaskState

__all__ = [
    "MAX_JSON_DEPTH",
    "Encoded",
    "check_document",
    "decode",
    "decode_canonical",
    "encode",
    "from_builtins",
    "to_builtins",
]

MAX_JSON_DEPTH = 32
"""How many levels of objects and arrays a request document may nest (the outermost counts as
one). A2A's own members take at most six (a data part in a JSON-RPC SendMessage); the rest is
for free-form ``metadata`` and ``data``. 32 keeps every value accepted readable over gRPC,
where protobuf readers stop at 100 nested messages and each JSON object level costs three
(Value, Struct, map entry)."""

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
# What the nesting of a JSON text depends on: quotes (strings hold text, brackets too) and
# brackets.
_NOT_STRUCTURAL = bytes(set(range(256)) - set(b'"[]{}'))
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")


def encode(value: Any) -> bytes:
    """Encode an A2A object (or a plain JSON value holding them) as compact ProtoJSON bytes;
    an ``Encoded`` one is its bytes already."""
    if isinstance(value, Encoded):
        return value.json
    return _encoder.encode(value)


def to_builtins(value: Any) -> Any:
    """An A2A object as plain JSON values (dicts, lists, str, ...)."""
    return msgspec.to_builtins(value)


def check_document(raw: bytes, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise ``JSONParseError`` when the JSON text ``raw`` from a peer nests deeper than
    ``max_depth`` levels or is not UTF-8 (the parser reads only the members it keeps).

    Cheap for a usual request: nesting deeper than ``max_depth`` takes more opening brackets
    than that, and counting them is a loop in C, as is telling ASCII text; only a document
    with more brackets is scanned (strings cut out, then bracket pairs peeled level by level:
    at most ``max_depth`` passes, each a loop in C, costing about what parsing the document
    costs), only one with other bytes decoded. Text that is not JSON may pass; the parser then
    says what is wrong with it.
    """
    if raw.count(b"{") + raw.count(b"[") > max_depth and _deeper_than(raw, max_depth):
        raise JSONParseError(
            f"Invalid JSON payload: nested more than {max_depth} levels deep",
            metadata={"maxDepth": str(max_depth)},
        )
    if not raw.isascii():
        try:
            raw.decode()
        except UnicodeDecodeError as exc:
            raise JSONParseError(
                f"Invalid JSON payload: not UTF-8 (byte {exc.start}: {exc.reason})"
            ) from None


def _deeper_than(raw: bytes, limit: int) -> bool:
    # Reduced, in C loops, to the brackets outside strings, all of one kind: "[[][[]]]".
    if b"\\" in raw:
        # Only an escaped quote moves where a string ends; escaped backslashes go first.
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    # Two quotes side by side are an empty string, or the end of one and the start of the
    # next with no bracket between them: either way, nothing is lost by dropping them.
    reduced = raw.translate(None, _NOT_STRUCTURAL).replace(b'""', b"")
    if b'"' in reduced:
        # Strings holding brackets: with escapes gone, quotes alternate opening and closing.
        reduced = b"".join(reduced.split(b'"')[::2])
    brackets = reduced.translate(_AS_SQUARE)
    # Each pass removes every innermost pair, so a balanced sequence is gone after exactly as
    # many passes as it is deep.
    if b"[" * (limit + 1) in brackets:
        return True  # the usual shape of an attack, found without peeling
    for _ in range(limit):
        peeled = brackets.replace(b"[]", b"")
        if not peeled or len(peeled) == len(brackets):
            return False  # all gone in time, or unbalanced (not JSON: the parser says so)
        brackets = peeled
    return True


def decode(data: bytes | str, type_: type[T], *, path: str = "$") -> T:
    """Decode ProtoJSON bytes into ``type_``.

    Raises ``JSONParseError`` for bytes that are not JSON (or nest too deeply to parse) and
    ``InvalidParamsError`` naming the JSON path for JSON that is not a valid ``type_``.
    """
    raw = data.encode() if isinstance(data, str) else data
    try:
        # A document without an underscore has no snake_case key: a byte scan spares the
        # pattern (looking for the byte's value, a memchr, costs a fifth of looking for b"_").
        if _UNDERSCORE not in raw or _SNAKE_KEY.search(raw) is None:
            try:
                return _decoder(type_).decode(raw)
            except msgspec.ValidationError:
                pass  # maybe a non-canonical spelling: retried below
        loose = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        # Also a ValidationError of the untyped parse: a number beyond any JSON value's range.
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    except RecursionError:
        raise _too_deep() from None
    return from_builtins(loose, type_, path=path)


def decode_canonical(data: bytes, type_: type[T]) -> T:
    """Decode bytes that ``encode`` produced (canonical ProtoJSON, e.g. a stored snapshot).

    One strict pass: no search for other spellings, and a failure is a bug, not bad input.
    """
    return _decoder(type_).decode(data)


def from_builtins(value: Any, type_: type[T], *, path: str = "$") -> T:
    """Build ``type_`` from already-parsed JSON values, accepting every ProtoJSON spelling."""
    try:
        canonical = _canonicalise(value)
        return _decoder(type_).decode(_encoder.encode(canonical))
    except msgspec.ValidationError as exc:
        raise _invalid(exc, path) from None
    except RecursionError:
        raise _too_deep() from None


def _too_deep() -> JSONParseError:
    return JSONParseError("Invalid JSON payload: nested too deeply to parse")


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
