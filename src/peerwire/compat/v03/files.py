"""The two forms of 0.3 ``FileWithBytes`` on the proto bindings (HTTP+JSON and gRPC).

The 0.3 proto's ``file_with_bytes`` is a ``bytes`` field, and the 0.3 SDKs disagree on what
goes in it:

* ``"content"``: the file's content itself (its base64 in ProtoJSON), as the proto means it,
  @a2a-js/sdk 0.3 and peerwire;
* ``"base64"``: the ASCII of the base64 *text* of the content, as the Python a2a-sdk (every
  0.3.x and its 1.x 0.3 layer; a2a-go the same), so REST JSON carries it base64 twice.

No card field tells them apart. Reading (``files_in``) with the setting ``"auto"`` takes the
bytes as base64 text when they are canonical base64 (standard alphabet, padded, non-empty),
else as the content; ``"content"`` and ``"base64"`` force one reading for the ambiguous case
(content that happens to be base64 text). Writing (``files_out``) uses one form. JSON-RPC is
not concerned: its ``bytes`` is a JSON string both SDKs read alike.

Both work on ProtoJSON documents (what ``proto`` reads and writes, ``MessageToDict`` of a gRPC
message) before ``*_from_proto`` and after ``*_to_proto``: the 1.0 model never sees a form.

A server answers each caller in the form its task's files arrived in: ``files_in`` with
``mark=True`` records the form of a message that carried file bytes in the message's metadata
(``FORM_KEY``), so the form is kept with the task's history by every store (it survives a
restart, and another replica reads it); ``form_of_history`` finds it again. The message
writers of ``translate`` and ``proto`` leave the key out of what 0.3 callers get.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any, Literal, get_args

from ...errors import PeerwireError
from .translate import FILE_FORM_KEY, Doc, bad

__all__ = [
    "FILE_BYTES_SETTINGS",
    "FORM_KEY",
    "FileBytes",
    "FileBytesSettingError",
    "FileForm",
    "check_file_bytes",
    "files_in",
    "files_out",
    "form_of_history",
    "has_file_bytes",
    "sending_form",
]

FileBytes = Literal["auto", "content", "base64"]
"""How 0.3 proto ``fileWithBytes`` is read: detected, or one form forced."""

FileForm = Literal["content", "base64"]
"""A form ``fileWithBytes`` is written in."""

FILE_BYTES_SETTINGS: tuple[FileBytes, ...] = get_args(FileBytes)

FORM_KEY = FILE_FORM_KEY
"""Message metadata key: the form the message's file bytes arrived in over 0.3 (the message
writers of ``translate`` and ``proto`` leave it out)."""

_CANONICAL = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_FILE_KEYS = ("fileWithBytes", "file_with_bytes")
# Members holding caller data (data parts, metadata, extension lists): never walked.
_OPAQUE = frozenset(("data", "metadata", "extensions"))


def check_file_bytes(value: object, name: str = "v03_file_bytes") -> FileBytes:
    """``value`` as a ``FileBytes`` setting; ``FileBytesSettingError`` (a ``ValueError``)
    naming the valid ones."""
    if value not in FILE_BYTES_SETTINGS:
        valid = ", ".join(repr(s) for s in FILE_BYTES_SETTINGS)
        raise FileBytesSettingError(f"{name} must be one of {valid}, not {value!r}")
    return value


class FileBytesSettingError(PeerwireError, ValueError):
    """A ``v03_file_bytes`` setting that is none of ``FILE_BYTES_SETTINGS``."""


def sending_form(setting: FileBytes) -> FileForm:
    """What a client writes under ``setting``: "auto" writes the proto's form, the content."""
    return "base64" if setting == "base64" else "content"


def _proto_bytes(value: object, path: str) -> bytes:
    if not isinstance(value, str):
        raise bad(path, "must be base64 text")
    text = value.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise bad(path, "is not valid base64") from None


def _is_base64_text(data: bytes) -> bool:
    return bool(data) and _CANONICAL.fullmatch(data) is not None


def _read(value: object, setting: FileBytes, path: str) -> tuple[str, FileForm]:
    """The ProtoJSON of the content (standard base64) and the form it arrived in."""
    data = _proto_bytes(value, path)
    if setting == "base64" or (setting == "auto" and _is_base64_text(data)):
        if not _is_base64_text(data) and data:
            raise bad(
                path, "must hold base64 text (0.3 file bytes are read as a2a-sdk writes them)"
            )
        return data.decode("ascii"), "base64"
    return base64.b64encode(data).decode("ascii"), "content"


def _walk(value: Any, visit: Any, path: str) -> None:
    if isinstance(value, dict):
        for key, member in value.items():
            if key in _OPAQUE:
                continue
            if key in _FILE_KEYS:
                visit(value, key, f"{path}.{key}")
            else:
                _walk(member, visit, f"{path}.{key}")
    elif isinstance(value, list):
        for i, member in enumerate(value):
            _walk(member, visit, f"{path}[{i}]")


def _message_of(document: Doc) -> Doc | None:
    for key in ("message", "request", "msg"):
        message = document.get(key)
        if isinstance(message, dict):
            return message
    return None


def files_in(
    document: Any, setting: FileBytes, *, path: str = "body", mark: bool = False
) -> FileForm | None:
    """Rewrite, in place, every ``fileWithBytes`` of a ProtoJSON ``document`` to the content's
    ProtoJSON, read under ``setting``; the form they arrived in (``None``: there were none).

    ``mark`` (a server reading a SendMessageRequest): record that form in the message's
    metadata under ``FORM_KEY``, replacing whatever the caller put there."""
    forms: set[FileForm] = set()

    def visit(holder: Doc, key: str, where: str) -> None:
        holder[key], form = _read(holder[key], setting, where)
        forms.add(form)

    _walk(document, visit, path)
    form: FileForm | None = "base64" if "base64" in forms else forms.pop() if forms else None
    if mark and isinstance(document, dict):
        message = _message_of(document)
        if message is not None:
            metadata = message.get("metadata")
            clean = (
                {k: v for k, v in metadata.items() if k != FORM_KEY}
                if isinstance(metadata, dict)
                else metadata
            )
            if form is not None:
                clean = {**(clean or {}), FORM_KEY: form}
            if clean is not None:
                message["metadata"] = clean
    return form


def files_out(document: Any, form: FileForm) -> Any:
    """``document`` (ProtoJSON, rewritten in place) with its file bytes in ``form``."""

    def visit(holder: Doc, key: str, where: str) -> None:
        if form == "base64":
            holder[key] = base64.b64encode(holder[key].encode("ascii")).decode("ascii")

    if form == "base64":
        _walk(document, visit, "body")
    return document


def has_file_bytes(document: Any) -> bool:
    """Whether a ProtoJSON ``document`` carries any ``fileWithBytes``."""
    found = False

    def visit(holder: Doc, key: str, where: str) -> None:
        nonlocal found
        found = True

    _walk(document, visit, "body")
    return found


def form_of_history(metadata: Iterable[dict[str, Any] | None]) -> FileForm | None:
    """The form recorded last in the metadata of a task's history messages (oldest first)."""
    form: FileForm | None = None
    for entry in metadata:
        if entry is not None and entry.get(FORM_KEY) in ("content", "base64"):
            form = entry[FORM_KEY]
    return form
