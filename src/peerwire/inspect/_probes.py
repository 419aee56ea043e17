"""The self-check's requests, one prober per binding: deliberately exact, or deliberately wrong.

Each prober sends what a check needs (GetTask of a task that does not exist, with a chosen
``A2A-Version`` or none; a body that is not JSON; a streaming message) and describes what
came back as an ``Answer``: whether the interface answered in its binding's form at all, the
A2A error it stands for (decoded with ``peerwire.errors``, as any client would), the
``ErrorInfo`` reason it carried, and what is wrong with the error's shape. The probers use
raw httpx and raw gRPC calls, not peerwire's transports: those would fix up for us exactly
what is being checked (they always send ``A2A-Version``, never send a malformed body, and
tolerate error shapes a stricter client would not).

Nothing here raises for anything the agent does: transport failures become
``Answer.failure``. Stream events come out as ``StreamItem`` values for ``_checks_stream``.
"""

from __future__ import annotations

import abc
import json
import uuid
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..bindings.sse import SSEEventTooLarge, SSEParser
from ..errors import (
    ERROR_DOMAIN,
    ERROR_INFO_TYPE,
    A2AError,
    from_jsonrpc_error,
    from_rest_error,
)
from ..types import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    from_builtins,
    to_builtins,
)
from ._bounded import FetchRefused, bounded_send, read_whole

__all__ = [
    "CANONICAL_CODES",
    "Answer",
    "Interface",
    "JsonRpcProber",
    "ProbeAuth",
    "Prober",
    "RestProber",
    "StreamItem",
    "excerpt",
    "message_request",
    "stream_response",
    "unknown_task_id",
]

_EXCERPT = 300
# The REST content types a client must accept (A2A spec §11, 1.0.1 and 1.0.0).
_JSON_TYPES = ("application/a2a+json", "application/json")
# google.rpc.Code names: what a REST error's "status" must be one of.
CANONICAL_CODES = frozenset(
    {
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    }
)


def excerpt(value: Any, limit: int = _EXCERPT) -> str:
    """A short, one-line rendering of something an agent sent, for a finding's detail."""
    if isinstance(value, bytes):
        text = value.decode("utf-8", errors="replace")
    elif isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Interface:
    """One entry of the card's ``supportedInterfaces``, as the card wrote it."""

    index: int
    binding: str
    url: str
    version: str
    tenant: str = ""

    @property
    def label(self) -> str:
        return f"{self.binding} {self.url}"


@dataclass(frozen=True, slots=True)
class Answer:
    """What one probe got back, described in the terms the checks need."""

    reached: bool
    """The interface answered in its binding's form (a JSON-RPC envelope, a REST JSON body,
    a gRPC status from the A2A service)."""
    summary: str
    """What came back, in a few words ("HTTP 404 application/a2a+json", "gRPC NOT_FOUND")."""
    seen: str = ""
    """An excerpt of the body or status message."""
    failure: str = ""
    """Why the interface was not reached (connection refused, timeout, wrong route)."""
    auth_refused: bool = False
    """The agent refused the request for want of credentials (HTTP 401/403, UNAUTHENTICATED)."""
    error: A2AError | None = None
    """The A2A error the answer stands for, as a client decodes it (None: a result)."""
    reason: str | None = None
    """The ``ErrorInfo.reason`` the error carried, if it carried one."""
    shape: tuple[str, ...] = ()
    """What is wrong with the error's shape for its binding (A2A spec §9.5, §10, §11.6)."""
    info: tuple[str, ...] = ()
    """What is wrong with its ``ErrorInfo`` (which only A2A errors must carry)."""
    http_status: int | None = None
    status_name: str = ""
    """The canonical status name of a REST or gRPC error ("NOT_FOUND")."""

    def is_error(self, cls: type[A2AError]) -> bool:
        return isinstance(self.error, cls)

    def describe(self) -> str:
        said = self.summary if not self.seen else f"{self.summary}: {self.seen}"
        return said if not self.failure else f"{self.failure} ({said})"


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One event of a stream: its member name and decoded payload, or why it is not one."""

    kind: str
    """``task``, ``message``, ``statusUpdate``, ``artifactUpdate``; ``error`` for an error
    event; ``invalid`` for an event that is not a StreamResponse."""
    payload: Any = None
    note: str = ""


@dataclass
class ProbeAuth:
    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)


class Prober(abc.ABC):
    """What every binding's prober offers the checks."""

    interface: Interface

    @abc.abstractmethod
    async def get_task(self, version: str | None) -> Answer:
        """GetTask of a task id nobody has, with ``A2A-Version: version`` (None: no header)."""

    @abc.abstractmethod
    async def malformed(self) -> Answer | None:
        """A SendMessage whose body is not JSON (None: the binding has no such thing)."""

    @abc.abstractmethod
    def stream(self, text: str, skill: str | None = None) -> AsyncGenerator[StreamItem, None]:
        """SendStreamingMessage of ``text`` (to ``skill``, in the message's metadata); its
        events as they arrive."""

    @abc.abstractmethod
    async def cancel(self, task_id: str) -> None:
        """Best effort: cancel a task the self-check left running or waiting for input."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Release what the prober holds."""


def unknown_task_id() -> str:
    # Random, so no agent can have it; marked, so an agent's log says who asked.
    return f"peerwire-selfcheck-{uuid.uuid4()}"


def message_request(text: str, skill: str | None) -> SendMessageRequest:
    # ``metadata.skill`` is how peerwire agents (and others) route to a skill by its id.
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.USER,
            parts=[Part(text=text)],
            metadata={"skill": skill} if skill is not None else None,
        )
    )


def _content_type(response: httpx.Response) -> str:
    value: str = response.headers.get("content-type", "")
    return value.split(";")[0].strip().lower()


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _error_info(details: Any) -> Mapping[str, Any] | None:
    if not isinstance(details, list):
        return None
    for item in details:
        if isinstance(item, Mapping) and item.get("@type") == ERROR_INFO_TYPE:
            return item
    return None


def _error_info_problems(details: Any, member: str, *, required: bool) -> list[str]:
    """What is wrong with the typed details of an error (``data`` / ``details``)."""
    level = "MUST" if required else "SHOULD"
    if details is None:
        return [f"no {member}: an A2A error {level} carry a google.rpc.ErrorInfo"]
    if not isinstance(details, list):
        return [
            f"{member} is not an array of typed objects (A2A spec §9.5; a bare object is "
            "the 0.3 form)"
        ]
    info = _error_info(details)
    if info is None:
        return [f"{member} holds no google.rpc.ErrorInfo ({level}, A2A spec §5.4)"]
    problems = []
    if not isinstance(info.get("reason"), str) or not info.get("reason"):
        problems.append("its ErrorInfo has no reason")
    if info.get("domain") != ERROR_DOMAIN:
        problems.append(f"its ErrorInfo domain is {info.get('domain')!r}, not {ERROR_DOMAIN!r}")
    return problems


def _reason_of(details: Any) -> str | None:
    info = _error_info(details)
    reason = info.get("reason") if info is not None else None
    return reason if isinstance(reason, str) and reason else None


class _HttpProber(Prober):
    """What the JSON-RPC and REST probers share: one httpx client, credentials, limits."""

    def __init__(
        self, interface: Interface, http: httpx.AsyncClient, auth: ProbeAuth, timeout: float
    ) -> None:
        self.interface = interface
        self._http = http
        self._auth = auth
        self._timeout = timeout

    async def aclose(self) -> None:
        """Nothing of its own: the httpx client is the self-check's, closed by it."""

    def _headers(self, version: str | None, **extra: str) -> dict[str, str]:
        headers = {**self._auth.headers, **extra}
        if version is not None:
            headers["A2A-Version"] = version
        return headers

    async def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response | Answer:
        request = self._http.build_request(
            method, url, params=self._auth.query or None, timeout=self._timeout, **kwargs
        )
        try:
            return await bounded_send(self._http, request, timeout=self._timeout)
        except FetchRefused as exc:
            return Answer(reached=False, summary="refused", failure=excerpt(str(exc)))
        except httpx.TimeoutException:
            return Answer(
                reached=False,
                summary="no answer",
                failure=f"no answer within {self._timeout:g} s",
            )
        except httpx.HTTPError as exc:
            return Answer(
                reached=False,
                summary="no connection",
                failure=f"{method} {url} failed: {excerpt(str(exc) or type(exc).__name__)}",
            )


class JsonRpcProber(_HttpProber):
    """JSON-RPC 2.0 over HTTP POST to the interface URL (A2A spec §9)."""

    def _params(self, **fields: Any) -> dict[str, Any]:
        if self.interface.tenant:
            fields["tenant"] = self.interface.tenant
        return fields

    async def get_task(self, version: str | None) -> Answer:
        request_id = f"selfcheck-{uuid.uuid4().hex[:8]}"
        envelope = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "GetTask",
            "params": self._params(id=unknown_task_id()),
        }
        return await self._post(json.dumps(envelope).encode(), version, request_id)

    async def malformed(self) -> Answer:
        # Cut off mid-object: no JSON parser accepts it (-32700 is the spec's answer).
        return await self._post(b'{"jsonrpc": "2.0", "id": 1, "method": "SendMe', "1.0", None)

    async def _post(self, body: bytes, version: str | None, request_id: str | None) -> Answer:
        sent = await self._send(
            "POST",
            self.interface.url,
            content=body,
            headers=self._headers(version, **{"Content-Type": "application/json"}),
        )
        if isinstance(sent, Answer):
            return sent
        return _jsonrpc_answer(sent, request_id)

    async def stream(self, text: str, skill: str | None = None) -> AsyncGenerator[StreamItem, None]:
        request_id = f"selfcheck-{uuid.uuid4().hex[:8]}"
        envelope = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "SendStreamingMessage",
            "params": self._params(**to_builtins(message_request(text, skill))),
        }
        headers = self._headers(
            "1.0", **{"Content-Type": "application/json", "Accept": "text/event-stream"}
        )
        async for data in _sse(self._http, "POST", self.interface.url, self, headers, envelope):
            if isinstance(data, StreamItem):
                yield data
                continue
            yield _jsonrpc_event(data, request_id)

    async def cancel(self, task_id: str) -> None:
        envelope = {
            "jsonrpc": "2.0",
            "id": "selfcheck-cancel",
            "method": "CancelTask",
            "params": self._params(id=task_id),
        }
        await self._send(
            "POST",
            self.interface.url,
            content=json.dumps(envelope).encode(),
            headers=self._headers("1.0", **{"Content-Type": "application/json"}),
        )


def _jsonrpc_answer(response: httpx.Response, request_id: str | None) -> Answer:
    status, kind = response.status_code, _content_type(response)
    summary = f"HTTP {status} {kind}".strip()
    body = _json(response)
    seen = excerpt(body if body is not None else response.text)
    if status in (401, 403):
        return Answer(
            reached=True,
            summary=summary,
            seen=seen,
            auth_refused=True,
            failure=f"refused for want of credentials (HTTP {status})",
            http_status=status,
        )
    if (
        not isinstance(body, Mapping)
        or body.get("jsonrpc") != "2.0"
        or not ("result" in body or "error" in body)
    ):
        return Answer(
            reached=False,
            summary=summary,
            seen=seen,
            failure="the answer is not a JSON-RPC 2.0 response envelope",
            http_status=status,
        )
    if "error" not in body:
        return Answer(reached=True, summary=summary, seen=seen, http_status=status)
    error_obj = body.get("error")
    error = from_jsonrpc_error(error_obj)
    shape: list[str] = []
    if status != 200:
        shape.append(f"HTTP {status}: JSON-RPC errors travel in an HTTP 200 response")
    if request_id is not None and body.get("id") != request_id:
        shape.append(f"its id is {body.get('id')!r}, not the request's {request_id!r}")
    if request_id is None and body.get("id") is not None:
        shape.append(f"its id is {body.get('id')!r}: an unreadable request's error has id null")
    code = error_obj.get("code") if isinstance(error_obj, Mapping) else None
    if isinstance(error_obj, Mapping):
        if not isinstance(code, int) or isinstance(code, bool):
            shape.append("its error has no integer code")
        if not isinstance(error_obj.get("message"), str):
            shape.append("its error has no message")
        info = _error_info_problems(error_obj.get("data"), "data", required=False)
        reason = _reason_of(error_obj.get("data"))
    else:
        shape.append("its error member is not an object")
        info, reason = [], None
    return Answer(
        reached=True,
        summary=f"JSON-RPC error {code}" if isinstance(code, int) else summary,
        seen=seen,
        error=error,
        reason=reason,
        shape=tuple(shape),
        info=tuple(info),
        http_status=status,
    )


def _jsonrpc_event(data: bytes, request_id: str) -> StreamItem:
    try:
        envelope = json.loads(data)
    except ValueError:
        return StreamItem("invalid", note=f"an event is not JSON: {excerpt(data)}")
    if not isinstance(envelope, Mapping) or envelope.get("jsonrpc") != "2.0":
        return StreamItem("invalid", note=f"an event is no JSON-RPC response: {excerpt(data)}")
    if "error" in envelope:
        error = from_jsonrpc_error(envelope["error"])
        return StreamItem("error", payload=error, note=excerpt(envelope["error"]))
    if envelope.get("id") != request_id:
        return StreamItem(
            "invalid",
            note=f"an event's id is {envelope.get('id')!r}, not the request's {request_id!r}",
        )
    return stream_response(envelope.get("result"))


def stream_response(document: Any) -> StreamItem:
    try:
        event = from_builtins(document, StreamResponse, path="event")
    except (A2AError, ValueError) as exc:
        why = exc.message if isinstance(exc, A2AError) else str(exc)
        return StreamItem(
            "invalid", note=f"not a valid StreamResponse ({why}): {excerpt(document)}"
        )
    for kind, value in (
        ("task", event.task),
        ("message", event.message),
        ("statusUpdate", event.status_update),
        ("artifactUpdate", event.artifact_update),
    ):
        if value is not None:
            return StreamItem(kind, payload=value)
    raise AssertionError("unreachable: a StreamResponse has one member")


class RestProber(_HttpProber):
    """HTTP+JSON: routes relative to the interface URL, tenant as the first segment."""

    def _url(self, path: str) -> str:
        base = self.interface.url.rstrip("/")
        tenant = f"/{self.interface.tenant}" if self.interface.tenant else ""
        return f"{base}{tenant}{path}"

    async def get_task(self, version: str | None) -> Answer:
        sent = await self._send(
            "GET",
            self._url(f"/tasks/{unknown_task_id()}"),
            headers=self._headers(version, Accept="application/a2a+json, application/json"),
        )
        return sent if isinstance(sent, Answer) else _rest_answer(sent)

    async def malformed(self) -> Answer:
        sent = await self._send(
            "POST",
            self._url("/message:send"),
            content=b'{"message": {"messageId": ',
            headers=self._headers("1.0", **{"Content-Type": "application/a2a+json"}),
        )
        return sent if isinstance(sent, Answer) else _rest_answer(sent)

    async def stream(self, text: str, skill: str | None = None) -> AsyncGenerator[StreamItem, None]:
        headers = self._headers(
            "1.0", **{"Content-Type": "application/a2a+json", "Accept": "text/event-stream"}
        )
        body = to_builtins(message_request(text, skill))
        async for data in _sse(
            self._http, "POST", self._url("/message:stream"), self, headers, body
        ):
            if isinstance(data, StreamItem):
                yield data
                continue
            try:
                document = json.loads(data)
            except ValueError:
                yield StreamItem("invalid", note=f"an event is not JSON: {excerpt(data)}")
                continue
            if isinstance(document, Mapping) and "error" in document:
                error = from_rest_error(500, document)
                yield StreamItem("error", payload=error, note=excerpt(document))
                continue
            yield stream_response(document)

    async def cancel(self, task_id: str) -> None:
        await self._send(
            "POST",
            self._url(f"/tasks/{task_id}:cancel"),
            content=b"{}",
            headers=self._headers("1.0", **{"Content-Type": "application/a2a+json"}),
        )


def _rest_answer(response: httpx.Response) -> Answer:
    status, kind = response.status_code, _content_type(response)
    summary = f"HTTP {status} {kind}".strip()
    body = _json(response)
    seen = excerpt(body if body is not None else response.text)
    if status in (401, 403):
        return Answer(
            reached=True,
            summary=summary,
            seen=seen,
            auth_refused=True,
            failure=f"refused for want of credentials (HTTP {status})",
            http_status=status,
        )
    if not isinstance(body, Mapping):
        return Answer(
            reached=False,
            summary=summary,
            seen=seen,
            failure="the answer is not a JSON object: no A2A HTTP+JSON route answered",
            http_status=status,
        )
    if status < 400:
        return Answer(reached=True, summary=summary, seen=seen, http_status=status)
    error = from_rest_error(status, body)
    shape: list[str] = []
    if kind not in _JSON_TYPES:
        shape.append(f"its content type is {kind or 'missing'}, not application/a2a+json")
    status_obj = body.get("error")
    reason, info, status_name = None, [], ""
    if not isinstance(status_obj, Mapping):
        shape.append(
            'the body is not a google.rpc.Status {"error": {code, status, message, '
            "details}} (A2A spec §11.6; problem+json is not the 1.0 form)"
        )
    else:
        if status_obj.get("code") != status:
            shape.append(f"error.code is {status_obj.get('code')!r}, not the HTTP status {status}")
        if (
            not isinstance(status_obj.get("status"), str)
            or status_obj.get("status") not in CANONICAL_CODES
        ):
            shape.append(f"error.status {status_obj.get('status')!r} is no canonical code name")
        if not isinstance(status_obj.get("message"), str):
            shape.append("error.message is missing")
        info = _error_info_problems(status_obj.get("details"), "error.details", required=True)
        reason = _reason_of(status_obj.get("details"))
        status_name = str(status_obj.get("status") or "")
    return Answer(
        reached=True,
        summary=summary,
        seen=seen,
        error=error,
        reason=reason,
        shape=tuple(shape),
        info=tuple(info),
        http_status=status,
        status_name=status_name,
    )


async def _sse(
    http: httpx.AsyncClient,
    method: str,
    url: str,
    prober: _HttpProber,
    headers: dict[str, str],
    body: Any,
) -> AsyncGenerator[bytes | StreamItem, None]:
    """The data of each SSE event of a streaming request; an error answer before the stream
    (an ordinary JSON response) is one ``error`` item. Transport failures propagate."""
    request = http.build_request(
        method,
        url,
        content=json.dumps(body).encode(),
        headers=headers,
        params=prober._auth.query or None,
        timeout=prober._timeout,
    )
    response = await http.send(request, stream=True, follow_redirects=False)
    try:
        kind = _content_type(response)
        if kind != "text/event-stream":
            try:
                whole = await read_whole(response)
            except FetchRefused as exc:
                yield StreamItem("invalid", note=str(exc))
                return
            answer = (
                _rest_answer(whole)
                if isinstance(prober, RestProber)
                else _jsonrpc_answer(whole, body.get("id"))
            )
            note = f"the stream was not opened: {answer.describe()}"
            yield StreamItem("error", payload=answer.error, note=note)
            return
        parser = SSEParser()
        async for chunk in response.aiter_bytes():
            try:
                events = parser.feed(chunk)
            except SSEEventTooLarge as exc:
                for data in exc.events:
                    yield data
                yield StreamItem("invalid", note=str(exc))
                return
            for data in events:
                yield data
    finally:
        await response.aclose()
