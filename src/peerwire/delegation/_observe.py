"""Where delegations report to metrics and traces (``peerwire.ops``).

``Observer.count`` adds to ``peerwire_delegation_events_total`` of the server's ``Metrics``
(when it has them); ``Observer.span`` opens an INTERNAL span, a child of the current one (the
parent task's handler span), when an application traces: zero cost when nobody does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..ops import tracing

__all__ = ["Observer"]


class Observer:
    def __init__(self, metrics: Any = None) -> None:
        """``metrics``: a ``peerwire.ops.Metrics`` (``None``: no counting)."""
        self.metrics = metrics

    def count(self, event: str) -> None:
        """One delegation event: ``sent``, ``stalled``, ``timed_out``, ``canceled``, an
        outcome (``completed``, ``failed``, ...), ``compensation_run``,
        ``compensation_failed``, ``dead_letter``."""
        if self.metrics is not None:
            self.metrics.delegation_event(event)

    @contextlib.contextmanager
    def span(self, name: str, **attributes: str) -> Iterator[None]:
        tracer = tracing.STATE.tracer
        if tracer is None:
            yield
            return
        with tracer.start_as_current_span(
            name, attributes={f"peerwire.delegation.{k}": v for k, v in attributes.items()}
        ):
            yield
