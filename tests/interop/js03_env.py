"""The npm packages of the A2A 0.3 JavaScript interop peer (js_peer_v03/).

As js_env.py does for js_peer/ (@a2a-js/sdk 1.x), this installs the exact tree that
js_peer_v03/package-lock.json records (``@a2a-js/sdk`` at its 0.3 release) into
js_peer_v03/node_modules with ``npm ci`` on first use, and stamps it with the lock file's hash
so later runs skip the install until the lock file changes. Node.js 20+ and npm must be on
PATH: without them the tests fail (JsEnvError), never skip.
"""

from __future__ import annotations

from pathlib import Path

from .js_env import NpmPeer

JS03_PEER = NpmPeer(Path(__file__).parent / "js_peer_v03", "0.3.14", "js-peer-v03")
"""@a2a-js/sdk at its last 0.3 release."""


def js03_peer_ready() -> Path:
    """js_peer_v03/, installed and runnable (``NpmPeer.ready``)."""
    return JS03_PEER.ready()


if __name__ == "__main__":
    print(js03_peer_ready())
