"""Logs that explain: structured records, one JSON object a line, secrets kept out, access log.

peerwire logs with the standard library (``logging``) under the ``peerwire`` logger tree.
Records about a task carry it as ``extra`` fields (``task_id``, ``context_id``, ``skill``,
``tenant``); ``JSONFormatter`` writes every such field as a member of the line's object, so a
log pipeline can index them, and ``TextFormatter`` appends the ones its message does not say.
``configure_logging`` puts either on the ``peerwire`` logger, or on the root logger, where
``peerwire serve --log-format`` and ``peerwire worker`` put it, so third-party records
(asyncpg, redis, grpc, uvicorn, asyncio's "Task exception was never retrieved") are written
the same way: with ``json``, every line of stderr is one JSON object, a traceback a member.

A record written inside an OpenTelemetry span carries ``trace_id`` and ``span_id`` (hex, as
trace back-ends show them), so a line can be found from its trace and the other way round.
Identical records at WARNING and above (a pool retrying a database that is down) are written
once per ``REPEAT_WINDOW_S``; a record then says how many repeats were not written
(``RepeatLimitingHandler``).

Nothing secret is logged: request headers (``Authorization``, API keys, cookies) and bodies
(push configs and their credentials) never reach a record, the access log writes the path
without its query string (an API key may travel there), and every URL of a store or bus is
logged through ``redact_url``.

The access log (``peerwire.access``, INFO, opt-in: ``create_app(access_log=True)``,
``peerwire serve --access-log``) is written by the app itself, so it reads the same on
peerwire's HTTP server, on uvicorn and mounted in another app: ``AccessLog.around`` wraps one
request, and the bindings note on its ``AccessRecord`` (found in the ASGI scope under
``ACCESS_SCOPE_KEY``) which A2A operation it was and which task it concerned.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from types import TracebackType
from typing import IO, Any, Literal

import msgspec

__all__ = [
    "ACCESS_LOGGER",
    "ACCESS_SCOPE_KEY",
    "LOG_FORMATS",
    "REPEAT_WINDOW_S",
    "AccessLog",
    "AccessRecord",
    "JSONFormatter",
    "LogFormat",
    "RepeatLimitingHandler",
    "TextFormatter",
    "configure_logging",
    "describe_backend",
    "redact_url",
    "task_id_of",
]

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")
"""The names ``configure_logging(fmt=...)`` and ``--log-format`` take."""

ACCESS_LOGGER = "peerwire.access"
"""The logger of the access log: one INFO record per HTTP request."""

ACCESS_SCOPE_KEY = "peerwire.access"
"""Where a request's ``AccessRecord`` is in its ASGI scope while the access log is on."""

# What every LogRecord has: anything else on a record came as ``extra``.
_PLAIN_RECORD = logging.LogRecord("", logging.INFO, "", 0, "", None, None)
_RECORD_ATTRIBUTES = frozenset(vars(_PLAIN_RECORD)) | {"message", "asctime", "taskName"}
_REDACTED = "***"


def _trace_ids() -> dict[str, str]:
    """``trace_id`` and ``span_id`` of the OpenTelemetry span current where the record is
    formatted (where it was logged, for a stream handler), or nothing outside a span.
    OpenTelemetry is looked up, never imported: an application that traces imported it."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return {}
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}


class JSONFormatter(logging.Formatter):
    """One JSON object per record, on one line: ``time`` (ISO 8601, UTC, milliseconds),
    ``level``, ``logger``, ``message``, ``trace_id`` and ``span_id`` inside an OpenTelemetry
    span, then every ``extra`` field of the record, and ``exception`` (the formatted
    traceback) when it carries one. Values JSON cannot hold are written as their ``str``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **_trace_ids(),
        }
        for key, value in record.__dict__.items():
            if key not in _RECORD_ATTRIBUTES and key not in line and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        # json escapes newlines: a traceback stays on its record's one line.
        return json.dumps(line, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER: MESSAGE [key=value ...]``: the record's ``extra`` fields whose
    value the message does not already say are appended (``trace_id`` and ``span_id``
    inside an OpenTelemetry span too), then the traceback if any."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        text = super().formatMessage(record)
        said = record.message
        fields = [
            f"{key}={value}"
            for key, value in record.__dict__.items()
            if key not in _RECORD_ATTRIBUTES
            and not key.startswith("_")
            and _scalar(value)
            and str(value) not in said
        ]
        if "trace_id" not in record.__dict__:
            fields.extend(f"{key}={value}" for key, value in _trace_ids().items())
        return f"{text} [{' '.join(fields)}]" if fields else text


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float) and value != ""


def _utc(created: float) -> str:
    moment = datetime.fromtimestamp(created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


REPEAT_WINDOW_S = 60.0
"""How long identical records at WARNING and above are written once (``RepeatLimitingHandler``,
``configure_logging``): a dependency that is down is said once a minute, not per retry."""

# Identities remembered at most: one per distinct failure, bounded against a flood of distinct
# ones (the oldest is forgotten first; forgetting one only means its next repeat is written).
_MAX_REPEATS_TRACKED = 1024


class _Window:
    __slots__ = ("ends", "record", "suppressed")

    def __init__(self, record: logging.LogRecord, ends: float) -> None:
        self.record = record
        self.ends = ends
        self.suppressed = 0


class RepeatLimitingHandler(logging.StreamHandler[IO[str]]):
    """A stream handler (stderr by default) that writes identical records at
    ``repeat_level`` (WARNING) and above once per ``window`` seconds (``REPEAT_WINDOW_S``;
    ``None``: all); the handler's own level (``setLevel``) filters as on any handler.

    Identical: the same logger, level, message, exception type and text, and ``extra``
    fields, so records about different tasks are never folded. The first is written and
    opens the window; repeats within it are counted. Once the window has ended (seen at the
    next record handled, or when logging shuts down at exit) a record of the same logger and
    level says how many were not written: ``repeats_suppressed`` and ``repeat_window_s`` as
    fields, the message ``N identical records in 60 s not written: MESSAGE``. The next repeat
    is written again and opens a new window.

    Usable in ``logging.config.dictConfig`` (``"class":
    "peerwire.ops.RepeatLimitingHandler"``, ``"window": 60``).
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        window: float | None = REPEAT_WINDOW_S,
        repeat_level: int | str = logging.WARNING,
    ) -> None:
        super().__init__(sys.stderr if stream is None else stream)
        if window is not None and window <= 0:
            raise ValueError(f"the repeat window is a positive number of seconds, not {window!r}")
        self.window = window
        self.repeat_level = _level(repeat_level)
        self._windows: dict[tuple[object, ...], _Window] = {}
        self._next_end = float("inf")
        self._guard = threading.Lock()

    def handle(self, record: logging.LogRecord) -> bool:
        if self.window is None:
            return super().handle(record)
        for summary in self._ended(record.created):
            super().handle(summary)
        if record.levelno >= self.repeat_level and not self._admit(record):
            return False
        return super().handle(record)

    def close(self) -> None:
        # At exit (logging.shutdown): the counts of windows still open are said too.
        try:
            for summary in self._ended(float("inf")):
                super().handle(summary)
        finally:
            super().close()

    def _admit(self, record: logging.LogRecord) -> bool:
        assert self.window is not None
        key = _identity(record)
        if key is None:
            return True
        with self._guard:
            window = self._windows.get(key)
            if window is not None and record.created < window.ends:
                window.suppressed += 1
                return False
            if len(self._windows) >= _MAX_REPEATS_TRACKED:
                del self._windows[next(iter(self._windows))]
            ends = record.created + self.window
            self._windows[key] = _Window(record, ends)
            self._next_end = min(self._next_end, ends)
        return True

    def _ended(self, now: float) -> list[logging.LogRecord]:
        """Summaries of the windows ended by ``now`` with repeats not written; forgets them."""
        if now < self._next_end:
            return []
        summaries: list[logging.LogRecord] = []
        with self._guard:
            for key, window in list(self._windows.items()):
                if window.ends <= now:
                    del self._windows[key]
                    if window.suppressed:
                        summaries.append(self._summary(window, now))
            self._next_end = min((w.ends for w in self._windows.values()), default=float("inf"))
        return summaries

    def _summary(self, window: _Window, now: float) -> logging.LogRecord:
        first = window.record
        summary = logging.makeLogRecord(
            {
                key: value
                for key, value in first.__dict__.items()
                if key not in ("exc_info", "exc_text", "stack_info", "msg", "args", "message")
            }
        )
        summary.msg = "%d identical records in %g s not written: %s"
        summary.args = (window.suppressed, self.window, first.getMessage())
        summary.created = now if now != float("inf") else time.time()
        summary.msecs = (summary.created % 1) * 1000
        summary.__dict__["repeats_suppressed"] = window.suppressed
        summary.__dict__["repeat_window_s"] = self.window
        return summary


def _identity(record: logging.LogRecord) -> tuple[object, ...] | None:
    """What makes two records identical (``None``: a record that cannot say, never folded)."""
    try:
        message = record.getMessage()
    except Exception:  # a malformed record is the formatter's to report
        return None
    error = record.exc_info[1] if record.exc_info else None
    extras = tuple(
        (key, repr(value))
        for key, value in record.__dict__.items()
        if key not in _RECORD_ATTRIBUTES and not key.startswith("_")
    )
    return (
        record.name,
        record.levelno,
        message,
        type(error).__qualname__ if error is not None else "",
        str(error) if error is not None else "",
        extras,
    )


# Marks the handler ``configure_logging`` installed, so a second call replaces it.
_INSTALLED = "_peerwire_configured"


def configure_logging(
    level: str | int = "info",
    fmt: LogFormat = "text",
    *,
    stream: IO[str] | None = None,
    logger: str = "peerwire",
    repeat_window: float | None = REPEAT_WINDOW_S,
) -> logging.Handler:
    """Write ``logger``'s records (by default all of peerwire's) at ``level`` and above to
    ``stream`` (stderr) in ``fmt``: ``"text"`` (``TextFormatter``) or ``"json"``
    (``JSONFormatter``, one object a line). Identical records at WARNING and above are
    written once per ``repeat_window`` seconds, with the count of the others
    (``RepeatLimitingHandler``; ``None``: all written). Calling it again replaces the
    handler it installed before; handlers of your own are left alone. Returns the handler.

    ``logger=""`` is the root logger: every library's records are written the same way, and
    what would reach stderr around logging is routed through it too: warnings
    (``logging.captureWarnings``), uncaught exceptions of the main thread and of threads,
    and exceptions Python ignores ("Exception ignored in ...", ``sys.unraisablehook``).

    Records still propagate to the root logger: an application that configures the root
    itself should put ``JSONFormatter`` on its own handler rather than call this too, or it
    sees each record twice."""
    numeric = _level(level)
    if fmt not in LOG_FORMATS:
        raise ValueError(f"unknown log format {fmt!r} (known: {', '.join(LOG_FORMATS)})")
    target = logging.getLogger(logger)
    target.setLevel(numeric)
    for existing in list(target.handlers):
        if getattr(existing, _INSTALLED, False):
            target.removeHandler(existing)
            existing.close()
    handler = RepeatLimitingHandler(stream, window=repeat_window)
    handler.setFormatter(JSONFormatter() if fmt == "json" else TextFormatter())
    setattr(handler, _INSTALLED, True)
    target.addHandler(handler)
    if target is logging.getLogger():
        _route_stray_output()
    return handler


def root_writes_json() -> bool:
    """Whether ``configure_logging(fmt="json", logger="")`` has its handler on the root logger
    (every record, whoever logs it, becomes a JSON line on its stream)."""
    return any(
        getattr(handler, _INSTALLED, False) and isinstance(handler.formatter, JSONFormatter)
        for handler in logging.getLogger().handlers
    )


_STRAY = logging.getLogger("peerwire.uncaught")


def _route_stray_output() -> None:
    """What Python writes to stderr itself goes through logging instead (idempotent)."""
    logging.captureWarnings(True)
    if getattr(sys.excepthook, _INSTALLED, False):
        return

    def excepthook(
        kind: type[BaseException], error: BaseException, traceback: TracebackType | None
    ) -> None:
        if issubclass(kind, KeyboardInterrupt):
            sys.__excepthook__(kind, error, traceback)
            return
        _STRAY.critical("uncaught %s", kind.__name__, exc_info=(kind, error, traceback))

    def thread_excepthook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return  # as threading's own hook: a thread that exits says nothing
        name = args.thread.name if args.thread is not None else "?"
        _STRAY.error(
            "uncaught %s in thread %s",
            args.exc_type.__name__,
            name,
            exc_info=(args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback),
        )

    def unraisablehook(unraisable: Any) -> None:
        error = unraisable.exc_value
        where = unraisable.err_msg or "Exception ignored in"
        _STRAY.warning(
            "%s: %r",
            where,
            unraisable.object,
            exc_info=None if error is None else (type(error), error, unraisable.exc_traceback),
        )

    for hook in (excepthook, thread_excepthook, unraisablehook):
        setattr(hook, _INSTALLED, True)
    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook
    sys.unraisablehook = unraisablehook


def _level(level: str | int) -> int:
    if isinstance(level, int):
        return level
    numeric = logging.getLevelNamesMapping().get(level.strip().upper())
    if numeric is None:
        known = "debug, info, warning, error, critical"
        raise ValueError(f"unknown log level {level!r} (known: {known})")
    return numeric


# user:password@ in a URL's authority, and query parameters that hold credentials
# (libpq's password and sslpassword, tokens, keys).
_USERINFO = re.compile(r"(?P<head>://[^/@:?#]*):[^/@?#]*@")
_SECRET_PARAMETER = re.compile(
    r"(?P<head>[?&](?:password|passwd|pwd|sslpassword|token|access_token|api_key|apikey|"
    r"key|secret|auth)=)[^&#]*",
    re.IGNORECASE,
)


def redact_url(url: str) -> str:
    """``url`` without the secrets it may hold: the password of its user info and the value
    of credential-like query parameters become ``***`` (``postgresql://app:***@db/tasks``).
    Anything else is kept, so the log still says which host and database it was."""
    url = _USERINFO.sub(rf"\g<head>:{_REDACTED}@", url)
    return _SECRET_PARAMETER.sub(rf"\g<head>{_REDACTED}", url)


def describe_backend(backend: object) -> str:
    """A store, bus or work queue as a log line names it, without credentials: its spec or
    URL through ``redact_url`` (``dsn``, ``url``, a SQLite ``path``), with its key
    ``prefix`` or ``schema`` when it has one; else its class name."""
    if isinstance(backend, str):
        return redact_url(backend)
    for member in ("dsn", "url"):
        location = getattr(backend, member, None)
        if isinstance(location, str):
            text = redact_url(location)
            for option in ("schema", "prefix"):
                value = getattr(backend, option, None)
                if isinstance(value, str) and value:
                    text += f" ({option} {value})"
            return text
    path = getattr(backend, "path", None)
    if isinstance(path, str):
        return f"sqlite:{path}"
    return type(backend).__name__


# -- the access log ---------------------------------------------------------------------------


class _IdOnly(msgspec.Struct):
    id: str = ""


class _MessageIds(msgspec.Struct, rename="camel"):
    task_id: str = ""


class _TaskIds(msgspec.Struct):
    """The members of an encoded Task or SendMessageResponse that say the task's id: decoded
    alone, the rest of the document is skipped, not built."""

    id: str = ""
    task: _IdOnly | None = None
    message: _MessageIds | None = None


_task_ids = msgspec.json.Decoder(_TaskIds)


def task_id_of(value: object) -> str:
    """The id of the task an A2A request or result is about (``""``: none, or unknown).

    Duck-typed over ``peerwire.types``: ``task_id`` (push config requests, events, messages),
    ``task.id`` / ``message.task_id`` (``SendMessageResponse``), ``message.task_id``
    (``SendMessageRequest``), ``id`` (``Task``, GetTask/CancelTask/SubscribeToTask requests),
    and an already encoded Task or SendMessageResponse (``Encoded``)."""
    encoded = getattr(value, "json", None)
    if isinstance(encoded, bytes):
        try:
            ids = _task_ids.decode(encoded)
        except msgspec.ValidationError:
            return ""
        if ids.task is not None:
            return ids.task.id
        if ids.message is not None:
            return ids.message.task_id
        return ids.id
    found = getattr(value, "task_id", None)
    if isinstance(found, str) and found:
        return found
    for member in ("task", "message"):
        inner = getattr(value, member, None)
        if inner is not None:
            nested = task_id_of(inner)
            if nested:
                return nested
    if found is None:  # no task_id member at all: ``id`` is the task's (not a config's)
        own = getattr(value, "id", None)
        if isinstance(own, str):
            return own
    return ""


class AccessRecord:
    """What the access log says of one request; the bindings fill in what they learn."""

    __slots__ = ("binding", "method", "operation", "path", "span_id", "task_id", "trace_id")

    def __init__(self, method: str, path: str) -> None:
        self.method = method
        self.path = path
        self.binding = ""
        self.operation = ""
        self.task_id = ""
        self.trace_id = ""
        self.span_id = ""

    def noted(self, binding: str, operation: str, request: object = None) -> None:
        """The request is ``operation`` on ``binding`` (its task from ``request``, if any)."""
        self.binding = binding
        self.operation = operation
        if request is not None and not self.task_id:
            self.task_id = task_id_of(request)

    def traced(self, trace_id: str, span_id: str) -> None:
        """The request was answered in this span (its line is written after the span is
        no longer current, so it says the ids itself)."""
        self.trace_id, self.span_id = trace_id, span_id

    def answered(self, result: object) -> None:
        """The operation returned ``result``: a new task's id is known from it."""
        if not self.task_id and result is not None:
            self.task_id = task_id_of(result)


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGICall = Callable[[Scope, Receive, Send], Awaitable[None]]

# Bounds what one line takes of a path a client chose.
_MAX_PATH_CHARS = 256


class AccessLog:
    """One INFO record on ``ACCESS_LOGGER`` per HTTP request an app answered: method, path
    (no query string: credentials may travel there), binding, A2A operation, status,
    duration in milliseconds and the task id when known; a stream's duration is the
    stream's. Fields are ``extra`` members too (``method``, ``path``, ``binding``,
    ``operation``, ``status``, ``duration_ms``, ``task_id``; ``trace_id`` and ``span_id``
    of the request's span while tracing).

    ``binding_of(scope)`` names what a request reached when no binding noted it (one
    refused before it was decoded, the card, a health probe): asked only then."""

    def __init__(
        self, logger: str = ACCESS_LOGGER, *, binding_of: Callable[[Scope], str] | None = None
    ) -> None:
        self.log = logging.getLogger(logger)
        self._binding_of = binding_of

    async def around(self, app: ASGICall, scope: Scope, receive: Receive, send: Send) -> None:
        """Call ``app`` for this HTTP request with an ``AccessRecord`` in its scope, then log."""
        started = time.perf_counter()
        record = AccessRecord(scope.get("method", ""), _printable(scope.get("path", "")))
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await app({**scope, ACCESS_SCOPE_KEY: record}, receive, sending)
        except BaseException:
            status = status or 500  # nothing was answered: the server answers 500
            raise
        finally:
            if not record.binding and self._binding_of is not None:
                record.binding = self._binding_of(scope)
            self._write(record, status, (time.perf_counter() - started) * 1000.0)

    def _write(self, record: AccessRecord, status: int, duration_ms: float) -> None:
        if not self.log.isEnabledFor(logging.INFO):
            return
        task = f" task {record.task_id}" if record.task_id else ""
        extra: dict[str, object] = {
            "method": record.method,
            "path": record.path,
            "binding": record.binding,
            "operation": record.operation,
            "status": status,
            "duration_ms": round(duration_ms, 1),
            "task_id": record.task_id,
        }
        if record.trace_id:
            extra["trace_id"], extra["span_id"] = record.trace_id, record.span_id
        self.log.info(
            "%s %s %s %s %d %.1f ms%s",
            record.method,
            record.path,
            record.binding or "-",
            record.operation or "-",
            status,
            duration_ms,
            task,
            extra=extra,
        )


def _printable(path: str) -> str:
    """``path`` bounded, with control characters escaped: no forged line in a text log."""
    path = path[:_MAX_PATH_CHARS]
    if path.isprintable():
        return path
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in path)
