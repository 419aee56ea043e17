"""The agent card and its parts (A2A spec §4.4)."""

from __future__ import annotations

from typing import Any

from ._base import Model
from .security import SecurityRequirement, SecurityScheme

__all__ = [
    "BINDING_NAMES",
    "AgentCapabilities",
    "AgentCard",
    "AgentCardSignature",
    "AgentExtension",
    "AgentInterface",
    "AgentProvider",
    "AgentSkill",
    "Binding",
]


class Binding:
    """The three standard ``AgentInterface.protocolBinding`` strings."""

    JSONRPC = "JSONRPC"
    GRPC = "GRPC"
    HTTP_JSON = "HTTP+JSON"

    @classmethod
    def named(cls, name: str) -> str:
        """The binding string for ``name``: a short name (``jsonrpc``, ``rest``, ``grpc``, as
        ``peerwire serve --interfaces`` and ``--binding`` take) or a binding string itself,
        in any case. An unknown name raises ``ValueError`` listing the valid ones."""
        folded = name.strip().lower()
        binding = BINDING_NAMES.get(folded) or _BY_FOLDED.get(folded)
        if binding is None:
            valid = ", ".join([*BINDING_NAMES, *BINDING_NAMES.values()])
            raise ValueError(f"unknown binding {name!r} (valid: {valid})")
        return binding


# The short names of the bindings, in their default order of preference.
BINDING_NAMES = {"jsonrpc": Binding.JSONRPC, "rest": Binding.HTTP_JSON, "grpc": Binding.GRPC}
_BY_FOLDED = {binding.lower(): binding for binding in BINDING_NAMES.values()}


class AgentInterface(Model, frozen=True, kw_only=True):
    """Where and how to reach the agent; the card's list of these is in preference order."""

    url: str
    protocol_binding: str
    tenant: str = ""
    protocol_version: str


class AgentProvider(Model, frozen=True, kw_only=True):
    url: str
    organization: str


class AgentExtension(Model, frozen=True, kw_only=True):
    uri: str = ""
    description: str = ""
    required: bool = False
    params: dict[str, Any] | None = None


class AgentCapabilities(Model, frozen=True, kw_only=True):
    """Optional features. The three flags have presence: absent means false."""

    streaming: bool | None = None
    push_notifications: bool | None = None
    extensions: list[AgentExtension] = []
    extended_agent_card: bool | None = None


class AgentSkill(Model, frozen=True, kw_only=True):
    id: str
    name: str
    description: str
    tags: list[str]
    examples: list[str] = []
    input_modes: list[str] = []
    output_modes: list[str] = []
    security_requirements: list[SecurityRequirement] = []


class AgentCardSignature(Model, frozen=True, kw_only=True):
    """One JWS over the canonical card (detached payload)."""

    protected: str
    signature: str
    header: dict[str, Any] | None = None


class AgentCard(Model, frozen=True, kw_only=True):
    """What an agent publishes at ``/.well-known/agent-card.json``."""

    name: str
    description: str
    supported_interfaces: list[AgentInterface]
    provider: AgentProvider | None = None
    version: str
    documentation_url: str | None = None
    capabilities: AgentCapabilities
    security_schemes: dict[str, SecurityScheme] = {}
    security_requirements: list[SecurityRequirement] = []
    default_input_modes: list[str]
    default_output_modes: list[str]
    skills: list[AgentSkill]
    signatures: list[AgentCardSignature] = []
    icon_url: str | None = None
