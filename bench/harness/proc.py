"""What Linux says about processes and the machine, read from /proc (stdlib only).

CPU figures are seconds of user + system time. The machine's busy time, minus the server's
and the load generators', is the noise column: CPU other work took during a measured window.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import socket
import time
from collections.abc import Iterable
from types import TracebackType

CLK_TCK = os.sysconf("SC_CLK_TCK")
LISTEN = "0A"  # the TCP state of a listening socket in /proc/net/tcp


def free_port() -> int:
    """A loopback port free right now (the target binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pinned(cpus: str) -> list[str]:
    """The taskset prefix that pins a command to ``cpus`` ("" or no taskset: none)."""
    return ["taskset", "-c", cpus] if cpus and shutil.which("taskset") else []


def _stat_fields(pid: int) -> list[str]:
    # Fields after the command name, which may itself hold spaces and parentheses.
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()


def cpu_seconds(pids: Iterable[int]) -> float:
    """User + system CPU seconds of these processes (gone ones count as 0)."""
    ticks = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = _stat_fields(pid)
            ticks += int(fields[11]) + int(fields[12])
    return ticks / CLK_TCK


def machine_busy_seconds() -> float:
    """CPU seconds all cores have spent not idle since boot."""
    with open("/proc/stat") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:9]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks) - idle) / CLK_TCK


def busy_percent(seconds: float = 1.0) -> float:
    """The machine's busy CPU over the next ``seconds`` (100 = one whole core)."""
    before, t0 = machine_busy_seconds(), time.perf_counter()
    time.sleep(seconds)
    return (machine_busy_seconds() - before) / (time.perf_counter() - t0) * 100


def wait_for_quiet(max_seconds: float, threshold_pct: float) -> float:
    """Wait up to ``max_seconds`` for the machine to be idle (busy <= threshold); returns
    the busy percentage seen last (nan when not waiting at all)."""
    if max_seconds <= 0:
        return float("nan")
    deadline = time.monotonic() + max_seconds
    while True:
        busy = busy_percent()
        if busy <= threshold_pct or time.monotonic() >= deadline:
            return busy


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def group_pids(pgid: int) -> list[int]:
    """Every process of this process group (a target's server and its helpers)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(_stat_fields(int(entry))[2]) == pgid:
                    found.append(int(entry))
    return found


def listening_pid(port: int) -> int | None:
    """The process holding the listening TCP socket on ``port`` (lowest pid if several)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as fh:
            next(fh)
            for line in fh:
                cols = line.split()
                if cols[3] == LISTEN and int(cols[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{cols[9]}]")
    if not inodes:
        return None
    holders = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            fds = f"/proc/{entry}/fd"
            if any(_readlink(f"{fds}/{fd}") in inodes for fd in os.listdir(fds)):
                holders.append(int(entry))
    return min(holders) if holders else None


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


class CpuMeter:
    """CPU use over a window, as fractions of one core: the server's (its pids), the load
    generators' (children this process waited for inside the window) and everything else's
    (the noise)."""

    server = client = other = 0.0

    def __init__(self, server_pids: list[int]) -> None:
        self.pids = server_pids

    @staticmethod
    def _children_s() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def __enter__(self) -> CpuMeter:
        self._server0, self._client0 = cpu_seconds(self.pids), self._children_s()
        self._machine0, self._t0 = machine_busy_seconds(), time.perf_counter()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        wall = time.perf_counter() - self._t0
        server = cpu_seconds(self.pids) - self._server0
        client = self._children_s() - self._client0
        machine = machine_busy_seconds() - self._machine0
        self.server, self.client = server / wall, client / wall
        self.other = max(0.0, machine - server - client) / wall
