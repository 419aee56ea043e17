"""What the page sends the backend and what it is told back, checked and shaped here: a
message as the page composed it (``Outgoing``), a run's progress (``Run``), the binding
named, and every failure as one line of words with its HTTP status (``InspectorError``,
``describe_error``, ``error_status``), never a traceback."""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    A2AConnectionError,
    A2AError,
    A2ATimeoutError,
    InvalidAgentCardError,
    InvalidResponseError,
    PeerwireError,
    TaskNotFoundError,
)
from ..types import Binding, Part

__all__ = [
    "BINDINGS",
    "MAX_FILE_BYTES",
    "InspectorError",
    "Outgoing",
    "Run",
    "binding_of",
    "describe_error",
    "error_status",
]

BINDINGS = (Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC)
MAX_FILE_BYTES = 8 * 1024 * 1024


class InspectorError(PeerwireError):
    """A request the page made that cannot be done, said for the page; ``status`` is the
    HTTP status the backend answers with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def describe_error(exc: BaseException) -> str:
    """An error as one line for the page: its class and its message, never a traceback."""
    if isinstance(exc, A2AError):
        return f"{type(exc).__name__}: {exc.message}"
    if isinstance(exc, InspectorError):
        return exc.message
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not text.startswith(type(exc).__name__) else text


def error_status(exc: BaseException) -> int:
    """The HTTP status the backend answers a failed call with: 502 when the agent could not
    be reached or answered nonsense, 404 for an unknown task, else 400 (the agent refused)."""
    if isinstance(exc, TaskNotFoundError):
        return 404
    if isinstance(exc, A2AConnectionError | A2ATimeoutError | InvalidResponseError):
        return 502
    if isinstance(exc, InvalidAgentCardError):
        return 502
    return 400


@dataclass
class Run:
    """One message sent (blocking or streaming) or one resubscription."""

    id: int
    binding: str
    mode: str  # "blocking", "streaming", "subscribe"
    sent: str
    task_id: str = ""
    status: str = "running"  # "running", "done", "error"
    error: str = ""
    reply: str = ""  # a direct Message reply's text
    started: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "binding": self.binding,
            "mode": self.mode,
            "sent": self.sent,
            "taskId": self.task_id,
            "status": self.status,
            "error": self.error,
            "reply": self.reply,
            "started": self.started,
        }


@dataclass(frozen=True)
class Outgoing:
    """A message as the page composed it."""

    text: str = ""
    data: Any = None
    files: tuple[Part, ...] = ()
    task_id: str | None = None
    context_id: str | None = None
    skill: str | None = None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Outgoing:
        text = body.get("text") or ""
        if not isinstance(text, str):
            raise InspectorError("text must be text")
        data = None
        raw_data = body.get("data")
        if isinstance(raw_data, str) and raw_data.strip():
            try:
                data = json.loads(raw_data)
            except ValueError as exc:
                raise InspectorError(f"the data part is not JSON: {exc}") from None
        elif raw_data not in (None, ""):
            data = raw_data
        files = []
        file = body.get("file")
        if isinstance(file, Mapping) and file.get("content"):
            try:
                raw = base64.b64decode(str(file["content"]), validate=True)
            except (binascii.Error, ValueError):
                raise InspectorError("the file's content is not base64") from None
            if len(raw) > MAX_FILE_BYTES:
                raise InspectorError(f"the file is larger than {MAX_FILE_BYTES} bytes")
            files.append(
                Part(
                    raw=raw,
                    filename=str(file.get("name") or "file"),
                    media_type=str(file.get("type") or "application/octet-stream"),
                )
            )
        return cls(
            text=text,
            data=data,
            files=tuple(files),
            task_id=_optional_text(body, "taskId"),
            context_id=_optional_text(body, "contextId"),
            skill=_optional_text(body, "skill"),
        )

    def summary(self) -> str:
        shown = [self.text] if self.text else []
        if self.data is not None:
            shown.append("data " + json.dumps(self.data, ensure_ascii=False))
        shown += [f"file {f.filename} ({len(f.raw or b'')} bytes)" for f in self.files]
        return " + ".join(shown) or "(empty message)"


def _optional_text(body: Mapping[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise InspectorError(f"{key} must be text")
    return value.strip() or None


def binding_of(name: Any) -> str:
    if name in (None, ""):
        return Binding.JSONRPC
    if name not in BINDINGS:
        raise InspectorError(f"unknown binding {name!r} (JSONRPC, HTTP+JSON or GRPC)")
    return str(name)
