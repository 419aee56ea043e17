"""Which input parts a list of declared input modes covers (A2A spec §3.1.1: a media type the
agent does not support is refused with ``ContentTypeNotSupportedError``).

A part's media type is its ``mediaType``; without one, a text part is ``text/plain`` and a
data part ``application/json`` (what the spec's examples give them). A file part (``raw`` or
``url``) that declares no media type provides none to refuse, so no mode rules it out.
Modes match case-insensitively, parameters (``; charset=...``) ignored; ``*/*`` (or ``*``)
covers everything and ``type/*`` every subtype of ``type``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..types import Part

__all__ = ["covers", "part_media_type", "uncovered_parts"]


def part_media_type(part: Part) -> str | None:
    """The media type ``part`` carries, or ``None`` for a file part that declares none."""
    if part.media_type:
        return part.media_type
    if part.text is not None:
        return "text/plain"
    if part.kind == "data":
        return "application/json"
    return None


def covers(modes: Iterable[str], media_type: str) -> bool:
    """Whether one of ``modes`` accepts ``media_type``."""
    wanted = _essence(media_type)
    for mode in modes:
        essence = _essence(mode)
        if essence in ("*", "*/*") or essence == wanted:
            return True
        if essence.endswith("/*") and wanted.startswith(essence[:-1]):
            return True
    return False


def uncovered_parts(modes: Sequence[str], parts: Iterable[Part]) -> list[tuple[int, str]]:
    """``(index, media type)`` of each part ``modes`` do not cover; none when ``modes`` is
    empty (nothing declared, nothing to refuse)."""
    if not modes:
        return []
    found: list[tuple[int, str]] = []
    for index, part in enumerate(parts):
        media_type = part_media_type(part)
        if media_type is not None and not covers(modes, media_type):
            found.append((index, media_type))
    return found


def _essence(media_type: str) -> str:
    return media_type.split(";", 1)[0].strip().lower()
