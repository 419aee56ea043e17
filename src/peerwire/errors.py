"""The one peerwire error tree, its wire table, and pure converters for the three bindings.

Tree (``*`` = has its own row in the wire table, ``_WIRE_TABLE``; others travel as their parent)::

    PeerwireError(Exception)
    ├── A2AError                          travels on the wire: .message .metadata .field_violations
    │   ├── JSONParseError *                      JSON-RPC standard errors (A2A spec §9.5)
    │   ├── InvalidRequestError *
    │   ├── MethodNotFoundError *
    │   ├── InvalidParamsError *
    │   ├── InternalError *
    │   │   └── ServerBusyError *                 at its cap or shutting down; retry later
    │   │       ├── StreamEndedError *            a stream ended before its task closed
    │   │       └── ServiceUnavailableError *     its store or cluster Redis is away; retry
    │   ├── TaskNotFoundError *                   A2A errors (A2A spec §5.4, 1.0.1 mapping)
    │   ├── TaskNotCancelableError *
    │   ├── PushNotificationNotSupportedError *
    │   ├── UnsupportedOperationError *
    │   ├── ContentTypeNotSupportedError *
    │   ├── InvalidAgentResponseError *
    │   │   ├── IllegalTransitionError            agent handler broke the task state machine
    │   │   └── InvalidResponseError              (also a ClientError, below)
    │   ├── ExtendedAgentCardNotConfiguredError *
    │   ├── ExtensionSupportRequiredError *
    │   ├── VersionNotSupportedError *
    │   ├── AuthenticationError *                 generic categories (spec §3.3.2), no JSON-RPC code
    │   ├── PermissionDeniedError *
    │   └── UnknownA2AError                       decoded but unclassifiable; keeps its wire info
    ├── ClientError                       client side, never sent by a server: .message .url
    │   ├── A2AConnectionError                    server unreachable (also builtin ConnectionError)
    │   ├── A2ATimeoutError                       no answer in time (also TimeoutError): .task_id
    │   ├── InvalidAgentCardError                 agent card missing, malformed or unusable
    │   ├── CardSignatureError                    agent card JWS signature missing or invalid
    │   ├── InvalidResponseError                  server answered something that is not valid A2A
    │   └── TaskNotCompletedError                 a typed call's task did not complete: .task
    └── VersionConflictError              store compare-and-swap lost a race (server internal)

Decisions worth knowing when coding against this module:

* The wire numbers live only in ``_WIRE_TABLE`` (and gRPC's canonical code numbers only in
  ``_GRPC_CANONICAL``). Values are the 1.0.1 mapping (A2A spec §9.5, §5.4; 1.0.0 had used
  409/415/502 and UNIMPLEMENTED in places). Reasons for the five JSON-RPC standard errors are not
  spec-defined; they match the a2a-sdk's (A2A spec §3.3.2).
* ``AuthenticationError`` and ``PermissionDeniedError`` have no JSON-RPC code: the JSON-RPC binding
  answers them at HTTP level (401 / 403), so ``to_jsonrpc_error`` raises ``ValueError`` for them.
* ``InvalidResponseError`` is both a ``ClientError`` (``except ClientError`` catches every local
  failure of a call) and an ``InvalidAgentResponseError``: when a peerwire server proxies to another
  agent and that agent answers garbage, the error propagates to the caller as -32006, which is what
  the spec reserves that code for.
* Subclasses without a table row (``IllegalTransitionError``, ``InvalidResponseError``) travel as
  their parent and decode as the parent: the wire cannot tell them apart.
* Decoders never raise. On REST and gRPC they classify by ``ErrorInfo.reason`` first (several
  errors share 400 / FAILED_PRECONDITION), then by the 1.0.0 statuses 409/415/502 (the
  1.0.0 table), then by the generic categories of A2A spec §3.3.2; anything else becomes
  ``UnknownA2AError`` carrying what was seen. A REST 404 whose body is not an A2A error
  document decodes as ``MethodNotFoundError`` (the URL hit no A2A route), not
  ``TaskNotFoundError``, so ``except TaskNotFoundError`` cannot mask a wrong URL. JSON-RPC
  errors classify by code first.
* peerwire's own errors (``StreamEndedError``, ``ServiceUnavailableError``) carry their
  ErrorInfo in the domain ``peerwire.dev`` (``PEERWIRE_ERROR_DOMAIN``), so their reasons
  cannot collide with A2A's or another server's. A reason of a peerwire domain class is
  honoured only in that domain (the same reason from another domain classifies by its
  status); A2A reasons are honoured in any domain. A peer that does not know the reason
  still sees what it travels as: its parent's code and status (a temporary
  ``ServerBusyError``).
* ErrorInfo metadata is ``map<string,string>``: constructors reject non-string values, decoders
  stringify scalars and drop the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

__all__ = [
    "BAD_REQUEST_TYPE",
    "ERROR_DOMAIN",
    "ERROR_INFO_TYPE",
    "MAX_ERROR_TEXT",
    "PEERWIRE_ERROR_DOMAIN",
    "A2AConnectionError",
    "A2AError",
    "A2ATimeoutError",
    "AuthenticationError",
    "CardSignatureError",
    "ClientError",
    "ContentTypeNotSupportedError",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "FieldViolation",
    "IllegalTransitionError",
    "InternalError",
    "InvalidAgentCardError",
    "InvalidAgentResponseError",
    "InvalidParamsError",
    "InvalidRequestError",
    "InvalidResponseError",
    "JSONParseError",
    "MethodNotFoundError",
    "PeerwireError",
    "PermissionDeniedError",
    "PushNotificationNotSupportedError",
    "ServerBusyError",
    "ServiceUnavailableError",
    "StreamEndedError",
    "TaskNotCancelableError",
    "TaskNotCompletedError",
    "TaskNotFoundError",
    "UnknownA2AError",
    "UnsupportedOperationError",
    "VersionConflictError",
    "VersionNotSupportedError",
    "WireInfo",
    "bounded_text",
    "error_details",
    "error_for_reason",
    "from_grpc_status",
    "from_jsonrpc_error",
    "from_rest_error",
    "grpc_status_of",
    "retry_after_of",
    "to_jsonrpc_error",
    "to_rest_error",
    "wire_info",
    "wire_message",
]

ERROR_DOMAIN = "a2a-protocol.org"
PEERWIRE_ERROR_DOMAIN = "peerwire.dev"
"""The ErrorInfo domain of peerwire's own errors (``StreamEndedError``,
``ServiceUnavailableError``), apart from A2A's."""
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"
MAX_ERROR_TEXT = 512
"""The longest text an encoded error carries: its message, each ErrorInfo metadata key and
value, each field violation's field and description. Longer ones are cut, ending in "…".
Messages quote the input they refuse, and gRPC sends them in trailers, which a default client
refuses beyond 8 KiB (RESOURCE_EXHAUSTED instead of the error)."""

# name -> (number, HTTP status): gRPC's canonical codes and google.rpc's HTTP mapping of them.
_GRPC_CANONICAL: dict[str, tuple[int, int]] = {
    "OK": (0, 200),
    "CANCELLED": (1, 499),
    "UNKNOWN": (2, 500),
    "INVALID_ARGUMENT": (3, 400),
    "DEADLINE_EXCEEDED": (4, 504),
    "NOT_FOUND": (5, 404),
    "ALREADY_EXISTS": (6, 409),
    "PERMISSION_DENIED": (7, 403),
    "RESOURCE_EXHAUSTED": (8, 429),
    "FAILED_PRECONDITION": (9, 400),
    "ABORTED": (10, 409),
    "OUT_OF_RANGE": (11, 400),
    "UNIMPLEMENTED": (12, 501),
    "INTERNAL": (13, 500),
    "UNAVAILABLE": (14, 503),
    "DATA_LOSS": (15, 500),
    "UNAUTHENTICATED": (16, 401),
}
_GRPC_NAME_BY_NUMBER = {number: name for name, (number, _) in _GRPC_CANONICAL.items()}
# Several names share an HTTP status; reversing makes the lowest-numbered (most generic) one win.
_GRPC_NAME_BY_HTTP = {http: name for name, (_, http) in reversed(_GRPC_CANONICAL.items())}


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One bad request field, rendered as an entry of ``google.rpc.BadRequest.fieldViolations``."""

    field: str
    description: str


@dataclass(frozen=True, slots=True)
class WireInfo:
    """How one error class appears on each binding."""

    jsonrpc_code: int | None
    http_status: int
    grpc_status: str
    grpc_code: int
    reason: str


def _restore(cls: type[PeerwireError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    err = cls.__new__(cls, *args)
    err.args = args
    err.__dict__.update(state)
    return err


class PeerwireError(Exception):
    """Root of every error peerwire raises."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Subclasses take keyword-only or non-message arguments, which the default
        # Exception pickling (cls(*args)) would lose or reject.
        return (_restore, (type(self), self.args, self.__dict__.copy()))


class A2AError(PeerwireError):
    """An error that travels on the wire. A bare ``A2AError`` travels as ``InternalError``."""

    default_message: ClassVar[str] = "Internal error"
    domain: str = ERROR_DOMAIN

    def __init__(
        self,
        message: str | None = None,
        *,
        metadata: Mapping[str, str] | None = None,
        field_violations: Iterable[FieldViolation] = (),
    ) -> None:
        self.message: str = self.default_message if message is None else message
        super().__init__(self.message)
        self.metadata: dict[str, str] = _checked_metadata(metadata)
        self.field_violations: tuple[FieldViolation, ...] = _checked_violations(field_violations)

    def __repr__(self) -> str:
        extras = "".join(
            f", {name}={value!r}"
            for name, value in (
                ("metadata", self.metadata),
                ("field_violations", self.field_violations),
            )
            if value
        )
        return f"{type(self).__name__}({self.message!r}{extras})"


def _checked_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    checked = dict(metadata or {})
    for key, value in checked.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"error metadata must map str to str (google.rpc.ErrorInfo.metadata is "
                f"map<string,string>); got {key!r}: {value!r} — convert the value with str()"
            )
    return checked


def _checked_violations(violations: Iterable[FieldViolation]) -> tuple[FieldViolation, ...]:
    checked = tuple(violations)
    for violation in checked:
        if not isinstance(violation, FieldViolation):
            raise TypeError(f"field_violations must hold FieldViolation objects, got {violation!r}")
    return checked


class JSONParseError(A2AError):
    """The request body is not valid JSON."""

    default_message = "Invalid JSON payload"


class InvalidRequestError(A2AError):
    """Valid JSON, but not a valid JSON-RPC request (or a malformed REST body)."""

    default_message = "Request payload validation error"


class MethodNotFoundError(A2AError):
    """Unknown method (JSON-RPC) or route (REST); gRPC's native UNIMPLEMENTED."""

    default_message = "Method not found"


class InvalidParamsError(A2AError):
    """Parameters failed validation; name the bad fields in ``field_violations``."""

    default_message = "Invalid parameters"


class InternalError(A2AError):
    """Unexpected server failure."""

    default_message = "Internal error"


class ServerBusyError(InternalError):
    """The server cannot take the work now (at its cap of working tasks, or shutting down).

    Temporary: retry later. Travels as JSON-RPC -32603 with HTTP 503 / gRPC UNAVAILABLE.
    """

    default_message = "The server is busy; retry later"


class StreamEndedError(ServerBusyError):
    """The server ended a stream before its task reached a closing state: it is shutting
    down (``cause`` ``"shutdown"``) or lost the source of the task's events (``"outage"``).

    The task is not over: follow it again with SubscribeToTask (``Client.subscribe(task_id)``),
    once the server is back or at another replica. Sent as a stream's last event (on gRPC its
    closing status), it travels as its parent, a temporary ``ServerBusyError`` (JSON-RPC
    -32603, HTTP 503, gRPC UNAVAILABLE), told apart by its ErrorInfo: reason
    ``STREAM_ENDED``, domain ``peerwire.dev``, metadata ``taskId`` and ``cause``.
    """

    default_message = "The server ended the stream before its task reached a closing state"
    domain = PEERWIRE_ERROR_DOMAIN
    SHUTDOWN: ClassVar[str] = "shutdown"
    OUTAGE: ClassVar[str] = "outage"

    def __init__(
        self,
        message: str | None = None,
        *,
        task_id: str | None = None,
        cause: str | None = None,
        metadata: Mapping[str, str] | None = None,
        field_violations: Iterable[FieldViolation] = (),
    ) -> None:
        facts = dict(metadata or {})
        if task_id is not None:
            facts["taskId"] = task_id
        if cause is not None:
            facts["cause"] = cause
        if message is None and facts.get("taskId"):
            why = f" ({facts['cause']})" if facts.get("cause") else ""
            message = (
                f"The server ended the stream of task {facts['taskId']}{why} before the task "
                "reached a closing state; subscribe to the task again to follow it"
            )
        super().__init__(message, metadata=facts, field_violations=field_violations)

    @property
    def task_id(self) -> str:
        """The task whose stream ended (``""`` if the server did not say)."""
        return self.metadata.get("taskId", "")

    @property
    def cause(self) -> str:
        """Why: ``"shutdown"``, ``"outage"`` (``""`` if the server did not say)."""
        return self.metadata.get("cause", "")


class ServiceUnavailableError(ServerBusyError):
    """A service the server depends on is away: its task store (SQLite locked or unreadable,
    PostgreSQL unreachable, its pool exhausted, a query not answered in time) or its
    cluster's Redis (the event bus, the work queue). Nothing is wrong with the request.

    Temporary: retry after ``retry_after`` seconds (``None``: the server did not say). A2A
    1.0 assigns no code of its own to a temporary failure; it names JSON-RPC -32603 for its
    System category, temporary ones included (spec §3.3.2), so this travels as its parent,
    a ``ServerBusyError`` (JSON-RPC -32603, HTTP 503, gRPC UNAVAILABLE), with a
    ``Retry-After`` header on HTTP answers, and is told apart from a server's bug by its
    ErrorInfo: reason ``SERVICE_UNAVAILABLE``, domain ``peerwire.dev``, metadata
    ``dependency`` (one of ``DEPENDENCIES``) and ``retryAfterSeconds``. Its message never
    carries the driver's text: the server's log has it, with the cause.
    """

    default_message = "A service this agent depends on is unavailable; retry later"
    domain = PEERWIRE_ERROR_DOMAIN
    TASK_STORE: ClassVar[str] = "task_store"
    EVENT_BUS: ClassVar[str] = "event_bus"
    WORK_QUEUE: ClassVar[str] = "work_queue"
    DEPENDENCIES: ClassVar[tuple[str, ...]] = (TASK_STORE, EVENT_BUS, WORK_QUEUE)
    DEFAULT_RETRY_AFTER: ClassVar[int] = 5
    """Seconds a server asks its callers to wait when the outage's own code has no better
    figure: a database restart or fail-over takes seconds, not milliseconds."""

    def __init__(
        self,
        message: str | None = None,
        *,
        dependency: str | None = None,
        retry_after: int | None = None,
        metadata: Mapping[str, str] | None = None,
        field_violations: Iterable[FieldViolation] = (),
    ) -> None:
        facts = dict(metadata or {})
        if dependency is not None:
            if dependency not in self.DEPENDENCIES:
                raise ValueError(
                    f"dependency must be one of {', '.join(self.DEPENDENCIES)}, got {dependency!r}"
                )
            facts["dependency"] = dependency
        if retry_after is not None:
            if retry_after < 0:
                raise ValueError(f"retry_after must be >= 0 seconds, got {retry_after}")
            facts["retryAfterSeconds"] = str(retry_after)
        if message is None and facts.get("dependency") in _DEPENDENCY_NAMES:
            message = f"The agent's {_DEPENDENCY_NAMES[facts['dependency']]} is unavailable"
            if facts.get("retryAfterSeconds"):
                message += f"; retry in {facts['retryAfterSeconds']} s"
        super().__init__(message, metadata=facts, field_violations=field_violations)

    @property
    def dependency(self) -> str:
        """What is away: ``"task_store"``, ``"event_bus"``, ``"work_queue"`` (``""`` if the
        server did not say; a peer's own word is kept as it sent it)."""
        return self.metadata.get("dependency", "")

    @property
    def retry_after(self) -> int | None:
        """Seconds to wait before retrying, as the server said (``None``: it did not)."""
        text = self.metadata.get("retryAfterSeconds", "")
        return int(text) if text.isascii() and text.isdigit() else None


_DEPENDENCY_NAMES = {
    ServiceUnavailableError.TASK_STORE: "task store",
    ServiceUnavailableError.EVENT_BUS: "event bus",
    ServiceUnavailableError.WORK_QUEUE: "work queue",
}


def retry_after_of(err: A2AError) -> int | None:
    """The ``Retry-After`` seconds an answer carrying ``err`` says, if any."""
    return err.retry_after if isinstance(err, ServiceUnavailableError) else None


class TaskNotFoundError(A2AError):
    """Unknown, inaccessible or purged task id, or unknown push-config id."""

    default_message = "Task not found"


class TaskNotCancelableError(A2AError):
    """The task is in a state that cannot be canceled (it is terminal)."""

    default_message = "Task cannot be canceled"


class PushNotificationNotSupportedError(A2AError):
    """Push-notification operation on an agent without ``capabilities.pushNotifications``."""

    default_message = "Push notifications are not supported by this agent"


class UnsupportedOperationError(A2AError):
    """Operation not supported, e.g. streaming without the capability or a message to a
    terminal task (what the spec says; the a2a-sdk answers ``InvalidParamsError`` there, and
    peerwire's client accepts both). Also the error for any message a task cannot take in
    its current state: an answer to a task no longer waiting for it, because another
    message answered its question first (``protocol.no_longer_waiting``; metadata ``taskId``
    and ``state``)."""

    default_message = "This operation is not supported"


class ContentTypeNotSupportedError(A2AError):
    """An input part's media type is not accepted by the agent or skill."""

    default_message = "Content type not supported"


class InvalidAgentResponseError(A2AError):
    """An agent produced a response that does not conform to A2A."""

    default_message = "Invalid agent response"


class ExtendedAgentCardNotConfiguredError(A2AError):
    """The card declares an extended card but none is configured."""

    default_message = "Extended agent card is not configured"


class ExtensionSupportRequiredError(A2AError):
    """The card marks an extension required and the client did not request it."""

    default_message = "A required extension was not requested"


class VersionNotSupportedError(A2AError):
    """The requested ``A2A-Version`` is not supported by this interface."""

    default_message = "A2A protocol version not supported"


class AuthenticationError(A2AError):
    """Missing or invalid credentials. JSON-RPC has no code for it: answer with HTTP 401.

    ``www_authenticate`` is the challenge for the HTTP bindings' ``WWW-Authenticate`` header
    (``""``: the binding uses its authenticator's generic challenge). It never travels in
    the error body.
    """

    default_message = "Authentication required"

    def __init__(
        self,
        message: str | None = None,
        *,
        www_authenticate: str = "",
        metadata: Mapping[str, str] | None = None,
        field_violations: Iterable[FieldViolation] = (),
    ) -> None:
        super().__init__(message, metadata=metadata, field_violations=field_violations)
        self.www_authenticate = www_authenticate


class PermissionDeniedError(A2AError):
    """Valid credentials without the needed rights. JSON-RPC has no code: answer with HTTP 403.

    ``www_authenticate`` as for ``AuthenticationError`` (RFC 6750 ``insufficient_scope``).
    """

    default_message = "Permission denied"

    def __init__(
        self,
        message: str | None = None,
        *,
        www_authenticate: str = "",
        metadata: Mapping[str, str] | None = None,
        field_violations: Iterable[FieldViolation] = (),
    ) -> None:
        super().__init__(message, metadata=metadata, field_violations=field_violations)
        self.www_authenticate = www_authenticate


class IllegalTransitionError(InvalidAgentResponseError):
    """An agent handler attempted a task state transition the state machine forbids."""

    def __init__(
        self,
        from_state: str | Enum | None,
        to_state: str | Enum,
        message: str | None = None,
        *,
        task_id: str | None = None,
        metadata: Mapping[str, str] | None = None,
        field_violations: Iterable[FieldViolation] = (),
    ) -> None:
        self.from_state: str | None = None if from_state is None else _state_name(from_state)
        self.to_state: str = _state_name(to_state)
        self.task_id: str | None = task_id
        if message is None:
            where = f" for task {task_id}" if task_id else ""
            source = self.from_state or "(new task)"
            message = f"Illegal task state transition{where}: {source} -> {self.to_state}"
        facts = {} if self.from_state is None else {"fromState": self.from_state}
        facts["toState"] = self.to_state
        if task_id is not None:
            facts["taskId"] = task_id
        super().__init__(
            message, metadata={**facts, **(metadata or {})}, field_violations=field_violations
        )


def _state_name(state: str | Enum) -> str:
    if isinstance(state, Enum):
        return state.value if isinstance(state.value, str) else state.name
    return str(state)


class UnknownA2AError(A2AError):
    """A decoded error no class matches. ``wire_info(err)`` returns what was received, with
    gaps filled from gRPC's canonical mapping, so re-encoding it (e.g. in a proxy) is faithful."""

    default_message = "Unknown error"

    def __init__(
        self,
        message: str | None = None,
        *,
        jsonrpc_code: int | None = None,
        http_status: int | None = None,
        grpc_status: str | None = None,
        reason: str = "",
        domain: str = ERROR_DOMAIN,
        metadata: Mapping[str, str] | None = None,
        field_violations: Iterable[FieldViolation] = (),
    ) -> None:
        super().__init__(message, metadata=metadata, field_violations=field_violations)
        # An error status must stay an error status whatever garbage we were handed.
        if http_status is not None and not 400 <= http_status <= 599:
            http_status = None
        name = grpc_status if grpc_status in _GRPC_CANONICAL else None
        if name is None or name == "OK":
            name = _GRPC_NAME_BY_HTTP.get(http_status or 500, "UNKNOWN")
        grpc_code, canonical_http = _GRPC_CANONICAL[name]
        if jsonrpc_code is None:
            jsonrpc_code = _WIRE_TABLE[InternalError].jsonrpc_code
        self.wire = WireInfo(jsonrpc_code, http_status or canonical_http, name, grpc_code, reason)
        self.domain = domain


class ClientError(PeerwireError):
    """A call failed on the client side; a server never sends these."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.message: str = message
        self.url: str | None = url


class A2AConnectionError(ClientError, ConnectionError):
    """The server could not be reached (DNS, refused, TLS, reset)."""


class A2ATimeoutError(ClientError, TimeoutError):
    """The server did not answer in time.

    ``task_id`` is the task the call was following, when the client knows it: a stream or
    subscription that had received its task, or a message continuing a task (``task_id=``).
    The task may still be running; ``Client.subscribe(task_id)`` or ``get_task`` follow it.
    It is ``None`` when the agent said no task id before the time was up: a blocking send of
    a new message learns the id from the answer only (``Client.stream`` learns it from the
    first event, ``return_immediately=True`` at once).
    """

    def __init__(self, message: str, *, url: str | None = None, task_id: str | None = None) -> None:
        super().__init__(message, url=url)
        self.task_id: str | None = task_id


class InvalidAgentCardError(ClientError):
    """The agent card is missing, malformed, or lacks a usable interface."""


class CardSignatureError(ClientError):
    """The agent card's JWS signature is missing or does not verify."""


class InvalidResponseError(InvalidAgentResponseError, ClientError):
    """The server answered something that is not valid A2A (bad JSON, wrong shape, bad order)."""

    def __init__(
        self,
        message: str | None = None,
        *,
        url: str | None = None,
        metadata: Mapping[str, str] | None = None,
        field_violations: Iterable[FieldViolation] = (),
    ) -> None:
        super().__init__(message, metadata=metadata, field_violations=field_violations)
        self.url = url


class TaskNotCompletedError(ClientError):
    """A typed call's task ended without completing (failed, rejected, canceled) or stopped to
    ask for something (input, authorization): it has no result to return. ``task`` is the
    task as the agent answered it; a question can be answered with ``Client.send(task_id=)``.
    """

    def __init__(self, message: str, *, task: Any, url: str | None = None) -> None:
        super().__init__(message, url=url)
        self.task: Any = task


class VersionConflictError(PeerwireError):
    """A store compare-and-swap failed: the task changed since it was read. Reload and retry.

    ``actual`` is None when the store no longer has the task.
    """

    def __init__(self, task_id: str, expected: int, actual: int | None) -> None:
        found = "no such task" if actual is None else f"version {actual}"
        super().__init__(
            f"Task {task_id!r} changed concurrently: expected version {expected}, found {found}"
        )
        self.task_id = task_id
        self.expected = expected
        self.actual = actual


def _row(jsonrpc_code: int | None, http_status: int, grpc_status: str, reason: str) -> WireInfo:
    return WireInfo(jsonrpc_code, http_status, grpc_status, _GRPC_CANONICAL[grpc_status][0], reason)


# The wire table: the only place these numbers appear (A2A spec §9.5, §5.4, §3.3.2; 1.0.1).
_WIRE_TABLE: dict[type[A2AError], WireInfo] = {
    JSONParseError: _row(-32700, 400, "INVALID_ARGUMENT", "PARSE_ERROR"),
    InvalidRequestError: _row(-32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
    MethodNotFoundError: _row(-32601, 404, "UNIMPLEMENTED", "METHOD_NOT_FOUND"),
    InvalidParamsError: _row(-32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
    InternalError: _row(-32603, 500, "INTERNAL", "INTERNAL_ERROR"),
    ServerBusyError: _row(-32603, 503, "UNAVAILABLE", "UNAVAILABLE"),
    StreamEndedError: _row(-32603, 503, "UNAVAILABLE", "STREAM_ENDED"),
    ServiceUnavailableError: _row(-32603, 503, "UNAVAILABLE", "SERVICE_UNAVAILABLE"),
    TaskNotFoundError: _row(-32001, 404, "NOT_FOUND", "TASK_NOT_FOUND"),
    TaskNotCancelableError: _row(-32002, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
    PushNotificationNotSupportedError: _row(
        -32003, 400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED"
    ),
    UnsupportedOperationError: _row(-32004, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"),
    ContentTypeNotSupportedError: _row(
        -32005, 400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"
    ),
    InvalidAgentResponseError: _row(-32006, 500, "INTERNAL", "INVALID_AGENT_RESPONSE"),
    ExtendedAgentCardNotConfiguredError: _row(
        -32007, 400, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    ),
    ExtensionSupportRequiredError: _row(
        -32008, 400, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED"
    ),
    VersionNotSupportedError: _row(-32009, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"),
    AuthenticationError: _row(None, 401, "UNAUTHENTICATED", "UNAUTHENTICATED"),
    PermissionDeniedError: _row(None, 403, "PERMISSION_DENIED", "PERMISSION_DENIED"),
}

_BY_JSONRPC_CODE: dict[int, type[A2AError]] = {}
for _row_cls, _row_info in _WIRE_TABLE.items():
    # -32603 is shared by InternalError and ServerBusyError: the first row (the parent) wins.
    if _row_info.jsonrpc_code is not None:
        _BY_JSONRPC_CODE.setdefault(_row_info.jsonrpc_code, _row_cls)
del _row_cls, _row_info
_BY_REASON = {info.reason: cls for cls, info in _WIRE_TABLE.items()}

# Without a reason, a status names a category (A2A spec §3.3.2), not one error; these stand in.
_GENERIC: tuple[type[A2AError], ...] = (
    InvalidParamsError,
    AuthenticationError,
    PermissionDeniedError,
    TaskNotFoundError,
    InternalError,
)
_BY_GRPC_STATUS = {_WIRE_TABLE[cls].grpc_status: cls for cls in (*_GENERIC, MethodNotFoundError)}
_BY_HTTP_STATUS = {_WIRE_TABLE[cls].http_status: cls for cls in _GENERIC}
# The superseded 1.0.0 mapping (409/415/502); these statuses are unambiguous.
_BY_LEGACY_HTTP_STATUS: dict[int, type[A2AError]] = {
    409: TaskNotCancelableError,
    415: ContentTypeNotSupportedError,
    502: InvalidAgentResponseError,
}


def wire_info(err_or_cls: A2AError | type[A2AError]) -> WireInfo:
    """The wire codes of an error instance or class (subclasses inherit their parent's row)."""
    if isinstance(err_or_cls, UnknownA2AError):
        return err_or_cls.wire
    cls = err_or_cls if isinstance(err_or_cls, type) else type(err_or_cls)
    if not issubclass(cls, A2AError):
        raise TypeError(f"{cls.__name__} is not an A2AError and has no wire representation")
    if issubclass(cls, UnknownA2AError):
        return UnknownA2AError().wire
    for klass in cls.__mro__:
        if issubclass(klass, A2AError) and klass in _WIRE_TABLE:
            return _WIRE_TABLE[klass]
    return _WIRE_TABLE[InternalError]


def error_for_reason(reason: str, domain: str = ERROR_DOMAIN) -> type[A2AError] | None:
    """The class whose ErrorInfo reason is ``reason`` (exact match) in ``domain``, or None.

    A2A's reasons match in any domain (servers do not all spell theirs alike); the reason of
    a class with a domain of its own (peerwire's) only in that domain.
    """
    cls = _BY_REASON.get(reason)
    if cls is not None and cls.domain != ERROR_DOMAIN and cls.domain != domain:
        return None
    return cls


# --- encoding ---------------------------------------------------------------------------------


def bounded_text(text: str, limit: int = MAX_ERROR_TEXT) -> str:
    """``text`` cut to at most ``limit`` characters, ending in "…" when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def wire_message(err: A2AError, limit: int = MAX_ERROR_TEXT) -> str:
    """The message of ``err`` as it travels: at most ``limit`` characters."""
    return bounded_text(err.message, limit)


def error_details(err: A2AError, limit: int = MAX_ERROR_TEXT) -> list[dict[str, Any]]:
    """The typed detail objects (ProtoJSON ``Any`` form) shared by all three bindings:
    an ErrorInfo, then a BadRequest when there are field violations. Every text is at most
    ``limit`` characters long."""
    details: list[dict[str, Any]] = []
    reason = wire_info(err).reason
    if reason:
        info: dict[str, Any] = {"@type": ERROR_INFO_TYPE, "reason": reason, "domain": err.domain}
        if err.metadata:
            info["metadata"] = {
                bounded_text(k, limit): bounded_text(v, limit) for k, v in err.metadata.items()
            }
        details.append(info)
    if err.field_violations:
        violations = [
            {
                "field": bounded_text(v.field, limit),
                "description": bounded_text(v.description, limit),
            }
            for v in err.field_violations
        ]
        details.append({"@type": BAD_REQUEST_TYPE, "fieldViolations": violations})
    return details


def to_jsonrpc_error(err: A2AError) -> dict[str, Any]:
    """The JSON-RPC ``error`` member. Raises ValueError for errors without a JSON-RPC code
    (authentication, permission): the JSON-RPC binding answers those with HTTP 401/403."""
    info = wire_info(err)
    if info.jsonrpc_code is None:
        raise ValueError(
            f"{type(err).__name__} has no JSON-RPC code; the JSON-RPC binding must answer it "
            f"at HTTP level with status {info.http_status}"
        )
    obj: dict[str, Any] = {"code": info.jsonrpc_code, "message": wire_message(err)}
    details = error_details(err)
    if details:
        obj["data"] = details
    return obj


def to_rest_error(err: A2AError) -> tuple[int, dict[str, Any]]:
    """HTTP status and the google.rpc.Status body (AIP-193 HTTP form) of the REST binding."""
    info = wire_info(err)
    status: dict[str, Any] = {
        "code": info.http_status,
        "status": info.grpc_status,
        "message": wire_message(err),
    }
    details = error_details(err)
    if details:
        status["details"] = details
    return info.http_status, {"error": status}


def grpc_status_of(err: A2AError) -> tuple[int, str]:
    """The gRPC status code number and message; pack ``error_details(err)`` as the details."""
    return wire_info(err).grpc_code, wire_message(err)


# --- decoding ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Details:
    reason: str = ""
    domain: str = ERROR_DOMAIN
    metadata: Mapping[str, str] = field(default_factory=dict)
    violations: tuple[FieldViolation, ...] = ()


def _parse_details(raw: object) -> _Details:
    if isinstance(raw, Mapping):
        raw = [raw]
    if not isinstance(raw, list | tuple):
        return _Details()
    items = [item for item in raw if isinstance(item, Mapping)]
    infos = [
        item
        for item in items
        if _has_type(item, "google.rpc.ErrorInfo")
        or ("@type" not in item and isinstance(item.get("reason"), str))
    ]
    violations = tuple(
        violation
        for item in items
        if _has_type(item, "google.rpc.BadRequest")
        for violation in _parse_violations(item)
    )
    # Prefer an ErrorInfo we can classify, and the A2A domain over foreign ones.
    infos.sort(key=lambda i: (_unclassifiable(i), i.get("domain") != ERROR_DOMAIN))
    if not infos:
        return _Details(violations=violations)
    info = infos[0]
    reason = info.get("reason")
    domain = info.get("domain")
    return _Details(
        reason=reason if isinstance(reason, str) else "",
        domain=domain if isinstance(domain, str) and domain else ERROR_DOMAIN,
        metadata=_string_map(info.get("metadata")),
        violations=violations,
    )


def _unclassifiable(info: Mapping[Any, Any]) -> bool:
    reason, domain = info.get("reason"), info.get("domain")
    if not isinstance(reason, str):
        return True
    return error_for_reason(reason, domain if isinstance(domain, str) else ERROR_DOMAIN) is None


def _has_type(item: Mapping[Any, Any], name: str) -> bool:
    type_url = item.get("@type")
    return isinstance(type_url, str) and type_url.rsplit("/", 1)[-1] == name


def _parse_violations(bad_request: Mapping[Any, Any]) -> list[FieldViolation]:
    raw = bad_request.get("fieldViolations", bad_request.get("field_violations"))
    if not isinstance(raw, list):
        return []
    return [
        FieldViolation(str(v.get("field", "")), str(v.get("description", "")))
        for v in raw
        if isinstance(v, Mapping)
    ]


def _string_map(raw: object, exclude: Iterable[str] = ()) -> dict[str, str]:
    """Scalar entries of a JSON object as strings; nested values are dropped."""
    if not isinstance(raw, Mapping):
        return {}
    skip = set(exclude)
    out: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or key in skip:
            continue
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, bool | int | float):
            out[key] = json.dumps(value)
    return out


def _classify(
    details: _Details, grpc_status: str | None, http_status: int | None, a2a_body: bool = True
) -> type[A2AError] | None:
    by_reason = error_for_reason(details.reason, details.domain) if details.reason else None
    if by_reason is not None:
        return by_reason
    if http_status in _BY_LEGACY_HTTP_STATUS:
        return _BY_LEGACY_HTTP_STATUS[http_status]
    if grpc_status is not None:
        return _BY_GRPC_STATUS.get(grpc_status)
    if http_status == _WIRE_TABLE[TaskNotFoundError].http_status and not a2a_body:
        return MethodNotFoundError
    return _BY_HTTP_STATUS.get(http_status) if http_status is not None else None


def _build(
    cls: type[A2AError] | None,
    message: str | None,
    details: _Details,
    *,
    jsonrpc_code: int | None = None,
    http_status: int | None = None,
    grpc_status: str | None = None,
) -> A2AError:
    if cls is None:
        return UnknownA2AError(
            message,
            jsonrpc_code=jsonrpc_code,
            http_status=http_status,
            grpc_status=grpc_status,
            reason=details.reason,
            domain=details.domain,
            metadata=details.metadata,
            field_violations=details.violations,
        )
    return cls(message, metadata=details.metadata, field_violations=details.violations)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def from_jsonrpc_error(obj: object) -> A2AError:
    """Decode a JSON-RPC ``error`` member: by code, then by ErrorInfo reason, else UnknownA2AError.

    ``data`` may be the 1.0 array of typed details, a single object (0.3: its scalar members become
    metadata), absent, or garbage.
    """
    if not isinstance(obj, Mapping):
        return UnknownA2AError(f"Malformed JSON-RPC error object: {_excerpt(obj)}")
    code = obj.get("code")
    data = obj.get("data")
    details = _parse_details(data)
    if isinstance(data, Mapping) and "@type" not in data and not details.reason:
        details = _Details(metadata=_string_map(data))
    jsonrpc_code = code if _is_int(code) else None
    cls = _BY_JSONRPC_CODE.get(jsonrpc_code) if jsonrpc_code is not None else None
    refined = error_for_reason(details.reason, details.domain) if details.reason else None
    if cls is not None and refined is not None and issubclass(refined, cls):
        cls = refined  # a code shared by a subclass (-32603: ServerBusyError) is told by its reason
    cls = cls or _classify(details, None, None)
    message = _text(obj.get("message"))
    if cls is None and message is None:
        message = f"JSON-RPC error with unknown code {code!r}"
    return _build(cls, message, details, jsonrpc_code=jsonrpc_code)


def from_rest_error(http_status: int, body: object) -> A2AError:
    """Decode a REST error response. ``body`` may be the parsed JSON, or raw bytes/str.

    Accepts the google.rpc.Status form (also without the ``error`` wrapper), RFC 9457
    problem+json (some spec examples show it), the 1.0.0 status table, and anything else.
    """
    document = _parse_json(body)
    status = document.get("error") if isinstance(document, Mapping) else None
    if (
        isinstance(document, Mapping)
        and not isinstance(status, Mapping)
        and _is_bare_status(document)
    ):
        status = document
    if isinstance(status, Mapping):
        grpc_status = status.get("status")
        details = _parse_details(status.get("details"))
        cls = _classify(
            details,
            grpc_status if grpc_status in _GRPC_CANONICAL else None,
            http_status,
        )
        message = _text(status.get("message"))
        return _build(cls, message, details, http_status=http_status, grpc_status=_str(grpc_status))
    if isinstance(document, Mapping) and _is_problem(document):
        details = _Details(
            reason=_problem_reason(document),
            metadata=_string_map(
                document, exclude=("type", "title", "status", "detail", "instance")
            ),
        )
        cls = _classify(details, None, http_status)
        message = _text(document.get("detail")) or _text(document.get("title"))
        return _build(cls, message, details, http_status=http_status)
    cls = _classify(_Details(), None, http_status, a2a_body=False)
    plain = _plain_message(document)
    message = f"HTTP {http_status} without an A2A error body: {plain or _excerpt(body)}"
    if cls is MethodNotFoundError:
        message += " (no A2A route at this URL: check the interface URL and tenant)"
    return _build(cls, message, _Details(), http_status=http_status)


def from_grpc_status(
    code: int, message: str, details: Iterable[Mapping[str, Any]] = ()
) -> A2AError:
    """Decode a gRPC status; ``details`` are the status details decoded to ProtoJSON-style dicts."""
    grpc_status = _GRPC_NAME_BY_NUMBER.get(code) if _is_int(code) else None
    parsed = _parse_details(list(details) if isinstance(details, Iterable) else [])
    cls = _classify(parsed, grpc_status, None)
    text = _text(message)
    if cls is None and text is None:
        text = f"gRPC status {grpc_status or code!r} without a message"
    return _build(cls, text, parsed, grpc_status=grpc_status)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _parse_json(body: object) -> object:
    if isinstance(body, bytes | bytearray | memoryview):
        body = bytes(body).decode("utf-8", errors="replace")
    if isinstance(body, str):
        try:
            return json.loads(body)
        except ValueError:
            return body
    return body


def _is_bare_status(document: Mapping[Any, Any]) -> bool:
    return "details" in document or document.get("status") in _GRPC_CANONICAL


def _is_problem(document: Mapping[Any, Any]) -> bool:
    return any(key in document for key in ("type", "title", "status"))


def _problem_reason(problem: Mapping[Any, Any]) -> str:
    """Guess a reason from a problem's ``type`` URI tail or ``title`` ("task-not-found",
    "Task Not Found", "TaskNotFoundError" all give TASK_NOT_FOUND)."""
    candidates = [problem.get("type"), problem.get("title")]
    for candidate in candidates:
        if not isinstance(candidate, str):
            continue
        tail = re.split(r"[/:#]", candidate.rstrip("/"))[-1]
        words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", tail)
        reason = re.sub(r"[^A-Za-z0-9]+", "_", words).strip("_").upper()
        for guess in (reason, reason.removesuffix("_ERROR")):
            if guess in _BY_REASON:
                return guess
    return ""


def _plain_message(document: object) -> str | None:
    if isinstance(document, Mapping):
        for key in ("message", "detail", "error"):
            if text := _text(document.get(key)):
                return text
        return None
    return _excerpt(document) if _text(document) else None


def _excerpt(value: object, limit: int = 200) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        value = bytes(value).decode("utf-8", errors="replace")
    text = " ".join(value.split()) if isinstance(value, str) else repr(value)
    if not text or value is None:
        return "(empty body)"
    return text if len(text) <= limit else text[: limit - 1] + "…"
