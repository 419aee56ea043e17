"""Node.js and the npm packages of the JavaScript interop peer (js_peer/).

The peer runs on the official JavaScript SDK, ``@a2a-js/sdk`` at the version js_peer's
package.json pins, with the exact tree its package-lock.json records. ``npm ci`` installs that
tree into js_peer/node_modules on first use; a stamp holding the lock file's hash lets later
runs skip the install until the lock file changes. Node.js and npm must be on PATH: without
them the tests fail (JsEnvError), they are never skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

JS_PEER_DIR = Path(__file__).parent / "js_peer"
LOCK_FILE = JS_PEER_DIR / "package-lock.json"
NODE_MODULES = JS_PEER_DIR / "node_modules"
SDK_PACKAGE = "@a2a-js/sdk"
SDK_VERSION = "1.3.0"
NODE_MIN_MAJOR = 20
# Written last by a completed install: the sha256 of the package-lock.json it installed.
_STAMP = NODE_MODULES / ".peerwire-installed"
_NPM_TIMEOUT_S = 600
_PROBE_TIMEOUT_S = 30


class JsEnvError(RuntimeError):
    """Node.js or npm is missing or too old, or the packages could not be installed."""


_failure: JsEnvError | None = None  # set once an install has failed in this process


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise JsEnvError(
            f"{name} is not on PATH: the JavaScript interop tests (tests/interop/js_peer) "
            f"need Node.js {NODE_MIN_MAJOR} or newer and npm"
        )
    return path


@functools.cache
def node() -> str:
    """The ``node`` executable, checked to be at least Node.js 20."""
    path = _tool("node")
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise JsEnvError(f"`{path} --version` did not answer in {_PROBE_TIMEOUT_S} s") from exc
    match = re.match(r"v(\d+)\.", done.stdout.strip())
    if done.returncode != 0 or match is None:
        raise JsEnvError(f"`{path} --version` printed {done.stdout!r} {done.stderr!r}")
    if int(match[1]) < NODE_MIN_MAJOR:
        raise JsEnvError(
            f"{path} is Node.js {done.stdout.strip()}; the interop peer needs >= {NODE_MIN_MAJOR}"
        )
    return path


def _lock_hash() -> str:
    return hashlib.sha256(LOCK_FILE.read_bytes()).hexdigest()


def _installed_version() -> str | None:
    manifest = NODE_MODULES / SDK_PACKAGE / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
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
    # An OS lock outside the tree npm ci replaces, per checkout, so two test processes never
    # install into the same node_modules at once.
    digest = hashlib.sha256(str(JS_PEER_DIR.resolve()).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"peerwire-js-peer-{digest}.lock"
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _install(lock_hash: str) -> None:
    npm = _tool("npm")
    # --ignore-scripts: nothing in the tree needs a build step, and none runs unasked.
    cmd = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
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
def js_peer_ready() -> Path:
    """js_peer/, its node_modules installed from the lock file, with Node.js >= 20 to run it.

    Raises JsEnvError when that cannot be had; the failure is remembered so a test session
    does not retry a doomed install for every test.
    """
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
    print(js_peer_ready())
