"""Scenario p's profile: py-spy samples of the server, folded into three tables.

py-spy records raw folded stacks (``frame;frame;frame COUNT`` per line, frames as
``function (path:line)``); ``fold`` turns them into self time by package, the top frames by
self time and the top frames by inclusive time, each as (what, percent of samples).
"""

from __future__ import annotations

import collections
import os
import re
from dataclasses import dataclass, field

_FRAME = re.compile(r"(.*) \((.*?)(?::\d+)?\)$")
_STDLIB = re.compile(r"/lib/python3\.\d+/(.*)")
SAMPLE_RATE_HZ = 200


@dataclass
class Profile:
    samples: int = 0
    by_package: list[tuple[str, float]] = field(default_factory=list)
    top_self: list[tuple[str, float]] = field(default_factory=list)
    top_inclusive: list[tuple[str, float]] = field(default_factory=list)


def frame_package(path: str) -> tuple[str, str]:
    """(package, short path) of a frame's file: site-packages' top folder, ``stdlib:NAME``,
    or the file's own name."""
    if "site-packages/" in path:
        rest = path.split("site-packages/", 1)[1]
        return rest.split("/", 1)[0].removesuffix(".py"), rest
    stdlib = _STDLIB.search(path)
    if stdlib:
        rest = stdlib.group(1)
        return "stdlib:" + rest.split("/", 1)[0].removesuffix(".py"), rest
    name = os.path.basename(path) or "?"
    return name, name


def fold(raw: str, top: int) -> Profile:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    packages: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = []
        leaf = "?"
        for text in stack.split(";"):
            text = text.strip()
            parsed = _FRAME.match(text)
            if parsed is None:
                frames.append(text or "<unknown>")
                leaf = "<unknown>"
                continue
            leaf, short = frame_package(parsed.group(2))
            frames.append(f"{parsed.group(1)} ({short})")
        own[frames[-1]] += n
        packages[leaf] += n
        for frame in set(frames):
            inclusive[frame] += n

    def shares(counter: collections.Counter[str], k: int) -> list[tuple[str, float]]:
        return [(what, x / total * 100) for what, x in counter.most_common(k)]

    if not total:
        return Profile()
    return Profile(total, shares(packages, 12), shares(own, top), shares(inclusive, top + 10))


def record_command(py_spy: str, pid: int, seconds: float, out: str) -> list[str]:
    return [
        py_spy,
        *("record", "-p", str(pid), "-d", str(max(1, int(seconds)))),
        *("-r", str(SAMPLE_RATE_HZ), "-f", "raw", "--full-filenames", "-o", out),
        "--nonblocking",  # never pause the server: its timing is what is measured
    ]
