"""``Authenticator``: a request's credentials against the card's security requirements.

The card's ``securityRequirements`` are alternatives (OR); the schemes inside one alternative
must all be satisfied (AND), each with the scopes it lists (A2A spec §4.5). The authenticator
takes the alternatives in card order, asking each scheme's verifier about the request at most
once, and stops at the first alternative that is fully satisfied. Its principal is the one
established by the alternative's first scheme, with the scopes of all of them.

When none is satisfied, the refusal says the most useful thing:

1. a credential was presented and is invalid: 401, ``error="invalid_token"``, and why;
2. a credential could not be checked now (issuer unreachable): ``ServerBusyError``;
3. valid credentials lack scopes an alternative needs: 403, ``error="insufficient_scope"``;
4. nothing usable was presented: 401 naming every scheme that would do.

A card without requirements, or with an empty alternative (``{}``), admits anonymous callers
(``ANONYMOUS``, owner ``""``); a caller that presents credentials is still identified, and a
caller that presents bad credentials is still refused. Refusals are logged (scheme names and
reasons, never credential values).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import AuthenticationError, PermissionDeniedError, ServerBusyError
from ..types import AgentCard, SecurityRequirement, SecurityScheme
from .credentials import RequestCredentials
from .principal import ANONYMOUS, Principal
from .schemes import Verifier, challenge

__all__ = ["Authenticator"]

log = logging.getLogger("peerwire.security")


@dataclass(frozen=True, slots=True)
class _Alternative:
    """One requirement: scheme name -> scopes it needs."""

    schemes: tuple[tuple[str, frozenset[str]], ...]


class Authenticator:
    """Authenticates requests against security requirements with the configured verifiers.

    ``verifiers`` maps each scheme name the requirements use to the verifier that checks it.
    Build one from a card with ``Authenticator.from_card(card, verifiers)``, or let
    ``create_app(agent, auth={...})`` do it.
    """

    def __init__(
        self,
        schemes: Mapping[str, SecurityScheme],
        requirements: Sequence[SecurityRequirement],
        verifiers: Mapping[str, Verifier],
        *,
        realm: str = "a2a",
    ) -> None:
        self.schemes = dict(schemes)
        self.requirements = list(requirements)
        self.verifiers = dict(verifiers)
        self.realm = realm
        self._alternatives = [
            _Alternative(
                tuple((name, frozenset(scopes.list)) for name, scopes in r.schemes.items())
            )
            for r in self.requirements
            if r.schemes
        ]
        self.anonymous_allowed = not self.requirements or any(
            not r.schemes for r in self.requirements
        )
        self._check_configuration()
        if self.anonymous_allowed:
            # Callers who present credentials are still identified, by any configured scheme.
            self._alternatives += [
                _Alternative(((name, frozenset()),))
                for name in self.verifiers
                if all(alt.schemes != ((name, frozenset()),) for alt in self._alternatives)
            ]

    @classmethod
    def from_card(
        cls, card: AgentCard, verifiers: Mapping[str, Verifier], *, realm: str | None = None
    ) -> Authenticator:
        return cls(
            card.security_schemes,
            card.security_requirements,
            verifiers,
            realm=realm or card.name or "a2a",
        )

    def matches_card(self, card: AgentCard) -> bool:
        """Whether this authenticator enforces exactly what ``card`` declares."""
        return (
            card.security_schemes == self.schemes
            and card.security_requirements == self.requirements
        )

    def _check_configuration(self) -> None:
        for alternative in self._alternatives:
            for name, _ in alternative.schemes:
                if name not in self.schemes:
                    raise ValueError(f"a security requirement names the undeclared scheme {name!r}")
                if name not in self.verifiers:
                    raise ValueError(f"no verifier is configured for the security scheme {name!r}")
        for name, verifier in self.verifiers.items():
            scheme = self.schemes.get(name)
            if scheme is None:
                raise ValueError(f"a verifier is configured for the undeclared scheme {name!r}")
            if not verifier.supports(scheme):
                raise ValueError(
                    f"{type(verifier).__name__} cannot verify the scheme {name!r} "
                    f"({type(scheme.scheme).__name__})"
                )

    # -- authenticating ---------------------------------------------------------------------

    async def authenticate(self, credentials: RequestCredentials) -> Principal:
        """The caller, or the refusal described in the module docstring."""
        verified: dict[str, Principal | None] = {}
        invalid: AuthenticationError | None = None
        unavailable: ServerBusyError | None = None
        missing_scopes: tuple[str, tuple[str, ...]] | None = None
        for alternative in self._alternatives:
            for name, _ in alternative.schemes:
                if name in verified:
                    continue
                try:
                    verified[name] = await self.verifiers[name].verify(
                        name, self.schemes[name], credentials
                    )
                except AuthenticationError as exc:
                    verified[name] = None
                    invalid = invalid or _named(exc, name)
                except ServerBusyError as exc:
                    verified[name] = None
                    unavailable = unavailable or exc
            principals = [verified[name] for name, _ in alternative.schemes]
            if any(p is None for p in principals):
                continue
            lacking = _lacking(alternative, principals)
            if lacking is None:
                return _combined(principals)
            missing_scopes = missing_scopes or lacking
        if invalid is not None:
            log.info("peerwire: refused a request: %s", invalid.message)
            raise AuthenticationError(
                invalid.message,
                www_authenticate=self.challenge(error="invalid_token", description=invalid.message),
            )
        if unavailable is not None:
            raise unavailable
        if missing_scopes is not None:
            scheme, scopes = missing_scopes
            message = (
                f"The credentials are valid but lack the scope(s) {', '.join(scopes)} "
                f"required by {scheme!r}"
            )
            log.info("peerwire: refused a request: %s", message)
            raise PermissionDeniedError(
                message,
                www_authenticate=challenge(
                    scheme,
                    self.schemes[scheme],
                    self.realm,
                    error="insufficient_scope",
                    description=message,
                    scopes=scopes,
                ),
            )
        if self.anonymous_allowed:
            return ANONYMOUS
        raise AuthenticationError(
            f"Authentication required: {self.describe()}", www_authenticate=self.challenge()
        )

    def describe(self) -> str:
        """The requirements in words, e.g. ``oidc (scopes openid) or key and mtls``."""
        words = []
        for alternative in self._alternatives:
            parts = []
            for name, scopes in alternative.schemes:
                parts.append(f"{name} (scopes {' '.join(sorted(scopes))})" if scopes else name)
            words.append(" and ".join(parts))
        return " or ".join(words) if words else "no credentials"

    def challenge(self, *, error: str = "", description: str = "") -> str:
        """The ``WWW-Authenticate`` value naming every scheme that could authenticate."""
        seen: list[str] = []
        for alternative in self._alternatives:
            for name, _ in alternative.schemes:
                if name not in seen:
                    seen.append(name)
        challenges: list[str] = []
        for name in seen:
            value = challenge(
                name,
                self.schemes[name],
                self.realm,
                error=error if _is_bearer(self.schemes[name]) else "",
                description=description if _is_bearer(self.schemes[name]) else "",
            )
            if value not in challenges:
                challenges.append(value)
        return ", ".join(challenges) or f'Bearer realm="{self.realm}"'


def _is_bearer(scheme: SecurityScheme) -> bool:
    http = scheme.http_auth_security_scheme
    return (http is not None and http.scheme.lower() == "bearer") or (
        scheme.oauth2_security_scheme is not None
        or scheme.open_id_connect_security_scheme is not None
    )


def _named(exc: AuthenticationError, name: str) -> AuthenticationError:
    return AuthenticationError(f"{exc.message} (scheme {name!r})")


def _lacking(
    alternative: _Alternative, principals: Sequence[Principal | None]
) -> tuple[str, tuple[str, ...]] | None:
    for (name, scopes), principal in zip(alternative.schemes, principals, strict=True):
        assert principal is not None
        lacking = scopes - principal.scopes
        if lacking:
            return name, tuple(sorted(lacking))
    return None


def _combined(principals: Sequence[Principal | None]) -> Principal:
    found = [p for p in principals if p is not None]
    first = found[0]
    if len(found) == 1:
        return first
    scopes = frozenset().union(*(p.scopes for p in found))
    return Principal(id=first.id, scheme=first.scheme, scopes=scopes, claims=first.claims)
