"""Order fulfillment: an orchestrator delegating to three agents (``peerwire demo fulfillment``).

* ``risk``: the Risk Agent, which may ask for a manual review (INPUT_REQUIRED);
* ``inventory``: the Inventory Agent, locking and releasing stock, idempotent by order number;
* ``logistics``: the Logistics Agent, booking a carrier (it can be made to fail or to be
  slow by the order's words), idempotent by order number;
* ``orchestrator``: the Order Fulfillment Agent: the risk check first, then the stock and the
  carrier at once with their own time limits; a failed or late booking releases the stock;
  the order's cancel reaches every agent; a crash mid-order resumes without booking twice.

``orders`` is how an order line reads (``"ORD-1001: 3 widgets, 240 EUR"``). Each agent class
counts what it did, so a test (or the demo) can check that nothing was booked twice.

Import the modules themselves (``from peerwire.samples.fulfillment.risk import RiskAgent``):
this package imports none of them, so ``python -m peerwire.samples.fulfillment.orchestrator``
runs the orchestrator's module once.
"""
