"""What agents exchange: parts, messages and artifacts (A2A spec §4.1)."""

from __future__ import annotations

from typing import Any

import msgspec

from ._base import Model, Role

__all__ = ["Artifact", "Message", "Part"]

_UNSET = msgspec.UNSET


class Part(Model, frozen=True, kw_only=True):
    """One piece of content: exactly one of ``text``, ``raw``, ``url`` or ``data``.

    ``data`` is a google.protobuf.Value, so JSON ``null`` is a legal value for it; it is
    therefore ``UNSET`` when absent rather than ``None``.
    """

    text: str | None = None
    raw: bytes | None = None
    url: str | None = None
    data: Any | msgspec.UnsetType = _UNSET
    metadata: dict[str, Any] | None = None
    filename: str = ""
    media_type: str = ""

    def __post_init__(self) -> None:
        kinds = (
            (self.text is not None)
            + (self.raw is not None)
            + (self.url is not None)
            + (self.data is not _UNSET)
        )
        if kinds != 1:
            raise ValueError("a Part must carry exactly one of text, raw, url or data")

    @property
    def kind(self) -> str:
        """``"text"``, ``"raw"``, ``"url"`` or ``"data"``: the member this part carries."""
        if self.text is not None:
            return "text"
        if self.raw is not None:
            return "raw"
        if self.url is not None:
            return "url"
        return "data"


class Message(Model, frozen=True, kw_only=True):
    """One turn of communication between a client and an agent."""

    message_id: str
    context_id: str = ""
    task_id: str = ""
    role: Role
    parts: list[Part]
    metadata: dict[str, Any] | None = None
    extensions: list[str] = []
    reference_task_ids: list[str] = []

    def __post_init__(self) -> None:
        if not self.message_id:
            raise ValueError("messageId is required")
        if self.role is Role.UNSPECIFIED:
            raise ValueError("role must be ROLE_USER or ROLE_AGENT")
        if not self.parts:
            raise ValueError("a Message needs at least one part")

    @property
    def text(self) -> str:
        """The text of all text parts, joined in order."""
        return "".join(p.text for p in self.parts if p.text is not None)

    @property
    def data(self) -> Any:
        """The value of the first data part, or ``None`` when there is none."""
        for p in self.parts:
            if p.data is not _UNSET:
                return p.data
        return None


class Artifact(Model, frozen=True, kw_only=True):
    """An output of a task: a named, identified list of parts."""

    artifact_id: str
    name: str = ""
    description: str = ""
    parts: list[Part]
    metadata: dict[str, Any] | None = None
    extensions: list[str] = []

    def __post_init__(self) -> None:
        if not self.artifact_id:
            raise ValueError("artifactId is required")
        if not self.parts:
            raise ValueError("an Artifact needs at least one part")

    @property
    def text(self) -> str:
        """The text of all text parts, joined in order."""
        return "".join(p.text for p in self.parts if p.text is not None)
