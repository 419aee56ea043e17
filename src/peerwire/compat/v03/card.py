"""Agent cards between A2A 0.3 and 1.0 (sans I/O).

A 0.3 card names its endpoint with top-level ``url`` + ``preferredTransport`` (+
``additionalInterfaces`` of ``{url, transport}``) and a card-level ``protocolVersion``; 1.0
lists ``supportedInterfaces`` with a version each. Security differs too: 0.3 schemes are
OpenAPI-style objects tagged by ``type`` (``apiKey`` with ``in``, ``http``, ``oauth2`` with
several flows, ``openIdConnect``, ``mutualTLS``) and requirements are ``{name: [scopes]}``;
the extended-card flag is top-level ``supportsAuthenticatedExtendedCard``.

* ``dual_card_document``: the document peerwire serves to callers that do not name 1.x in
  ``A2A-Version`` (``server.card.CardForms``), read by 0.3 and 1.x SDKs alike: the 1.0 card
  plus the 0.3 members (each security scheme object carries both forms,
  each skill both ``securityRequirements`` and ``security``), as the official 1.x SDKs serve.
  The 0.3 endpoint is the first of the card's interfaces whose binding serves 0.3 too.
* ``card_to_v03`` / ``card_from_v03``: a card as 0.3's JSON schema has it (JSON-RPC's
  ``agent/getAuthenticatedExtendedCard`` and the well-known document of a 0.3 agent).
* ``card_to_proto`` / ``card_from_proto``: the 0.3 proto's AgentCard (REST ``GET /v1/card``,
  gRPC ``GetAgentCard``), holding only members the 0.3 proto has.

Lossy: 1.0's ``deviceCode`` flow and ``pkceRequired`` have no 0.3 counterpart (the flow is
left out); of several 0.3 OAuth flows 1.0 keeps the first (authorizationCode,
clientCredentials, implicit, password), and a 0.3 oauth2 scheme without any flow is left out;
an interface's ``tenant`` is not in 0.3.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ...types import AgentCard, AgentInterface
from .translate import JSON, Doc, bad, builtins_of, copy, decode_as, items, obj
from .version import CARD_PROTOCOL_VERSION, PROTOCOL_VERSION, speaks_v03

__all__ = [
    "card_from_proto",
    "card_from_v03",
    "card_to_proto",
    "card_to_v03",
    "dual_card_document",
    "is_v03_card",
    "v03_interfaces",
]

_FLOWS = ("authorizationCode", "clientCredentials", "implicit", "password")
# The members of each 0.3 flow (1.0's flows have the same ones, and more).
_FLOW_MEMBERS = {
    "authorizationCode": ("authorizationUrl", "tokenUrl", "refreshUrl", "scopes"),
    "clientCredentials": ("tokenUrl", "refreshUrl", "scopes"),
    "implicit": ("authorizationUrl", "refreshUrl", "scopes"),
    "password": ("tokenUrl", "refreshUrl", "scopes"),
}
_SCHEME_MEMBERS = {
    "apiKeySecurityScheme": ("description", "location", "name"),
    "httpAuthSecurityScheme": ("description", "scheme", "bearerFormat"),
    "oauth2SecurityScheme": ("description", "oauth2MetadataUrl"),
    "openIdConnectSecurityScheme": ("description", "openIdConnectUrl"),
    "mtlsSecurityScheme": ("description",),
}


def v03_interfaces(
    card: AgentCard, bindings: Collection[str] | None = None
) -> list[AgentInterface]:
    """The interfaces of ``card`` a 0.3 client may use: those whose binding is in
    ``bindings`` (the ones this server also serves as 0.3), or, with ``bindings`` None,
    those whose ``protocolVersion`` is 0.3."""
    if bindings is None:
        return [i for i in card.supported_interfaces if speaks_v03(i.protocol_version)]
    return [i for i in card.supported_interfaces if i.protocol_binding in bindings]


def _endpoint(interfaces: list[AgentInterface]) -> Doc:
    primary = interfaces[0]
    return {
        "url": primary.url,
        "preferredTransport": primary.protocol_binding,
        # 0.3 §5.6.2: SHOULD list every interface, the main one too.
        "additionalInterfaces": [
            {"url": i.url, "transport": i.protocol_binding} for i in interfaces
        ],
        "protocolVersion": CARD_PROTOCOL_VERSION,
    }


# -- security --------------------------------------------------------------------------------


def _requirements_out(requirements: JSON) -> list[Doc]:
    return [
        {name: list(scopes.get("list", [])) for name, scopes in r.get("schemes", {}).items()}
        for r in requirements or ()
    ]


def _requirements_in(value: JSON, path: str) -> list[Doc]:
    out = []
    for i, requirement in enumerate(items(value, path)):
        requirement = obj(requirement, f"{path}[{i}]")
        schemes = {
            name: {"list": items(scopes, f"{path}[{i}].{name}")}
            for name, scopes in requirement.items()
        }
        out.append({"schemes": schemes})
    return out


def _flows_out(flows: Doc) -> Doc:
    out: Doc = {}
    for name in _FLOWS:
        flow = flows.get(name)
        if flow is not None:
            out[name] = {m: flow[m] for m in _FLOW_MEMBERS[name] if m in flow}
    return out


def _flows_in(flows: Doc, path: str) -> Doc | None:
    """1.0 OAuthFlows (exactly one flow): the first 0.3 flow present."""
    for name in _FLOWS:
        flow = flows.get(name)
        if flow is not None:
            flow = obj(flow, f"{path}.{name}")
            return {name: {m: flow[m] for m in _FLOW_MEMBERS[name] if m in flow}}
    return None


def _member_of(scheme: Doc) -> tuple[str, Doc]:
    """The one member of a 1.0 SecurityScheme document (a oneof wrapper) and its value."""
    for member, body in scheme.items():
        if member in _SCHEME_MEMBERS and isinstance(body, dict):
            return member, body
    return "", {}


def _scheme_out(scheme: Doc) -> Doc:
    """A 1.0 SecurityScheme document (a oneof wrapper) in 0.3's OpenAPI-style form."""
    member, body = _member_of(scheme)
    out: Doc = {}
    if member == "apiKeySecurityScheme":
        out = {"type": "apiKey", "in": body.get("location", ""), "name": body.get("name", "")}
    elif member == "httpAuthSecurityScheme":
        out = {"type": "http", "scheme": body.get("scheme", "")}
        copy(body, out, "bearerFormat")
    elif member == "oauth2SecurityScheme":
        out = {"type": "oauth2", "flows": _flows_out(body.get("flows", {}))}
        copy(body, out, "oauth2MetadataUrl")
    elif member == "openIdConnectSecurityScheme":
        out = {"type": "openIdConnect", "openIdConnectUrl": body.get("openIdConnectUrl", "")}
    elif member == "mtlsSecurityScheme":
        out = {"type": "mutualTLS"}
    copy(body, out, "description")
    return out


def _scheme_in(value: JSON, path: str) -> Doc | None:
    """A 0.3 scheme as the 1.0 oneof wrapper; ``None`` for one 1.0 cannot express."""
    scheme = obj(value, path)
    kind = scheme.get("type")
    body: Doc = {}
    copy(scheme, body, "description")
    if kind == "apiKey":
        body["location"] = scheme.get("in", "")
        copy(scheme, body, "name")
        return {"apiKeySecurityScheme": body}
    if kind == "http":
        copy(scheme, body, "scheme", "bearerFormat")
        return {"httpAuthSecurityScheme": body}
    if kind == "oauth2":
        flows = _flows_in(obj(scheme.get("flows", {}), f"{path}.flows"), f"{path}.flows")
        if flows is None:
            return None
        body["flows"] = flows
        copy(scheme, body, "oauth2MetadataUrl")
        return {"oauth2SecurityScheme": body}
    if kind == "openIdConnect":
        copy(scheme, body, "openIdConnectUrl")
        return {"openIdConnectSecurityScheme": body}
    if kind == "mutualTLS":
        return {"mtlsSecurityScheme": body}
    raise bad(
        f"{path}.type",
        f"must be apiKey, http, oauth2, openIdConnect or mutualTLS, not {kind!r}",
    )


def _proto_scheme(scheme: Doc) -> Doc:
    """A 1.0 scheme wrapper with only the members the 0.3 proto knows."""
    member, body = _member_of(scheme)
    if member not in _SCHEME_MEMBERS:
        return {}
    out = {m: body[m] for m in _SCHEME_MEMBERS[member] if m in body}
    if member == "oauth2SecurityScheme":
        flows = _flows_out(body.get("flows", {}))
        if flows:
            out["flows"] = flows
    return {member: out}


# -- the parts every form shares -------------------------------------------------------------


def _skills_out(skills: JSON, *, proto: bool) -> list[Doc]:
    out = []
    for skill in skills or ():
        v03: Doc = {}
        copy(skill, v03, "id", "name", "description")
        v03["tags"] = skill.get("tags", [])
        copy(skill, v03, "examples", "inputModes", "outputModes")
        requirements = skill.get("securityRequirements")
        if requirements:
            v03["security"] = requirements if proto else _requirements_out(requirements)
        out.append(v03)
    return out


def _skills_in(value: JSON, path: str, *, proto: bool) -> list[Doc]:
    out = []
    for i, skill in enumerate(items(value, path)):
        skill = obj(skill, f"{path}[{i}]")
        v10: Doc = {}
        copy(skill, v10, "id", "name", "description", "examples", "inputModes", "outputModes")
        v10["tags"] = skill.get("tags") or []
        security = skill.get("security")
        if security is not None:
            v10["securityRequirements"] = (
                security if proto else _requirements_in(security, f"{path}[{i}].security")
            )
        out.append(v10)
    return out


def _capabilities_out(capabilities: Doc) -> Doc:
    out: Doc = {}
    copy(capabilities, out, "streaming", "pushNotifications", "extensions")
    return out


def _common_out(document: Doc) -> Doc:
    out: Doc = {}
    copy(document, out, "name", "description", "version", "provider", "documentationUrl")
    copy(document, out, "iconUrl")
    out["capabilities"] = _capabilities_out(document.get("capabilities", {}))
    out["defaultInputModes"] = document.get("defaultInputModes", [])
    out["defaultOutputModes"] = document.get("defaultOutputModes", [])
    if document.get("capabilities", {}).get("extendedAgentCard"):
        out["supportsAuthenticatedExtendedCard"] = True
    copy(document, out, "signatures")
    return out


def _common_in(card: Doc, path: str) -> Doc:
    out: Doc = {}
    copy(card, out, "name", "provider", "documentationUrl", "iconUrl", "signatures")
    copy(card, out, "description", "version")  # REQUIRED: the 1.0 decoder says if absent
    capabilities = obj(card.get("capabilities"), f"{path}.capabilities")
    v10: Doc = {}
    copy(capabilities, v10, "streaming", "pushNotifications", "extensions")
    if card.get("supportsAuthenticatedExtendedCard") is not None:
        v10["extendedAgentCard"] = bool(card["supportsAuthenticatedExtendedCard"])
    out["capabilities"] = v10
    copy(card, out, "defaultInputModes", "defaultOutputModes")
    out["supportedInterfaces"] = _interfaces_in(card, path)
    return out


def _interfaces_in(card: Doc, path: str) -> list[Doc]:
    url = card.get("url")
    if not isinstance(url, str) or not url:
        raise bad(f"{path}.url", "is required: the agent's main endpoint")
    version = card.get("protocolVersion") or PROTOCOL_VERSION
    major_minor = ".".join(str(version).split(".")[:2])
    primary = (url, card.get("preferredTransport") or "JSONRPC")
    seen: list[tuple[Any, Any]] = [primary]
    for i, interface in enumerate(
        items(card.get("additionalInterfaces"), f"{path}.additionalInterfaces")
    ):
        interface = obj(interface, f"{path}.additionalInterfaces[{i}]")
        entry = (interface.get("url"), interface.get("transport"))
        if entry not in seen:
            seen.append(entry)
    return [{"url": u, "protocolBinding": b, "protocolVersion": major_minor} for u, b in seen]


# -- the forms ---------------------------------------------------------------------------------


def card_to_v03(card: AgentCard, bindings: Collection[str] | None = None) -> Doc:
    """``card`` as a 0.3 JSON card, its endpoint from ``v03_interfaces(card, bindings)`` (all
    interfaces when none qualifies)."""
    document = builtins_of(card)
    interfaces = v03_interfaces(card, bindings) or list(card.supported_interfaces)
    out = _common_out(document)
    if interfaces:
        out.update(_endpoint(interfaces))
    else:
        out.update(
            {"url": "", "preferredTransport": "JSONRPC", "protocolVersion": CARD_PROTOCOL_VERSION}
        )
    schemes = document.get("securitySchemes")
    if schemes:
        out["securitySchemes"] = {name: _scheme_out(s) for name, s in schemes.items()}
    if document.get("securityRequirements"):
        out["security"] = _requirements_out(document["securityRequirements"])
    out["skills"] = _skills_out(document.get("skills"), proto=False)
    return out


def dual_card_document(card: AgentCard, bindings: Collection[str]) -> Doc:
    """The card as served to 0.3 and 1.0 clients alike (see the module docstring); the plain
    1.0 document when none of its interfaces has a binding in ``bindings``."""
    document = builtins_of(card)
    interfaces = v03_interfaces(card, bindings)
    if not interfaces:
        return document
    document.update(_endpoint(interfaces))
    if card.capabilities.extended_agent_card:
        document["supportsAuthenticatedExtendedCard"] = True
    if document.get("securityRequirements"):
        document["security"] = _requirements_out(document["securityRequirements"])
    for scheme in document.get("securitySchemes", {}).values():
        # The 0.3 members beside the 1.0 oneof member, which no 0.3 name collides with.
        scheme.update(_scheme_out(scheme))
    for skill in document.get("skills", ()):
        if skill.get("securityRequirements"):
            skill["security"] = _requirements_out(skill["securityRequirements"])
    return document


def is_v03_card(value: JSON) -> bool:
    """Whether a card document is a 0.3 one: an endpoint ``url`` and no ``supportedInterfaces``
    (a dual card, which has both, is read as 1.0)."""
    return isinstance(value, dict) and "supportedInterfaces" not in value and "url" in value


def card_from_v03(value: JSON, path: str = "card") -> AgentCard:
    """A 0.3 JSON card as a 1.0 ``AgentCard``: its interfaces carry the card's Major.Minor
    (``0.3``), the main one first, then the additional ones not equal to it."""
    card = obj(value, path)
    out = _common_in(card, path)
    schemes = obj(card.get("securitySchemes") or {}, f"{path}.securitySchemes")
    converted = {
        name: _scheme_in(s, f"{path}.securitySchemes.{name}") for name, s in schemes.items()
    }
    out["securitySchemes"] = {name: s for name, s in converted.items() if s is not None}
    if card.get("security") is not None:
        out["securityRequirements"] = _requirements_in(card["security"], f"{path}.security")
    if card.get("skills") is not None:
        out["skills"] = _skills_in(card["skills"], f"{path}.skills", proto=False)
    return decode_as(out, AgentCard, path)


def card_to_proto(card: AgentCard, bindings: Collection[str] | None = None) -> Doc:
    """``card`` as the 0.3 proto's AgentCard (ProtoJSON)."""
    document = builtins_of(card)
    interfaces = v03_interfaces(card, bindings) or list(card.supported_interfaces)
    out = _common_out(document)
    if interfaces:
        out.update(_endpoint(interfaces))
    schemes = document.get("securitySchemes")
    if schemes:
        out["securitySchemes"] = {name: _proto_scheme(s) for name, s in schemes.items()}
    if document.get("securityRequirements"):
        out["security"] = document["securityRequirements"]
    out["skills"] = _skills_out(document.get("skills"), proto=True)
    return out


def card_from_proto(value: JSON, path: str = "card") -> AgentCard:
    """A 0.3 proto AgentCard (ProtoJSON) as a 1.0 ``AgentCard``."""
    card = obj(value, path)
    out = _common_in(card, path)
    schemes: dict[str, Any] = obj(card.get("securitySchemes") or {}, f"{path}.securitySchemes")
    # As from 0.3 JSON: an oauth2 scheme with no flow 1.0 can hold is left out.
    out["securitySchemes"] = {
        name: scheme
        for name, scheme in schemes.items()
        if not isinstance(scheme, dict)
        or not isinstance(scheme.get("oauth2SecurityScheme"), dict)
        or scheme["oauth2SecurityScheme"].get("flows")
    }
    if card.get("security") is not None:
        out["securityRequirements"] = card["security"]
    if card.get("skills") is not None:
        out["skills"] = _skills_in(card["skills"], f"{path}.skills", proto=True)
    return decode_as(out, AgentCard, path)
