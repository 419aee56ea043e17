"""``File``: a file a typed skill takes or returns (a file part on the wire)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["File"]


@dataclass(frozen=True, slots=True)
class File:
    """A file: its bytes (``data``) or where to fetch it (``url``), exactly one of them, with
    an optional ``name`` and ``media_type``. On the wire it is a file part (``raw`` or ``url``,
    ``filename``, ``mediaType``)."""

    data: bytes | None = None
    url: str | None = None
    name: str = ""
    media_type: str = ""

    def __post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError("a File carries exactly one of data or url")
