"""The URIs of peerwire's own A2A extensions (``AgentCapabilities.extensions``).

An extension URI on a card is a promise about the agent's behaviour that the A2A spec leaves
open; a caller relies on it only where the card carries it.
"""

from __future__ import annotations

__all__ = ["ANSWERABLE_BY_EXTENSION", "IDEMPOTENT_SEND_EXTENSION", "SKILL_SCHEMAS_EXTENSION"]

IDEMPOTENT_SEND_EXTENSION = "https://peerwire.dev/extensions/idempotent-send/v1"
"""The agent answers a repeated SendMessage / SendStreamingMessage (same ``messageId``, same
caller, within the retention window its ``params.retentionSeconds`` gives) with the task the
first one created, instead of creating a second, for a caller that activates it
(``A2A-Extensions``); without it, a repeat is what A2A 1.0 makes of it (docs/DELEGATION.md,
"Idempotent retries")."""

ANSWERABLE_BY_EXTENSION = "https://peerwire.dev/extensions/answerable-by/v1"
"""Another principal of the task's tenant holding the scopes a skill names (its
``params.skills``: skill id -> scopes) may answer a task of that skill while it waits for input
(INPUT_REQUIRED): it sends the answer with the task's id; GetTask shows it only the question.
The answer recorded in the task's history carries, under this URI in its ``metadata``, who
answered (``principal``, ``scheme``). A policy the agent's author sets, not a caller: nothing
to activate (docs/SECURITY.md, "Answers from another principal")."""

SKILL_SCHEMAS_EXTENSION = "https://peerwire.dev/extensions/skill-schemas/v1"
"""What the agent's typed skills take and return: ``params.skills`` maps a skill id to its
``input`` and ``output``, each ``{"part": "data", "mediaType": "application/json", "schema":
<JSON Schema>}`` or ``{"part": "file"}``. A declaration of the agent, nothing to activate: a
caller that does not read it sends and receives parts as A2A 1.0 defines them
(docs/TYPED_SKILLS.md)."""
