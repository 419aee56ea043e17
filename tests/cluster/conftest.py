"""The fault suite's on-demand marker: ``slow`` tests (long repetitions of a fault) run only
when asked for, with ``-m slow`` or ``PEERWIRE_SLOW=1``; CI runs the rest."""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a long repetition of a fault, run on demand")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    asked = "slow" in (config.option.markexpr or "") or os.environ.get("PEERWIRE_SLOW") == "1"
    if asked:
        return
    skip = pytest.mark.skip(reason="a long repetition: run with -m slow or PEERWIRE_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
