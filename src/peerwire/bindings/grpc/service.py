"""The rpcs of ``lf.a2a.v1.A2AService``: for each, its path, our request and response types,
and the dispatcher operation behind it.

Read from the service descriptor of our proto, so the table cannot disagree with it; the
operation names are the JSON-RPC binding's (the rpc names are the JSON-RPC method names).
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import types
from ...types import Model
from ..jsonrpc import METHODS
from ._gen import a2a_pb2

__all__ = ["RPCS", "SERVICE", "Rpc"]

SERVICE = "lf.a2a.v1.A2AService"


@dataclass(frozen=True, slots=True)
class Rpc:
    """One rpc. ``response`` is ``None`` for ``google.protobuf.Empty``."""

    name: str
    request: type[Model]
    response: type[Model] | None
    operation: str
    streaming: bool

    @property
    def path(self) -> str:
        return f"/{SERVICE}/{self.name}"


def _rpcs() -> dict[str, Rpc]:
    service = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
    table = {}
    for method in service.methods:
        output = method.output_type
        response = None if output.full_name == "google.protobuf.Empty" else output.name
        table[method.name] = Rpc(
            name=method.name,
            request=getattr(types, method.input_type.name),
            response=None if response is None else getattr(types, response),
            operation=METHODS[method.name].operation,
            streaming=method.server_streaming,
        )
    return table


RPCS: dict[str, Rpc] = _rpcs()
