"""Logs that explain: structured records, one JSON object a line, secrets kept out, access log.

peerwire logs with the standard library (``logging``) under the ``peerwire`` logger tree.
Records about a task carry it as ``extra`` fields (``task_id``, ``context_id``, ``skill``,
``tenant``); ``JSONFormatter`` writes every such field as a member of the line's object, so a
log pipeline can index them, and ``TextFormatter`` appends the ones its message does not say.
``configure_logging`` puts either on the ``peerwire`` logger (what ``peerwire serve
--log-format`` does).

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
import time
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from typing import IO, Any, Literal

import msgspec

__all__ = [
    "ACCESS_LOGGER",
    "ACCESS_SCOPE_KEY",
    "LOG_FORMATS",
    "AccessLog",
    "AccessRecord",
    "JSONFormatter",
    "LogFormat",
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


class JSONFormatter(logging.Formatter):
    """One JSON object per record, on one line: ``time`` (ISO 8601, UTC, milliseconds),
    ``level``, ``logger``, ``message``, then every ``extra`` field of the record, and
    ``exception`` (the formatted traceback) when it carries one. Values JSON cannot hold are
    written as their ``str``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
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
    value the message does not already say are appended, then the traceback if any."""

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
        return f"{text} [{' '.join(fields)}]" if fields else text


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float) and value != ""


def _utc(created: float) -> str:
    moment = datetime.fromtimestamp(created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


# Marks the handler ``configure_logging`` installed, so a second call replaces it.
_INSTALLED = "_peerwire_configured"


def configure_logging(
    level: str | int = "info",
    fmt: LogFormat = "text",
    *,
    stream: IO[str] | None = None,
    logger: str = "peerwire",
) -> logging.Handler:
    """Write ``logger``'s records (by default all of peerwire's) at ``level`` and above to
    ``stream`` (stderr) in ``fmt``: ``"text"`` (``TextFormatter``) or ``"json"``
    (``JSONFormatter``, one object a line). Calling it again replaces the handler it
    installed before; handlers of your own are left alone. Returns the handler.

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
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(JSONFormatter() if fmt == "json" else TextFormatter())
    setattr(handler, _INSTALLED, True)
    target.addHandler(handler)
    return handler


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

    __slots__ = ("binding", "method", "operation", "path", "task_id")

    def __init__(self, method: str, path: str) -> None:
        self.method = method
        self.path = path
        self.binding = ""
        self.operation = ""
        self.task_id = ""

    def noted(self, binding: str, operation: str, request: object = None) -> None:
        """The request is ``operation`` on ``binding`` (its task from ``request``, if any)."""
        self.binding = binding
        self.operation = operation
        if request is not None and not self.task_id:
            self.task_id = task_id_of(request)

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
    ``operation``, ``status``, ``duration_ms``, ``task_id``).

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
        self.log.info(
            "%s %s %s %s %d %.1f ms%s",
            record.method,
            record.path,
            record.binding or "-",
            record.operation or "-",
            status,
            duration_ms,
            task,
            extra={
                "method": record.method,
                "path": record.path,
                "binding": record.binding,
                "operation": record.operation,
                "status": status,
                "duration_ms": round(duration_ms, 1),
                "task_id": record.task_id,
            },
        )


def _printable(path: str) -> str:
    """``path`` bounded, with control characters escaped: no forged line in a text log."""
    path = path[:_MAX_PATH_CHARS]
    if path.isprintable():
        return path
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in path)
