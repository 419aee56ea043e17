"""The canonical payload an agent-card signature covers (A2A spec §8.4), sans I/O.

Signer and verifier both call ``canonical_card_payload`` on the card as a JSON document:

1. Known members are taken in their camelCase ProtoJSON spelling (a snake_case spelling of a
   field we know is renamed; a ProtoJSON ``null`` means "not set" and is dropped).
2. Presence rules, from what this module knows of the AgentCard fields (``_SCHEMA``):
   REQUIRED fields are included whenever present, even when empty (a REQUIRED field the
   document omits is not invented: the spec's own worked example is a fragment); ``optional``
   fields are included exactly when present, whatever their value; message-typed
   fields and oneof members are included when present (an empty ``mtlsSecurityScheme: {}`` is
   a real choice); every other field is dropped when it equals its default (``""``, ``0``,
   ``false``, ``[]``, ``{}``). Map entries and list elements always stay and are processed
   with their value type's rules. ``Struct`` members (``params``) are free-form JSON and kept
   verbatim.
3. ``signatures`` is removed.
4. RFC 8785 (JCS) serialisation, UTF-8.

Members this module does not know (a newer protocol version, an extension) are kept exactly as
received: a verifier that dropped them would fail on every card from a newer signer.

Decision where the spec is silent: a document that is not JSON-shaped (non-string keys, NaN,
integers beyond 2**53, lone surrogates, nesting deeper than ``MAX_DEPTH``) has no canonical
form and raises ``InvalidAgentCardError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import rfc8785

from ..errors import InvalidAgentCardError

__all__ = ["MAX_DEPTH", "canonical_card_payload", "canonical_card_value"]

MAX_DEPTH = 64
"""Deepest nesting of objects and arrays accepted (``params`` may nest without limit)."""


@dataclass(frozen=True, slots=True)
class _Field:
    """What the canonicaliser must know of one field."""

    kind: str  # "scalar", "message", "struct", "list", "map"
    presence: str  # "required", "optional" (proto3 optional / message / oneof), "implicit"
    default: Any = None  # the proto default of a scalar (None: no default, e.g. messages)
    item: str | None = None  # message name of a message field, list item or map value


def _req(default: Any = "") -> _Field:
    return _Field("scalar", "required", default)


def _opt(default: Any = "") -> _Field:
    return _Field("scalar", "optional", default)


def _plain(default: Any = "") -> _Field:
    return _Field("scalar", "implicit", default)


def _msg(name: str, presence: str = "optional") -> _Field:
    return _Field("message", presence, None, name)


def _list(item: str | None = None, presence: str = "implicit") -> _Field:
    return _Field("list", presence, [], item)


def _map(value: str | None = None, presence: str = "implicit") -> _Field:
    return _Field("map", presence, {}, value)


_STRUCT = _Field("struct", "optional")

# A2A spec §4.4 and §4.5. Oneof members are message fields with presence.
_SCHEMA: dict[str, dict[str, _Field]] = {
    "AgentCard": {
        "name": _req(),
        "description": _req(),
        "supportedInterfaces": _list("AgentInterface", "required"),
        "provider": _msg("AgentProvider"),
        "version": _req(),
        "documentationUrl": _opt(),
        "capabilities": _msg("AgentCapabilities", "required"),
        "securitySchemes": _map("SecurityScheme"),
        "securityRequirements": _list("SecurityRequirement"),
        "defaultInputModes": _list(None, "required"),
        "defaultOutputModes": _list(None, "required"),
        "skills": _list("AgentSkill", "required"),
        "iconUrl": _opt(),
    },
    "AgentInterface": {
        "url": _req(),
        "protocolBinding": _req(),
        "tenant": _plain(),
        "protocolVersion": _req(),
    },
    "AgentProvider": {"url": _req(), "organization": _req()},
    "AgentCapabilities": {
        "streaming": _opt(False),
        "pushNotifications": _opt(False),
        "extensions": _list("AgentExtension"),
        "extendedAgentCard": _opt(False),
    },
    "AgentExtension": {
        "uri": _plain(),
        "description": _plain(),
        "required": _plain(False),
        "params": _STRUCT,
    },
    "AgentSkill": {
        "id": _req(),
        "name": _req(),
        "description": _req(),
        "tags": _list(None, "required"),
        "examples": _list(),
        "inputModes": _list(),
        "outputModes": _list(),
        "securityRequirements": _list("SecurityRequirement"),
    },
    "SecurityRequirement": {"schemes": _map("StringList")},
    "StringList": {"list": _list()},
    "SecurityScheme": {
        "apiKeySecurityScheme": _msg("APIKeySecurityScheme"),
        "httpAuthSecurityScheme": _msg("HTTPAuthSecurityScheme"),
        "oauth2SecurityScheme": _msg("OAuth2SecurityScheme"),
        "openIdConnectSecurityScheme": _msg("OpenIdConnectSecurityScheme"),
        "mtlsSecurityScheme": _msg("MutualTlsSecurityScheme"),
    },
    "APIKeySecurityScheme": {"description": _plain(), "location": _req(), "name": _req()},
    "HTTPAuthSecurityScheme": {"description": _plain(), "scheme": _req(), "bearerFormat": _plain()},
    "OAuth2SecurityScheme": {
        "description": _plain(),
        "flows": _msg("OAuthFlows", "required"),
        "oauth2MetadataUrl": _plain(),
    },
    "OpenIdConnectSecurityScheme": {"description": _plain(), "openIdConnectUrl": _req()},
    "MutualTlsSecurityScheme": {"description": _plain()},
    "OAuthFlows": {
        "authorizationCode": _msg("AuthorizationCodeOAuthFlow"),
        "clientCredentials": _msg("ClientCredentialsOAuthFlow"),
        "implicit": _msg("ImplicitOAuthFlow"),
        "password": _msg("PasswordOAuthFlow"),
        "deviceCode": _msg("DeviceCodeOAuthFlow"),
    },
    "AuthorizationCodeOAuthFlow": {
        "authorizationUrl": _req(),
        "tokenUrl": _req(),
        "refreshUrl": _plain(),
        "scopes": _map(None, "required"),
        "pkceRequired": _plain(False),
    },
    "ClientCredentialsOAuthFlow": {
        "tokenUrl": _req(),
        "refreshUrl": _plain(),
        "scopes": _map(None, "required"),
    },
    "DeviceCodeOAuthFlow": {
        "deviceAuthorizationUrl": _req(),
        "tokenUrl": _req(),
        "refreshUrl": _plain(),
        "scopes": _map(None, "required"),
    },
    "ImplicitOAuthFlow": {"authorizationUrl": _plain(), "refreshUrl": _plain(), "scopes": _map()},
    "PasswordOAuthFlow": {"tokenUrl": _plain(), "refreshUrl": _plain(), "scopes": _map()},
}
# The original (snake_case) proto names of the fields above, for documents that use them.
_SNAKE: dict[str, dict[str, str]] = {
    message: {
        "".join("_" + c.lower() if c.isupper() else c for c in name): name
        for name in fields
        if any(c.isupper() for c in name)
    }
    for message, fields in _SCHEMA.items()
}


def canonical_card_payload(document: Mapping[str, Any]) -> bytes:
    """The UTF-8 JCS bytes a card signature signs, built from the card's JSON document."""
    value = canonical_card_value(document)
    try:
        return rfc8785.dumps(value)
    except (ValueError, RecursionError) as exc:
        # UnicodeEncodeError (a lone surrogate) is a ValueError too.
        raise InvalidAgentCardError(f"The agent card has no canonical JSON form: {exc}") from None


def canonical_card_value(document: Mapping[str, Any]) -> dict[str, Any]:
    """The card as the JSON value Step A produces, before JCS serialisation."""
    if not isinstance(document, Mapping):
        raise InvalidAgentCardError(
            f"An agent card must be a JSON object, not {type(document).__name__}"
        )
    canonical: dict[str, Any] = _message("AgentCard", document, depth=1, top=True)
    return canonical


def _message(name: str, document: Mapping[Any, Any], *, depth: int, top: bool = False) -> Any:
    _check_depth(depth)
    fields = _SCHEMA[name]
    snake = _SNAKE[name]
    out: dict[str, Any] = {}
    for key, value in document.items():
        if not isinstance(key, str):
            raise InvalidAgentCardError("An agent card's object keys must be strings")
        if top and key == "signatures":
            continue
        known = key if key in fields else snake.get(key)
        if known is None:
            out[key] = _verbatim(value, depth + 1)
            continue
        if known in out and known != key:
            continue  # both spellings present: the camelCase one wins, as ProtoJSON's does
        if value is None:
            continue  # ProtoJSON null: the field is not set
        canonical = _field(fields[known], value, depth + 1)
        if canonical is not _OMIT:
            out[known] = canonical
    return out


_OMIT = object()


def _field(field: _Field, value: Any, depth: int) -> Any:
    if field.kind == "struct":
        return _verbatim(value, depth)
    if field.kind == "message":
        return _item(field.item, value, depth)
    if field.kind == "list":
        if not isinstance(value, list):
            return _verbatim(value, depth)  # malformed: kept, so the signature decides
        _check_depth(depth)
        items = [_item(field.item, v, depth + 1) for v in value]
        return _OMIT if not items and field.presence != "required" else items
    if field.kind == "map":
        if not isinstance(value, Mapping):
            return _verbatim(value, depth)
        _check_depth(depth)
        entries: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidAgentCardError("An agent card's object keys must be strings")
            entries[key] = _item(field.item, item, depth + 1)
        return _OMIT if not entries and field.presence != "required" else entries
    # A scalar.
    if field.presence == "implicit" and _is_default(value, field.default):
        return _OMIT
    return value


def _item(message: str | None, value: Any, depth: int) -> Any:
    if message is not None and isinstance(value, Mapping):
        return _message(message, value, depth=depth)
    return _verbatim(value, depth)


def _is_default(value: Any, default: Any) -> bool:
    # ``type`` too: ``0 == False`` in Python, but a 0 where a bool belongs is not its default.
    return type(value) is type(default) and value == default


def _verbatim(value: Any, depth: int) -> Any:
    """Free-form JSON, checked for depth and key types only."""
    if isinstance(value, Mapping):
        _check_depth(depth)
        for key in value:
            if not isinstance(key, str):
                raise InvalidAgentCardError("An agent card's object keys must be strings")
        return {key: _verbatim(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        _check_depth(depth)
        return [_verbatim(item, depth + 1) for item in value]
    return value


def _check_depth(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise InvalidAgentCardError(
            f"The agent card nests deeper than {MAX_DEPTH} levels and has no canonical form"
        )
