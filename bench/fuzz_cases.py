"""Fuzzed requests for the three bindings, and what a correct answer to each must look like.

Shared by the bounded fuzz tests (``tests/bindings/test_fuzz_*.py``, driven by hypothesis
through ``st.randoms()``) and the on-demand run (``bench/fuzz_bindings.py``, seeded): every
generator takes a ``random.Random`` and returns one request; every checker takes what came
back and returns a short label of the answer ("200 result", "-32700", "400 INVALID_ARGUMENT",
...) or raises ``BadAnswer`` saying what is wrong with it.

What is generated: byte mutations of valid requests (bit flips, interesting tokens spliced in,
slices cut, doubled or truncated), structural ones (a member replaced by a random JSON value of
the wrong type, removed, renamed to snake_case, wrapped, doubled; raw tokens such as
``1e999``, lone surrogates, invalid UTF-8 and deep nesting placed at any member), random JSON
documents and random bytes; REST paths, verbs and query strings; protobuf bytes (random,
mutated valid messages, valid messages holding odd values) and call metadata for gRPC.

What a correct answer is: a spec error from the one wire table (``peerwire.errors``) with a
bounded message, or a valid result; never an internal error, never a 5xx, never gRPC's
RESOURCE_EXHAUSTED (what a default client says when trailers are too large).
"""

from __future__ import annotations

import base64
import json
import random
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from peerwire.bindings import jsonrpc, rest
from peerwire.bindings.sse import SSEParser
from peerwire.errors import _WIRE_TABLE as WIRE_TABLE
from peerwire.errors import (
    MAX_ERROR_TEXT,
    InternalError,
    InvalidAgentResponseError,
    ServerBusyError,
    error_for_reason,
    wire_info,
)
from peerwire.types import (
    AgentCard,
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    decode,
)

__all__ = [
    "BadAnswer",
    "GrpcCase",
    "HttpCase",
    "check_grpc",
    "check_jsonrpc",
    "check_rest",
    "describe",
    "fuzz_agent",
    "fuzz_app_options",
    "grpc_case",
    "jsonrpc_case",
    "nested",
    "rest_case",
]

# Errors that say the server failed, not the request: never the answer to bad input.
_SERVER_FAILURES = (InternalError, ServerBusyError, InvalidAgentResponseError)
_FAILURE_INFO = {wire_info(cls) for cls in _SERVER_FAILURES}
JSONRPC_CODES = frozenset(
    info.jsonrpc_code
    for info in WIRE_TABLE.values()
    if info.jsonrpc_code is not None and info not in _FAILURE_INFO
)
REST_STATUSES = frozenset(
    info.http_status for info in WIRE_TABLE.values() if info not in _FAILURE_INFO
) | {405, 413}
GRPC_CODES = frozenset(info.grpc_code for info in WIRE_TABLE.values() if info not in _FAILURE_INFO)
GRPC_TRAILER_BUDGET = 8 * 1024
"""grpc-core's default limit for received metadata (``grpc.max_metadata_size``)."""


class BadAnswer(AssertionError):
    """An answer that is not a spec error nor a valid result."""


# -- the agent under test ------------------------------------------------------------------------


def fuzz_app_options() -> dict[str, Any]:
    """``create_app`` options of the app under test: push notifications on (so their
    operations run to the end), deliveries failing at once (no DNS on a fuzzing machine)."""
    from peerwire.server.push import PushSettings
    from peerwire.server.ssrf import UnresolvableHost

    async def no_dns(host: str, port: int) -> list[str]:
        raise UnresolvableHost(f"{host}: no DNS while fuzzing")

    return {"push": PushSettings(resolver=no_dns, max_attempts=1)}


def fuzz_agent() -> Any:
    """An echo agent: every well-formed message becomes a task that completes at once."""
    from peerwire import Agent

    agent = Agent("Fuzz target", description="Echoes; fuzzed by bench/fuzz_bindings.py")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    return agent


# -- building blocks ---------------------------------------------------------------------------

KNOWN_KEYS = [
    "messageId",
    "message_id",
    "contextId",
    "taskId",
    "task_id",
    "role",
    "parts",
    "text",
    "raw",
    "url",
    "data",
    "mediaType",
    "filename",
    "metadata",
    "extensions",
    "referenceTaskIds",
    "configuration",
    "acceptedOutputModes",
    "historyLength",
    "history_length",
    "returnImmediately",
    "taskPushNotificationConfig",
    "id",
    "tenant",
    "status",
    "pageSize",
    "page_size",
    "pageToken",
    "statusTimestampAfter",
    "includeArtifacts",
    "token",
    "authentication",
    "scheme",
    "credentials",
    "jsonrpc",
    "method",
    "params",
    "result",
    "error",
    "code",
]
TOKENS: tuple[bytes, ...] = (
    b"1e999",
    b"-1e999",
    b"1e-999",
    b"-0",
    b"0.5",
    b"1.0",
    b"2147483648",
    b"-2147483649",
    b"9223372036854775808",
    b"18446744073709551616",
    b"9" * 40,
    b"9" * 5000,
    b"NaN",
    b"Infinity",
    b"true",
    b"false",
    b"null",
    b'""',
    b'"\\ud800"',
    b'"\\udc00x"',
    b'"\\ud800\\ud800"',
    b'"\\u0000"',
    b'"\\uZZZZ"',
    b'"\xff"',
    b'"\xc3"',
    b'"\xed\xa0\x80"',
    b"\xef\xbb\xbf",
    b"[]",
    b"{}",
    b"[",
    b"{",
    b"]",
    b"}",
    b'"',
    b"\\",
    b",",
    b":",
    b'"a":1',
    b"\x00",
    b"\n",
    b" ",
    b'"TASK_STATE_COMPLETED"',
    b'"ROLE_USER"',
    b"7",
    b'"' + b"x" * 20000 + b'"',
    b'"' + "é€😀".encode() * 3000 + b'"',
)
# The longest text a generated request may have the server store (a message that is valid
# but for its size): long enough for errors to quote it at length, short enough that a page of
# 100 stored tasks stays below a default gRPC client's 4 MiB limit for a message it receives.
_STORED_TEXT = 20_000
DEPTHS = (1, 2, 8, 16, 24, 30, 31, 32, 33, 34, 40, 64, 100, 500, 998, 999, 1000, 1001, 5000)
HUGE_DEPTHS = (100_000, 1_000_000)


def nested(rng: random.Random, depth: int, inner: bytes = b"1") -> bytes:
    """``inner`` nested ``depth`` levels deep in arrays, objects or a mix."""
    kind = rng.randrange(3)
    if kind == 0:
        return b"[" * depth + inner + b"]" * depth
    if kind == 1:
        return b'{"a":' * depth + inner + b"}" * depth
    return b'[{"a":' * (depth // 2) + inner + b"}]" * (depth // 2)


def random_depth(rng: random.Random) -> int:
    if rng.random() < 0.05:
        return rng.choice(HUGE_DEPTHS)
    if rng.random() < 0.5:
        return rng.choice(DEPTHS)
    return rng.randint(1, 1200)


def _token(document: bytes) -> str:
    return base64.urlsafe_b64encode(document).decode().rstrip("=")


# Strings that are valid JSON but edge cases for whatever reads them next: timestamps (out of
# range once in UTC, impossible dates, too many digits, lower case), page tokens (garbage, and
# base64 of documents the server never issued), webhook URLs, ids and the like.
EDGE_TIMESTAMPS = (
    "9999-12-31T23:59:59-23:59",
    "0001-01-01T00:00:00+23:59",
    "2025-13-01T00:00:00Z",
    "2025-02-30T00:00:00Z",
    "2025-01-01T24:00:00Z",
    "2025-01-01T00:00:60Z",
    "2025-01-01T00:00:00.1234567891Z",
    "2025-01-01t00:00:00z",
    "2025-01-01T00:00:00",
)
EDGE_TOKENS = (
    "!!!!",
    "====",
    "a",
    "AAAA" * 1000,
    _token(b"[" * 5000),
    _token(b'["a","b"]'),
    _token(b'["2025-01-01T00:00:00.000000", "no-such-task"]'),
    _token(b"[1,2]"),
    _token(b'{"a":1}'),
    _token(b'["\\ud800","x"]'),
    _token(b"\xff\xfe"),
    _token(b'["' + b"x" * 5000 + b'","y"]'),
)
EDGE_URLS = (
    "http://127.0.0.1/hook",
    "https://[::1]/",
    "https://169.254.169.254/latest/meta-data",
    "file:///etc/passwd",
    "https://example.com:99999/",
    "https://" + "a" * 3000 + ".com/",
    "https://user:pw@example.com/",
    "http://example.com/%zz",
    "https://ex ample.com",
    "https://xn--/",
    "//example.com",
)
EDGE_STRINGS = (
    *EDGE_TIMESTAMPS,
    *EDGE_TOKENS,
    *EDGE_URLS,
    "\u0000",
    "a/b",
    "../..",
    " ",
    "*/*",
    "text/",
    "!!!",
    "aGk",
    "a-_b",
)


def random_text(rng: random.Random) -> str:
    kind = rng.randrange(12)
    if kind in (10, 11):
        return rng.choice(EDGE_STRINGS)
    if kind == 0:
        return ""
    if kind == 1:
        return rng.choice(KNOWN_KEYS)
    if kind == 2:
        return "x" * rng.choice((1, 100, 1000, 20_000))
    if kind == 3:
        return "".join(rng.choice("é€😀\u200b\u0000\ufffd/:%?#") for _ in range(rng.randint(1, 50)))
    if kind == 4:
        return rng.choice(("TASK_STATE_WORKING", "ROLE_AGENT", "2025-01-01T00:00:00Z", "aGk="))
    if kind == 5:
        return rng.choice(("-1", "0", "2147483648", "1e999", "true", "null"))
    return "".join(rng.choice("abcXYZ_-.019 ") for _ in range(rng.randint(1, 20)))


def random_json(rng: random.Random, budget: int = 4) -> Any:
    """A random JSON value (Python form), at most ``budget`` levels deep."""
    kind = rng.randrange(9 if budget > 0 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice((0, 1, -1, 7, 2**31, -(2**31) - 1, 2**53 + 1, 2**63, 2**64, 10**30))
    if kind == 3:
        return rng.choice((0.5, -0.0, 1e308, 1e-300, 3.14))
    if kind in (4, 5):
        return random_text(rng)
    if kind == 6:
        return [random_json(rng, budget - 1) for _ in range(rng.randint(0, 4))]
    keys = [rng.choice(KNOWN_KEYS) if rng.random() < 0.7 else random_text(rng) for _ in range(4)]
    return {key: random_json(rng, budget - 1) for key in keys[: rng.randint(0, 4)]}


_MARK = "\x00fuzz-mark\x00"
_MARK_JSON = json.dumps(_MARK).encode()


def dumps(value: Any) -> bytes:
    # Non-ASCII text escaped (\u00e9) for some documents, as itself for others: both spellings.
    escaped = len(repr(value)) % 3 == 0
    return json.dumps(value, ensure_ascii=escaped).encode("utf-8", "surrogatepass")


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every member and element of ``value``, as key paths."""
    found = [prefix]
    if isinstance(value, dict):
        for key, member in value.items():
            found.extend(_paths(member, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    _get(value, path[:-1])[path[-1]] = new
    return value


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def structural(rng: random.Random, document: Any) -> bytes:
    """``document`` with one member changed in a way a parser must survive, as bytes."""
    document = json.loads(json.dumps(document))
    paths = _paths(document)
    path = rng.choice(paths)
    target = _get(document, path)
    op = rng.randrange(10)
    raw: bytes | None = None
    if op == 0:
        document = _set(document, path, random_json(rng))
    elif op == 1 and path:
        parent = _get(document, path[:-1])
        del parent[path[-1]]
    elif op == 2 and isinstance(target, dict) and target:
        key = rng.choice(list(target))
        target[_snake(key)] = target.pop(key)
    elif op == 3:
        document = _set(document, path, rng.choice(([target], {"value": target}, str(target))))
    elif op == 4 and isinstance(target, dict):
        target[rng.choice(KNOWN_KEYS)] = random_json(rng)
    elif op == 5:
        raw = rng.choice(TOKENS)
    elif op == 6:
        raw = nested(rng, random_depth(rng), rng.choice((b"1", b'"x"', b"[]", b"{}")))
    elif op == 7 and isinstance(target, str):
        if rng.random() < 0.5:
            document = _set(document, path, rng.choice(EDGE_STRINGS))
        else:
            repeat = rng.choice((2, 100, _STORED_TEXT // max(1, len(target))))
            document = _set(document, path, target * repeat)
    elif op == 8 and isinstance(target, dict) and target:
        # A member given twice: the document text says it once more with another value.
        key = rng.choice(list(target))
        raw_member = dumps(key) + b":" + dumps(random_json(rng, 1)) + b","
        document = _set(document, path, {_MARK: None, **target})
        encoded = dumps(document)
        return encoded.replace(_MARK_JSON + b": null,", raw_member, 1)
    else:
        raw = rng.choice(TOKENS)
    if raw is None:
        return dumps(document)
    document = _set(document, path, _MARK)
    return dumps(document).replace(_MARK_JSON, raw, 1)


def byte_mutation(rng: random.Random, data: bytes) -> bytes:
    """``data`` with one to four random edits."""
    buffer = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        at = rng.randint(0, len(buffer))
        if op == 0 and buffer:
            index = min(at, len(buffer) - 1)
            buffer[index] ^= 1 << rng.randrange(8)
        elif op == 1 and buffer:
            index = min(at, len(buffer) - 1)
            buffer[index] = rng.choice(b'{}[]",:\\0 \x00\xff\x80')
        elif op == 2:
            buffer[at:at] = rng.choice(TOKENS)
        elif op == 3:
            end = min(len(buffer), at + rng.randint(1, 16))
            del buffer[at:end]
        elif op == 4:
            end = min(len(buffer), at + rng.randint(1, 64))
            buffer[at:at] = buffer[at:end] * rng.randint(1, 3)
        elif op == 5:
            del buffer[at:]
        else:
            buffer[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return bytes(buffer)


# -- valid requests ----------------------------------------------------------------------------


def _message(rng: random.Random) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": "hello"}]
    extra = rng.randrange(5)
    if extra == 1:
        parts.append({"data": {"a": [1, 2, {"b": None}], "c": "d"}})
    elif extra == 2:
        parts.append({"raw": "aGVsbG8=", "mediaType": "text/plain", "filename": "h.txt"})
    elif extra == 3:
        parts.append({"url": "https://example.com/f.png", "mediaType": "image/png"})
    message: dict[str, Any] = {
        "messageId": f"m-{rng.randrange(10**9)}",
        "role": "ROLE_USER",
        "parts": parts,
    }
    if rng.random() < 0.3:
        message["metadata"] = {"k": "v", "n": 1}
    if rng.random() < 0.2:
        message["contextId"] = "ctx-1"
    return message


def valid_params(
    rng: random.Random, method: str, task_ids: list[str], edges: bool = True
) -> dict[str, Any]:
    """Well-formed params of ``method`` (the REST body or query holds the same fields); with
    ``edges``, some hold edge values that only a later check refuses (or survives)."""
    edge = rng.random if edges else (lambda: 1.0)
    task = rng.choice(task_ids) if task_ids and rng.random() < 0.7 else "no-such-task"
    if method in ("SendMessage", "SendStreamingMessage"):
        params: dict[str, Any] = {"message": _message(rng)}
        if rng.random() < 0.3:
            params["configuration"] = {
                "acceptedOutputModes": ["text/plain"],
                "historyLength": rng.choice((0, 1, 5)),
                "returnImmediately": rng.random() < 0.5,
            }
        if rng.random() < 0.2:
            params["metadata"] = {"trace": "x"}
        return params
    if method == "GetTask":
        return {"id": task, "historyLength": rng.choice((0, 1, 10, -1, 2**31) if edges else (1,))}
    if method == "ListTasks":
        listing: dict[str, Any] = {
            "contextId": "ctx-1",
            "status": "TASK_STATE_COMPLETED",
            "pageSize": rng.choice((1, 10, 100)),
            "historyLength": 1,
            "statusTimestampAfter": "2025-01-01T00:00:00Z",
            "includeArtifacts": True,
        }
        if edge() < 0.3:
            listing["pageToken"] = rng.choice(EDGE_TOKENS)
        if edge() < 0.3:
            listing["statusTimestampAfter"] = rng.choice(EDGE_TIMESTAMPS)
        return listing
    if method in ("CancelTask", "SubscribeToTask"):
        return {"id": task}
    if method == "CreateTaskPushNotificationConfig":
        return {
            "taskId": task,
            "url": rng.choice(EDGE_URLS) if edge() < 0.3 else "https://example.com/hook",
            "token": "t",
            "authentication": {"scheme": "Bearer", "credentials": "c"},
        }
    if method in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        return {"taskId": task, "id": "config-1"}
    if method == "ListTaskPushNotificationConfigs":
        return {"taskId": task, "pageSize": 5}
    return {}


# -- JSON-RPC ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HttpCase:
    """One HTTP request: ``target`` is the raw request target (path and query)."""

    method: str
    target: bytes
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    note: str = field(default="", compare=False)


_JSON_HEADERS = ((b"content-type", b"application/json"), (b"a2a-version", b"1.0"))


def _headers(rng: random.Random, content_type: bytes = b"application/json") -> tuple[Any, ...]:
    if rng.random() < 0.85:
        return ((b"content-type", content_type), (b"a2a-version", b"1.0"))
    headers: list[tuple[bytes, bytes]] = []
    choice = rng.randrange(4)
    headers.append(
        (
            b"content-type",
            rng.choice(
                (
                    content_type,
                    b"text/plain",
                    b"application/json; charset=utf-8",
                    b"application/a2a+json",
                    b"\xff\xfe",
                    b"application/json" * 300,
                    b"",
                )
            ),
        )
    )
    if choice != 0:
        version = rng.choice(
            (b"1.0", b"0.3", b"1.0.7", b"1", b"", b"2.0", b"\xff", b"1." + b"9" * 5000, b" 1.0 ")
        )
        headers.append((b"a2a-version", version))
    if choice == 2:
        extensions = rng.choice(
            (b"https://x.test/ext", b",,,", b"\xff" * 10, b"a," * 3000, b"urn:" + b"e" * 9000)
        )
        headers.append((b"a2a-extensions", extensions))
    if choice == 3:
        headers.pop(0)
    return tuple(headers)


def _id(rng: random.Random) -> Any:
    return rng.choice((1, "req-1", 0, -5, 2**63, "", "x" * 300))


def jsonrpc_document(rng: random.Random, task_ids: list[str]) -> dict[str, Any]:
    method = rng.choice(list(jsonrpc.METHODS))
    return {
        "jsonrpc": "2.0",
        "id": _id(rng),
        "method": method,
        "params": valid_params(rng, method, task_ids),
    }


def jsonrpc_body(rng: random.Random, task_ids: list[str]) -> tuple[bytes, str]:
    document = jsonrpc_document(rng, task_ids)
    kind = rng.randrange(100)
    if kind < 8:
        return dumps(document), "valid"
    if kind < 28:
        return byte_mutation(rng, dumps(document)), "bytes"
    if kind < 75:
        return structural(rng, document), "structural"
    if kind < 80:
        envelope = dict(document)
        member = rng.choice(("jsonrpc", "id", "method", "params"))
        envelope[member] = _MARK
        raw = rng.choice(TOKENS) if rng.random() < 0.6 else dumps(random_json(rng))
        return dumps(envelope).replace(_MARK_JSON, raw, 1), "envelope"
    if kind < 85:
        return nested(rng, random_depth(rng)), "nested"
    if kind < 89:
        return dumps(random_json(rng, 5)), "random json"
    if kind < 92:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 64))), "random bytes"
    if kind < 95:
        valid = dumps(document)
        return (
            rng.choice(
                (
                    b"",
                    b"   ",
                    b"\xef\xbb\xbf" + valid,
                    valid + b"x",
                    valid + valid,
                    valid + b"\n",
                    b"[" + valid + b"," + valid + b"]",
                    b"[]",
                    valid[:-1],
                )
            ),
            "framing",
        )
    params = dict(document)
    params["params"] = _MARK
    deep = nested(rng, random_depth(rng))
    where = rng.choice(("params", "metadata", "data"))
    if where == "metadata":
        body = dict(valid_params(rng, "SendMessage", task_ids))
        body["metadata"] = _MARK
        inner = dumps(body).replace(_MARK_JSON, deep, 1)
        params["method"] = "SendMessage"
        return dumps(params).replace(_MARK_JSON, inner, 1), "deep metadata"
    if where == "data":
        message = _message(rng)
        message["parts"] = [{"data": _MARK}]
        inner = dumps({"message": message}).replace(_MARK_JSON, deep, 1)
        params["method"] = rng.choice(("SendMessage", "SendStreamingMessage"))
        return dumps(params).replace(_MARK_JSON, inner, 1), "deep data"
    return dumps(params).replace(_MARK_JSON, deep, 1), "deep params"


def jsonrpc_case(rng: random.Random, task_ids: list[str], path: bytes = b"/") -> HttpCase:
    body, note = jsonrpc_body(rng, task_ids)
    return HttpCase("POST", path, _headers(rng), body, note)


# -- REST ----------------------------------------------------------------------------------------

_SEGMENTS = (
    "no-such-task",
    "%2F",
    "a%3Ab",
    "%00",
    "%ff",
    "%zz",
    "%",
    "",
    ".",
    "..",
    "%2E%2E",
    "tasks",
    "message",
    "%C3%A9",
    "x" * 5000,
    "a:send",
    "%E2%82",
)
_QUERY_NAMES = [
    "historyLength",
    "history_length",
    "pageSize",
    "pageToken",
    "contextId",
    "status",
    "statusTimestampAfter",
    "includeArtifacts",
    "id",
    "taskId",
    "tenant",
    "A2A-Version",
    "unknown",
]
_QUERY_VALUES = (
    "1",
    "-1",
    "0",
    "abc",
    "2147483648",
    "99999999999999999999",
    "1e3",
    "TASK_STATE_WORKING",
    "7",
    "99",
    "FOO",
    "2025-01-01T00:00:00Z",
    "2025-01-01T00:00:00 01:00",
    "garbage",
    "true",
    "maybe",
    "%zz",
    "%ff%fe",
    "%C3%A9",
    "",
    "x" * 5000,
    "1,2,3",
)


def _segment(rng: random.Random, task_ids: list[str]) -> str:
    if task_ids and rng.random() < 0.4:
        return quote(rng.choice(task_ids), safe="")
    return rng.choice(_SEGMENTS)


def _rest_path(rng: random.Random, route: rest.Route, task_ids: list[str]) -> str:
    parts = []
    for segment in route.segments:
        if segment.startswith("{"):
            parts.append(_segment(rng, task_ids) if rng.random() < 0.8 else "tenant-a")
        else:
            parts.append(segment)
    path = "/" + "/".join(parts)
    if route.verb:
        path += ":" + (route.verb if rng.random() < 0.9 else rng.choice(("foo", "", "send:x")))
    edit = rng.randrange(12)
    if edit == 0:
        path += "/"
    elif edit == 1:
        path += "/" + _segment(rng, task_ids)
    elif edit == 2:
        path = path.replace("/", "//", 1)
    elif edit == 3:
        path = path.rsplit("/", 1)[0]
    return path


def _query(rng: random.Random) -> str:
    pairs = []
    for _ in range(rng.randint(0, 4)):
        name = rng.choice(_QUERY_NAMES)
        value = rng.choice(_QUERY_VALUES)
        pairs.append(f"{name}={value}" if rng.random() < 0.9 else name)
    return "&".join(pairs)


def _route_params(route: rest.Route, params: dict[str, Any]) -> dict[str, Any]:
    """The body of a ``body: "*"`` route: its JSON-RPC params without the path fields."""
    names = {f.wire for f in route.path_fields}
    return {k: v for k, v in params.items() if k not in names}


def rest_case(rng: random.Random, task_ids: list[str], prefix: str = "/rest") -> HttpCase:
    route = rng.choice(rest.ROUTES)
    method = route.method
    if rng.random() < 0.1:
        method = rng.choice(("GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"))
    path = prefix + _rest_path(rng, route, task_ids)
    if rng.random() < 0.03:
        path = prefix + rng.choice(("", "/", "/x", "/tasks/a/b/c/d/e", "/%ff", "/message"))
    query = _query(rng) if (not route.has_body or rng.random() < 0.1) else ""
    params = valid_params(rng, route.operation, task_ids)
    body = b""
    note = "path"
    if route.has_body or rng.random() < 0.05:
        document = _route_params(route, params)
        kind = rng.randrange(10)
        if kind < 2:
            body, note = dumps(document), "valid"
        elif kind < 5:
            body, note = byte_mutation(rng, dumps(document)), "bytes"
        elif kind < 8:
            body, note = structural(rng, document), "structural"
        elif kind < 9:
            body, note = nested(rng, random_depth(rng)), "nested"
        else:
            body, note = dumps(random_json(rng, 5)), "random json"
    elif rng.random() < 0.5:
        # The query holds the request's fields, sometimes valid, sometimes not.
        fields = [f"{k}={quote(str(v), safe='')}" for k, v in params.items() if k != "id"]
        query = "&".join([*fields, query] if query else fields)
    target = path + ("?" + query if query else "")
    content_type = rng.choice((b"application/a2a+json", b"application/json"))
    return HttpCase(method, _target_bytes(target), _headers(rng, content_type), body, note)


def _target_bytes(target: str) -> bytes:
    """The request target as an HTTP client sends it: anything not visible ASCII escaped."""
    return quote(target, safe="/:?&=%,+;!$'()*@~-._").encode("ascii")


# -- checking HTTP answers -----------------------------------------------------------------------


def describe(case: HttpCase | GrpcCase, limit: int = 600) -> str:
    """A case for a failure report: long payloads shortened in the middle."""

    def short(data: bytes) -> str:
        text = repr(data)
        return text if len(text) <= limit else f"{text[: limit // 2]}...{text[-limit // 2 :]}"

    if isinstance(case, HttpCase):
        return (
            f"{case.method} {short(case.target)} {case.headers!r} ({case.note}) {short(case.body)}"
        )
    metadata = [(key, short(value.encode())) for key, value in case.metadata]
    return f"{case.rpc} {metadata} ({case.note}) {short(case.payload)}"


def _json(body: bytes, what: str) -> Any:
    try:
        return json.loads(body)
    except ValueError as exc:
        raise BadAnswer(f"{what} is not JSON ({exc}): {body[:200]!r}") from None


def _check_message(message: Any, what: str) -> None:
    if not isinstance(message, str) or not message:
        raise BadAnswer(f"{what}: the message is not a non-empty string: {message!r}")
    if len(message) > MAX_ERROR_TEXT:
        raise BadAnswer(f"{what}: the message is {len(message)} characters long")


def _check_details(details: Any, what: str) -> str:
    """The ErrorInfo reason; every detail text bounded."""
    if not isinstance(details, list):
        raise BadAnswer(f"{what}: details are not a list: {details!r}")
    reason = ""
    for detail in details:
        if not isinstance(detail, dict) or "@type" not in detail:
            raise BadAnswer(f"{what}: a detail is not a typed object: {detail!r}")
        if detail["@type"].endswith("ErrorInfo"):
            reason = detail.get("reason", "")
            for key, value in (detail.get("metadata") or {}).items():
                if len(value) > MAX_ERROR_TEXT or len(key) > MAX_ERROR_TEXT:
                    raise BadAnswer(f"{what}: metadata {key[:50]!r} is too long")
        else:
            for violation in detail.get("fieldViolations", ()):
                for text in violation.values():
                    if len(text) > MAX_ERROR_TEXT:
                        raise BadAnswer(f"{what}: a field violation is {len(text)} long")
    if error_for_reason(reason) is None:
        raise BadAnswer(f"{what}: no ErrorInfo with a reason of the table: {details!r}")
    return reason


def _any_int(text: str) -> int | float:
    return int(text) if len(text) < 4000 else float("inf")  # past Python's str -> int limit


def _request_method(body: bytes) -> tuple[bool, str | None]:
    """Whether ``body`` is JSON at all, and the method it names."""
    try:
        document = json.loads(body, parse_int=_any_int)
    except (ValueError, RecursionError):
        return False, None
    if isinstance(document, dict) and isinstance(document.get("method"), str):
        return True, document["method"]
    return True, None


_RESULT_TYPES: dict[str, type[Any] | None] = {
    "SendMessage": SendMessageResponse,
    "GetTask": Task,
    "ListTasks": ListTasksResponse,
    "CancelTask": Task,
    "CreateTaskPushNotificationConfig": TaskPushNotificationConfig,
    "GetTaskPushNotificationConfig": TaskPushNotificationConfig,
    "ListTaskPushNotificationConfigs": ListTaskPushNotificationConfigsResponse,
    "DeleteTaskPushNotificationConfig": None,
    "GetExtendedAgentCard": AgentCard,
}


def _check_rpc_envelope(
    answer: Any, what: str, request: tuple[bool, str | None], stream: bool
) -> str:
    readable, method = request
    if not isinstance(answer, dict) or answer.get("jsonrpc") != "2.0":
        raise BadAnswer(f"{what}: not a JSON-RPC envelope: {str(answer)[:300]}")
    if not (answer.get("id") is None or isinstance(answer["id"], str | int)):
        raise BadAnswer(f"{what}: bad id {answer['id']!r}")
    if ("result" in answer) == ("error" in answer):
        raise BadAnswer(f"{what}: needs exactly one of result and error")
    if "result" in answer:
        if method is None or method not in jsonrpc.METHODS:
            raise BadAnswer(f"{what}: a result for a request without a known method")
        result_type = StreamResponse if stream else _RESULT_TYPES.get(method)
        if result_type is not None:
            decode(json.dumps(answer["result"]), result_type)
        elif answer["result"] != {}:
            raise BadAnswer(f"{what}: an Empty result that is not {{}}")
        return "result"
    error = answer["error"]
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        raise BadAnswer(f"{what}: bad error object {error!r}")
    code = error["code"]
    if code not in JSONRPC_CODES and code != jsonrpc.HTTP_LEVEL_ERROR_CODE:
        raise BadAnswer(f"{what}: error code {code} is not in the table: {error}")
    _check_message(error.get("message"), what)
    _check_details(error.get("data", []), what)
    if (code == -32700 or not readable) and answer.get("id") is not None:
        raise BadAnswer(f"{what}: {code} for an unreadable request echoes an id")
    return str(code)


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes:
    for key, value in headers:
        if key.lower() == name:
            return value
    return b""


def _events(body: bytes, what: str) -> list[Any]:
    events = SSEParser().feed(body)
    if not events:
        raise BadAnswer(f"{what}: an event stream without events")
    return [_json(event, what) for event in events]


def check_jsonrpc(
    case: HttpCase, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> str:
    what = f"JSON-RPC {case.note} answer {status}"
    content_type = _header(headers, b"content-type")
    if status not in (200, 401, 403, 413):
        raise BadAnswer(f"{what}: HTTP status {status}: {body[:300]!r}")
    request = _request_method(case.body)
    if content_type == b"text/event-stream":
        labels = {
            _check_rpc_envelope(event, what, request, stream=True) for event in _events(body, what)
        }
        return "200 stream " + "+".join(sorted(labels))
    if content_type != b"application/json":
        raise BadAnswer(f"{what}: content type {content_type!r}: {body[:300]!r}")
    label = _check_rpc_envelope(_json(body, what), what, request, stream=False)
    return f"{status} {label}"


def _check_status_document(document: Any, status: int, what: str) -> str:
    error = document.get("error") if isinstance(document, dict) else None
    if not isinstance(error, dict):
        raise BadAnswer(f"{what}: not a google.rpc.Status document: {str(document)[:300]}")
    if error.get("code") != status:
        raise BadAnswer(f"{what}: code {error.get('code')} differs from the HTTP status")
    _check_message(error.get("message"), what)
    reason = _check_details(error.get("details", []), what)
    expected = wire_info(error_for_reason(reason))  # type: ignore[arg-type]
    if error.get("status") != expected.grpc_status:
        raise BadAnswer(f"{what}: status {error.get('status')} for reason {reason}")
    return f"{status} {error.get('status')}"


def check_rest(case: HttpCase, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> str:
    what = f"REST {case.method} {case.target[:120]!r} ({case.note}) answer {status}"
    content_type = _header(headers, b"content-type")
    if status == 200:
        if content_type == b"text/event-stream":
            for event in _events(body, what):
                if isinstance(event, dict) and "error" in event:
                    _check_status_document(event, event["error"].get("code"), what)
                else:
                    decode(json.dumps(event), StreamResponse)
            return "200 stream"
        if content_type != b"application/a2a+json":
            raise BadAnswer(f"{what}: content type {content_type!r}")
        if case.method != "HEAD":
            _json(body, what)
        return "200 result"
    if status not in REST_STATUSES:
        raise BadAnswer(f"{what}: HTTP status {status}: {body[:300]!r}")
    if content_type != b"application/a2a+json":
        raise BadAnswer(f"{what}: content type {content_type!r}: {body[:300]!r}")
    if case.method == "HEAD" and not body:
        return f"{status} HEAD"
    return _check_status_document(_json(body, what), status, what)


# -- gRPC ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GrpcCase:
    rpc: str
    payload: bytes
    metadata: tuple[tuple[str, str], ...]
    note: str = field(default="", compare=False)


def _typed_request(rng: random.Random, rpc: Any, task_ids: list[str]) -> Any:
    from peerwire.types import from_builtins

    return from_builtins(valid_params(rng, rpc.name, task_ids, edges=False), rpc.request)


def _odd_proto(rng: random.Random, rpc: Any, task_ids: list[str]) -> bytes:
    """A well-formed protobuf message of ``rpc`` holding a value that must be refused (or
    survived): out-of-range enums and timestamps, odd Struct values, huge strings."""
    from google.protobuf import struct_pb2

    from peerwire.bindings.grpc.convert import to_proto

    message = to_proto(_typed_request(rng, rpc, task_ids))
    names = [f.name for f in message.DESCRIPTOR.fields]
    op = rng.randrange(8)
    if rpc.name in ("SendMessage", "SendStreamingMessage"):
        part = message.message.parts[0]
        if op == 0:
            message.message.role = rng.choice((0, 3, 99, -1))
        elif op == 1:
            part.ClearField("text")
        elif op == 2:
            value = struct_pb2.Value(number_value=rng.choice((float("nan"), float("inf"), 1e308)))
            part.data.CopyFrom(value)
        elif op == 3:
            value = struct_pb2.Value(string_value="x")
            for _ in range(rng.choice((10, 20, 30, 32, 33, 40, 60))):
                outer = struct_pb2.Value()
                if rng.random() < 0.5:
                    outer.struct_value.fields["a"].CopyFrom(value)
                else:
                    outer.list_value.values.add().CopyFrom(value)
                value = outer
            part.data.CopyFrom(value)
        elif op == 4:
            message.message.message_id = ""
        elif op == 5:
            message.message.metadata.fields["k"].string_value = "é😀" * rng.choice(
                (10, 3000, _STORED_TEXT // 6)
            )
        elif op == 6:
            del message.message.parts[:]
        else:
            message.message.message_id = "m" * rng.choice((1000, _STORED_TEXT))
    elif "status" in names and op < 3:
        message.status = rng.choice((9, 99, -1, 2**31 - 1))
    elif "status_timestamp_after" in names and op < 6:
        stamp = message.status_timestamp_after
        stamp.seconds = rng.choice((2**62, -(2**62), 253402300800, -62135596801))
        stamp.nanos = rng.choice((0, -1, 10**9, 999_999_999))
    elif "history_length" in names and op < 6:
        message.history_length = rng.choice((-1, 2**31 - 1, -(2**31)))
    elif "page_size" in names:
        message.page_size = rng.choice((-1, 0, 2**31 - 1))
    elif "id" in names and op < 7:
        message.id = rng.choice(("", "x" * 100_000, "\u0000", "é" * 3000))
    else:
        _odd_field(rng, message)
    return bytes(message.SerializeToString())


def _odd_field(rng: random.Random, message: Any) -> None:
    """Set one scalar field of ``message`` (or of a message inside it) to an edge value."""
    fields = [(message, f) for f in message.DESCRIPTOR.fields]
    for field_descriptor in message.DESCRIPTOR.fields:
        if (
            field_descriptor.message_type is not None
            and not _is_repeated(field_descriptor)
            and message.HasField(field_descriptor.name)
        ):
            inner = getattr(message, field_descriptor.name)
            fields.extend((inner, f) for f in inner.DESCRIPTOR.fields)
    scalars = [(owner, f) for owner, f in fields if f.message_type is None and not _is_repeated(f)]
    if not scalars:
        return
    owner, chosen = rng.choice(scalars)
    kind = chosen.cpp_type
    if kind == chosen.CPPTYPE_STRING and chosen.type == chosen.TYPE_STRING:
        setattr(owner, chosen.name, rng.choice(EDGE_STRINGS))
    elif kind == chosen.CPPTYPE_ENUM:
        setattr(owner, chosen.name, rng.choice((0, 9, 99, -1, 2**31 - 1)))
    elif kind in (chosen.CPPTYPE_INT32, chosen.CPPTYPE_INT64):
        setattr(owner, chosen.name, rng.choice((-1, 0, 2**31 - 1, -(2**31))))
    elif kind == chosen.CPPTYPE_BOOL:
        setattr(owner, chosen.name, True)


def _is_repeated(field_descriptor: Any) -> bool:
    return bool(getattr(field_descriptor, "is_repeated", False))


def grpc_case(rng: random.Random, task_ids: list[str]) -> GrpcCase:
    from peerwire.bindings.grpc.convert import to_bytes
    from peerwire.bindings.grpc.service import RPCS

    rpc = rng.choice(list(RPCS.values()))
    valid = to_bytes(_typed_request(rng, rpc, task_ids))
    kind = rng.randrange(100)
    if kind < 10:
        payload, note = valid, "valid"
    elif kind < 50:
        payload, note = byte_mutation(rng, valid), "bytes"
    elif kind < 75:
        payload, note = _odd_proto(rng, rpc, task_ids), "odd values"
    elif kind < 85:
        payload = bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
        note = "random bytes"
    elif kind < 92:
        # A message of another rpc: the wire types may or may not fit.
        other = rng.choice(list(RPCS.values()))
        payload, note = to_bytes(_typed_request(rng, other, task_ids)), "other message"
    else:
        # A nested message field opened many times over (a tag and a length each).
        depth = rng.choice((50, 100, 101, 200, 1000, 10_000))
        payload, note = b"\x0a\x7f" * depth + valid, "deep tags"
    metadata: tuple[tuple[str, str], ...] = (("a2a-version", "1.0"),)
    if rng.random() < 0.15:
        metadata = (
            # Long values, which errors quote, within what a server takes (8 KiB of metadata
            # in all; beyond, gRPC itself refuses the call with RESOURCE_EXHAUSTED).
            ("a2a-version", rng.choice(("0.3", "1", "", "1.0.1", "9" * 2000, "x" * 3000))),
            ("a2a-extensions", rng.choice(("", "urn:x", "a," * 1000, "e" * 3000))),
        )
    name = rpc.name if rng.random() < 0.97 else rng.choice(("Unknown", "sendmessage", ""))
    return GrpcCase(name, payload, metadata, note)


def check_grpc(
    case: GrpcCase,
    code: int,
    message: str,
    trailers: tuple[tuple[str, str | bytes], ...],
    responses: list[bytes],
) -> str:
    """``code`` is the status number (0: OK); ``responses`` the messages received."""
    from peerwire.bindings.grpc.service import RPCS
    from peerwire.bindings.grpc.status import DETAILS_KEY, decode_status

    what = f"gRPC {case.rpc} ({case.note}) answer {code}"
    if code == 0:
        if case.rpc not in RPCS:
            raise BadAnswer(f"{what}: OK for an unknown rpc")
        return "OK"
    if code == 8:
        raise BadAnswer(f"{what}: RESOURCE_EXHAUSTED ({message[:200]})")
    if case.rpc not in RPCS and code == 12:
        return "UNIMPLEMENTED (unknown rpc)"
    if code not in GRPC_CODES:
        raise BadAnswer(f"{what}: status {code} is not in the table: {message[:300]}")
    if len(message) > MAX_ERROR_TEXT:
        raise BadAnswer(f"{what}: the message is {len(message)} characters long")
    size = sum(len(k) + len(v) + 32 for k, v in trailers) + len(message)
    if size > GRPC_TRAILER_BUDGET:
        raise BadAnswer(f"{what}: {size} bytes of trailers")
    details = next((v for k, v in trailers if k == DETAILS_KEY), None)
    if not isinstance(details, bytes):
        raise BadAnswer(f"{what}: no {DETAILS_KEY} trailer")
    error = decode_status(code, message, details)
    info = wire_info(error)
    if not info.reason or info.grpc_code != code:
        raise BadAnswer(f"{what}: details say {info}, not an A2A error of status {code}")
    return info.grpc_status
