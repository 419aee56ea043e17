"""Why a task ended, said in a way a program can read: an ErrorInfo-like reason carried in
the status message's ``metadata``.

A2A gives a task status a state and an optional message; the state set is fixed, and a
message's ``metadata`` is free-form, so a reason rides there (``STATUS_REASON_KEY``: a
``google.rpc.ErrorInfo``-shaped object, domain ``peerwire.dev``). It adds no state and asks
nothing of a peer that ignores it. peerwire agents set ``INTERRUPTED`` when they fail a task
because the process running it stopped (the restart policy ``fail``): the task may have done
part of its work (a delegating agent then undoes it: ``peerwire.delegation``).
"""

from __future__ import annotations

from typing import Any

from ..errors import PEERWIRE_ERROR_DOMAIN
from ..types import Message

__all__ = ["INTERRUPTED_REASON", "STATUS_REASON_KEY", "status_reason", "status_reason_metadata"]

STATUS_REASON_KEY = "peerwire.dev/errorInfo"
"""The status message ``metadata`` key of the reason (``{"reason", "domain", "metadata"}``)."""

INTERRUPTED_REASON = "INTERRUPTED"
"""The task was working when its process stopped: it may have acted before it failed."""


def status_reason_metadata(reason: str) -> dict[str, Any]:
    """A status message's ``metadata`` saying ``reason`` (in peerwire's domain)."""
    return {STATUS_REASON_KEY: {"reason": reason, "domain": PEERWIRE_ERROR_DOMAIN, "metadata": {}}}


def status_reason(message: Message | None) -> str:
    """The peerwire reason a status message carries (``""``: none, or another domain's)."""
    info = (message.metadata or {}).get(STATUS_REASON_KEY) if message is not None else None
    if not isinstance(info, dict) or info.get("domain") != PEERWIRE_ERROR_DOMAIN:
        return ""
    reason = info.get("reason")
    return reason if isinstance(reason, str) else ""
