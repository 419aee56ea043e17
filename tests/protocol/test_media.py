"""protocol.media: which parts declared input modes cover."""

from __future__ import annotations

import pytest

from peerwire.protocol import covers, part_media_type, uncovered_parts
from peerwire.types import Part


@pytest.mark.parametrize(
    ("part", "media_type"),
    [
        (Part(text="hi"), "text/plain"),
        (Part(text="# hi", media_type="text/markdown"), "text/markdown"),
        (Part(data={"k": 1}), "application/json"),
        (Part(data=None), "application/json"),
        (Part(raw=b"\x89PNG", media_type="image/png"), "image/png"),
        (Part(url="https://example.com/a.pdf", media_type="application/pdf"), "application/pdf"),
        (Part(raw=b"?"), None),
        (Part(url="https://example.com/blob"), None),
    ],
)
def test_the_media_type_a_part_carries(part: Part, media_type: str | None) -> None:
    assert part_media_type(part) == media_type


@pytest.mark.parametrize(
    ("modes", "media_type", "covered"),
    [
        (["text/plain"], "text/plain", True),
        (["text/plain"], "TEXT/Plain; charset=utf-8", True),
        (["text/plain; charset=utf-8"], "text/plain", True),
        (["text/plain"], "text/markdown", False),
        (["text/*"], "text/markdown", True),
        (["text/*"], "textual/x", False),
        (["text/*"], "application/json", False),
        (["*/*"], "application/x-anything", True),
        (["*"], "image/png", True),
        (["image/png", "application/json"], "application/json", True),
        ([], "text/plain", False),
    ],
)
def test_modes_cover_media_types(modes: list[str], media_type: str, covered: bool) -> None:
    assert covers(modes, media_type) is covered


def test_uncovered_parts_names_each_refused_part() -> None:
    parts = [
        Part(text="hi"),
        Part(raw=b"x", media_type="image/png"),
        Part(raw=b"y"),  # no media type provided: nothing to refuse
        Part(data={"a": 1}),
    ]
    assert uncovered_parts(["text/plain"], parts) == [(1, "image/png"), (3, "application/json")]
    assert uncovered_parts(["text/plain", "image/*", "application/json"], parts) == []
    assert uncovered_parts([], parts) == [], "no modes declared: nothing is refused"
