"""The per-endpoint circuit of push delivery, rule by rule, on a clock of the test's own.

``Circuits`` is sans-I/O: ``admit`` says whether an attempt may start now (``None``) or when
its notification should come back; ``finished`` reports the outcome. The deliverer around it
is exercised with real receivers in ``test_push_fairness`` and ``test_push``.
"""

from __future__ import annotations

import pytest

from peerwire.server.push_circuits import Circuits, endpoint_of

DEAD, ALIVE = "http://dead.example:80", "https://alive.example:443"


def circuits(*, max_concurrent: int = 8, max_per_endpoint: int = 2) -> Circuits:
    # A fixed backoff of 10 s per consecutive failure, so times are easy to read.
    return Circuits(
        max_concurrent=max_concurrent,
        max_per_endpoint=max_per_endpoint,
        probe_pace=0.5,
        backoff=lambda failures: 10.0 * failures,
    )


def test_endpoints_are_origins() -> None:
    assert endpoint_of("https://Hooks.Example/a?x=1") == "https://hooks.example:443"
    assert endpoint_of("http://hooks.example/b") == "http://hooks.example:80"
    assert endpoint_of("http://hooks.example:8080/c") == "http://hooks.example:8080"


def test_an_unknown_endpoint_gets_one_attempt_until_it_answers() -> None:
    c = circuits()
    assert c.state(ALIVE, 0) == "half-open"
    assert c.admit(ALIVE, 0) is None
    # The second waits for the probe's verdict, coming back soon, spaced out.
    assert c.admit(ALIVE, 0) == 0.5
    assert c.admit(ALIVE, 0) == 1.0
    c.finished(ALIVE, "delivered", 0.1, 0.1)
    assert c.state(ALIVE, 0.1) == "closed"
    assert c.admit(ALIVE, 1.0) is None and c.admit(ALIVE, 1.0) is None
    # At its limit of two: the third comes back paced by its attempts' duration.
    later = c.admit(ALIVE, 1.0)
    assert later is not None and 1.0 < later <= 1.1


def test_an_unavailable_endpoint_opens_then_probes_then_closes() -> None:
    c = circuits()
    assert c.admit(DEAD, 0) is None
    c.finished(DEAD, "unavailable", 4.0, 4.0)
    assert c.state(DEAD, 4.0) == "open"
    # While open nothing goes; its notifications come back when the circuit half-opens.
    assert c.admit(DEAD, 5.0) == 14.0
    assert c.admit(DEAD, 13.9) == 14.0
    assert c.state(DEAD, 14.0) == "half-open"
    assert c.admit(DEAD, 14.0) is None  # the probe
    assert c.admit(DEAD, 14.0) is not None  # one at a time
    c.finished(DEAD, "unavailable", 4.0, 18.0)
    assert c.admit(DEAD, 19.0) == 38.0, "open again, for longer: two failures in a row"
    assert c.admit(DEAD, 38.0) is None
    c.finished(DEAD, "answered", 0.2, 38.2)  # any answer at all (a 404 too) closes it
    assert c.state(DEAD, 38.2) == "closed"
    assert c.admit(DEAD, 38.2) is None and c.admit(DEAD, 38.2) is None


@pytest.mark.parametrize("outcome", ["delivered", "answered"])
def test_a_closed_endpoint_that_fails_opens_with_its_attempts_still_out(outcome: str) -> None:
    c = circuits(max_concurrent=4, max_per_endpoint=2)
    assert c.admit(ALIVE, 0) is None
    c.finished(ALIVE, outcome, 0.1, 0.1)  # type: ignore[arg-type]
    assert c.admit(ALIVE, 1) is None and c.admit(ALIVE, 1) is None
    c.finished(ALIVE, "unavailable", 1.0, 2.0)
    assert c.state(ALIVE, 2.0) == "open"
    assert c.admit(ALIVE, 3.0) == 12.0
    # Its attempt still out now counts against the slots of endpoints not known to answer.
    assert c.admit("http://other:80", 3.0) is None
    assert c.admit("http://third:80", 3.0) is not None, "two of four slots are kept"
    c.finished(ALIVE, "unavailable", 2.0, 3.0)
    assert c.admit("http://third:80", 3.0) is None


def test_endpoints_not_known_to_answer_leave_room_for_those_that_do() -> None:
    c = circuits(max_concurrent=5, max_per_endpoint=2)
    assert c.admit(ALIVE, 0) is None
    c.finished(ALIVE, "delivered", 0.1, 0.1)
    silent = [f"http://silent-{i}:80" for i in range(5)]
    admitted = [c.admit(endpoint, 1.0) is None for endpoint in silent]
    assert admitted == [True, True, True, False, False], "at most 5 - 2 of them at once"
    assert c.admit(ALIVE, 1.0) is None and c.admit(ALIVE, 1.0) is None
    c.finished(silent[0], "unavailable", 4.0, 5.0)
    assert c.admit(silent[3], 5.0) is None, "a slot of theirs freed up"


def test_an_attempt_that_never_reached_the_endpoint_decides_nothing() -> None:
    c = circuits()
    assert c.admit(DEAD, 0) is None
    c.finished(DEAD, "not_sent", 0.0, 0.0)
    assert c.state(DEAD, 0.0) == "half-open"
    assert c.admit(DEAD, 0.0) is None
