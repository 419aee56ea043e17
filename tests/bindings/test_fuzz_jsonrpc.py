"""Fuzzing the JSON-RPC binding: whatever the body, the answer is a JSON-RPC error of the
table (or a valid result), never an internal error, a 5xx or a logged traceback.

The requests come from ``bench/fuzz_cases.py`` (the generator behind the on-demand
100,000-request run, ``bench/fuzz_bindings.py``), driven by hypothesis; a few strategies of
hypothesis's own add random JSON trees and nesting around the bound.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.fuzz_cases import (
    BadAnswer,
    HttpCase,
    check_jsonrpc,
    describe,
    fuzz_agent,
    fuzz_app_options,
    jsonrpc_case,
    nested,
)
from peerwire import create_app
from peerwire.bindings.jsonrpc import METHODS
from peerwire.types import MAX_JSON_DEPTH

from ._fuzz import AppThread, Failures, watching_logs

FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
HEADERS = ((b"content-type", b"application/json"), (b"a2a-version", b"1.0"))


@dataclass
class Served:
    app: AppThread
    logs: Failures
    task_ids: list[str]

    def answer(self, case: HttpCase) -> tuple[str, dict[str, Any] | None]:
        status, headers, body = self.app.http(case)
        try:
            label = check_jsonrpc(case, status, headers, body)
        except BadAnswer as bad:
            raise BadAnswer(f"{bad}\nrequest: {describe(case)}") from None
        assert not self.logs.take(), case
        try:
            return label, json.loads(body)
        except ValueError:
            return label, None  # a stream


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with watching_logs() as logs, AppThread(create_app(fuzz_agent(), **fuzz_app_options())) as app:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {
                    "message": {"messageId": "m-0", "role": "ROLE_USER", "parts": [{"text": "a"}]}
                },
            }
        ).encode()
        _, _, answer = app.http(HttpCase("POST", b"/", HEADERS, body))
        task_id = json.loads(answer)["result"]["task"]["id"]
        yield Served(app, logs, [task_id])
        assert not logs.take()


@FUZZ
@given(rng=st.randoms(use_true_random=False))
def test_every_fuzzed_request_gets_a_spec_answer(served: Served, rng: Any) -> None:
    served.answer(jsonrpc_case(rng, served.task_ids))


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=16,
)


@FUZZ
@given(
    method=st.sampled_from(sorted(METHODS)),
    params=_JSON,
    request_id=st.none()
    | st.integers()
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans(),
)
def test_random_params_and_ids_get_a_spec_answer(
    served: Served, method: str, params: Any, request_id: Any
) -> None:
    document = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    body = json.dumps(document).encode()
    label, answer = served.answer(HttpCase("POST", b"/", HEADERS, body))
    assert not label.endswith("-32700"), answer  # it is JSON
    if isinstance(request_id, bool | float) or request_id is None:
        assert label == "200 -32600" and answer is not None and answer["id"] is None, answer
    elif answer is not None:
        assert answer["id"] == request_id


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(depth=st.integers(1, 3000), seed=st.randoms(use_true_random=False))
def test_nesting_past_the_bound_is_a_parse_error(served: Served, depth: int, seed: Any) -> None:
    data = nested(seed, depth, b'"x"')
    body = (
        b'{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":{"messageId":"m",'
        b'"role":"ROLE_USER","parts":[{"data":%b}]}}}' % data
    )
    label, answer = served.answer(HttpCase("POST", b"/", HEADERS, body))
    assert answer is not None
    document_depth = 5 + _depth(data)
    if document_depth > MAX_JSON_DEPTH:
        assert label == "200 -32700" and answer["id"] is None, answer
    else:
        assert "result" in answer, answer


def _depth(data: bytes) -> int:
    deepest = level = 0
    for byte in data:
        if byte in b"[{":
            level += 1
            deepest = max(deepest, level)
        elif byte in b"]}":
            level -= 1
    return deepest
