"""Named targets, so a run can say ``--server peerwire --server floor`` instead of commands.

peerwire's own (the working tree; ``NAME@REV`` for another git revision, see revisions.py):

  peerwire          peerwire serve bench.echo_agent:agent --store memory --no-grpc (Prometheus
                    metrics on, as by default when prometheus-client is installed)
  peerwire-metrics-off  the same with --no-metrics: the pair gives the metrics' overhead
  peerwire-sqlite   the same with --store sqlite:FILE, a fresh file for every start
  peerwire-uvicorn  the same app (memory store) on uvicorn instead of peerwire's HTTP server
                    (working tree only: a revision's venv holds peerwire[all], no uvicorn)
  peerwire-traced   peerwire (memory store) traced by the OpenTelemetry SDK into an in-memory
                    exporter (bench/traced_echo_agent.py; working tree only, needs the SDK)
  peerwire-traced-batch  the same with the SDK's BatchSpanProcessor (exporter dropping spans)
  peerwire-traced-sampled  peerwire-traced keeping one trace in ten (a ratio sampler)
  peerwire-otel-api peerwire (memory store) with the OpenTelemetry API loaded, no provider

The references, in their own venv (venvs.py: a2a-sdk 1.3.0 on uvicorn with httptools and
uvloop), started from this checkout's bench/ folder:

  sdk               bench/sdk_echo_server.py: the echo agent on the official a2a-sdk
  sdk-notrace       the same with the SDK's OpenTelemetry wrappers off
  floor             bench/floor_server.py: Starlette on the same uvicorn answering
                    precomputed replies (no task store, no validation)
  floor-asgi        the same floor as a raw ASGI app, no framework at all
"""

from __future__ import annotations

import functools
import shlex
import subprocess
from pathlib import Path

from . import revisions, venvs
from .targets import Target

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
PEERWIRE_NAMES = (
    "peerwire",
    "peerwire-sqlite",
    "peerwire-uvicorn",
    "peerwire-traced",
    "peerwire-traced-batch",
    "peerwire-traced-sampled",
    "peerwire-otel-api",
    "peerwire-metrics-off",
)
# The traced targets: the echo agent with OpenTelemetry loaded (PEERWIRE_BENCH_TRACING).
TRACED = {
    "peerwire-traced": "sdk",
    "peerwire-traced-batch": "batch",
    "peerwire-traced-sampled": "sampled",
    "peerwire-otel-api": "api",
}
REFERENCE_NAMES = ("sdk", "sdk-notrace", "floor", "floor-asgi")
DEFAULT_TARGETS = ("peerwire", "peerwire-sqlite", "sdk", "floor")
DEFAULT_BASELINE = "floor"


class CatalogError(ValueError):
    """An unknown target name, or one that cannot be built here."""


def q(path: str | Path) -> str:
    return shlex.quote(str(path))


@functools.cache
def accepts_no_grpc(peerwire: Path) -> bool:
    """Whether this ``peerwire serve`` has --no-grpc (older revisions may not)."""
    # The help is read whole: a reader that stopped early would make the writer fail.
    done = subprocess.run(
        [str(peerwire), "serve", "--help"], capture_output=True, text=True, timeout=60
    )
    return "--no-grpc" in done.stdout


class Catalog:
    def __init__(
        self,
        *,
        peerwire_bin: Path,
        ref_python: str | None = None,
        builtin_args: str = "",
        build: bool = True,
    ) -> None:
        self.peerwire_bin = peerwire_bin
        self._ref_python = ref_python
        self.builtin_args = builtin_args
        self.build = build  # False for --dry-run: name what would run, build nothing
        self.revisions: dict[str, revisions.Revision] = {}

    def target(self, spec: str) -> Target:
        """A target from ``NAME=COMMAND`` or from one of the names above."""
        name, eq, command = spec.partition("=")
        if eq:
            if not name or not command:
                raise CatalogError(f"--server {spec!r}: give NAME=COMMAND")
            return Target(name, command)
        base, at, label = name.partition("@")
        if at:
            return self._revision(name, base, label)
        if name in PEERWIRE_NAMES:
            return self._peerwire(name, name, self.peerwire_bin, ROOT)
        if name in REFERENCE_NAMES:
            return self._reference(name)
        known = ", ".join([*PEERWIRE_NAMES, *REFERENCE_NAMES, "peerwire@REV"])
        raise CatalogError(f"unknown target {name!r}: use NAME=COMMAND or one of {known}")

    def _peerwire(self, name: str, kind: str, peerwire: Path, tree: Path) -> Target:
        python = peerwire.parent / "python"
        if kind == "peerwire-uvicorn":
            command = (
                f"env PYTHONPATH={q(tree)} PEERWIRE_BENCH_URL=http://127.0.0.1:{{port}} "
                f"{q(python)} -m uvicorn --factory bench.echo_agent:uvicorn_app --port {{port}} "
                "--log-level warning --no-access-log --no-proxy-headers"
            )
            return Target(name, command, python=str(python))
        if self.build and not peerwire.exists():
            raise CatalogError(f"{peerwire} not found: run .ci/run (or pip install -e '.[all]')")
        grpc = " --no-grpc" if not peerwire.exists() or accepts_no_grpc(peerwire) else ""
        # {tmp} is a fresh directory for every start: a new database each time.
        store = "sqlite:{tmp}/bench.db" if kind == "peerwire-sqlite" else "memory"
        module, tracing = "bench.echo_agent", ""
        if kind in TRACED:
            module, tracing = "bench.traced_echo_agent", f" PEERWIRE_BENCH_TRACING={TRACED[kind]}"
        # Metrics are on by default; this target turns them off (working tree only: older
        # revisions have no --no-metrics).
        metrics = " --no-metrics" if kind == "peerwire-metrics-off" else ""
        command = (
            f"env PYTHONPATH={q(tree)}{tracing} {q(peerwire)} serve {module}:agent{grpc} "
            f"--store {store}{metrics} --port {{port}}"
        )
        return Target(name, command, python=str(python))

    def _revision(self, name: str, kind: str, label: str) -> Target:
        if kind not in ("peerwire", "peerwire-sqlite"):
            raise CatalogError(
                f"{name!r}: only peerwire@REV and peerwire-sqlite@REV name revisions"
            )
        try:
            revision = revisions.resolve(label)
            if self.build:
                revisions.ensure(revision)
        except revisions.RevisionError as exc:
            raise CatalogError(str(exc)) from exc
        self.revisions[label] = revision
        return self._peerwire(name, kind, revision.peerwire, revision.tree)

    def reference_python(self) -> str:
        """The reference venv's interpreter (``--ref-python``, else built on first use)."""
        if self._ref_python is None:
            spec = venvs.reference_venv()
            if not self.build:
                return str(spec.python)
            try:
                self._ref_python = str(venvs.ensure(spec))
            except venvs.VenvError as exc:
                raise CatalogError(f"cannot build the reference venv: {exc}") from exc
        return self._ref_python

    def _reference(self, name: str) -> Target:
        python = self.reference_python()
        script = BENCH / ("floor_server.py" if name.startswith("floor") else "sdk_echo_server.py")
        # Not our import paths: the SDK registers the same protobuf package as peerwire.
        env = "env -u PYTHONPATH"
        if name == "sdk-notrace":
            env += " OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=false"
        mode = " --mode asgi" if name == "floor-asgi" else ""
        extra = f" {self.builtin_args}" if self.builtin_args else ""
        command = f"{env} {q(python)} {q(script)}{mode} --port {{port}}{extra}"
        return Target(name, command, python=python)
