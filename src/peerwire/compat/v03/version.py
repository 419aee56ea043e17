"""Which protocol version a request names, as far as 0.3 is concerned (sans I/O).

A2A 0.3 had no version on the wire: 0.3 clients send no ``A2A-Version`` header, and the 1.0
spec says a missing header means 0.3. Which version a request speaks is decided by its shape
first (a 0.3 method name, a 0.3 REST route; ``jsonrpc.is_v03_method``, ``rest.match_route``);
only where the shape is ambiguous (``/v1/...`` is also the path of a 1.0 tenant called
``v1``) does the header decide, through ``names_v1``.
"""

from __future__ import annotations

import re

__all__ = ["CARD_PROTOCOL_VERSION", "PROTOCOL_VERSION", "names_v1", "speaks_v03"]

PROTOCOL_VERSION = "0.3"
"""The Major.Minor of A2A 0.3, as ``AgentInterface.protocolVersion`` and ``A2A-Version``."""

CARD_PROTOCOL_VERSION = "0.3.0"
"""What a 0.3 card's top-level ``protocolVersion`` says (0.3 cards carried the patch)."""

_VERSION = re.compile(r"\s*(\d+)\.(\d+)(?:\.\d+)?\s*")


def _major_minor(text: str) -> tuple[int, int] | None:
    match = _VERSION.fullmatch(text)
    return None if match is None else (int(match[1]), int(match[2]))


def speaks_v03(version: str | None) -> bool:
    """Whether a protocol version (an interface's, a card's) is 0.3: ``0.3``, ``0.3.0``, ..."""
    return version is not None and _major_minor(version) == (0, 3)


def names_v1(header: str | None) -> bool:
    """Whether an ``A2A-Version`` header asks for a 1.x protocol (``1.0``, ``1.0.1``, ``1.1``);
    a missing or empty one does not (it means 0.3)."""
    if not header:
        return False
    versions = [_major_minor(item) for item in header.split(",")]
    return bool(versions) and all(v is not None and v[0] == 1 for v in versions)
