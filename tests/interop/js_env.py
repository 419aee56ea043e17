"""Node.js and the npm packages of the JavaScript interop peer (js_peer/).

The peer runs on the official JavaScript SDK, ``@a2a-js/sdk`` at the version js_peer's
package.json pins, with the exact tree its package-lock.json records. ``npm ci`` installs that
tree into js_peer/node_modules on first use; a stamp holding the lock file's hash lets later
runs skip the install until the lock file changes. Node.js and npm must be on PATH: without
them the tests fail (JsEnvError), they are never skipped. ``NpmPeer`` is that install for
any such peer folder (js03_env.py has the A2A 0.3 one).
"""

from __future__ import annotations

import contextlib
import dataclasses
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

SDK_PACKAGE = "@a2a-js/sdk"
NODE_MIN_MAJOR = 20
_NPM_TIMEOUT_S = 600
_PROBE_TIMEOUT_S = 30


class JsEnvError(RuntimeError):
    """Node.js or npm is missing or too old, or the packages could not be installed."""


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


@dataclasses.dataclass(eq=False)
class NpmPeer:
    """A peer folder whose node_modules ``npm ci`` installs from its package-lock.json, with
    ``@a2a-js/sdk`` at ``sdk_version``; ``lock_name`` names its install lock."""

    directory: Path
    sdk_version: str
    lock_name: str
    _failure: JsEnvError | None = None  # set once an install has failed in this process
    _ready: bool = False

    @property
    def _modules(self) -> Path:
        return self.directory / "node_modules"

    @property
    def _stamp(self) -> Path:
        # Written last by a completed install: the sha256 of the package-lock.json it installed.
        return self._modules / ".peerwire-installed"

    def ready(self) -> Path:
        """The folder, its node_modules installed from the lock file, with Node.js >= 20 to
        run it. Raises JsEnvError when that cannot be had; the failure is remembered so a
        test session does not retry a doomed install for every test."""
        if self._ready:
            return self.directory
        if self._failure is not None:
            raise self._failure
        try:
            node()
            lock_hash = hashlib.sha256((self.directory / "package-lock.json").read_bytes())
            digest = lock_hash.hexdigest()
            if not self._current(digest):
                with self._locked():
                    if not self._current(digest):  # another process may have installed
                        self._install(digest)
        except JsEnvError as exc:
            self._failure = exc
            raise
        self._ready = True
        return self.directory

    def _installed_version(self) -> str | None:
        manifest = self._modules / SDK_PACKAGE / "package.json"
        try:
            return str(json.loads(manifest.read_text())["version"])
        except (OSError, ValueError, KeyError):
            return None

    def _current(self, lock_hash: str) -> bool:
        try:
            stamped = self._stamp.read_text().strip()
        except OSError:
            return False
        return stamped == lock_hash and self._installed_version() == self.sdk_version

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # An OS lock outside the tree npm ci replaces, per checkout, so two test processes
        # never install into the same node_modules at once.
        digest = hashlib.sha256(str(self.directory.resolve()).encode()).hexdigest()[:16]
        path = Path(tempfile.gettempdir()) / f"peerwire-{self.lock_name}-{digest}.lock"
        with path.open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _install(self, lock_hash: str) -> None:
        # --ignore-scripts: nothing in the tree needs a build step, and none runs unasked.
        cmd = [_tool("npm"), "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
        cmd.append("--loglevel=error")
        where = self.directory
        try:
            done = subprocess.run(
                cmd, cwd=where, capture_output=True, text=True, timeout=_NPM_TIMEOUT_S
            )
        except subprocess.TimeoutExpired as exc:
            raise JsEnvError(f"`npm ci` in {where} timed out after {_NPM_TIMEOUT_S} s") from exc
        if done.returncode != 0:
            raise JsEnvError(
                f"`npm ci` in {where} failed (exit {done.returncode})\n"
                f"--- stdout ---\n{done.stdout[-4000:]}\n--- stderr ---\n{done.stderr[-4000:]}"
            )
        version = self._installed_version()
        if version != self.sdk_version:
            raise JsEnvError(
                f"`npm ci` installed {SDK_PACKAGE} {version}, not {self.sdk_version}: "
                "package.json and package-lock.json disagree"
            )
        self._stamp.write_text(lock_hash + "\n")


JS_PEER = NpmPeer(Path(__file__).parent / "js_peer", "1.3.0", "js-peer")


def js_peer_ready() -> Path:
    """js_peer/ (@a2a-js/sdk 1.3.0), installed and runnable (``NpmPeer.ready``)."""
    return JS_PEER.ready()


if __name__ == "__main__":
    print(js_peer_ready())
