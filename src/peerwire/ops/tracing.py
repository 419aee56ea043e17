"""OpenTelemetry traces of A2A calls: one span per operation, W3C trace context across hops.

A server makes one SERVER span per A2A operation it answers (JSON-RPC, HTTP+JSON, gRPC,
A2A 0.3 requests too), its parent the ``traceparent``/``tracestate`` of the request's
headers or gRPC metadata; a ``Client`` makes one CLIENT span per call and sends its context
on every binding. A handler runs in the span of the request that started it, so what a
skill does (an LLM call, a ``Client`` call to another agent) nests under it: client ->
agent A -> agent B is one trace. A blocking send's span lasts until its task settles, and
its handler runs in it; a handler whose request may end first (a non-blocking send, a
stream, a follow-up) gets an INTERNAL span of its own (``invoke_agent <agent>``), a child
of the request's, that ends with the handler. A stream is one span from the call to its
end (with the count of its events), never one per event. Names and attributes:
docs/OPERATIONS.md ("Traces").

Only the OpenTelemetry API is used; the SDK and its exporters are the application's. Zero
cost when nobody traces: ``refresh`` looks once for a configured ``TracerProvider`` (at
start-up: an app, a gRPC service, a ``Client`` being built) and, while there is none, every
request pays one attribute read (``STATE.tracer is None``). OpenTelemetry is not even
imported until an application has imported it (or names a provider in
``OTEL_PYTHON_TRACER_PROVIDER``), and peerwire works the same without it installed.

A malformed ``traceparent`` is ignored (the propagator's rule): the request starts a new
trace, and is never refused for it. Error statuses carry the error's wire reason
(``error.type``, from the table of ``peerwire.errors``) and its bounded message only. A
SubscribeToTask refused because its task had finished is no error here, on either side
(``protocol.subscription``): the span keeps an unset status and says ``a2a.task.finished``.

This module sits below ``server``, ``client`` and ``cluster`` and imports none of them.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec

from .._version import __version__
from ..errors import A2AError, bounded_text, wire_info, wire_message
from ..protocol.subscription import is_finished_task_refusal
from ..types import (
    AgentCard,
    Encoded,
    Message,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskStatusUpdateEvent,
)

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "ATTRIBUTES",
    "STATE",
    "TRACER_NAME",
    "ClientCall",
    "ClientSpans",
    "ServerCall",
    "ServerSpans",
    "enabled",
    "handler_failed",
    "handling",
    "refresh",
]

TRACER_NAME = "peerwire"
"""The instrumentation scope of every span peerwire makes."""

# -- attribute names -------------------------------------------------------------------------
# The proposed OpenTelemetry A2A conventions (semantic-conventions-genai, model/a2a) and the
# GenAI agent spans where they have a name; peerwire's own under ``a2a.`` where they do not.

A2A_METHOD = "a2a.method.name"
A2A_PROTOCOL_VERSION = "a2a.protocol.version"
A2A_TENANT = "a2a.tenant"
A2A_MESSAGE_ID = "a2a.message.id"
A2A_TASK_ID = "a2a.task.id"
A2A_TASK_STATE = "a2a.task.state"
CONVERSATION_ID = "gen_ai.conversation.id"  # the A2A contextId
AGENT_NAME = "gen_ai.agent.name"
AGENT_VERSION = "gen_ai.agent.version"
OPERATION_NAME = "gen_ai.operation.name"
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
# peerwire's own
A2A_BINDING = "a2a.binding"
A2A_SKILL = "a2a.skill.id"
A2A_STREAM_EVENTS = "a2a.stream.events"
A2A_TASK_FINISHED = "a2a.task.finished"  # a subscription refused: its task had finished

ATTRIBUTES = (
    A2A_METHOD,
    A2A_PROTOCOL_VERSION,
    A2A_TENANT,
    A2A_MESSAGE_ID,
    A2A_TASK_ID,
    A2A_TASK_STATE,
    CONVERSATION_ID,
    AGENT_NAME,
    AGENT_VERSION,
    OPERATION_NAME,
    ERROR_TYPE,
    SERVER_ADDRESS,
    SERVER_PORT,
    A2A_BINDING,
    A2A_SKILL,
    A2A_STREAM_EVENTS,
    A2A_TASK_FINISHED,
)
"""Every attribute name peerwire sets on its spans (docs/OPERATIONS.md says which follow
which convention)."""

# The A2A method name of each Dispatcher operation: what a span is named.
_METHODS = {
    "send_message": "SendMessage",
    "send_streaming_message": "SendStreamingMessage",
    "get_task": "GetTask",
    "list_tasks": "ListTasks",
    "cancel_task": "CancelTask",
    "subscribe_to_task": "SubscribeToTask",
    "create_task_push_notification_config": "CreateTaskPushNotificationConfig",
    "get_task_push_notification_config": "GetTaskPushNotificationConfig",
    "list_task_push_notification_configs": "ListTaskPushNotificationConfigs",
    "delete_task_push_notification_config": "DeleteTaskPushNotificationConfig",
    "get_extended_agent_card": "GetExtendedAgentCard",
}


# -- is anybody tracing? ---------------------------------------------------------------------


class _State:
    """Whether spans are made: ``tracer`` is ``None`` until a real provider is found."""

    __slots__ = (
        "baggage",
        "context",
        "fields",
        "flags",
        "propagate",
        "root",
        "trace",
        "tracer",
        "w3c",
    )

    def __init__(self) -> None:
        self.tracer: Tracer | None = None
        # The OpenTelemetry modules, imported once a provider is found.
        self.trace: Any = None
        self.context: Any = None
        self.propagate: Any = None
        self.baggage: Any = None
        # The header names the configured propagators read, in lower case, each as str
        # (gRPC metadata) and as bytes (ASGI headers): a carrier is scanned without
        # decoding the names of the headers nobody traces with.
        self.fields: frozenset[str | bytes] = frozenset()
        # The global propagator, when it is OpenTelemetry's default (W3C trace context and
        # baggage): while it is still the global one, a bare, well-formed ``traceparent`` is
        # read and written here as it would be (``_parent``, ``ClientCall.headers``), and
        # anything else still goes through the propagator.
        self.w3c: Any = None
        # For that reading: every ``trace-flags`` value, by its two hex digits, and the empty
        # context a remote parent goes in (never changed: OpenTelemetry copies a context
        # to set a value in it).
        self.flags: dict[str, Any] = {}
        self.root: Any = None


STATE = _State()
"""``STATE.tracer`` is the one thing a request reads when tracing is off."""

_PROVIDER_ENV = "OTEL_PYTHON_TRACER_PROVIDER"

# OpenTelemetry's span kinds, set by ``refresh`` as it imports the API (read only after it).
_SERVER: Any = None
_CLIENT: Any = None
_INTERNAL: Any = None


def enabled() -> bool:
    """Whether peerwire makes spans (a configured ``TracerProvider`` was found)."""
    return STATE.tracer is not None


def refresh() -> bool:
    """Look for a configured ``TracerProvider``; whether peerwire now makes spans.

    Servers and clients call this as they are built (and an app as its lifespan starts);
    call it yourself after installing a provider later than that. Once one is found it
    stays (OpenTelemetry's global provider can be set only once). OpenTelemetry's defaults
    (its proxy provider before any is set, the no-op provider) mean nobody traces.
    """
    if STATE.tracer is not None:
        return True
    # Nobody can have configured a provider without importing the API, or naming one in
    # the environment: until then, importing it here would only cost start-up time.
    if "opentelemetry.trace" not in sys.modules and _PROVIDER_ENV not in os.environ:
        return False
    try:
        from opentelemetry import baggage, context, propagate, trace
    except ImportError:
        return False
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return False
    textmap = propagate.get_global_textmap()
    STATE.trace, STATE.context, STATE.propagate = trace, context, propagate
    STATE.baggage = baggage
    names = {f.lower() for f in textmap.fields}
    STATE.fields = frozenset({*names, *(name.encode("latin-1") for name in names)})
    STATE.w3c = textmap if _is_default_textmap(textmap) else None
    STATE.flags = {f"{value:02x}": trace.TraceFlags(value) for value in range(256)}
    STATE.root = context.Context()
    global _SERVER, _CLIENT, _INTERNAL
    _SERVER, _CLIENT, _INTERNAL = (
        trace.SpanKind.SERVER,
        trace.SpanKind.CLIENT,
        trace.SpanKind.INTERNAL,
    )
    STATE.tracer = provider.get_tracer(TRACER_NAME, __version__)
    return True


def _is_default_textmap(textmap: Any) -> bool:
    """Whether ``textmap`` is OpenTelemetry's default propagator (``tracecontext,baggage``,
    exactly those classes, not subclasses), or W3C trace context alone."""
    from opentelemetry.baggage.propagation import W3CBaggagePropagator
    from opentelemetry.propagators.composite import CompositePropagator
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if type(textmap) is TraceContextTextMapPropagator:
        return True
    if type(textmap) is not CompositePropagator:
        return False
    kinds = [type(each) for each in getattr(textmap, "_propagators", ())]
    return kinds in (
        [TraceContextTextMapPropagator, W3CBaggagePropagator],
        [TraceContextTextMapPropagator],
    )


# -- carriers --------------------------------------------------------------------------------


def _trace_headers(carrier: Sequence[tuple[Any, Any]]) -> dict[str, str]:
    """The pairs of ``carrier`` (ASGI headers: bytes, names in lower case; gRPC metadata:
    str) the configured propagators read (``traceparent``, ``tracestate``, ``baggage`` by
    default), in one pass; empty for a request that carries no trace context."""
    fields = STATE.fields
    found: dict[str, str] = {}
    for name, value in carrier:
        if name in fields:  # bytes or str: only the names that matter are decoded
            key = name.decode("latin-1") if isinstance(name, bytes) else name
            text = value.decode("latin-1") if isinstance(value, bytes) else value
            if isinstance(text, str):
                # Repeated: joined as HTTP joins a repeated header (W3C tracestate does).
                found[key] = f"{found[key]},{text}" if key in found else text
    return found


# A version 00 ``traceparent`` exactly as W3C writes it, no padding: the only shape read here;
# every other (another version, spaces, a malformed one) goes to the propagator, whose rules
# (and warnings) then apply unchanged.
_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_NO_TRACE_ID, _NO_SPAN_ID = "0" * 32, "0" * 16


def _parent(carrier: Sequence[tuple[Any, Any]]) -> Context | None:
    """The context the trace context in ``carrier`` names (None: none sent, a new trace).

    With the default propagator and only a well-formed ``traceparent`` sent (what a traced
    peer sends), the remote span context is built here, as the propagator builds it, in
    a fraction of its time (it spends most of it on its generic getter, regex and
    keyword calls); anything else is the propagator's."""
    sent = _trace_headers(carrier)
    if not sent:
        return None  # the usual untraced caller: no propagator to run
    if len(sent) == 1 and STATE.propagate.get_global_textmap() is STATE.w3c:
        header = sent.get("traceparent")
        match = _TRACEPARENT.fullmatch(header) if header is not None else None
        if match is not None:
            trace_id, span_id, flags = match.groups()
            if trace_id != _NO_TRACE_ID and span_id != _NO_SPAN_ID:
                trace = STATE.trace
                remote = trace.SpanContext(
                    int(trace_id, 16), int(span_id, 16), True, STATE.flags[flags]
                )
                parent: Context = trace.set_span_in_context(
                    trace.NonRecordingSpan(remote), STATE.root
                )
                return parent
    extracted: Context = STATE.propagate.extract(sent)
    return extracted


# -- what a request and its answer say -------------------------------------------------------


def _request_attributes(request: Any, attributes: dict[str, Any]) -> None:
    """The tenant, message and task ids of a typed request (every request type has a
    ``tenant``; the others have what they name)."""
    tenant = getattr(request, "tenant", "")
    if tenant:
        attributes[A2A_TENANT] = tenant
    if isinstance(request, SendMessageRequest):
        message = request.message
        attributes[A2A_MESSAGE_ID] = message.message_id
        if message.task_id:
            attributes[A2A_TASK_ID] = message.task_id
        if message.context_id:
            attributes[CONVERSATION_ID] = message.context_id
        return
    task_id = getattr(request, "task_id", None) or getattr(request, "id", None)
    if isinstance(task_id, str) and task_id and not isinstance(request, AgentCard):
        attributes[A2A_TASK_ID] = task_id
    context_id = getattr(request, "context_id", None)
    if isinstance(context_id, str) and context_id:
        attributes[CONVERSATION_ID] = context_id


class _EncodedStatus(msgspec.Struct):
    state: str = ""


class _EncodedTask(msgspec.Struct):
    id: str = ""
    context_id: str = msgspec.field(default="", name="contextId")
    status: _EncodedStatus | None = None


class _EncodedAnswer(msgspec.Struct):
    task: _EncodedTask | None = None


_read_answer = msgspec.json.Decoder(_EncodedAnswer).decode
_read_task = msgspec.json.Decoder(_EncodedTask).decode


def _result_attributes(result: Any, span: Span) -> None:
    """The task id, context id and state of an answer, on ``span``."""
    if not span.is_recording():
        return  # sampled out: nothing to read the answer for
    task: Task | None = None
    if isinstance(result, SendMessageResponse):
        task = result.task
        if task is None and isinstance(result.message, Message):
            if result.message.context_id:
                span.set_attribute(CONVERSATION_ID, result.message.context_id)
            return
    elif isinstance(result, Task):
        task = result
    elif isinstance(result, Encoded):
        # A finished task's stored encoding (the blocking send's fast path): its ids and
        # state read from the bytes, skipping the rest, only while tracing.
        try:
            if result.type is Task:
                encoded: _EncodedTask | None = _read_task(result.json)
            else:
                encoded = _read_answer(result.json).task
        except msgspec.DecodeError:
            return
        if encoded is not None:
            _task_attributes(span, encoded.id, encoded.context_id, encoded.status)
        return
    if task is not None:
        span.set_attributes(
            {
                A2A_TASK_ID: task.id,
                CONVERSATION_ID: task.context_id,
                A2A_TASK_STATE: task.status.state.value,
            }
        )


def _task_attributes(
    span: Span, task_id: str, context_id: str, status: _EncodedStatus | None
) -> None:
    attributes = {}
    if task_id:
        attributes[A2A_TASK_ID] = task_id
    if context_id:
        attributes[CONVERSATION_ID] = context_id
    if status is not None and status.state:
        attributes[A2A_TASK_STATE] = status.state
    span.set_attributes(attributes)  # one call: the SDK takes its lock once


def _fail(span: Span, error: BaseException, method: str = "", streaming: bool = False) -> None:
    """Mark ``span`` failed: the wire reason of an A2A error (or the class of another
    exception) and the bounded message, never anything longer. The refusal of a
    subscription to a finished task (``method`` SubscribeToTask; ``streaming``: the agent
    called declares it) is an expected answer: noted as ``a2a.task.finished``, no error."""
    if not span.is_recording():
        return  # ended already (the call failed before its stream began)
    if is_finished_task_refusal(method, error, streaming=streaming):
        assert isinstance(error, A2AError)
        state = error.metadata.get("state")
        span.set_attributes({A2A_TASK_FINISHED: True, **({A2A_TASK_STATE: state} if state else {})})
        return
    trace = STATE.trace
    if isinstance(error, A2AError):
        span.set_attribute(ERROR_TYPE, wire_info(error).reason or type(error).__name__)
        span.set_status(trace.Status(trace.StatusCode.ERROR, wire_message(error)))
        return
    span.set_attribute(ERROR_TYPE, type(error).__qualname__)
    span.set_status(trace.Status(trace.StatusCode.ERROR, type(error).__qualname__))


# -- the server side -------------------------------------------------------------------------


class ServerSpans:
    """Makes the SERVER spans of one binding: ``start`` once per request, only while
    ``STATE.tracer`` is set (the binding checks)."""

    __slots__ = ("_agent", "_bases", "_binding", "_card", "_version")

    def __init__(self, binding: str, version: str, card: Callable[[], AgentCard]) -> None:
        self._binding = binding
        self._version = version
        self._card = card
        self._agent: AgentCard | None = None
        # Per dispatcher operation: its span's name and the attributes every request of it
        # has (the binding's, the agent's, the method), built once and copied per request.
        self._bases: dict[str, tuple[str, dict[str, Any]]] = {}

    def _base(self, operation: str) -> tuple[str, dict[str, Any]]:
        card = self._card()
        if card is not self._agent:  # the served card is replaced once (the gRPC port)
            self._agent, self._bases = card, {}
        known = self._bases.get(operation)
        if known is None:
            method = _METHODS.get(operation, operation)
            base: dict[str, Any] = {
                A2A_BINDING: self._binding,
                A2A_PROTOCOL_VERSION: self._version,
                AGENT_NAME: card.name,
            }
            if card.version:
                base[AGENT_VERSION] = card.version
            base[A2A_METHOD] = method
            known = self._bases[operation] = (method, base)
        return known

    def start(self, operation: str, carrier: Sequence[tuple[Any, Any]], request: Any) -> ServerCall:
        """A span for the dispatcher ``operation`` (``send_message``, ...) on ``request``,
        a child of the trace context in ``carrier`` (ASGI headers, gRPC metadata); a context
        that is missing or malformed starts a new trace."""
        tracer = STATE.tracer
        assert tracer is not None, "start spans only while STATE.tracer is set"
        method, base = self._base(operation)
        attributes = base.copy()
        _request_attributes(request, attributes)
        # All attributes at the start, in one dict: a sampler sees them, and the SDK
        # validates them in one pass (setting them later costs a lock per call).
        span = tracer.start_span(
            method, context=_parent(carrier), kind=_SERVER, attributes=attributes
        )
        return ServerCall(span, method)


class _Call:
    """The span of one call of A2A ``method``, and what a stream of it has carried so far;
    ``streaming``: the agent called declares the capability (a client's call)."""

    __slots__ = ("events", "method", "span", "state", "streaming")

    def __init__(self, span: Span, method: str = "", streaming: bool = False) -> None:
        self.span = span
        self.method = method
        self.streaming = streaming
        self.events = 0
        self.state = ""  # the latest task state the stream carried

    def counted(self, event: Any) -> None:
        """Count one event of a stream (a ``StreamResponse``, or a payload the client
        unwrapped from one): its task snapshot names the task, status updates its state."""
        self.events += 1
        if isinstance(event, StreamResponse):
            event = event.task or event.status_update or event.message
        if isinstance(event, TaskStatusUpdateEvent):
            self.state = event.status.state.value
        elif isinstance(event, Task):
            _result_attributes(event, self.span)
            self.state = event.status.state.value
        elif isinstance(event, Message) and event.context_id and self.events == 1:
            self.span.set_attribute(CONVERSATION_ID, event.context_id)

    def ids(self) -> tuple[str, str]:
        """The span's trace id and span id, in hex (as logs and trace back-ends show them)."""
        context = self.span.get_span_context()
        return f"{context.trace_id:032x}", f"{context.span_id:016x}"

    def failed(self, error: BaseException) -> None:
        """Note the error a stream ended with (the span ends with ``end``)."""
        _fail(self.span, error, self.method, self.streaming)

    def end(self) -> None:
        """End a stream's span, with its event count and the last task state it carried;
        no effect once ended."""
        span = self.span
        if span.is_recording():
            attributes: dict[str, Any] = {A2A_STREAM_EVENTS: self.events}
            if self.state:
                attributes[A2A_TASK_STATE] = self.state
            span.set_attributes(attributes)
            span.end()


class ServerCall(_Call):
    """The span of one request a server answers.

    ``run`` calls the dispatcher with the span current, so the handler the call launches
    (its task copies this context) runs under it. A unary call's span ends with ``run``; a
    stream's stays open until ``end`` (the binding calls it when the stream is over), and
    ``framing`` wraps an SSE binding's frame functions to count events and note the error a
    stream ended with.
    """

    __slots__ = ()

    async def run(
        self, operation: Callable[..., Any], request: Any, call: Any, *, streaming: bool = False
    ) -> Any:
        span, context = self.span, STATE.context
        token = context.attach(STATE.trace.set_span_in_context(span))
        try:
            result = await operation(request, call)
        except BaseException as error:
            if isinstance(error, Exception):  # not a cancel: the caller went away
                _fail(span, error, self.method)
            span.end()
            raise
        finally:
            context.detach(token)
        if not streaming:
            _result_attributes(result, span)
            span.end()
        return result

    def framing(
        self,
        event_frame: Callable[[StreamResponse], bytes],
        error_frame: Callable[[A2AError], bytes],
    ) -> tuple[Callable[[StreamResponse], bytes], Callable[[A2AError], bytes]]:
        """``event_frame`` and ``error_frame`` of an SSE stream, counting and noting."""

        def event(item: StreamResponse) -> bytes:
            self.counted(item)
            return event_frame(item)

        def error(failure: A2AError) -> bytes:
            self.failed(failure)
            return error_frame(failure)

        return event, error


# -- the handler -----------------------------------------------------------------------------


async def handling(
    run: Callable[[], Coroutine[Any, Any, None]],
    *,
    agent: str,
    skill: str,
    task_id: str,
    context_id: str,
    state: Callable[[], Any],
) -> None:
    """Run a handler (the coroutine ``run()`` makes) in an INTERNAL span, the GenAI
    conventions' ``invoke_agent`` span: a child of the span current where its task was
    created (the request's), whose end is the handler's own, however long the request lasts
    (a non-blocking send answers at once; a stream may end at INPUT_REQUIRED). What the
    skill does nests under it. ``state()`` is the task's state once the handler is gone.

    A blocking send's handler needs none: the request's span lasts until the task settles,
    and the handler runs in it (the runner's ``own_span=False``)."""
    tracer, trace = STATE.tracer, STATE.trace
    assert tracer is not None, "start spans only while STATE.tracer is set"
    span = tracer.start_span(
        f"invoke_agent {agent}",
        kind=_INTERNAL,
        attributes={
            OPERATION_NAME: "invoke_agent",
            AGENT_NAME: agent,
            A2A_SKILL: skill,
            A2A_TASK_ID: task_id,
            CONVERSATION_ID: context_id,
        },
    )
    context = STATE.context
    token = context.attach(trace.set_span_in_context(span))
    try:
        await run()
    finally:
        context.detach(token)
        current = state()
        value = getattr(current, "value", current)
        if isinstance(value, str) and value:
            span.set_attribute(A2A_TASK_STATE, value)
        span.end()


def handler_failed(error: BaseException, reason: str) -> None:
    """The handler raised ``error``, its task fails with ``reason`` (cut to the bound): noted
    on the span it ran in, current in its task (its own, or the blocking send's that waited
    for it). Call only while tracing."""
    span = STATE.trace.get_current_span()
    if span.is_recording():
        span.set_attribute(ERROR_TYPE, type(error).__qualname__)
        status = STATE.trace.Status(STATE.trace.StatusCode.ERROR, bounded_text(reason))
        span.set_status(status)


# -- the client side -------------------------------------------------------------------------


class ClientSpans:
    """Makes the CLIENT spans of one ``Client``: the agent and interface it calls."""

    __slots__ = ("_base", "_streaming")

    def __init__(self, *, binding: str, version: str, url: str, card: AgentCard) -> None:
        # An agent that streams refuses SubscribeToTask only for a finished task.
        self._streaming = bool(card.capabilities.streaming)
        base: dict[str, Any] = {
            A2A_BINDING: binding,
            A2A_PROTOCOL_VERSION: version,
            AGENT_NAME: card.name,
        }
        if card.version:
            base[AGENT_VERSION] = card.version
        host, port = _address_of(url)
        if host:
            base[SERVER_ADDRESS] = host
            if port is not None:
                base[SERVER_PORT] = port
        self._base = base

    def start(self, operation: str, request: Any) -> ClientCall:
        """A span for the call of ``operation`` (an A2A method name: ``SendMessage``, ...),
        a child of the current span."""
        tracer = STATE.tracer
        assert tracer is not None, "start spans only while STATE.tracer is set"
        attributes = self._base.copy()
        attributes[A2A_METHOD] = operation
        _request_attributes(request, attributes)
        span = tracer.start_span(operation, kind=_CLIENT, attributes=attributes)
        return ClientCall(span, operation, self._streaming)


class ClientCall(_Call):
    """The span of one client call: ``headers`` carries its context to the agent."""

    __slots__ = ()

    def context(self) -> Context:
        context: Context = STATE.trace.set_span_in_context(self.span)
        return context

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """``headers`` and the span's trace context (``traceparent``, ``tracestate``, as the
        configured propagators write them)."""
        carrier = dict(headers)
        trace = STATE.trace
        if STATE.propagate.get_global_textmap() is STATE.w3c and not STATE.baggage.get_all():
            # The default propagator with no baggage to send: the W3C headers written here,
            # as it writes them, without building a context for it to read them from.
            sent = self.span.get_span_context()
            if sent != trace.INVALID_SPAN_CONTEXT:
                carrier["traceparent"] = (
                    f"00-{sent.trace_id:032x}-{sent.span_id:016x}-{sent.trace_flags:02x}"
                )
                if sent.trace_state:
                    carrier["tracestate"] = sent.trace_state.to_header()
            return carrier
        STATE.propagate.inject(carrier, context=self.context())
        return carrier

    async def run(self, call: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        """Await ``call()`` with the span current, then end the span."""
        span, context = self.span, STATE.context
        token = context.attach(self.context())
        try:
            result = await call()
        except BaseException as error:
            if isinstance(error, Exception):
                _fail(span, error, self.method, self.streaming)
            raise
        else:
            _result_attributes(result, span)
            return result
        finally:
            context.detach(token)
            span.end()


def _address_of(url: str) -> tuple[str, int | None]:
    """Host and port of an interface URL (``host:port`` for gRPC)."""
    parts = urlsplit(url if "//" in url else f"//{url}")
    try:
        return parts.hostname or "", parts.port
    except ValueError:
        return parts.hostname or "", None
