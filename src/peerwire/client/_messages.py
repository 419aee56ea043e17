"""Building the user's message from the short forms ``Client.send`` accepts."""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import msgspec

from .._ids import new_id
from ..types import Message, Part, Role

__all__ = ["Content", "FileLike", "build_message"]

Content = str | Message | Part | Sequence[Part]
"""Text, a ready ``Message``, or the parts of one."""

FileLike = Part | str | os.PathLike[str]
"""A file part as is, or the path of a local file to send inline (its bytes, name and guessed
media type). A file at a URL is a ``Part(url=...)``."""


async def build_message(
    content: Content,
    *,
    task_id: str | None = None,
    context_id: str | None = None,
    data: Any = None,
    files: Sequence[FileLike] = (),
    skill: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Message:
    """A user message: ``content`` plus a data part (unless ``data`` is None) and file parts,
    addressed and tagged.

    ``skill`` goes in ``metadata["skill"]``, which is how a peerwire agent with several skills
    picks one (other agents ignore it). Arguments given override those of a ready ``Message``.
    """
    extra = [Part(data=data, media_type="application/json")] if data is not None else []
    extra += [await _file_part(f) for f in files]
    merged = dict(metadata or {})
    if skill is not None:
        merged["skill"] = skill
    if isinstance(content, Message):
        return msgspec.structs.replace(
            content,
            parts=content.parts + extra,
            task_id=content.task_id if task_id is None else task_id,
            context_id=content.context_id if context_id is None else context_id,
            metadata={**(content.metadata or {}), **merged} or content.metadata,
        )
    return Message(
        message_id=new_id(),
        role=Role.USER,
        parts=_parts(content) + extra,
        task_id=task_id or "",
        context_id=context_id or "",
        metadata=merged or None,
    )


def _parts(content: str | Part | Sequence[Part]) -> list[Part]:
    if isinstance(content, str):
        return [Part(text=content)]
    if isinstance(content, Part):
        return [content]
    parts = list(content)
    for part in parts:
        if not isinstance(part, Part):
            raise TypeError(f"message content must be text, a Message or Parts, not {part!r}")
    return parts


async def _file_part(file: FileLike) -> Part:
    if isinstance(file, Part):
        return file
    path = anyio.Path(os.fspath(file))
    media_type, _ = mimetypes.guess_type(path.name)
    return Part(
        raw=await path.read_bytes(),
        filename=path.name,
        media_type=media_type or "application/octet-stream",
    )
