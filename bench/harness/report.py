"""What a run prints: one table of medians with ratios against the baseline, then notes.

A metric's figures are kept per target as one value per repeat (``results[target][key]``,
also the shape of ``--json``); the table shows the median of the repeats. A ratio is
target / baseline: for throughput below 1 is slower, for latency and memory above 1 is
worse.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

Results = Mapping[str, Mapping[str, Sequence[Any]]]

# key, label (formatted with the settings: c, n, m, sc)
ROWS: tuple[tuple[str, str], ...] = (
    ("a.ok_rps", "(a) SendMessage c{c}: ok req/s"),
    ("a.server_cpu", "    server CPU %"),
    ("a.rps_per_cpu", "    req per server-CPU-second"),
    ("a.client_cpu", "    load generator CPU %"),
    ("a.other_cpu", "    other processes CPU % (noise)"),
    ("a.bad", "    bad responses / socket errors"),
    ("e.p50_ms", "(e) latency of (a): p50 ms"),
    ("e.p90_ms", "    p90 ms"),
    ("e.p99_ms", "    p99 ms"),
    ("l.p50_ms", "(l) SendMessage c1: p50 ms"),
    ("l.p99_ms", "    p99 ms"),
    ("l.ok_rps", "    req/s"),
    ("l.bad", "    bad / socket errors"),
    ("b.ok_rps", "(b) GetTask c{c}: ok req/s"),
    ("b.server_cpu", "    server CPU %"),
    ("b.other_cpu", "    other processes CPU % (noise)"),
    ("b.p50_ms", "    p50 ms"),
    ("b.p99_ms", "    p99 ms"),
    ("b.bad", "    bad / socket errors"),
    ("c.streams_per_s", "(c) SendStreamingMessage N={n} c{c}: streams/s"),
    ("c.events_per_s", "    events/s"),
    ("c.events_per_stream", "    events per stream"),
    ("c.server_cpu", "    server CPU %"),
    ("c.other_cpu", "    other processes CPU % (noise)"),
    ("c.stream_p50_ms", "    whole-stream p50 ms"),
    ("c.stream_p99_ms", "    whole-stream p99 ms"),
    ("c.bad", "    bad / socket errors / invalid streams"),
    ("c.check_ok", "    httpx check (c{sc}): valid streams"),
    ("c.check_ttfe_p50_ms", "    httpx check: first-event p50 ms"),
    ("d.rss_start_mib", "(d) RSS after warm-up MiB"),
    ("d.rss_after_mib", "    RSS after +{m} tasks MiB"),
    ("d.bytes_per_task", "    RSS growth bytes/task"),
    ("d.ok", "    tasks completed"),
)
# Counts of replies that broke the contract: any above zero fails the run.
FAILURE_KEYS = ("a.bad", "l.bad", "b.bad", "c.bad", "d.bad")


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def summary(values: Sequence[Any]) -> Any:
    """The median of numbers; for anything else (``"200/200"``) the value if every repeat
    agrees, else all of them."""
    if values and all(is_number(v) for v in values):
        return statistics.median(values)
    distinct = list(dict.fromkeys(str(v) for v in values))
    return distinct[0] if len(distinct) == 1 else ",".join(str(v) for v in values)


def fmt(value: Any) -> str:
    if isinstance(value, float):
        if value != value:
            return "nan"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    return str(value)


def ratio(value: Any, base: Any) -> str:
    if is_number(value) and is_number(base) and base:
        return f"{value / base:.3f}"
    return "-"


def table(results: Results, names: Sequence[str], baseline: str, labels: Mapping[str, Any]) -> str:
    others = [n for n in names if n != baseline]
    header = ["scenario / metric", *names, *(f"{n}/{baseline}" for n in others)]
    rows = [header]
    for key, label in ROWS:
        if not any(key in results[n] for n in names):
            continue
        values = {n: summary(results[n][key]) if key in results[n] else "-" for n in names}
        row = [label.format(**labels), *(fmt(values[n]) for n in names)]
        row += [ratio(values[n], values[baseline]) for n in others]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)
        ).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, rows[1:])])


# The headline throughputs, for the paired ratios under the table.
PAIRED_KEYS: tuple[tuple[str, str], ...] = (
    ("a.ok_rps", "(a) SendMessage req/s"),
    ("a.rps_per_cpu", "(a) req per server-CPU-second"),
    ("b.ok_rps", "(b) GetTask req/s"),
    ("c.events_per_s", "(c) streamed events/s"),
)


def paired(results: Results, names: Sequence[str], baseline: str) -> list[str]:
    """Each repeat's ratio to the baseline's same repeat, whose runs were next to it in time.

    The machine's own speed drifts between repeats by more than the differences a comparison
    of revisions looks for; a ratio of two neighbouring runs shares that drift, so their
    median and spread say more than the ratio of two medians. Lines only for keys that both
    sides measured in every repeat.
    """
    out = []
    for key, label in PAIRED_KEYS:
        base = results.get(baseline, {}).get(key, [])
        for name in names:
            if name == baseline:
                continue
            values = results.get(name, {}).get(key, [])
            pairs = [v / b for v, b in zip(values, base, strict=False) if is_number(v) and b]
            if len(pairs) < 2 or len(pairs) != len(values) or len(values) != len(base):
                continue
            spread = f"{min(pairs):.3f}-{max(pairs):.3f}"
            above = sum(r >= 1.0 for r in pairs)
            out.append(
                f"{label}, {name}/{baseline} per repeat: median {statistics.median(pairs):.3f}, "
                f"range {spread}, {above} of {len(pairs)} at or above 1"
            )
    return out


def failures(results: Results) -> list[str]:
    """One line per target and scenario whose replies broke the contract."""
    found = []
    for name, metrics in results.items():
        for key in FAILURE_KEYS:
            bad = sum(v for v in metrics.get(key, []) if is_number(v))
            if bad:
                found.append(f"{name}: {bad} bad in scenario ({key[0]})")
    return found


def notes(
    extra: Mapping[str, Mapping[str, Sequence[Any]]],
    problems: Mapping[str, Counter[str]],
) -> list[str]:
    """Under the table: validation errors, bad reply samples, server log problems, profiles."""
    out = []
    for name in extra:
        for key in ("c.check_errors", "d.errors"):
            out += [f"{name}: {key} {v}" for v in extra[name].get(key, []) if v]
        for samples in extra[name].get("_bad_samples", []):
            out += [f"{name}: {sample[:200]}" for sample in samples]
        counts = {k: v for k, v in problems[name].items() if not k.startswith("_sample ")}
        if counts:
            out.append(f"{name}: server log lines: {counts}")
            samples = [k[len("_sample ") :] for k in problems[name] if k.startswith("_sample ")]
            out += [f"{name}:   e.g. {s}" for s in samples[:6]]
        out += [f"profile {name}: {v}" for v in extra[name].get("p.note", [])]
        profiles = zip(
            extra[name].get("p.pkg", []),
            extra[name].get("p.self", []),
            extra[name].get("p.incl", []),
            extra[name].get("p.samples", []),
            extra[name].get("p.file", []),
            strict=False,
        )
        for packages, own, inclusive, samples, path in profiles:
            out.append(f"\nprofile {name} (py-spy, {samples} non-idle samples, {path})")
            out.append(
                "  self time by package:  " + ", ".join(f"{p} {x:.1f}%" for p, x in packages)
            )
            out.append("  top self time:")
            out += [f"    {x:5.1f}%  {f}" for f, x in own]
            out.append("  top inclusive time (stacks under uvloop are often partial):")
            out += [f"    {x:5.1f}%  {f}" for f, x in inclusive]
    return out
