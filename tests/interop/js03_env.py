"""The npm packages of the A2A 0.3 JavaScript interop peer (js_peer_v03/).

As js_env.py does for js_peer/ (@a2a-js/sdk 1.x), this installs the exact tree that
js_peer_v03/package-lock.json records (``@a2a-js/sdk`` at its 0.3 release) into
js_peer_v03/node_modules with ``npm ci`` on first use, and stamps it with the lock file's hash
so later runs skip the install until the lock file changes. Node.js 20+ and npm must be on
PATH: without them the tests fail (JsEnvError), never skip.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .js_env import JsEnvError, _tool, node

JS_PEER_DIR = Path(__file__).parent / "js_peer_v03"
LOCK_FILE = JS_PEER_DIR / "package-lock.json"
NODE_MODULES = JS_PEER_DIR / "node_modules"
SDK_PACKAGE = "@a2a-js/sdk"
SDK_VERSION = "0.3.14"
"""The last 0.3 release of @a2a-js/sdk."""

_STAMP = NODE_MODULES / ".peerwire-installed"
_NPM_TIMEOUT_S = 600

_failure: JsEnvError | None = None  # set once an install has failed in this process


def _lock_hash() -> str:
    return hashlib.sha256(LOCK_FILE.read_bytes()).hexdigest()


def _installed_version() -> str | None:
    try:
        manifest = json.loads((NODE_MODULES / SDK_PACKAGE / "package.json").read_text())
        return str(manifest["version"])
    except (OSError, ValueError, KeyError):
        return None


def _current(lock_hash: str) -> bool:
    try:
        stamped = _STAMP.read_text().strip()
    except OSError:
        return False
    return stamped == lock_hash and _installed_version() == SDK_VERSION


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    # Outside the tree npm ci replaces, per checkout: two test processes never install at once.
    digest = hashlib.sha256(str(JS_PEER_DIR.resolve()).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"peerwire-js-peer-v03-{digest}.lock"
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _install(lock_hash: str) -> None:
    cmd = [_tool("npm"), "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        done = subprocess.run(
            cmd, cwd=JS_PEER_DIR, capture_output=True, text=True, timeout=_NPM_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise JsEnvError(f"`npm ci` in {JS_PEER_DIR} timed out after {_NPM_TIMEOUT_S} s") from exc
    if done.returncode != 0:
        raise JsEnvError(
            f"`npm ci` in {JS_PEER_DIR} failed (exit {done.returncode})\n"
            f"--- stdout ---\n{done.stdout[-4000:]}\n--- stderr ---\n{done.stderr[-4000:]}"
        )
    version = _installed_version()
    if version != SDK_VERSION:
        raise JsEnvError(
            f"`npm ci` installed {SDK_PACKAGE} {version}, not {SDK_VERSION}: package.json and "
            "package-lock.json disagree"
        )
    _STAMP.write_text(lock_hash + "\n")


@functools.cache
def js03_peer_ready() -> Path:
    """js_peer_v03/, its node_modules installed from the lock file, with Node.js >= 20 to run
    it. Raises JsEnvError when that cannot be had (remembered for the session)."""
    global _failure
    if _failure is not None:
        raise _failure
    try:
        node()
        lock_hash = _lock_hash()
        if not _current(lock_hash):
            with _locked():
                if not _current(lock_hash):  # another process may have installed meanwhile
                    _install(lock_hash)
    except JsEnvError as exc:
        _failure = exc
        raise
    return JS_PEER_DIR


if __name__ == "__main__":
    print(js03_peer_ready())
