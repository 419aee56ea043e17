"""The card checks: its fields, interfaces and skills (``card.fields``, ``card.interfaces``,
``card.skills``; fetching it is ``_card_fetch``, security and signature ``_checks_security``).

They read the card as the JSON document it is, not as peerwire's ``AgentCard``: a card that
would not decode is exactly the one whose problems must be named one by one. Peerwire's own
decoder runs last, as a client's view (``card.fields``: "peerwire's client refuses it").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from .._hosts import is_loopback_host
from ..errors import A2AError
from ..types import AgentCard, Binding, decode
from ._findings import Finding, Severity, failed, passed
from ._probes import Interface, excerpt

__all__ = [
    "Problems",
    "absolute_http",
    "card_findings",
    "interfaces_of",
    "is_text",
    "major_minor",
    "string_list",
]

_STANDARD_BINDINGS = (Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC)
# What people write for the standard bindings: named in the finding, so the fix is obvious.
_LOOKALIKES = {
    "JSON-RPC": Binding.JSONRPC,
    "JSON_RPC": Binding.JSONRPC,
    "JSONRPC2": Binding.JSONRPC,
    "REST": Binding.HTTP_JSON,
    "HTTP": Binding.HTTP_JSON,
    "HTTP_JSON": Binding.HTTP_JSON,
    "HTTPJSON": Binding.HTTP_JSON,
    "HTTP+REST": Binding.HTTP_JSON,
}
_GRPC_SCHEMES = ("https", "grpcs", "http", "grpc")


# -- the document --------------------------------------------------------------------------


def card_findings(document: Mapping[str, Any]) -> list[Finding]:
    """``card.fields``, ``card.interfaces``, ``card.skills``."""
    return [*_fields(document), *_interfaces(document), *_skills(document)]


class Problems:
    """Problems of one check, collected, then reported one finding each (or one pass)."""

    def __init__(self, check: str, rule: str) -> None:
        self.check = check
        self.rule = rule
        self.found: list[Finding] = []

    def add(self, severity: Severity, title: str, detail: str = "") -> None:
        self.found.append(failed(self.check, severity, title, detail, rule=self.rule))

    def result(self, ok_title: str, ok_detail: str = "") -> list[Finding]:
        if self.found:
            return self.found
        return [passed(self.check, ok_title, ok_detail, rule=self.rule)]


def is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _fields(document: Mapping[str, Any]) -> list[Finding]:
    problems = Problems("card.fields", "A2A proto AgentCard: its REQUIRED fields (spec §5.7)")
    for name in ("name", "version"):
        value = document.get(name)
        if value is None:
            problems.add("error", f"The card has no {name}", f"AgentCard.{name} is REQUIRED.")
        elif not is_text(value):
            problems.add(
                "error", f"The card's {name} is not a non-empty string", f"It is {excerpt(value)}."
            )
    description = document.get("description")
    if description is None:
        problems.add("error", "The card has no description", "AgentCard.description is REQUIRED.")
    elif not isinstance(description, str):
        problems.add(
            "error", "The card's description is not a string", f"It is {excerpt(description)}."
        )
    elif not description.strip():
        problems.add(
            "warning",
            "The card's description is empty",
            "Clients and registries show it to people choosing an agent.",
        )
    interfaces = document.get("supportedInterfaces")
    if interfaces is None:
        v03 = " It looks like an A2A 0.3 card (it has 'url')." if "url" in document else ""
        problems.add(
            "error",
            "The card has no supportedInterfaces",
            "A 1.0 client finds the agent's endpoints only there." + v03,
        )
    elif not isinstance(interfaces, list) or not interfaces:
        problems.add(
            "error",
            "The card's supportedInterfaces is not a non-empty list",
            f"It is {excerpt(interfaces)}.",
        )
    capabilities = document.get("capabilities")
    if capabilities is None:
        problems.add(
            "error",
            "The card has no capabilities",
            "AgentCard.capabilities is REQUIRED (an empty object is fine).",
        )
    elif not isinstance(capabilities, Mapping):
        problems.add(
            "error", "The card's capabilities is not an object", f"It is {excerpt(capabilities)}."
        )
    else:
        for flag in ("streaming", "pushNotifications", "extendedAgentCard"):
            value = capabilities.get(flag)
            if value is not None and not isinstance(value, bool):
                problems.add(
                    "error", f"capabilities.{flag} is not a boolean", f"It is {excerpt(value)}."
                )
        extensions = capabilities.get("extensions")
        if extensions is not None and (
            not isinstance(extensions, list)
            or not all(isinstance(e, Mapping) and is_text(e.get("uri")) for e in extensions)
        ):
            problems.add(
                "error",
                "capabilities.extensions is not a list of {uri, ...}",
                f"It is {excerpt(extensions)}.",
            )
    for name in ("defaultInputModes", "defaultOutputModes"):
        value = document.get(name)
        if value is None:
            problems.add(
                "error", f"The card has no {name}", f"AgentCard.{name} (media types) is REQUIRED."
            )
        elif not string_list(value):
            problems.add(
                "error",
                f"The card's {name} is not a list of media types",
                f"It is {excerpt(value)}.",
            )
        elif not value:
            problems.add(
                "warning",
                f"The card's {name} is empty",
                "A client cannot tell which media types the agent takes or gives.",
            )
    skills = document.get("skills")
    if skills is None:
        problems.add("error", "The card has no skills", "AgentCard.skills is REQUIRED.")
    elif not isinstance(skills, list):
        problems.add("error", "The card's skills is not a list", f"It is {excerpt(skills)}.")
    provider = document.get("provider")
    if provider is not None and not (
        isinstance(provider, Mapping)
        and is_text(provider.get("url"))
        and is_text(provider.get("organization"))
    ):
        problems.add(
            "error",
            "The card's provider lacks url or organization",
            f"Both are REQUIRED in AgentProvider; it is {excerpt(provider)}.",
        )
    for name in ("documentationUrl", "iconUrl"):
        value = document.get(name)
        if value is not None and not absolute_http(value):
            problems.add(
                "warning", f"The card's {name} is not an absolute URL", f"It is {excerpt(value)}."
            )
    if not problems.found:
        # Our own decoder, as a strict client: anything it refuses we did not name above.
        try:
            decode(json.dumps(document), AgentCard, path="card")
        except A2AError as exc:
            problems.add(
                "error",
                "peerwire's client refuses the card",
                exc.message.removeprefix("Invalid parameters: "),
            )
    return problems.result(
        "The card has every required field, well typed",
        "name, description, version, supportedInterfaces, capabilities, "
        "defaultInputModes, defaultOutputModes and skills.",
    )


def absolute_http(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def interfaces_of(document: Mapping[str, Any]) -> list[Interface]:
    """The card's interfaces that are well-formed enough to call (any binding or version)."""
    raw = document.get("supportedInterfaces")
    found = []
    for index, entry in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(entry, Mapping):
            continue
        url, binding = entry.get("url"), entry.get("protocolBinding")
        if not (isinstance(url, str) and isinstance(binding, str) and url and binding):
            continue
        version = entry.get("protocolVersion")
        tenant = entry.get("tenant")
        found.append(
            Interface(
                index=index,
                binding=binding,
                url=url,
                version=version if isinstance(version, str) else "",
                tenant=tenant if isinstance(tenant, str) else "",
            )
        )
    return found


def major_minor(version: str) -> str | None:
    parts = version.strip().split(".")
    if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        return None
    return f"{int(parts[0])}.{int(parts[1])}"


def _interfaces(document: Mapping[str, Any]) -> list[Finding]:
    problems = Problems(
        "card.interfaces",
        "A2A proto AgentInterface, spec §5.1 and §8: url, protocolBinding and protocolVersion "
        "are REQUIRED; clients use the first interface they support",
    )
    raw = document.get("supportedInterfaces")
    if not isinstance(raw, list):
        return []  # card.fields said so
    usable = 0
    seen: set[tuple[str, str, str]] = set()
    for index, entry in enumerate(raw):
        where = f"supportedInterfaces[{index}]"
        if not isinstance(entry, Mapping):
            problems.add("error", f"{where} is not an object", f"It is {excerpt(entry)}.")
            continue
        url, binding, version = (
            entry.get("url"),
            entry.get("protocolBinding"),
            entry.get("protocolVersion"),
        )
        for name, value in (("url", url), ("protocolBinding", binding)):
            if not is_text(value):
                problems.add("error", f"{where} has no {name}", f"It is {excerpt(entry)}.")
        if not (is_text(url) and is_text(binding)):
            continue
        assert isinstance(url, str) and isinstance(binding, str)  # for mypy: just checked
        if "tenant" in entry and not isinstance(entry["tenant"], str):
            problems.add(
                "error", f"{where}.tenant is not a string", f"It is {excerpt(entry['tenant'])}."
            )
        key = (binding, str(version), url)
        if key in seen:
            problems.add(
                "warning",
                f"{where} repeats an earlier interface",
                f"{binding} {version} at {url} is listed twice.",
            )
        seen.add(key)
        standard = _binding_problem(problems, where, binding)
        speaks = _version_problem(problems, where, version)
        if standard:
            _url_problem(problems, where, binding, url)
            usable += speaks
    if raw and not usable:
        problems.add(
            "error",
            "No interface a 1.0 client can use",
            "None of supportedInterfaces is a JSONRPC, HTTP+JSON or GRPC interface at "
            "protocol version 1.0.",
        )
    return problems.result(
        "Every interface names a known binding, a version and a usable URL",
        "; ".join(
            f"{e.get('protocolBinding')} {e.get('protocolVersion')} {e.get('url')}"
            for e in raw
            if isinstance(e, Mapping)
        ),
    )


def _binding_problem(problems: Problems, where: str, binding: str) -> bool:
    """Whether ``binding`` is a standard one; notes the problem if it is not."""
    if binding in _STANDARD_BINDINGS:
        return True
    meant = _LOOKALIKES.get(binding.upper().replace(" ", ""))
    meant = meant or next((b for b in _STANDARD_BINDINGS if b.lower() == binding.lower()), None)
    if meant is not None:
        problems.add(
            "error",
            f"{where} names the binding {binding!r}: clients look for {meant!r}",
            "Binding names are exact strings (JSONRPC, HTTP+JSON, GRPC); a client skips an "
            "interface whose binding it does not know.",
        )
    elif ":" in binding:
        problems.add(
            "info",
            f"{where} is a custom binding ({binding})",
            "Clients that do not know it skip this interface (custom bindings are URIs, "
            "A2A spec §5.8).",
        )
    else:
        problems.add(
            "error",
            f"{where} names an unknown binding {binding!r}",
            "Standard bindings are JSONRPC, HTTP+JSON and GRPC; a custom one must be a URI. "
            "Clients skip this interface.",
        )
    return False


def _version_problem(problems: Problems, where: str, version: Any) -> bool:
    """Whether the interface is at protocol 1.0; notes what is odd about its version."""
    if version is None or version == "":
        problems.add(
            "error",
            f"{where} has no protocolVersion",
            "AgentInterface.protocolVersion is REQUIRED; clients pick interfaces by "
            "it and cannot tell which protocol this one speaks.",
        )
        return False
    if not isinstance(version, str) or major_minor(version) is None:
        problems.add(
            "error",
            f"{where} has an unreadable protocolVersion {version!r}",
            'A protocol version is Major.Minor, e.g. "1.0".',
        )
        return False
    mm = major_minor(version)
    if version != mm:
        problems.add(
            "warning",
            f"{where} declares protocolVersion {version!r}",
            f"Versions are Major.Minor ({mm!r}); patch numbers SHOULD NOT appear in "
            "cards (A2A spec §3.6). Clients must ignore them, some do not.",
        )
    if mm == "1.0":
        return True
    if mm == "0.3":
        problems.add(
            "info",
            f"{where} is an A2A 0.3 interface",
            "The self-check speaks 1.0: this interface is not probed.",
        )
    else:
        problems.add(
            "warning",
            f"{where} is at protocol {version}",
            "A 1.0 client does not use this interface; it is not probed.",
        )
    return False


def _grpc_address_problem(url: str) -> str:
    """Why ``url`` cannot be dialled as gRPC ('' if it can): ``host:port``, or a URL whose
    scheme says TLS or not (https, grpcs, http, grpc), as peerwire's gRPC client reads it."""
    text = url.strip()
    if "://" in text:
        scheme, _, text = text.partition("://")
        if scheme.lower() not in _GRPC_SCHEMES:
            return f"the scheme {scheme!r} is none of {', '.join(_GRPC_SCHEMES)}"
        return "" if urlsplit(url).hostname else "it names no host"
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit():
        return "write host:port (e.g. agent.example:443), or a URL such as https://host:443"
    return ""


def _url_problem(problems: Problems, where: str, binding: str, url: str) -> None:
    if binding == Binding.GRPC:
        why = _grpc_address_problem(url)
        if why:
            problems.add("error", f"{where}: {url!r} is not a gRPC address", why)
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problems.add(
            "error",
            f"{where}: {url!r} is not an absolute http(s) URL",
            "Clients call the interface URL as written; a relative or schemeless URL "
            "cannot be called.",
        )
        return
    try:
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError:
        problems.add("error", f"{where}: {url!r} has an invalid port")
        return
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        problems.add(
            "warning",
            f"{where} is plain http on {parts.hostname}",
            "Production A2A MUST use TLS (A2A spec §7); only loopback is exempt here.",
        )


def _skills(document: Mapping[str, Any]) -> list[Finding]:
    problems = Problems(
        "card.skills", "A2A proto AgentSkill: id, name, description and tags are REQUIRED"
    )
    skills = document.get("skills")
    if not isinstance(skills, list):
        return []  # card.fields said so
    if not skills:
        problems.add(
            "warning",
            "The card lists no skills",
            "Clients and registries choose agents by their skills (empty skills are "
            "accepted leniently: the spec's own examples have none).",
        )
    ids: dict[str, int] = {}
    for index, skill in enumerate(skills):
        where = f"skills[{index}]"
        if not isinstance(skill, Mapping):
            problems.add("error", f"{where} is not an object", f"It is {excerpt(skill)}.")
            continue
        label = f"{where} ({skill.get('id')})" if is_text(skill.get("id")) else where
        for name in ("id", "name", "description"):
            if not is_text(skill.get(name)):
                problems.add(
                    "error",
                    f"{label} has no {name}",
                    f"AgentSkill.{name} is REQUIRED; it is {excerpt(skill.get(name))}.",
                )
        tags = skill.get("tags")
        if tags is None or not string_list(tags):
            problems.add(
                "error",
                f"{label} has no list of tags",
                f"AgentSkill.tags is REQUIRED; it is {excerpt(tags)}.",
            )
        elif not tags:
            problems.add("warning", f"{label} has no tags", "Tags are how registries find it.")
        for name in ("examples", "inputModes", "outputModes"):
            if name in skill and not string_list(skill[name]):
                problems.add(
                    "error",
                    f"{label}.{name} is not a list of strings",
                    f"It is {excerpt(skill[name])}.",
                )
        skill_id = skill.get("id")
        if isinstance(skill_id, str) and skill_id:
            if skill_id in ids:
                problems.add(
                    "warning",
                    f"Skill id {skill_id!r} is used twice (skills[{ids[skill_id]}] and {where})",
                    "A client addressing a skill by its id cannot tell them apart.",
                )
            else:
                ids[skill_id] = index
    return problems.result(
        f"{len(skills)} skill(s), each with id, name, description and tags",
        ", ".join(str(s.get("id")) for s in skills if isinstance(s, Mapping)),
    )
