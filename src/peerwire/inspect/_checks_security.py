"""``card.security`` and ``card.signature``: what a client needs to authenticate, and
whether the card is the one its publisher signed."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from ..errors import CardSignatureError
from ..security._fetch import check_fetch_url
from ._checks_card import Problems, absolute_http, is_text, string_list
from ._findings import Finding, failed, passed
from ._probes import excerpt

__all__ = ["security_findings", "signature_findings"]

_SCHEME_MEMBERS = (
    "apiKeySecurityScheme",
    "httpAuthSecurityScheme",
    "oauth2SecurityScheme",
    "openIdConnectSecurityScheme",
    "mtlsSecurityScheme",
)
_FLOW_URLS = {
    "authorizationCode": ("authorizationUrl", "tokenUrl"),
    "clientCredentials": ("tokenUrl",),
    "deviceCode": ("deviceAuthorizationUrl", "tokenUrl"),
    "implicit": (),
    "password": (),
}
_MAX_LISTED = 8  # undeclared scheme names listed in one finding


def security_findings(document: Mapping[str, Any]) -> list[Finding]:
    """``card.security``: the schemes are well formed, the requirements name them."""
    problems = Problems(
        "card.security",
        "A2A spec §4.5: securitySchemes (one scheme member each) and securityRequirements "
        "naming declared schemes",
    )
    schemes = document.get("securitySchemes")
    declared: set[str] = set()
    if schemes is not None and not isinstance(schemes, Mapping):
        problems.add("error", "securitySchemes is not an object", f"It is {excerpt(schemes)}.")
    elif isinstance(schemes, Mapping):
        for name, scheme in schemes.items():
            declared.add(name)
            _scheme_problem(problems, name, scheme)
    if "security" in document and "securityRequirements" not in document:
        problems.add(
            "warning",
            "The card has 0.3's 'security' but no 'securityRequirements'",
            "1.0 clients read securityRequirements only: they will call without credentials.",
        )
    _requirements_problem(
        problems, "securityRequirements", document.get("securityRequirements"), declared
    )
    skills = document.get("skills")
    for index, skill in enumerate(skills if isinstance(skills, list) else []):
        if isinstance(skill, Mapping) and "securityRequirements" in skill:
            _requirements_problem(
                problems,
                f"skills[{index}].securityRequirements",
                skill["securityRequirements"],
                declared,
            )
    if not declared and not problems.found:
        return [
            passed(
                "card.security",
                "The card declares no security: calls are anonymous",
                rule=problems.rule,
            )
        ]
    return problems.result(
        "Every security requirement names a declared, well-formed scheme",
        "Schemes: " + ", ".join(sorted(declared)),
    )


def _scheme_problem(problems: Problems, name: str, scheme: Any) -> None:
    where = f"securitySchemes.{name}"
    if not isinstance(scheme, Mapping):
        problems.add("error", f"{where} is not an object", f"It is {excerpt(scheme)}.")
        return
    members = [m for m in _SCHEME_MEMBERS if m in scheme]
    if len(members) != 1:
        old = " (it has 0.3's 'type' member)" if "type" in scheme else ""
        problems.add(
            "error",
            f"{where} is not exactly one of the 1.0 scheme kinds{old}",
            f"A SecurityScheme holds one of {', '.join(_SCHEME_MEMBERS)}; this one: "
            f"{excerpt(scheme)}.",
        )
        return
    kind, body = members[0], scheme[members[0]]
    if not isinstance(body, Mapping):
        problems.add("error", f"{where}.{kind} is not an object", f"It is {excerpt(body)}.")
        return
    if kind == "apiKeySecurityScheme":
        if body.get("location") not in ("header", "query", "cookie"):
            problems.add(
                "error",
                f"{where}: location {body.get('location')!r} is not header, query or cookie",
                "A client cannot tell where to put the key.",
            )
        if not is_text(body.get("name")):
            problems.add(
                "error",
                f"{where} names no parameter",
                "APIKeySecurityScheme.name (the header, query or cookie name) is REQUIRED.",
            )
    elif kind == "httpAuthSecurityScheme":
        if not is_text(body.get("scheme")):
            problems.add(
                "error",
                f"{where} names no HTTP auth scheme",
                "HTTPAuthSecurityScheme.scheme (e.g. Bearer) is REQUIRED.",
            )
    elif kind == "openIdConnectSecurityScheme":
        if not absolute_http(body.get("openIdConnectUrl")):
            problems.add(
                "error", f"{where} has no openIdConnectUrl", "The OIDC discovery URL is REQUIRED."
            )
    elif kind == "oauth2SecurityScheme":
        flows = body.get("flows")
        present = [f for f in _FLOW_URLS if isinstance(flows, Mapping) and f in flows]
        if len(present) != 1:
            problems.add(
                "error",
                f"{where} does not hold exactly one OAuth flow",
                "OAuthFlows is a oneof in 1.0 (declare two schemes for two flows); "
                f"it is {excerpt(flows)}.",
            )
            return
        assert isinstance(flows, Mapping)
        flow = flows[present[0]]
        for field_name in _FLOW_URLS[present[0]]:
            if not isinstance(flow, Mapping) or not absolute_http(flow.get(field_name)):
                problems.add(
                    "error",
                    f"{where}: the {present[0]} flow has no {field_name}",
                    "A client cannot obtain a token without it.",
                )


def _requirements_problem(
    problems: Problems, where: str, requirements: Any, declared: set[str]
) -> None:
    if requirements is None:
        return
    if not isinstance(requirements, list):
        problems.add("error", f"{where} is not a list", f"It is {excerpt(requirements)}.")
        return
    undefined: list[str] = []
    for index, requirement in enumerate(requirements):
        schemes = requirement.get("schemes") if isinstance(requirement, Mapping) else None
        if not isinstance(schemes, Mapping):
            old = " (0.3's {name: [scopes]} form)" if isinstance(requirement, Mapping) else ""
            problems.add(
                "error",
                f'{where}[{index}] is not {{"schemes": {{...}}}}{old}',
                f"It is {excerpt(requirement)}.",
            )
            continue
        for name, scopes in schemes.items():
            if name not in declared:
                undefined.append(name)
            if isinstance(scopes, Mapping):
                scope_list = scopes.get("list", [])
                if not string_list(scope_list):
                    problems.add(
                        "error",
                        f'{where}[{index}].schemes.{name} is not {{"list": [scopes]}}',
                        f"It is {excerpt(scopes)}.",
                    )
            else:
                problems.add(
                    "error",
                    f'{where}[{index}].schemes.{name} is not {{"list": [scopes]}}',
                    f"It is {excerpt(scopes)}.",
                )
    if undefined:
        names = ", ".join(sorted(set(undefined))[:_MAX_LISTED])
        problems.add(
            "error",
            f"{where} names undeclared scheme(s): {names}",
            "No client can satisfy a requirement on a scheme securitySchemes does not "
            "declare (peerwire's client refuses to call).",
        )


async def signature_findings(document: Mapping[str, Any], timeout: float) -> list[Finding]:
    """``card.signature``: valid, invalid or unsigned (and with which key)."""
    rule = "A2A spec §8.4: JWS over the JCS-canonical card, detached payload"
    signatures = document.get("signatures")
    if signatures is None or signatures == []:
        return [
            passed(
                "card.signature",
                "The card is not signed",
                "Signatures are optional; a client that requires them refuses this card.",
                rule=rule,
            )
        ]
    if not isinstance(signatures, list):
        return [
            failed(
                "card.signature",
                "warning",
                "The card's signatures is not a list",
                f"It is {excerpt(signatures)}.",
                rule=rule,
            )
        ]
    headers = [_protected_header(s) for s in signatures]
    if any(h is None for h in headers):
        return [
            failed(
                "card.signature",
                "warning",
                "A card signature is malformed",
                "Each AgentCardSignature needs 'protected' (base64url JSON) and 'signature'.",
                rule=rule,
            )
        ]
    keys = ", ".join(
        f"kid {h.get('kid')!r} ({h.get('alg')})" + (f" from {h['jku']}" if h.get("jku") else "")
        for h in headers
        if h is not None
    )
    jkus = sorted({h["jku"] for h in headers if h is not None and isinstance(h.get("jku"), str)})
    try:
        # The "security" extra (joserfc): without it a signature is reported, not checked.
        from ..security.signing import Trust, verify_card_async
    except ImportError:
        return [
            passed(
                "card.signature",
                f"The card is signed ({keys})",
                "Not verified: peerwire's 'security' extra is not installed.",
                rule=rule,
            )
        ]
    usable = []
    for jku in jkus:
        try:
            usable.append(check_fetch_url(jku, "jku"))
        except ValueError:
            continue  # not https (nor http to loopback): no client would fetch a key there
    if not usable:
        return [
            passed(
                "card.signature",
                f"The card is signed ({keys})",
                "Not verified: no signature names a jku (https) to fetch its key from; "
                "a client verifies with a key it was given.",
                rule=rule,
            )
        ]
    try:
        # The key the card points at: this proves the signature matches the card and that
        # key, not that the key deserves trust (that is the client's pinning or allow-list).
        trust = Trust(jku_allowlist=usable, timeout=timeout)
        await verify_card_async(document, trust)
    except CardSignatureError as exc:
        return [
            failed(
                "card.signature",
                "warning",
                "The card's signature does not verify",
                f"{exc.message}. Signed with {keys}. A client that verifies signatures "
                "refuses this card.",
                rule=rule,
            )
        ]
    return [
        passed(
            "card.signature",
            "The card's signature verifies",
            f"Signed with {keys}; verified with the key published at the jku.",
            rule=rule,
        )
    ]


def _protected_header(signature: Any) -> dict[str, Any] | None:
    if not isinstance(signature, Mapping):
        return None
    protected = signature.get("protected")
    if not isinstance(protected, str) or not isinstance(signature.get("signature"), str):
        return None
    try:
        padded = protected + "=" * (-len(protected) % 4)
        header = json.loads(base64.urlsafe_b64decode(padded))
    except (ValueError, TypeError):
        return None
    return header if isinstance(header, dict) else None
