"""The URIs of peerwire's own A2A extensions (``AgentCapabilities.extensions``).

An extension URI on a card is a promise about the agent's behaviour that the A2A spec leaves
open; a caller relies on it only where the card carries it.
"""

from __future__ import annotations

__all__ = ["IDEMPOTENT_SEND_EXTENSION"]

IDEMPOTENT_SEND_EXTENSION = "https://peerwire.dev/extensions/idempotent-send/v1"
"""The agent answers a repeated SendMessage / SendStreamingMessage (same ``messageId``, same
caller, within the retention window its ``params.retentionSeconds`` gives) with the task the
first one created, instead of creating a second, for a caller that activates it
(``A2A-Extensions``); without it, a repeat is what A2A 1.0 makes of it (docs/DELEGATION.md,
"Idempotent retries")."""
