"""``peerwire demo fulfillment``: run as a user would (from any folder); every scenario's
steps show in its output, it exits 0, and it leaves nothing running and nothing behind."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

PEERWIRE = str(Path(sys.executable).with_name("peerwire"))
DEMO_TIMEOUT_S = 120
HEADINGS = [
    "1. A normal order completes",
    "2. The carrier booking fails: the stock lock is undone",
    "3. An order that needs a manual review: the demo answers the question",
    "4. An order canceled mid-way: the cancel reaches every agent",
    "5. The orchestrator is killed (SIGKILL) mid-order and started again",
]


def _section(out: str, number: int) -> str:
    start = out.index(HEADINGS[number - 1])
    end = out.index(HEADINGS[number]) if number < len(HEADINGS) else len(out)
    return out[start:end]


def _refuses_connections(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as sock:
        sock.settimeout(5)
        return sock.connect_ex((host, int(port))) != 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_fulfillment_demo_shows_every_step_and_exits_0(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NO_COLOR"] = "1"
    done = subprocess.run(
        [PEERWIRE, "demo", "fulfillment"],
        cwd=tmp_path,  # the samples come with the package, not from a checkout
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, (out, done.stderr)
    assert done.stderr == ""
    positions = [out.index(heading) for heading in HEADINGS]
    assert positions == sorted(positions)

    normal = _section(out, 1)
    assert "risk     delegated to the Risk Agent: its task" in normal
    assert "lock     delegated to the Inventory Agent: its task" in normal
    assert "book     delegated to the Logistics Agent: its task" in normal
    assert "release  registered as the undo of 'lock': 'release ORD-1001'" in normal
    assert "artifact fulfilment: ORD-1001: booked with Rapid Freight, tracking RF-1001" in normal
    assert "release  compensation discarded (the parent task completed)" in normal
    assert "order           completed" in normal

    failed = _section(out, 2)
    assert "failed: ORD-1002: book: failed (task_failed): no carrier serves" in failed
    # The undo runs after the booking failed, and the stock comes back.
    assert (
        failed.index("book     failed")
        < failed.index("inventory       ORD-1002: released 2")
        < failed.index("release  compensation completed")
    )

    review = _section(out, 3)
    assert "input-required: The Risk Agent asks: ORD-1003 needs a manual review" in review
    assert 'SendStreamingMessage "yes, approved by the demo" on task' in review
    assert "ORD-1003: approved by manual review" in review
    assert "order           completed" in review

    canceled = _section(out, 4)
    cancel_sent = canceled.index("→ CancelTask")
    after = canceled[cancel_sent:]
    assert "task " in after and "canceled, nothing locked" in after
    assert "canceled, nothing booked" in after
    assert len(re.findall(r"GetTask \S+: canceled", after)) == 2, "both remote tasks"
    assert "lock     canceled (the parent task" in after
    assert "book     canceled (the parent task" in after
    assert "ORD-1004: release: nothing locked, nothing to release" in after

    killed = _section(out, 5)
    kill = re.search(r"SIGKILL the Order Fulfillment Agent \(pid (\d+)\)", killed)
    assert kill is not None, killed
    on_disk = killed[killed.index("the ledger on disk") : killed.index("start the Order")]
    # Both open when killed (the lock may have ended first on a very busy machine).
    assert re.search(r"lock     (delegated to the Inventory Agent|completed)", on_disk)
    assert "book     delegated to the Logistics Agent" in on_disk
    restarted = killed[killed.index("running again") :]
    assert "lock     completed" in restarted and "book     completed" in restarted
    assert "order           completed" in restarted
    assert (
        "ORD-1005: inventory got 1 lock request(s), booked 1; "
        "logistics got 1 booking request(s), booked 1"
    ) in restarted
    assert "Stopped all four agents; the orchestrator's store was temporary." in out

    urls = re.findall(r"^  [A-Z][\w ]+ Agent\s+(http://127\.0\.0\.1:\d+)", out, re.M)
    assert len(urls) == 4
    assert all(_refuses_connections(url) for url in urls), "every agent was stopped"
    pids = [int(p) for p in re.findall(r"\(pid (\d+)\)", out)]
    assert len(set(pids)) == 2 and not any(_alive(pid) for pid in pids)
    store = re.search(r"delegation ledger in (\S+)", out)
    assert store is not None and not Path(store[1]).parent.exists(), "its store was temporary"
    assert list(tmp_path.iterdir()) == [], "nothing written to the current folder"
