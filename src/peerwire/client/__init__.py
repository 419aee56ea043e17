"""Calling A2A agents: ``Client.connect(url)`` and the operations on the client it returns.

    async with Client.connect("http://127.0.0.1:8000") as client:
        task = await client.send("record")

Transports are chosen per binding from a registry (``register_transport``); the JSON-RPC
transport is built in, and the REST and gRPC ones appear when their modules are installed.
"""

from ..protocol.extensions import IDEMPOTENT_SEND_EXTENSION
from ._card import CardCache, default_card_cache
from ._client import Client, PushConfig, TaskListing
from ._follow import Payload, Settling
from ._registry import available_bindings, register_transport
from .transports._limits import ClientLimits
from .transports.base import CallOptions, Transport, TransportFactory, TransportSettings

__all__ = [
    "IDEMPOTENT_SEND_EXTENSION",
    "CallOptions",
    "CardCache",
    "Client",
    "ClientLimits",
    "Payload",
    "PushConfig",
    "Settling",
    "TaskListing",
    "Transport",
    "TransportFactory",
    "TransportSettings",
    "available_bindings",
    "default_card_cache",
    "register_transport",
]
