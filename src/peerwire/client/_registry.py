"""Which binding the client can speak, and how to build a transport for it.

Factories are registered per ``AgentInterface.protocolBinding`` string. The three standard
bindings live in modules of ``peerwire.client.transports`` that are imported on first need, so
a binding whose module (or optional dependency, such as grpcio) is missing simply is not
available; why is remembered for the error message of a client that finds no usable interface.
"""

from __future__ import annotations

import importlib

from ..types import Binding
from .transports.base import TransportFactory

__all__ = ["available_bindings", "register_transport", "transport_factory", "unavailable_reason"]

_BUILTIN_MODULES = {
    Binding.JSONRPC: "peerwire.client.transports.jsonrpc",
    Binding.HTTP_JSON: "peerwire.client.transports.rest",
    Binding.GRPC: "peerwire.client.transports.grpc",
}

_factories: dict[str, TransportFactory] = {}
_unavailable: dict[str, str] = {}


def register_transport(binding: str, factory: TransportFactory) -> None:
    """Make ``binding`` available: ``factory(interface, settings)`` builds its transports.

    Registering a binding again replaces its factory (to use your own JSON-RPC transport, say).
    """
    _factories[binding] = factory
    _unavailable.pop(binding, None)


def transport_factory(binding: str) -> TransportFactory | None:
    """The factory for ``binding``, importing its built-in module the first time."""
    factory = _factories.get(binding)
    if factory is None and binding in _BUILTIN_MODULES and binding not in _unavailable:
        _load_builtin(binding)
        factory = _factories.get(binding)
    return factory


def available_bindings() -> tuple[str, ...]:
    """Every binding this process can speak now, built-in ones first."""
    builtin = tuple(b for b in _BUILTIN_MODULES if transport_factory(b) is not None)
    return builtin + tuple(b for b in _factories if b not in builtin)


def unavailable_reason(binding: str) -> str | None:
    """Why a built-in binding could not be loaded (``None`` if it was not tried or loaded)."""
    return _unavailable.get(binding)


def _load_builtin(binding: str) -> None:
    module_name = _BUILTIN_MODULES[binding]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        # Not written yet, or its optional dependency is not installed: the binding is simply
        # not on offer. Anything else (a bug in the module) still surfaces.
        _unavailable[binding] = f"{module_name} cannot be imported: {exc}"
        return
    if binding in _factories:
        return  # the module registered itself
    factory = getattr(module, "create_transport", None)
    if callable(factory):
        _factories[binding] = factory
    else:
        _unavailable[binding] = f"{module_name} defines no create_transport factory"
