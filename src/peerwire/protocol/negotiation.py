"""Service parameters (facts §8, §11.2): ``A2A-Version`` and ``A2A-Extensions``."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import ExtensionSupportRequiredError, VersionNotSupportedError

__all__ = [
    "PROTOCOL_VERSION",
    "active_extensions",
    "check_version",
    "format_extensions",
    "parse_extensions",
]

PROTOCOL_VERSION = "1.0"
# Major.Minor with an optional, ignored patch (facts §8.2); "1" alone is not a version.
_VERSION = re.compile(r"(?P<major>\d+)\.(?P<minor>\d+)(?:\.\d+)?")


def check_version(header: str | None, *, lenient: bool = False) -> str:
    """The Major.Minor a request asks for, if this server speaks it.

    A missing or empty header means 0.3 (spec §3.6), which peerwire does not speak, unless
    ``lenient`` is set: then it is taken as 1.0. Patch numbers are ignored ("1.0.3" is 1.0).
    """
    if header == PROTOCOL_VERSION:
        return PROTOCOL_VERSION  # the usual spelling, exactly: no pattern to match
    value = (header or "").strip()
    if not value:
        if lenient:
            return PROTOCOL_VERSION
        raise VersionNotSupportedError(
            "The A2A-Version header is missing, which means protocol 0.3; this server speaks "
            f"{PROTOCOL_VERSION}: send A2A-Version: {PROTOCOL_VERSION}",
            metadata={"supportedVersions": PROTOCOL_VERSION},
        )
    match = _VERSION.fullmatch(value)
    if match is None or f"{match['major']}.{match['minor']}" != PROTOCOL_VERSION:
        raise VersionNotSupportedError(
            f"A2A-Version {value!r} is not supported; this server speaks {PROTOCOL_VERSION}",
            metadata={"requestedVersion": value, "supportedVersions": PROTOCOL_VERSION},
        )
    return PROTOCOL_VERSION


def parse_extensions(values: Iterable[str]) -> tuple[str, ...]:
    """Extension URIs from one or more comma-separated ``A2A-Extensions`` values, in order."""
    seen: dict[str, None] = {}
    for value in values:
        for item in value.split(","):
            uri = item.strip()
            if uri:
                seen.setdefault(uri, None)
    return tuple(seen)


def active_extensions(
    requested: Iterable[str], supported: Iterable[str], required: Iterable[str]
) -> tuple[str, ...]:
    """The requested extensions this agent supports; every required one must be requested."""
    wanted = tuple(requested)
    if not wanted and not required:
        return ()  # the usual request: no extension asked for, none required
    missing = [uri for uri in required if uri not in wanted]
    if missing:
        raise ExtensionSupportRequiredError(
            f"This agent requires the extension(s) {', '.join(missing)}: list them in the "
            "A2A-Extensions header",
            metadata={"extensions": ",".join(missing)},
        )
    if not wanted:
        return ()
    offered = set(supported)
    return tuple(uri for uri in wanted if uri in offered)


def format_extensions(uris: Iterable[str]) -> str:
    return ",".join(uris)
