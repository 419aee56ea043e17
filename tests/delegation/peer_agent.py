"""A ``PeerAgent`` for ``peerwire serve`` (tests that kill the peer's process)."""

from __future__ import annotations

from ._peers import PeerAgent

agent = PeerAgent("Killable peer").agent
