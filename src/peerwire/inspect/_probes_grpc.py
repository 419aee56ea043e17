"""The gRPC prober of the self-check (``_probes``): raw calls on ``lf.a2a.v1.A2AService``
with chosen metadata (A2A spec §10). A module of its own because grpcio is optional: without
the ``grpc`` extra, gRPC interfaces are reported as not probed instead of breaking the rest.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import grpc
import grpc.aio
from google.rpc import error_details_pb2, status_pb2

from ..bindings.grpc.convert import from_bytes, to_bytes
from ..bindings.grpc.service import RPCS
from ..bindings.grpc.status import DETAILS_KEY, carries_error_info, decode_status
from ..client.transports.base import ClientTLS
from ..client.transports.grpc import grpc_target, is_loopback_target
from ..errors import A2AError
from ..types import (
    CancelTaskRequest,
    GetTaskRequest,
    SendMessageRequest,
    StreamResponse,
    to_builtins,
)
from ._probes import (
    Answer,
    Interface,
    ProbeAuth,
    Prober,
    StreamItem,
    excerpt,
    message_request,
    stream_response,
    unknown_task_id,
)

__all__ = ["GrpcProber"]


class GrpcProber(Prober):
    """gRPC: raw calls on ``lf.a2a.v1.A2AService`` with chosen metadata (A2A spec §10)."""

    def __init__(
        self, interface: Interface, auth: ProbeAuth, timeout: float, tls: ClientTLS | None
    ) -> None:
        self.interface = interface
        self._auth = auth
        self._timeout = timeout
        self._tls = tls
        self._channel: grpc.aio.Channel | None = None

    def _open(self) -> grpc.aio.Channel:
        if self._channel is None:
            target, secure = grpc_target(self.interface.url)
            if secure is None:
                secure = not is_loopback_target(target)  # as peerwire's client decides
            if secure:
                credentials = grpc.ssl_channel_credentials(
                    root_certificates=self._tls.root_certificates if self._tls else None,
                    private_key=self._tls.private_key if self._tls else None,
                    certificate_chain=self._tls.certificate_chain if self._tls else None,
                )
                self._channel = grpc.aio.secure_channel(target, credentials)
            else:
                self._channel = grpc.aio.insecure_channel(target)
        return self._channel

    def _metadata(self, version: str | None) -> tuple[tuple[str, str], ...]:
        metadata = {name.lower(): value for name, value in self._auth.headers.items()}
        if version is not None:
            metadata["a2a-version"] = version
        return tuple(metadata.items())

    async def get_task(self, version: str | None) -> Answer:
        request = GetTaskRequest(tenant=self.interface.tenant, id=unknown_task_id())
        try:
            method = self._open().unary_unary(RPCS["GetTask"].path)
            await method(to_bytes(request), metadata=self._metadata(version), timeout=self._timeout)
        except grpc.aio.AioRpcError as exc:
            return _grpc_answer(exc, self._timeout)
        except ValueError as exc:  # an interface URL grpc cannot dial
            return Answer(reached=False, summary="no channel", failure=str(exc))
        return Answer(reached=True, summary="gRPC OK (a Task)")

    async def malformed(self) -> Answer | None:
        return None  # gRPC frames are protobuf: a body that is not JSON has no equivalent

    async def stream(self, text: str, skill: str | None = None) -> AsyncGenerator[StreamItem, None]:
        request = message_request(text, skill)
        if self.interface.tenant:
            request = SendMessageRequest(tenant=self.interface.tenant, message=request.message)
        call = self._open().unary_stream(RPCS["SendStreamingMessage"].path)(
            to_bytes(request), metadata=self._metadata("1.0")
        )
        try:
            while True:
                try:
                    raw = await call.read()
                except grpc.aio.AioRpcError as exc:
                    answer = _grpc_answer(exc, self._timeout)
                    yield StreamItem("error", payload=answer.error, note=answer.describe())
                    return
                if raw is grpc.aio.EOF:
                    return
                try:
                    event = from_bytes(raw, StreamResponse)
                except A2AError as exc:
                    yield StreamItem("invalid", note=f"not a valid StreamResponse: {exc.message}")
                    continue
                yield stream_response(to_builtins(event))
        finally:
            call.cancel()

    async def cancel(self, task_id: str) -> None:
        request = CancelTaskRequest(tenant=self.interface.tenant, id=task_id)
        try:
            method = self._open().unary_unary(RPCS["CancelTask"].path)
            await method(to_bytes(request), metadata=self._metadata("1.0"), timeout=self._timeout)
        except grpc.aio.AioRpcError:
            pass  # best effort: the task may have ended meanwhile

    async def aclose(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close()


def _grpc_answer(exc: grpc.aio.AioRpcError, timeout: float) -> Answer:
    code = exc.code()
    message = exc.details() or ""
    summary = f"gRPC {code.name}"
    seen = excerpt(message)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return Answer(
            reached=False, summary=summary, seen=seen, failure=f"no answer within {timeout:g} s"
        )
    if code is grpc.StatusCode.UNAVAILABLE:
        return Answer(reached=False, summary=summary, seen=seen, failure="could not connect")
    trailer = None
    for name, value in exc.trailing_metadata() or ():
        if name == DETAILS_KEY and isinstance(value, bytes):
            trailer = value
    number = code.value[0]
    reason = _grpc_reason(number, trailer)
    error = decode_status(number, message, trailer)
    if code is grpc.StatusCode.UNIMPLEMENTED and reason is None:
        return Answer(
            reached=False,
            summary=summary,
            seen=seen,
            failure="the server does not serve lf.a2a.v1.A2AService (an A2A 0.3 server, or "
            "no A2A service at this address)",
            error=error,
            status_name=code.name,
        )
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return Answer(
            reached=True,
            summary=summary,
            seen=seen,
            auth_refused=True,
            failure=f"refused for want of credentials ({code.name})",
        )
    info = () if reason else ("no google.rpc.ErrorInfo in the status details (MUST, §10)",)
    return Answer(
        reached=True,
        summary=summary,
        seen=seen,
        error=error,
        reason=reason,
        info=info,
        status_name=code.name,
    )


def _grpc_reason(code: int, trailer: bytes | None) -> str | None:
    """The ErrorInfo reason in a ``grpc-status-details-bin`` trailer of status ``code``."""
    if not trailer or not carries_error_info(code, trailer):
        return None
    status = status_pb2.Status()
    status.ParseFromString(trailer)  # carries_error_info parsed it already: it parses
    for packed in status.details:
        if packed.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            packed.Unpack(info)
            return str(info.reason) or None
    return None
