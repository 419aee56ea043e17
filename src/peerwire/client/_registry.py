"""Which binding the client can speak, at which protocol version, and how to build a transport.

Factories are registered per ``AgentInterface.protocolBinding`` string and protocol version
(Major.Minor: ``"1.0"``, and ``"0.3"`` for agents that still speak A2A 0.3). The standard
bindings live in modules of ``peerwire.client.transports`` that are imported on first need, so
a binding whose module (or optional dependency, such as grpcio) is missing simply is not
available; why is remembered for the error message of a client that finds no usable interface.

A built-in module either calls ``register_transport`` at import time or defines the factory
named in ``_BUILTIN_MODULES``: ``create_transport`` for 1.0, ``create_v03_transport`` for 0.3
in the modules that serve both (JSON-RPC, REST); gRPC's 0.3 transport has a module of its own
(``transports/grpc_v03.py``, its factory ``create_transport``).
"""

from __future__ import annotations

import importlib

from ..protocol import PROTOCOL_VERSION
from ..types import Binding
from .transports.base import TransportFactory

__all__ = [
    "available_bindings",
    "register_transport",
    "spoken_versions",
    "transport_factory",
    "unavailable_reason",
]

_V03 = "0.3"

# (binding, Major.Minor) -> (module, factory attribute)
_BUILTIN_MODULES: dict[tuple[str, str], tuple[str, str]] = {
    (Binding.JSONRPC, PROTOCOL_VERSION): ("peerwire.client.transports.jsonrpc", "create_transport"),
    (Binding.HTTP_JSON, PROTOCOL_VERSION): ("peerwire.client.transports.rest", "create_transport"),
    (Binding.GRPC, PROTOCOL_VERSION): ("peerwire.client.transports.grpc", "create_transport"),
    (Binding.JSONRPC, _V03): ("peerwire.client.transports.jsonrpc", "create_v03_transport"),
    (Binding.HTTP_JSON, _V03): ("peerwire.client.transports.rest", "create_v03_transport"),
    (Binding.GRPC, _V03): ("peerwire.client.transports.grpc_v03", "create_transport"),
}

_factories: dict[tuple[str, str], TransportFactory] = {}
_unavailable: dict[tuple[str, str], str] = {}


def _major_minor(version: str) -> str:
    """``"0.3.0"`` -> ``"0.3"``: patch numbers never matter (A2A spec §3.6)."""
    return ".".join(version.strip().split(".")[:2])


def spoken_versions() -> tuple[str, ...]:
    """The protocol versions the client can speak, preferred first."""
    return (PROTOCOL_VERSION, _V03)


def register_transport(
    binding: str, factory: TransportFactory, *, protocol_version: str = PROTOCOL_VERSION
) -> None:
    """Make ``binding`` available at ``protocol_version``: ``factory(interface, settings)``
    builds its transports.

    Registering a binding again replaces its factory (to use your own JSON-RPC transport, say).
    """
    key = (binding, _major_minor(protocol_version))
    _factories[key] = factory
    _unavailable.pop(key, None)


def transport_factory(
    binding: str, protocol_version: str = PROTOCOL_VERSION
) -> TransportFactory | None:
    """The factory for ``binding`` at ``protocol_version``, importing its built-in module
    the first time."""
    key = (binding, _major_minor(protocol_version))
    factory = _factories.get(key)
    if factory is None and key in _BUILTIN_MODULES and key not in _unavailable:
        _load_builtin(key)
        factory = _factories.get(key)
    return factory


def available_bindings(protocol_version: str = PROTOCOL_VERSION) -> tuple[str, ...]:
    """Every binding this process can speak now at ``protocol_version``, built-in ones first."""
    version = _major_minor(protocol_version)
    builtin = tuple(
        b for b, v in _BUILTIN_MODULES if v == version and transport_factory(b, v) is not None
    )
    return builtin + tuple(b for b, v in _factories if v == version and b not in builtin)


def unavailable_reason(binding: str, protocol_version: str = PROTOCOL_VERSION) -> str | None:
    """Why a built-in binding could not be loaded (``None`` if it was not tried or loaded)."""
    return _unavailable.get((binding, _major_minor(protocol_version)))


def _load_builtin(key: tuple[str, str]) -> None:
    module_name, attribute = _BUILTIN_MODULES[key]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        # Not written yet, or its optional dependency is not installed: the binding is simply
        # not on offer. Anything else (a bug in the module) still surfaces.
        _unavailable[key] = f"{module_name} cannot be imported: {exc}"
        return
    if key in _factories:
        return  # the module registered itself
    factory = getattr(module, attribute, None)
    if callable(factory):
        _factories[key] = factory
    else:
        _unavailable[key] = f"{module_name} defines no {attribute} factory"
