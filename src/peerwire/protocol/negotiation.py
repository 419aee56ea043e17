"""Service parameters (A2A spec §3.2.6, §3.6, §4.6): ``A2A-Version`` and ``A2A-Extensions``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..errors import ExtensionSupportRequiredError, VersionNotSupportedError

__all__ = [
    "PROTOCOL_VERSION",
    "active_extensions",
    "check_version",
    "format_extensions",
    "parse_extensions",
]

PROTOCOL_VERSION = "1.0"
# Major.Minor with an optional, ignored patch (A2A spec §3.6); "1" alone is not a version.
_VERSION = re.compile(r"(?P<major>\d+)\.(?P<minor>\d+)(?:\.\d+)?")


def check_version(header: str | None, *, lenient: bool = False) -> str:
    """The Major.Minor a request asks for, if this server speaks it.

    A missing or empty header means 0.3 (spec §3.6), which peerwire does not speak, unless
    ``lenient`` is set: then it is taken as 1.0. Patch numbers are ignored ("1.0.3" is 1.0).
    A header sent more than once arrives comma-joined, as service parameters with several
    values do: "1.0, 1.0" names one version and is 1.0; values naming different versions
    ("1.0, 0.3") ask for no single version, and are refused.
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
    named = {_major_minor(item) for item in value.split(",")}
    if named != {PROTOCOL_VERSION}:
        several = len(named - {None}) > 1
        why = " names more than one version:" if several else " is not supported;"
        raise VersionNotSupportedError(
            f"A2A-Version {value!r}{why} this server speaks {PROTOCOL_VERSION}",
            metadata={"requestedVersion": value, "supportedVersions": PROTOCOL_VERSION},
        )
    return PROTOCOL_VERSION


def _major_minor(text: str) -> str | None:
    match = _VERSION.fullmatch(text.strip())
    return None if match is None else f"{match['major']}.{match['minor']}"


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


def negotiate_extensions(
    header_values: Sequence[str], supported: Iterable[str], required: Sequence[str]
) -> tuple[str, ...]:
    """``active_extensions`` of the ``A2A-Extensions`` values a request sent: nothing parsed
    for the usual request, which asks for none where none is required."""
    if not header_values and not required:
        return ()
    return active_extensions(parse_extensions(header_values), supported, required)


def format_extensions(uris: Iterable[str]) -> str:
    return ",".join(uris)
