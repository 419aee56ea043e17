"""Where a request landed when the app is mounted under a path prefix.

Hosts say "this app lives under ``/a2a``" in different ways, and the app must route and
advertise the same under each:

* ASGI's ``root_path``: Starlette's (and FastAPI's) ``Mount`` and ``uvicorn --root-path`` put
  the prefix there and keep it at the start of ``path`` and ``raw_path`` (older Starlette
  removed it from ``path``; both are handled: the prefix is removed only when ``path`` starts
  with it).
* Litestar's ``is_mount`` removes the prefix from ``path`` (adding a trailing slash) and says
  it nowhere but in ``raw_path``, which keeps the path as the client sent it.

``route_path`` is the path the app routes on; ``raw_tail`` finds a route's percent-encoded
form at the end of ``raw_path`` (REST ids may hold ``%2F``); ``mount_prefix`` is the public
path the app is mounted under, for the card's URLs; ``join_paths`` puts it after the path
``public_url`` already has.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit, urlunsplit

from ._http import Scope

__all__ = ["join_paths", "mount_prefix", "raw_tail", "route_path", "under_prefix"]

# As ``quote`` leaves a path's reserved characters alone (RFC 3986 pchar and "/").
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_HEX = frozenset(b"0123456789abcdefABCDEF")


def route_path(path: str, root_path: str) -> str:
    """``path`` without the ``root_path`` prefix it starts with ("/" when nothing is left);
    ``path`` itself when it does not start with it (already relative, as older Starlette
    passed it). Only whole segments count: ``/a2ab`` is not under ``/a2a``."""
    root = root_path.rstrip("/")
    if root and path.startswith(root):
        end = len(root)
        if len(path) == end:
            return "/"
        if path[end] == "/":
            return path[end:]
    return path


def raw_tail(raw_path: str, decoded: str) -> str | None:
    """The end of ``raw_path`` (percent-encoded, latin-1 text) that decodes to ``decoded``,
    or ``None`` when it does not end with it (a host rewrote the path)."""
    if raw_path.endswith(decoded):  # nothing percent-encoded: the common case, one compare
        return raw_path[len(raw_path) - len(decoded) :]
    raw = raw_path.encode("latin-1")
    target = decoded.encode("utf-8", "surrogateescape")
    i, j = len(raw), len(target)
    # Right to left: in a valid path every "%" begins an escape of exactly three bytes.
    while j > 0:
        if i >= 3 and raw[i - 3] == 0x25 and raw[i - 2] in _HEX and raw[i - 1] in _HEX:
            byte, width = int(raw[i - 2 : i], 16), 3
        elif i >= 1:
            byte, width = raw[i - 1], 1
        else:
            return None
        if byte != target[j - 1]:
            return None
        i -= width
        j -= 1
    return raw_path[i:]


def mount_prefix(scope: Scope, route: str) -> str:
    """The public path (percent-encoded, no trailing slash, ``""`` at the root) the app is
    mounted under, for a request that reached ``route`` (e.g. the card's path): what
    ``root_path`` says, joined to what ``raw_path`` shows before ``route``."""
    root: str = scope.get("root_path") or ""
    declared = quote(root.rstrip("/"), safe=_PATH_SAFE) if root else ""
    seen = ""
    raw: bytes | None = scope.get("raw_path")
    if raw:
        text = raw.split(b"?", 1)[0].decode("latin-1")
        if text.endswith("/") and not route.endswith("/"):
            text = text[:-1]
        if text.endswith(route):
            seen = text[: len(text) - len(route)].rstrip("/")
    return join_paths(declared, seen)


def join_paths(head: str, tail: str) -> str:
    """``head`` then ``tail`` (each ``""`` or ``/``-led, no trailing slash), the segments
    where ``tail`` begins as ``head`` ends said once: ``/x`` + ``/x/a2a`` is ``/x/a2a``,
    ``/agents/a2a`` + ``/a2a`` is ``/agents/a2a``, ``/api`` + ``/a2a`` is ``/api/a2a``."""
    if not tail:
        return head
    if not head:
        return tail
    heads, tails = head.split("/")[1:], tail.split("/")[1:]
    for overlap in range(min(len(heads), len(tails)), 0, -1):
        if heads[-overlap:] == tails[:overlap]:
            return "/" + "/".join([*heads, *tails[overlap:]])
    return head + tail


def under_prefix(public_url: str, prefix: str) -> str:
    """``public_url`` (no trailing slash) with the mount ``prefix`` joined to its path."""
    base = public_url.rstrip("/")
    if not prefix:
        return base
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=join_paths(parts.path.rstrip("/"), prefix)))
