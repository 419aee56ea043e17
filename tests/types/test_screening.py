"""What the codec checks before the parser, on a document from a peer (``check_document``):
nesting bounded by ``MAX_JSON_DEPTH``, UTF-8 throughout; and ``decode`` never letting a
``RecursionError`` out, even for a document nobody screened."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peerwire.errors import JSONParseError
from peerwire.types import MAX_JSON_DEPTH, Message, check_document, decode, from_builtins


def depth_of(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    return 0


def nested(depth: int, kind: str) -> bytes:
    if kind == "array":
        return b"[" * depth + b"]" * depth
    if kind == "object":
        return b'{"a":' * (depth - 1) + b"{}" + b"}" * (depth - 1)
    return b'[{"a":' * (depth // 2) + b"null" + b"}]" * (depth // 2)


@pytest.mark.parametrize("kind", ["array", "object", "mixed"])
def test_nesting_is_bounded_exactly(kind: str) -> None:
    check_document(nested(MAX_JSON_DEPTH, kind))
    with pytest.raises(JSONParseError, match=f"more than {MAX_JSON_DEPTH} levels") as caught:
        check_document(nested(MAX_JSON_DEPTH + 2, kind))
    assert caught.value.metadata == {"maxDepth": str(MAX_JSON_DEPTH)}


def test_brackets_in_strings_are_text() -> None:
    text = json.dumps({"a": "[" * 100 + '\\"{{{' + "]" * 7, "b": ['"[[[', "\\", "{" * 50]})
    check_document(text.encode())


def test_many_brackets_side_by_side_are_shallow() -> None:
    check_document(json.dumps([[{"a": [1]}] for _ in range(10_000)]).encode())


@pytest.mark.parametrize("raw", [b"]" * 100 + b"[" * 10, b"[" * 20 + b"}" * 40, b"[[[[[[["])
def test_what_is_not_json_is_left_to_the_parser(raw: bytes) -> None:
    check_document(raw)  # not a depth problem: the parser says what is wrong
    with pytest.raises(JSONParseError, match="Invalid JSON"):
        decode(raw, Message)


@pytest.mark.parametrize("raw", [b'{"a":"\xff"}', b'{"\xc3":1}', b'["\xed\xa0\x80"]', b"\x80"])
def test_what_is_not_utf8_is_refused(raw: bytes) -> None:
    with pytest.raises(JSONParseError, match="not UTF-8"):
        check_document(raw)


def test_utf8_text_passes() -> None:
    check_document('{"text":"é€😀"}'.encode())


def test_an_unscreened_deep_document_is_a_parse_error_not_a_recursion_error() -> None:
    # A client reading a response decodes without the bound: the parser's own guard answers.
    for raw in (b"[" * 100_000 + b"]" * 100_000, b'{"metadata":' + b"[" * 5000 + b"]" * 5000):
        with pytest.raises(JSONParseError, match="Invalid JSON"):
            decode(raw, Message)
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(JSONParseError, match="too deeply"):
        from_builtins({"messageId": "m", "role": "ROLE_USER", "parts": [], "x": deep}, Message)


def test_a_number_beyond_any_value_is_a_parse_error() -> None:
    raw = b'{"messageId":"m","role":"ROLE_USER","parts":[{"data":1e999}]}'
    with pytest.raises(JSONParseError, match="out of range"):
        decode(raw, Message)


_JSON = st.recursive(
    st.none() | st.integers() | st.text(alphabet='[]{}"\\ab', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=60,
)


@settings(max_examples=200, deadline=None)
@given(value=_JSON)
def test_the_bound_agrees_with_the_parsed_depth(value: Any) -> None:
    raw = json.dumps(value).encode()
    for limit in (1, 3, 8):
        try:
            check_document(raw, max_depth=limit)
        except JSONParseError:
            assert depth_of(value) > limit
        else:
            assert depth_of(value) <= limit
