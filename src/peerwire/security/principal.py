"""``Principal``: who an authenticated request comes from, as every binding and the core see it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["ANONYMOUS", "Principal"]


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller.

    ``id`` owns the caller's tasks (tasks of another id are invisible), ``scheme`` names the
    card security scheme that established it, ``scopes`` are what it may do (OAuth scopes,
    or roles an operator gave an API key or certificate), ``claims`` what the credential said
    (JWT claims, certificate subject); never the credential itself.
    """

    id: str
    scheme: str = ""
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def authenticated(self) -> bool:
        return bool(self.id)

    def has_scopes(self, required: frozenset[str] | set[str] | tuple[str, ...]) -> bool:
        return set(required) <= self.scopes


ANONYMOUS = Principal(id="")
"""The caller of an agent whose card requires no authentication."""
