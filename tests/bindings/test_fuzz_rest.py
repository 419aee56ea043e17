"""Fuzzing the HTTP+JSON binding: whatever the verb, path, query or body, the answer is a
google.rpc.Status of the table (or a valid result), never a 5xx or a logged traceback.

The requests come from ``bench/fuzz_cases.py`` (also behind the on-demand 100,000-request
run, ``bench/fuzz_bindings.py``), driven by hypothesis; raw bytes go straight through ASGI.
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
    check_rest,
    describe,
    fuzz_agent,
    fuzz_app_options,
    nested,
    rest_case,
)
from peerwire import create_app
from peerwire.types import MAX_JSON_DEPTH

from ._fuzz import AppThread, Failures, watching_logs

FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
HEADERS = ((b"content-type", b"application/a2a+json"), (b"a2a-version", b"1.0"))


@dataclass
class Served:
    app: AppThread
    logs: Failures
    task_ids: list[str]

    def answer(self, case: HttpCase) -> tuple[str, Any]:
        status, headers, body = self.app.http(case)
        try:
            label = check_rest(case, status, headers, body)
        except BadAnswer as bad:
            raise BadAnswer(f"{bad}\nrequest: {describe(case)}") from None
        assert not self.logs.take(), describe(case)
        try:
            return label, json.loads(body)
        except ValueError:
            return label, None  # a stream, or HEAD


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with watching_logs() as logs, AppThread(create_app(fuzz_agent(), **fuzz_app_options())) as app:
        message = {"messageId": "m-0", "role": "ROLE_USER", "parts": [{"text": "a"}]}
        body = json.dumps({"message": message}).encode()
        _, _, answer = app.http(HttpCase("POST", b"/rest/message:send", HEADERS, body))
        yield Served(app, logs, [json.loads(answer)["task"]["id"]])
        assert not logs.take()


@FUZZ
@given(rng=st.randoms(use_true_random=False))
def test_every_fuzzed_request_gets_a_spec_answer(served: Served, rng: Any) -> None:
    served.answer(rest_case(rng, served.task_ids))


@FUZZ
@given(
    path=st.lists(
        st.text(st.characters(codec="utf-8"), max_size=12)
        | st.sampled_from(["tasks", "message:send", "pushNotificationConfigs", ":cancel", "%ff"]),
        max_size=6,
    ),
    method=st.sampled_from(["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"]),
    query=st.binary(max_size=40),
)
def test_random_paths_verbs_and_queries_get_a_spec_answer(
    served: Served, path: list[str], method: str, query: bytes
) -> None:
    raw_path = ("/rest/" + "/".join(path)).encode("utf-8", "surrogatepass")
    # Raw bytes in the target as an HTTP server would pass them on (no spaces or controls).
    target = bytes(b for b in raw_path + b"?" + query if b > 0x20 and b != 0x7F)
    served.answer(HttpCase(method, target, HEADERS, b"{}" if method == "POST" else b""))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(depth=st.integers(1, 3000), seed=st.randoms(use_true_random=False))
def test_nesting_past_the_bound_is_invalid_argument(served: Served, depth: int, seed: Any) -> None:
    data = nested(seed, depth, b'"x"')
    body = b'{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":%b}]}}' % data
    label, answer = served.answer(HttpCase("POST", b"/rest/message:send", HEADERS, body))
    if 4 + _depth(data) > MAX_JSON_DEPTH:
        assert label == "400 INVALID_ARGUMENT", answer
        assert answer["error"]["details"][0]["reason"] == "PARSE_ERROR", answer
    else:
        assert label == "200 result", answer


def _depth(data: bytes) -> int:
    deepest = level = 0
    for byte in data:
        if byte in b"[{":
            level += 1
            deepest = max(deepest, level)
        elif byte in b"]}":
            level -= 1
    return deepest
