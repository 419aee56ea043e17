"""An agent to trace with ``peerwire serve --tracing``: its skill logs a warning, and the
record carries the trace of the request it was written in.

``peerwire serve traced_agent:agent --tracing console --log-format json`` serves it.
"""

import logging

from peerwire import Agent

log = logging.getLogger(__name__)

agent = Agent("Inventory", description="Counts what is in stock")
STOCK = {"bolts": 3, "nuts": 120}


@agent.skill()
async def count(text: str) -> str:
    """How many of an item are in stock."""
    item = text.strip().lower()
    left = STOCK.get(item, 0)
    if left < 10:
        log.warning("low stock of %s: %d left", item, left)
    return f"{left} {item}"
