"""peerwire's own options in a database URL, such as ``?schema=`` or ``?prefix=``.

A store or bus spec is one string on the command line (``--store postgresql://...?schema=a``);
the options peerwire reads are taken out before the URL reaches the driver, which would
otherwise pass unknown ones to the server (asyncpg) or refuse them (redis-py).
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["pop_url_option"]


def pop_url_option(url: str, name: str) -> tuple[str, str | None]:
    """``url`` without the query parameter ``name``, and that parameter's value (last wins)."""
    parts = urlsplit(url)
    if not parts.query:
        return url, None
    value = None
    kept = []
    for key, item in parse_qsl(parts.query, keep_blank_values=True):
        if key == name:
            value = item
        else:
            kept.append((key, item))
    if value is None:
        return url, None
    return urlunsplit(parts._replace(query=urlencode(kept))), value
