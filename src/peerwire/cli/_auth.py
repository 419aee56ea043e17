"""What the calling commands present to an agent: ``--bearer``, ``--api-key``, ``--header``.

``--bearer`` and ``--api-key`` become the client's credentials (``peerwire.client.auth``):
each is sent only where the agent's card asks for it, as its security scheme says (an API
key in the header, query parameter or cookie its ``apiKeySecurityScheme`` names; a bearer
token for an HTTP Bearer, OAuth 2.0 or OpenID Connect scheme), chosen per call and per skill.
``--header NAME:VALUE`` goes with every request as given, the card's too: for an agent whose
card does not describe its authentication (a gateway in front of it), or any other header.

Each has an environment variable (``PEERWIRE_BEARER``, ``PEERWIRE_API_KEY``,
``PEERWIRE_HEADERS``: one ``NAME:VALUE`` a line); a flag wins over its variable, a
``--header`` over the variable's header of the same name.

Secrets are never printed: ``redact`` replaces every value given here in whatever a command
writes to stderr (errors, notes, the ``PEERWIRE_DEBUG`` traceback), and ``--json`` prints
A2A objects only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

import typer

from ..client.auth import APIKey, BearerToken, Credential, Credentials
from ..types import AgentCard

__all__ = [
    "ENV_API_KEY",
    "ENV_BEARER",
    "ENV_HEADERS",
    "NO_AUTH",
    "CallerAuth",
    "caller_auth",
]

ENV_BEARER = "PEERWIRE_BEARER"
ENV_API_KEY = "PEERWIRE_API_KEY"
ENV_HEADERS = "PEERWIRE_HEADERS"

# RFC 9110 §5.1: a field name is a token.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# A field value must not end the header early or carry control characters (§5.5).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# Headers the HTTP client and the protocol set: a second value would break the request.
_MANAGED = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "trailer",
        "keep-alive",
        "content-type",
        "accept",
        "a2a-version",
    }
)
# Header values shorter than this are not redacted: they cannot be secrets worth the name,
# and blanking them would garble every message they occur in ("1" in "HTTP 401").
_MIN_REDACTED = 4


@dataclass(frozen=True)
class CallerAuth:
    """Headers for every request, credentials for the card to choose from, what to hide."""

    headers: Mapping[str, str] = field(default_factory=dict)
    credentials: Credentials | None = None
    secrets: tuple[str, ...] = ()
    # The flags that gave credentials (not the variables): for a note when nothing asks.
    flags: tuple[str, ...] = ()

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def unused_flags(self, card: AgentCard) -> tuple[str, ...]:
        """The credential flags given for an agent whose card asks for no credentials."""
        asks = bool(card.security_requirements) or any(
            skill.security_requirements for skill in card.skills
        )
        return () if asks else self.flags


NO_AUTH = CallerAuth()


def caller_auth(
    headers: Sequence[str] | None,
    bearer: str | None,
    api_key: str | None,
    environ: Mapping[str, str] | None = None,
) -> CallerAuth:
    """The ``CallerAuth`` of the options and the environment; ``typer.BadParameter`` (exit 2)
    for a malformed one, naming the option, never the value."""
    env = os.environ if environ is None else environ
    merged = _headers(env.get(ENV_HEADERS, "").splitlines(), ENV_HEADERS)
    given = _headers(headers or (), "--header")
    for name in given:
        for old in [n for n in merged if n.lower() == name.lower()]:
            del merged[old]
    merged.update(given)

    credentials: list[Credential] = []
    secrets = [value for value in merged.values() if len(value) >= _MIN_REDACTED]
    # "Bearer TOKEN", "Basic ...": a server that quotes the credential quotes it alone.
    secrets += [
        rest
        for value in merged.values()
        if len(rest := value.partition(" ")[2].strip()) >= _MIN_REDACTED
    ]
    flags: list[str] = []
    token = _secret(bearer, "--bearer", env.get(ENV_BEARER), ENV_BEARER)
    if token is not None:
        if any(c.isspace() for c in token):
            raise typer.BadParameter(
                "a bearer token has no spaces: give the token alone, without 'Bearer '",
                param_hint="--bearer" if bearer is not None else ENV_BEARER,
            )
        credentials.append(BearerToken(token))
        secrets.append(token)
        flags += ["--bearer"] if bearer is not None else []
    key = _secret(api_key, "--api-key", env.get(ENV_API_KEY), ENV_API_KEY)
    if key is not None:
        credentials.append(APIKey(key))
        secrets += [key, quote(key, safe="")]  # as given, and as a query or cookie has it
        flags += ["--api-key"] if api_key is not None else []
    # Longest first, so that a secret containing another is hidden whole.
    hidden = tuple(sorted(set(secrets), key=len, reverse=True))
    return CallerAuth(
        headers=merged,
        credentials=Credentials(*credentials) if credentials else None,
        secrets=hidden,
        flags=tuple(flags),
    )


def _headers(lines: Sequence[str], source: str) -> dict[str, str]:
    """``NAME:VALUE`` lines as headers (blank lines skipped)."""
    parsed: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source} (line {number})" if source == ENV_HEADERS else source
        name, colon, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not _TOKEN.fullmatch(name):
            # Not echoed: without its colon, what was given may be a secret pasted alone.
            raise typer.BadParameter(
                "a header must be given as NAME:VALUE, NAME a header name "
                "(e.g. --header 'X-Request-Id: 42')",
                param_hint=where,
            )
        if _CONTROL.search(value):
            raise typer.BadParameter(
                f"the value of header {name!r} holds a control character (a line break?)",
                param_hint=where,
            )
        if name.lower() in _MANAGED:
            raise typer.BadParameter(
                f"{name} is set by peerwire itself for each request", param_hint=where
            )
        if any(name.lower() == other.lower() for other in parsed):
            raise typer.BadParameter(f"header {name!r} is given twice", param_hint=where)
        parsed[name] = value
    return parsed


def _secret(
    flag: str | None, flag_name: str, variable: str | None, variable_name: str
) -> str | None:
    """A token or key from its flag, else from its variable (an empty variable is unset)."""
    if flag is not None:
        value, source = flag.strip(), flag_name
        if not value:
            raise typer.BadParameter("must not be empty", param_hint=source)
    elif variable is not None and variable.strip():
        value, source = variable.strip(), variable_name
    else:
        return None
    if _CONTROL.search(value) or "\t" in value:
        raise typer.BadParameter(
            "holds a control character (a line break?): it cannot travel in a header",
            param_hint=source,
        )
    return value
