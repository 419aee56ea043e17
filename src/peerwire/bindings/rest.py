"""The HTTP+JSON (REST) binding as a pure codec (A2A spec §11, §8.3.2).

One table, ``ROUTES``, says where each operation lives: verb, path template, request type,
whether it streams. The server side matches a request line against it (``match_route``) and
builds the typed request from path variables plus the JSON body (``body: "*"`` routes) or the
query string (GET/DELETE) with ``build_request``. The client side runs the same table backwards
(``encode_request``), so client and server cannot disagree about a path.

Paths are relative to the interface URL. Every route also exists under a leading
``/{tenant}`` segment. Matching rules (where paths are ambiguous):

* The custom verb (``:send``, ``:stream``, ``:cancel``, ``:subscribe``) is split off the last
  *raw* segment before percent-decoding, so an id containing ``:`` travels as ``%3A``. A suffix
  that is no known verb stays part of the segment (``GET /tasks/urn:x`` reads task ``urn:x``).
* Segments are percent-decoded one by one, so a tenant or id may carry ``%2F``.
* Routes without a tenant are tried first: ``/tasks/tasks`` is GetTask of task ``tasks``, not
  ListTasks of tenant ``tasks``. Tenant slugs equal to ``tasks`` or ``message`` cannot work.
* The first route whose path matches decides the resource; a verb it does not take is
  ``MethodNotAllowed`` (HTTP 405 with ``Allow``), an unknown path ``MethodNotFoundError``.

Decisions where the spec is silent: a path value also given in the body or the query must
agree with the path (else ``InvalidParamsError``); an empty path variable is
``InvalidParamsError``; unknown query parameters are ignored like unknown JSON members;
repeated values of a non-repeated parameter are refused; ``+`` in a query means a space
(form encoding, as gateways read it) except in timestamps, which never contain one. A body
is screened as JSON-RPC's is (``types.check_document``: nesting, UTF-8): what is not JSON is
``JSONParseError`` (400 INVALID_ARGUMENT, reason PARSE_ERROR).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode

import msgspec
import msgspec.inspect as mi

from ..errors import (
    A2AError,
    ContentTypeNotSupportedError,
    FieldViolation,
    InvalidParamsError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    to_rest_error,
)
from ..types import Timestamp, check_document, decode, encode, from_builtins
from .jsonrpc import METHODS

__all__ = [
    "A2A_JSON",
    "ROUTES",
    "VERSION_PARAM",
    "HttpRequest",
    "MethodNotAllowed",
    "Route",
    "RouteMatch",
    "build_request",
    "check_content_type",
    "encode_error",
    "encode_request",
    "encode_stream_error",
    "match_route",
    "route_for",
]

A2A_JSON = "application/a2a+json"
_JSON_TYPES = frozenset({A2A_JSON, "application/json"})
VERSION_PARAM = "A2A-Version"
"""The query parameter that may carry the version instead of the header (A2A spec §3.2.6)."""

_INT32 = (-(2**31), 2**31 - 1)
_HEX_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_TIMESTAMP_PATTERN = getattr(mi.type_info(Timestamp), "pattern", None)


@dataclass(frozen=True, slots=True)
class _Field:
    """One request field as the query string sees it."""

    name: str  # Python attribute
    wire: str  # camelCase JSON / query name
    kind: str  # str, pattern, int, bool, enum, list, or "" when it cannot travel in a query
    required: bool
    default: Any
    enum: type[Enum] | None = None
    pattern: str | None = None
    item: _Field | None = None  # the element of a list


@dataclass(frozen=True, slots=True)
class Route:
    """One verb + path template of the REST binding."""

    operation: str  # the gRPC rpc name, also the JSON-RPC method name
    method: str
    template: str  # e.g. "/{tenant}/tasks/{id}:cancel"; variables use the camelCase wire names
    request_type: type[Any]
    dispatch: str  # the Dispatcher method implementing the operation
    streaming: bool
    has_body: bool  # body "*": every field not bound by the path travels in the JSON body
    segments: tuple[str, ...]
    verb: str
    path_fields: tuple[_Field, ...]
    query_fields: tuple[_Field, ...]

    @property
    def tenant_variant(self) -> bool:
        return self.segments[0] == "{tenant}"

    def bind(self, segments: list[str]) -> dict[str, str] | None:
        """The path variables (by wire name) if ``segments`` (raw) fit this template."""
        values: dict[str, str] = {}
        for pattern, raw in zip(self.segments, segments, strict=True):
            if pattern[0] == "{":
                values[pattern[1:-1]] = raw
            elif pattern != raw:
                return None
        return values


@dataclass(frozen=True, slots=True)
class RouteMatch:
    """A request line that names a route; ``path_values`` are decoded, by wire name."""

    route: Route
    path_values: dict[str, str]


@dataclass(frozen=True, slots=True)
class MethodNotAllowed:
    """The path names a resource, but not with this verb (answer 405 with ``Allow``)."""

    path: str
    method: str
    allow: tuple[str, ...]

    def error(self) -> MethodNotFoundError:
        return MethodNotFoundError(
            f"Method not allowed: {self.method} {self.path} (allowed: {', '.join(self.allow)})",
            metadata={"allow": ", ".join(self.allow)},
        )


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """What a client sends for one operation. ``path`` is percent-encoded and relative to the
    interface URL; ``body`` is None for GET/DELETE and bodiless POSTs."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None

    @property
    def target(self) -> str:
        """Path and query string, ready to append to the interface URL."""
        if not self.query:
            return self.path
        return f"{self.path}?{urlencode(self.query, quote_via=quote, safe='')}"


# -- the table ---------------------------------------------------------------------------------

# (operation, verb, template, body "*"). The proto's http rules, plus POST for subscribe (the
# spec text's verb).
_TABLE: tuple[tuple[str, str, str, bool], ...] = (
    ("SendMessage", "POST", "/message:send", True),
    ("SendStreamingMessage", "POST", "/message:stream", True),
    ("GetTask", "GET", "/tasks/{id}", False),
    ("ListTasks", "GET", "/tasks", False),
    ("CancelTask", "POST", "/tasks/{id}:cancel", True),
    ("SubscribeToTask", "GET", "/tasks/{id}:subscribe", False),
    ("SubscribeToTask", "POST", "/tasks/{id}:subscribe", True),
    ("CreateTaskPushNotificationConfig", "POST", "/tasks/{taskId}/pushNotificationConfigs", True),
    ("GetTaskPushNotificationConfig", "GET", "/tasks/{taskId}/pushNotificationConfigs/{id}", False),
    ("ListTaskPushNotificationConfigs", "GET", "/tasks/{taskId}/pushNotificationConfigs", False),
    (
        "DeleteTaskPushNotificationConfig",
        "DELETE",
        "/tasks/{taskId}/pushNotificationConfigs/{id}",
        False,
    ),
    ("GetExtendedAgentCard", "GET", "/extendedAgentCard", False),
)


def _fields_of(request_type: type[Any]) -> dict[str, _Field]:
    info = mi.type_info(request_type)
    assert isinstance(info, mi.StructType)
    return {f.encode_name: _field(f.name, f.encode_name, f.type, f) for f in info.fields}


def _field(name: str, wire: str, type_: mi.Type, info: mi.Field | None = None) -> _Field:
    if isinstance(type_, mi.UnionType):
        present = [t for t in type_.types if not isinstance(t, mi.NoneType)]
        type_ = present[0] if len(present) == 1 else mi.AnyType()
    required = info.required if info is not None else True
    default = info.default if info is not None else None
    if info is not None and info.default_factory is not msgspec.NODEFAULT:
        default = info.default_factory()
    kind, enum, pattern, item = _kind_of(name, wire, type_)
    return _Field(name, wire, kind, required, default, enum=enum, pattern=pattern, item=item)


def _kind_of(
    name: str, wire: str, type_: mi.Type
) -> tuple[str, type[Enum] | None, str | None, _Field | None]:
    if isinstance(type_, mi.StrType):
        return ("pattern" if type_.pattern else "str"), None, type_.pattern, None
    if isinstance(type_, mi.BoolType):
        return "bool", None, None, None
    if isinstance(type_, mi.IntType):
        return "int", None, None, None
    if isinstance(type_, mi.EnumType):
        return "enum", type_.cls, None, None
    if isinstance(type_, mi.ListType):
        item = _field(name, wire, type_.item_type)
        if item.kind not in ("", "list"):
            return "list", None, None, item
    return "", None, None, None  # an object: it cannot travel in a query


def _route(operation: str, method: str, template: str, has_body: bool) -> Route:
    spec = METHODS[operation]
    path, _, verb = template.rpartition(":") if ":" in template else (template, "", "")
    segments = tuple(path.strip("/").split("/"))
    fields = _fields_of(spec.params)
    names = [s[1:-1] for s in segments if s.startswith("{")]
    path_fields = tuple(fields[n] for n in names)
    query_fields = () if has_body else tuple(f for w, f in fields.items() if w not in names)
    return Route(
        operation=operation,
        method=method,
        template=template,
        request_type=spec.params,
        dispatch=spec.operation,
        streaming=spec.streaming,
        has_body=has_body,
        segments=segments,
        verb=verb,
        path_fields=path_fields,
        query_fields=query_fields,
    )


def _build_routes() -> tuple[Route, ...]:
    plain = [_route(*row) for row in _TABLE]
    tenant = [
        _route(operation, method, "/{tenant}" + template, body)
        for operation, method, template, body in _TABLE
    ]
    return (*plain, *tenant)


ROUTES: tuple[Route, ...] = _build_routes()
"""Every route: the 12 plain ones (SubscribeToTask takes GET and POST) then their tenant
variants, in matching priority order."""

_VERBS = frozenset(r.verb for r in ROUTES if r.verb)
_BY_SHAPE: dict[tuple[int, str], list[Route]] = {}
for _r in ROUTES:
    _BY_SHAPE.setdefault((len(_r.segments), _r.verb), []).append(_r)
del _r


def route_for(operation: str, method: str | None = None, *, tenant: bool = False) -> Route:
    """The route of ``operation`` (with ``method`` where it has two, as SubscribeToTask)."""
    for route in ROUTES:
        if (
            route.operation == operation
            and route.tenant_variant == tenant
            and (method is None or route.method == method)
        ):
            return route
    known = sorted({r.operation for r in ROUTES})
    if operation not in known:
        raise ValueError(f"unknown A2A operation {operation!r}; known: {', '.join(known)}")
    verbs = sorted({r.method for r in ROUTES if r.operation == operation})
    raise ValueError(f"{operation} is not offered with {method}; it takes {', '.join(verbs)}")


# -- server side: matching -------------------------------------------------------------------


def match_route(method: str, path: str) -> RouteMatch | MethodNotAllowed:
    """Find the route for a request line. ``path`` is the raw (percent-encoded) path below
    the interface URL, without the query string.

    Raises ``MethodNotFoundError`` for a path no route has and ``InvalidParamsError`` for a
    malformed one (bad percent-encoding, an empty id).
    """
    if not path.startswith("/"):
        raise _not_found(method, path)
    segments = path[1:].split("/")
    last = segments[-1]
    attempts: list[tuple[list[str], str]] = []
    if ":" in last:
        head, _, verb = last.rpartition(":")
        if verb in _VERBS:
            attempts.append(([*segments[:-1], head], verb))
    attempts.append((segments, ""))
    for raw_segments, verb in attempts:
        for route in _BY_SHAPE.get((len(raw_segments), verb), ()):
            values = route.bind(raw_segments)
            if values is None:
                continue
            siblings = [
                r for r in _BY_SHAPE[(len(raw_segments), verb)] if r.segments == route.segments
            ]
            for sibling in siblings:
                if sibling.method == method:
                    decoded = {name: decode_path_segment(name, raw) for name, raw in values.items()}
                    return RouteMatch(sibling, decoded)
            return MethodNotAllowed(path, method, tuple(r.method for r in siblings))
    raise _not_found(method, path)


def _not_found(method: str, path: str) -> MethodNotFoundError:
    return MethodNotFoundError(
        f"No A2A REST route for {method} {path or '/'}: check the interface URL and tenant"
    )


def decode_path_segment(name: str, raw: str) -> str:
    """One path segment's value, percent-decoded as UTF-8: ``InvalidParamsError`` naming
    ``name`` when it is not validly percent-encoded, not UTF-8, or empty. Every REST codec
    (1.0 and 0.3) decodes its path values with it."""
    if _HEX_ESCAPE.search(raw):
        raise _invalid(name, "is not validly percent-encoded in the path")
    try:
        value = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise _invalid(name, "is not UTF-8 in the path") from None
    if not value:
        raise _invalid(name, "must not be empty in the path")
    return value


def _invalid(field: str, description: str) -> InvalidParamsError:
    return InvalidParamsError(
        f"Invalid parameters: {field} {description}",
        field_violations=(FieldViolation(field=field, description=description),),
    )


def check_content_type(content_type: str | None) -> None:
    """Refuse a request body that is not JSON (``application/a2a+json`` or ``application/json``)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media not in _JSON_TYPES:
        shown = content_type or "(none)"
        raise ContentTypeNotSupportedError(
            f"REST request bodies must be {A2A_JSON} or application/json, not {shown!r}"
        )


# -- server side: building the request ---------------------------------------------------------


def build_request(match: RouteMatch, *, query: str | bytes = "", body: bytes = b"") -> Any:
    """The typed request: path variables plus the body (``body: "*"`` routes) or the query."""
    route = match.route
    if route.has_body:
        return _from_body(route, match.path_values, body)
    return _from_query(route, match.path_values, query)


def _from_body(route: Route, path_values: Mapping[str, str], body: bytes) -> Any:
    if not body.strip():
        body = b"{}"
    check_document(body)
    if all(not f.required for f in route.path_fields):
        # The fast path (SendMessage): decode straight into the type, then bind the path.
        request = decode(body, route.request_type)
        changes = {}
        for field in route.path_fields:
            value = path_values[field.wire]
            given = getattr(request, field.name)
            if given and given != value:
                raise _conflict(field.wire, "body")
            changes[field.name] = value
        return msgspec.structs.replace(request, **changes) if changes else request
    try:
        document = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    if not isinstance(document, dict):
        raise InvalidRequestError("Request payload validation error: the body must be an object")
    for field in route.path_fields:
        value = path_values[field.wire]
        for spelling in (field.wire, field.name):
            given = document.pop(spelling, None)
            if given not in (None, "", value):
                raise _conflict(field.wire, "body")
        document[field.wire] = value
    return from_builtins(document, route.request_type)


def _conflict(wire: str, where: str) -> InvalidParamsError:
    return _invalid(wire, f"in the {where} differs from the value in the path")


def _from_query(route: Route, path_values: Mapping[str, str], query: str | bytes) -> Any:
    params = _parse_query(query)
    values: dict[str, Any] = {}
    for field in route.path_fields:
        value = path_values[field.wire]
        for given in params.pop(field.wire, []) + params.pop(field.name, []):
            if given != value:
                raise _conflict(field.wire, "query")
        values[field.name] = value
    for field in route.query_fields:
        texts = params.pop(field.wire, []) + params.pop(field.name, [])
        if texts:
            values[field.name] = _query_value(field, texts)
    return route.request_type(**values)


def _parse_query(query: str | bytes) -> dict[str, list[str]]:
    if isinstance(query, bytes):
        query = query.decode("latin-1")
    params: dict[str, list[str]] = {}
    if not query:
        return params
    try:
        pairs = parse_qsl(query, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise InvalidParamsError(
            "Invalid parameters: the query string is not UTF-8",
            field_violations=(FieldViolation("query", "must be UTF-8, percent-encoded"),),
        ) from None
    for name, value in pairs:
        params.setdefault(name, []).append(value)
    return params


def _query_value(field: _Field, given: list[str]) -> Any:
    if field.kind == "list":
        assert field.item is not None
        items = [item for value in given for item in value.split(",") if item]
        return [_scalar(field.item, item) for item in items]
    if not field.kind:
        raise _invalid(field.wire, "is an object and cannot be passed as a query parameter")
    if len(given) > 1:
        raise _invalid(field.wire, "was given more than once")
    return _scalar(field, given[0])


def _scalar(field: _Field, text: str) -> Any:
    kind = field.kind
    if kind == "str":
        return text
    if kind == "pattern":
        assert field.pattern is not None
        # A timestamp offset "+01:00" sent unencoded arrives as " 01:00" (form encoding).
        text = text.replace(" ", "+")
        if re.search(field.pattern, text) is None:
            raise _invalid(field.wire, _pattern_hint(field))
        return text
    if kind == "int":
        if re.fullmatch(r"[+-]?\d{1,12}", text) is None or not (
            _INT32[0] <= int(text) <= _INT32[1]
        ):
            raise _invalid(field.wire, f"must be a 32-bit decimal integer, got {text!r}")
        return int(text)
    if kind == "bool":
        lowered = text.lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise _invalid(field.wire, f"must be true or false, got {text!r}")
    assert kind == "enum" and field.enum is not None
    return _enum_value(field, field.enum, text)


def _enum_value(field: _Field, enum: type[Enum], text: str) -> Any:
    from_number = getattr(enum, "from_number", None)
    if from_number is not None and re.fullmatch(r"\d{1,4}", text):
        try:
            return from_number(int(text))
        except KeyError:
            pass
    try:
        return enum(text)
    except ValueError:
        names = ", ".join(str(member.value) for member in enum)
        raise _invalid(
            field.wire, f"must be one of {names} (or its number), got {text!r}"
        ) from None


def _pattern_hint(field: _Field) -> str:
    if field.pattern == _TIMESTAMP_PATTERN:
        return "must be an RFC 3339 timestamp with a time zone, such as 2025-11-09T10:30:00Z"
    return f"must match {field.pattern}"


# -- errors ----------------------------------------------------------------------------------


def encode_error(error: A2AError, *, http_status: int | None = None) -> tuple[int, bytes]:
    """HTTP status and google.rpc.Status body; ``http_status`` overrides the table's status
    where HTTP itself has a better one (405, 413), keeping ``code`` equal to it (AIP-193)."""
    status, document = to_rest_error(error)
    if http_status is not None:
        status = document["error"]["code"] = http_status
    return status, encode(document)


def encode_stream_error(error: A2AError) -> bytes:
    """The Status document of an error that ends a stream already under way."""
    return encode(to_rest_error(error)[1])


# -- client side -----------------------------------------------------------------------------


def encode_request(operation: str, request: Any, *, subscribe_method: str = "POST") -> HttpRequest:
    """The HTTP request for ``operation``; the tenant variant when ``request.tenant`` is set.

    ``subscribe_method`` picks SubscribeToTask's verb (the proto's http rule says GET, the
    spec text, §11.3.2, POST). Raises ``InvalidParamsError`` for an empty path value.
    """
    method = subscribe_method if operation == "SubscribeToTask" else None
    route = route_for(operation, method, tenant=bool(getattr(request, "tenant", "")))
    if not isinstance(request, route.request_type):
        raise TypeError(
            f"{operation} takes a {route.request_type.__name__}, not {type(request).__name__}"
        )
    path = _fill_template(route, request)
    if not route.has_body:
        return HttpRequest(route.method, path, tuple(_query_pairs(route.query_fields, request)))
    if route.operation == "SubscribeToTask":
        return HttpRequest(route.method, path)  # nothing is left for a body
    return HttpRequest(route.method, path, body=_body_without(route.path_fields, request))


def _fill_template(route: Route, request: Any) -> str:
    parts = []
    for segment in route.segments:
        if segment[0] == "{":
            field = next(f for f in route.path_fields if f.wire == segment[1:-1])
            value = getattr(request, field.name)
            if not value:
                raise _invalid(field.wire, "must not be empty: it is part of the path")
            # "." and ".." would be dot segments that URL libraries remove (RFC 3986 5.2.4).
            segment = "%2E" * len(value) if value in (".", "..") else quote(value, safe="")
        parts.append(segment)
    path = "/" + "/".join(parts)
    return f"{path}:{route.verb}" if route.verb else path


def _query_pairs(fields: Iterable[_Field], request: Any) -> Iterable[tuple[str, str]]:
    for field in fields:
        value = getattr(request, field.name)
        if value is None or value == field.default:
            continue
        if field.kind == "list":
            assert field.item is not None
            item = field.item
            yield from ((field.wire, _query_text(item, v)) for v in value)
        else:
            yield field.wire, _query_text(field, value)


def _query_text(field: _Field, value: Any) -> str:
    if field.kind == "bool":
        return "true" if value else "false"
    if field.kind == "enum":
        return str(value.value)
    if field.kind in ("str", "pattern", "int"):
        return str(value)
    raise ValueError(f"{field.wire} cannot be passed as a query parameter")


def _body_without(path_fields: tuple[_Field, ...], request: Any) -> bytes:
    if not path_fields:
        return encode(request)
    if all(not f.required for f in path_fields):
        defaults = {f.name: f.default for f in path_fields}
        return encode(msgspec.structs.replace(request, **defaults))
    document = msgspec.to_builtins(request)
    for field in path_fields:
        document.pop(field.wire, None)
    return encode(document)
