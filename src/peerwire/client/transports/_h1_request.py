"""Requests as bytes: a URL taken apart once (origin, request target, Host header), and the
request line, headers and body of one request, checked so that no header can split it."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from urllib.parse import quote, unquote, urlsplit

from ._h1_connection import InvalidURL

__all__ = ["Target", "request_bytes"]

# Framing headers this client writes itself; a caller's are dropped, never doubled.
_OWN_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Characters a request target may carry as they are; anything else is percent-encoded.
_TARGET_SAFE = "/?&=%:@!$'()*+,;~-._[]"


class Target:
    """A URL taken apart once: its origin, request target and Host header."""

    __slots__ = ("authorization", "host", "host_header", "port", "target", "tls")

    def __init__(self, url: str) -> None:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise InvalidURL(f"invalid URL {url!r}: {exc}") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise InvalidURL(f"cannot send a request to {url!r}: only http and https URLs")
        host = parts.hostname
        if not host:
            raise InvalidURL(f"cannot send a request to {url!r}: it names no host")
        if not host.isascii():
            host = host.encode("idna").decode("ascii")
        self.tls = scheme == "https"
        default_port = 443 if self.tls else 80
        self.host = host
        self.port = port if port is not None else default_port
        shown = f"[{host}]" if ":" in host else host
        self.host_header = shown if self.port == default_port else f"{shown}:{self.port}"
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        self.target = quote(target, safe=_TARGET_SAFE) if not _is_plain(target) else target
        self.authorization: str | None = None
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            self.authorization = "Basic " + base64.b64encode(pair.encode()).decode("ascii")

    @property
    def origin(self) -> tuple[bool, str, int]:
        return (self.tls, self.host, self.port)


def _is_plain(target: str) -> bool:
    return target.isascii() and " " not in target and "#" not in target and target.isprintable()


# Header names repeat on every request: each is checked once. Name -> sent (False: ours).
_checked_names: dict[str, bool] = {}


def request_bytes(
    method: str, target: Target, headers: Mapping[str, str], body: bytes | None
) -> bytes:
    """The request line and headers, then ``body``: the bytes of one request."""
    if method == "HEAD":
        # Its response announces a body it does not carry: the parser would wait for it.
        raise ValueError("HEAD requests are not supported by this client")
    lines = [f"{method} {target.target} HTTP/1.1\r\nHost: {target.host_header}\r\n"]
    if target.authorization is not None and not any(
        name.lower() == "authorization" for name in headers
    ):
        lines.append(f"Authorization: {target.authorization}\r\n")
    for name, value in headers.items():
        kept = _checked_names.get(name)
        if kept is None:
            kept = _check_name(name)
        if kept:
            lines.append(f"{name}: {value}\r\n")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}\r\n")
    lines.append("Accept-Encoding: identity\r\n\r\n")
    text = "".join(lines)
    # One count instead of a check per value: every line break must be one this code wrote
    # (the first and the last piece end two lines each, the others one).
    breaks = len(lines) + 2
    if text.count("\n") != breaks or text.count("\r") != breaks or "\0" in text:
        raise ValueError("HTTP header values must not contain line breaks or NUL")
    try:
        head = text.encode("ascii")
    except UnicodeEncodeError:
        names = sorted(name for name, value in headers.items() if not value.isascii())
        raise ValueError(f"HTTP header values must be ASCII (not those of {names})") from None
    return head + body if body else head


def _check_name(name: str) -> bool:
    if not _TOKEN.fullmatch(name):
        raise ValueError(f"invalid HTTP header name {name!r}")
    kept = name.lower() not in _OWN_HEADERS and name.lower() != "accept-encoding"
    if len(_checked_names) < 1024:
        _checked_names[name] = kept
    return kept
