"""Our A2A 0.3 proto (a2a_v03.proto) against the one a2a-sdk 0.3 compiled: the same
messages, fields (numbers, types, presence, JSON names, oneofs), enums and rpcs."""

from __future__ import annotations

import inspect
import json
import subprocess
from pathlib import Path

import pytest

from peerwire.bindings.grpc._gen import a2a_v03_pb2

from .sdk03_env import sdk03_python
from .test_grpc_interop import describe

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def sdk03() -> Path:
    return sdk03_python()


def test_our_v03_descriptor_is_the_sdks(sdk03: Path) -> None:
    script = "\n".join(
        [
            "import json",
            "from typing import Any",
            "from a2a.grpc import a2a_pb2",
            inspect.getsource(describe),
            "print(json.dumps(describe(a2a_pb2.DESCRIPTOR)))",
        ]
    )
    done = subprocess.run([str(sdk03), "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)
    ours = json.loads(json.dumps(describe(a2a_v03_pb2.DESCRIPTOR)))
    assert len(ours) == 43 + 8 + 2 + 1  # messages, map entries, enums, the service
    assert ours == theirs
