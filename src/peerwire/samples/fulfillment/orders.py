"""What the four fulfillment agents agree on: how an order reads, and how an agent reports.

An order is one line of text, for example ``"ORD-1001: 3 widgets, 240 EUR"``. Every agent is
sent that line behind a verb (``check``, ``lock``, ``release``, ``book``) and finds in it what
it needs: the order number (``ORD-`` and digits: the business key each agent is idempotent
by), a quantity, a value, and words that steer the sample's agents:

* ``review``: the Risk Agent asks for a manual review (as it does above its value limit);
* ``slow stock`` / ``slow carrier``: the Inventory / Logistics Agent takes its time;
* ``no carrier``: the Logistics Agent finds no carrier and fails its task.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Order", "Report", "parse_order", "quiet"]

Report = Callable[[str, str], None]
"""Told what an agent did as it does it: ``report(agent_name, what)`` (the demo prints it)."""


def quiet(agent: str, what: str) -> None:
    """The default ``Report``: an agent served on its own says nothing."""


_NUMBER = re.compile(r"\bORD-\d+\b", re.IGNORECASE)
_QUANTITY = re.compile(r"\b(\d+)\s*(?:x\b|widgets?\b|items?\b|units?\b|pcs\b)", re.IGNORECASE)
_VALUE = re.compile(r"\b(\d+(?:\.\d+)?)\s*EUR\b", re.IGNORECASE)


@dataclass(frozen=True)
class Order:
    number: str
    """``ORD-1001``: the business key (upper case)."""
    quantity: int
    value: float
    """In EUR; 0 when the order does not say."""
    text: str
    """The order line as the customer wrote it."""

    def says(self, words: str) -> bool:
        """Whether the order line contains ``words`` (case and spacing aside)."""
        return " ".join(words.lower().split()) in " ".join(self.text.lower().split())


def parse_order(text: str) -> Order | None:
    """The order a line names, or None when it has no order number. The quantity defaults
    to 1, the value to 0."""
    number = _NUMBER.search(text)
    if number is None:
        return None
    quantity = _QUANTITY.search(text)
    value = _VALUE.search(text)
    return Order(
        number=number.group(0).upper(),
        quantity=int(quantity.group(1)) if quantity else 1,
        value=float(value.group(1)) if value else 0.0,
        text=text.strip(),
    )
