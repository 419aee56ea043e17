"""Fuzzing the gRPC binding over a real socket with a default grpcio client: whatever the
bytes and metadata, the status is an A2A error of the table whose message and details the
client accepts (no RESOURCE_EXHAUSTED from oversized trailers), never INTERNAL or a logged
traceback.

The requests come from ``bench/fuzz_cases.py`` (also behind the on-demand 100,000-request
run, ``bench/fuzz_bindings.py``), driven by hypothesis.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.fuzz_cases import (
    BadAnswer,
    GrpcCase,
    HttpCase,
    check_grpc,
    describe,
    fuzz_agent,
    fuzz_app_options,
    grpc_case,
)
from peerwire import create_app
from peerwire.bindings.grpc.convert import from_bytes, to_bytes
from peerwire.bindings.grpc.service import RPCS, SERVICE
from peerwire.types import (
    MAX_JSON_DEPTH,
    Binding,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    Task,
)

from .._fuzz import AppThread, Failures, watching_logs

CALL_TIMEOUT_S = 20.0
FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass
class Served:
    channel: grpc.Channel
    logs: Failures
    task_ids: list[str]

    def call(self, case: GrpcCase) -> str:
        """Send ``case`` with a default client; the label of a spec answer."""
        path = f"/{SERVICE}/{case.rpc}"
        streaming = case.rpc in RPCS and RPCS[case.rpc].streaming
        responses: list[bytes] = []
        try:
            if streaming:
                stream = self.channel.unary_stream(path)(
                    case.payload, metadata=case.metadata, timeout=CALL_TIMEOUT_S
                )
                responses.extend(stream)
            else:
                responses.append(
                    self.channel.unary_unary(path)(
                        case.payload, metadata=case.metadata, timeout=CALL_TIMEOUT_S
                    )
                )
            code, message, trailers = 0, "", ()
        except grpc.RpcError as error:
            code = error.code().value[0]
            message = error.details() or ""
            trailers = tuple(error.trailing_metadata() or ())
        try:
            label = check_grpc(case, code, message, trailers, responses)
        except BadAnswer as bad:
            raise BadAnswer(f"{bad}\nrequest: {describe(case)}") from None
        assert not self.logs.take(), describe(case)
        return label


@pytest.fixture(scope="module")
def served_app() -> Iterator[AppThread]:
    with AppThread(create_app(fuzz_agent(), grpc_port=0, **fuzz_app_options())) as app:
        yield app


@pytest.fixture(scope="module")
def served(served_app: AppThread) -> Iterator[Served]:
    with watching_logs() as logs:
        app = served_app
        card = app.app.dispatcher.card()
        address = next(
            i.url for i in card.supported_interfaces if i.protocol_binding == Binding.GRPC
        )
        with grpc.insecure_channel(address) as channel:
            message = Message(message_id="m-0", role=Role.USER, parts=[Part(text="a")])
            send = channel.unary_unary(f"/{SERVICE}/SendMessage")
            answer = send(
                to_bytes(SendMessageRequest(message=message)),
                metadata=(("a2a-version", "1.0"),),
                timeout=CALL_TIMEOUT_S,
            )
            task = from_bytes(answer, SendMessageResponse).task
            assert task is not None
            yield Served(channel, logs, [task.id])
        assert not logs.take()


@FUZZ
@given(rng=st.randoms(use_true_random=False))
def test_every_fuzzed_call_gets_a_spec_status(served: Served, rng: Any) -> None:
    served.call(grpc_case(rng, served.task_ids))


@FUZZ
@given(rpc=st.sampled_from(sorted(RPCS)), payload=st.binary(max_size=300))
def test_random_bytes_get_a_spec_status(served: Served, rpc: str, payload: bytes) -> None:
    served.call(GrpcCase(rpc, payload, (("a2a-version", "1.0"),), "hypothesis bytes"))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    version=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=6000),
    text=st.sampled_from(["é", "😀", "x", "%"]),
)
def test_echoed_input_never_overflows_the_trailers(served: Served, version: str, text: str) -> None:
    # A2A-Version is quoted in the error; an id in a message is quoted when it is refused.
    case = GrpcCase("GetTask", b"", (("a2a-version", version or "0"),), "long version")
    assert served.call(case) in ("FAILED_PRECONDITION", "INVALID_ARGUMENT", "NOT_FOUND")
    payload = to_bytes(GetTaskRequest(id=text * 20000))
    assert served.call(GrpcCase("GetTask", payload, (("a2a-version", "1.0"),), "long id")) in (
        "NOT_FOUND",
        "INVALID_ARGUMENT",
    )


@pytest.mark.parametrize("kind", [b'{"a":', b"["])
def test_data_at_the_json_bound_is_readable_over_grpc(served_app: AppThread, kind: bytes) -> None:
    # The deepest data part REST takes: 4 levels of request around it, the bound in all.
    depth = MAX_JSON_DEPTH - 4
    close = b"}" if kind == b'{"a":' else b"]"
    data = kind * depth + b'"x"' + close * depth
    # Its own message id: a repeated one would be answered with the first kind's task.
    message_id = b"deep-%d" % len(kind)
    body = b'{"message":{"messageId":"%b","role":"ROLE_USER","parts":[{"data":%b}]}}' % (
        message_id,
        data,
    )
    headers = ((b"content-type", b"application/json"), (b"a2a-version", b"1.0"))
    status, _, answer = served_app.http(HttpCase("POST", b"/rest/message:send", headers, body))
    assert status == 200, answer
    task_id = json.loads(answer)["task"]["id"]
    card = served_app.app.dispatcher.card()
    address = next(i.url for i in card.supported_interfaces if i.protocol_binding == Binding.GRPC)
    with grpc.insecure_channel(address) as channel:
        reply = channel.unary_unary(f"/{SERVICE}/GetTask")(
            to_bytes(GetTaskRequest(id=task_id)),
            metadata=(("a2a-version", "1.0"),),
            timeout=CALL_TIMEOUT_S,
        )
    task = from_bytes(reply, Task)
    assert task.history[0].parts[0].data == json.loads(data)
