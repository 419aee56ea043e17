"""Draw the benchmark ratios: docs/performance.png from the harness's and client_bench's JSON.

    bench/run.sh --json bench.json
    bench/run.sh --client --json client.json
    .venv/bin/python bench/plot.py --bench bench.json --client client.json  # docs/performance.png

Left panel: each server target's throughput in the harness scenarios as a ratio to the
harness's baseline (the floor, unless ``--against`` names another target). Right panel:
each client against the client bench's baseline (the a2a-sdk client). Medians of the runs;
log scale, since the ratios span two orders of magnitude. Needs matplotlib (the ``bench``
and ``test`` extras: ``pip install -e '.[bench]'``); the data preparation does not.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "performance.png"

# Higher is better for all of these, so a ratio above 1 always means "more than the baseline".
SERVER_METRICS = (
    ("a.ok_rps", "(a) SendMessage\nc32 req/s"),
    ("a.rps_per_cpu", "(a) req per\nserver-CPU-s"),
    ("l.ok_rps", "(l) SendMessage\nc1 req/s"),
    ("b.ok_rps", "(b) GetTask\nc32 req/s"),
    ("c.events_per_s", "(c) stream\nevents/s"),
)
CLIENT_METRICS = (
    ("calls_per_s", "SendMessage\ncalls/s"),
    ("calls_per_client_cpu_s", "calls per\nclient-CPU-s"),
)


@dataclass(frozen=True)
class Bar:
    """One bar: ``series``'s value of ``metric`` divided by ``baseline``'s."""

    panel: str
    metric: str
    series: str
    baseline: str
    ratio: float


def median(values: Sequence[Any]) -> float | None:
    """The median of a metric's runs; None when any run has no number (a failed scenario)."""
    if not values or not all(isinstance(v, int | float) for v in values):
        return None
    return float(statistics.median(values))


def harness_baseline(harness: Mapping[str, Any]) -> str:
    """The baseline the harness used: as it wrote it down, else (older files) --baseline,
    else "floor" if present, else the first target."""
    names = list(harness["results"])
    chosen = harness.get("baseline") or harness.get("args", {}).get("baseline")
    if chosen:
        return str(chosen)
    return "floor" if "floor" in names else names[0]


def ratio_bars(
    results: Mapping[str, Mapping[str, Sequence[Any]]],
    metrics: Sequence[tuple[str, str]],
    baseline: str,
    panel: str,
) -> list[Bar]:
    if baseline not in results:
        raise ValueError(f"baseline {baseline!r} is not among {sorted(results)}")
    bars = []
    for key, label in metrics:
        base = median(results[baseline].get(key, []))
        if not base:
            continue
        for name, metrics_of in results.items():
            value = median(metrics_of.get(key, []))
            if name != baseline and value is not None:
                bars.append(Bar(panel, label, name, baseline, value / base))
    return bars


def server_bars(harness: Mapping[str, Any], against: str | None = None) -> list[Bar]:
    baseline = against or harness_baseline(harness)
    return ratio_bars(harness["results"], SERVER_METRICS, baseline, "server")


def client_bars(client: Mapping[str, Any]) -> list[Bar]:
    if client.get("kind") != "client_bench":
        raise ValueError("not a client_bench.py --json file")
    return ratio_bars(client["results"], CLIENT_METRICS, client["baseline"], "client")


def render(bars: Sequence[Bar], out: Path, title: str) -> None:
    try:
        import matplotlib
    except ImportError:
        sys.exit("plot.py needs matplotlib: pip install -e '.[bench]' (or pip install matplotlib)")
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    panels = [p for p in ("server", "client") if any(b.panel == p for b in bars)]
    if not panels:
        sys.exit("plot.py: nothing to plot (no metric found in the given files)")
    widths = [len({b.metric for b in bars if b.panel == p}) for p in panels]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(3 + 1.9 * sum(widths), 4.8), width_ratios=widths, squeeze=False
    )
    for ax, panel in zip(axes[0], panels, strict=True):
        _draw_panel(ax, [b for b in bars if b.panel == panel], panel)
    fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def _draw_panel(ax: Any, bars: Sequence[Bar], panel: str) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    metrics = list(dict.fromkeys(b.metric for b in bars))
    series = list(dict.fromkeys(b.series for b in bars))
    width = 0.8 / len(series)
    for i, name in enumerate(series):
        xs, ys = [], []
        for j, metric in enumerate(metrics):
            for bar in bars:
                if bar.metric == metric and bar.series == name:
                    xs.append(j - 0.4 + width * (i + 0.5))
                    ys.append(bar.ratio)
        drawn = ax.bar(xs, ys, width, label=name)
        ax.bar_label(drawn, labels=[_short(y) for y in ys], fontsize=7, padding=1)
    ax.set_yscale("log")
    # At least 0.5x to 2x, so ratios near 1 do not fill the panel, and plain-number ticks.
    ratios = [b.ratio for b in bars]
    ax.set_ylim(min(min(ratios) / 1.6, 0.5), max(max(ratios) * 1.6, 2.0))
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(metrics)), metrics, fontsize=8)
    baseline = bars[0].baseline
    what = "server targets" if panel == "server" else "clients"
    ax.set_ylabel(f"ratio to {baseline} (log scale; >1 is better)")
    ax.set_title(f"{what} / {baseline}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")


def _short(ratio: float) -> str:
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--bench", type=Path, help="the harness's --json output (bench/run.sh --json)")
    ap.add_argument("--client", type=Path, help="client_bench.py --json output")
    ap.add_argument("--against", help="server target the ratios are taken against")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--title", default="peerwire benchmarks: ratios (medians)")
    a = ap.parse_args(argv)
    if a.bench is None and a.client is None:
        ap.error("give --bench and/or --client")
    bars: list[Bar] = []
    try:
        if a.bench is not None:
            bars += server_bars(json.loads(a.bench.read_text()), a.against)
        if a.client is not None:
            bars += client_bars(json.loads(a.client.read_text()))
    except (OSError, ValueError, KeyError) as exc:
        ap.error(f"cannot read the results: {exc!r}")
    render(bars, a.out, a.title)
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
