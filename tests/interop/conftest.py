"""Fixtures for driving, and being driven by, the official a2a-sdk (in its own venv).

* ``sdk_python``: the SDK venv's interpreter, built on first use (never skipped).
* ``run_sdk_client``: ``run_sdk_client(url, binding, scenario, *, text=None,
  check=True) -> list[dict]``; see sdk_harness.run_sdk_client.
* ``sdk_glossary_server``: one SDK Glossary Agent for the session, an
  ``SdkServer(base_url, grpc_address)``. Tasks from earlier tests stay in it.

For a server of a test's own, use ``sdk_harness.start_glossary_server()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import sdk_env, sdk_harness


@pytest.fixture(scope="session")
def sdk_python() -> Path:
    return sdk_env.sdk_python()


@pytest.fixture(scope="session")
def run_sdk_client(sdk_python: Path) -> Callable[..., list[dict[str, Any]]]:
    return sdk_harness.run_sdk_client


@pytest.fixture(scope="session")
def sdk_glossary_server(sdk_python: Path) -> Iterator[sdk_harness.SdkServer]:
    with sdk_harness.start_glossary_server() as server:
        yield server
