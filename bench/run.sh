#!/usr/bin/env bash
# peerwire benchmarks: the bench harness (bench/harness) runs peerwire's targets beside the
# official a2a-sdk and the bare-HTTP floor, interleaved, over loopback. Ratios are what count.
#
#   bench/run.sh                          # peerwire (memory), peerwire-sqlite, sdk, floor
#   bench/run.sh --scenarios a,b --repeat 2 --json bench.json
#   bench/run.sh --compare-rev 278a5f2    # peerwire@278a5f2 beside the working tree's peerwire;
#                                         #   baseline the revision: ratios read after / before
#   bench/run.sh --compare-rev HEAD --scenarios a,b,c --repeat 3   # what the uncommitted work costs
#   bench/run.sh --server peerwire-sqlite@278a5f2 --server peerwire-sqlite   # any target @REV
#   bench/run.sh --scenarios p --server peerwire   # py-spy profile of peerwire under load
#   bench/run.sh --server peerwire --server sdk --baseline sdk
#   bench/run.sh --server peerwire --server peerwire-uvicorn --server floor   # HTTP server vs uvicorn
#   bench/run.sh --server new='python -m mypkg --port {port}' --server floor   # any A2A server
#   bench/run.sh --dry-run [...]          # the targets and their commands; runs nothing
#   bench/run.sh --client [--repeat 3 --json client.json]   # client bench (client_bench.py)
#   bench/run.sh --help                   # this, and the harness's options (runs nothing)
#
# Every other argument goes to the harness (python -m bench.harness; its --help lists them).
# Any --server/--url/--compare-rev replaces the default targets. Targets are started fresh
# per scenario, pinned to CPU 0, loaded from CPU 1, on loopback only. Built on first use:
# the reference venv of sdk and floor (~/.cache/peerwire/bench-reference-a2a-sdk-1.3.0) and,
# per commit, a revision's tree and venv (.bench-cache/peerwire-COMMIT/). wrk is installed
# from apt when missing. Environment:
#   PEERWIRE_BIN                the working tree's peerwire command (default: .venv/bin/peerwire)
#   PEERWIRE_BENCH_REF_VENV     where the reference venv lives
#   PEERWIRE_BENCH_REF_PYTHON   a ready python with a2a-sdk 1.3.0 for sdk and floor instead
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERWIRE="${PEERWIRE_BIN:-$ROOT/.venv/bin/peerwire}"
PYTHON="$(dirname "$PEERWIRE")/python"
export PEERWIRE_BIN="$PEERWIRE"
# The harness is the bench package's; not a cd, so relative paths (--json FILE) stay the caller's.
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

case "${1:-}" in
  -h | --help)
    usage
    echo
    # Stdlib only: the harness's help needs neither the venv, nor wrk, nor the a2a-sdk.
    exec python3 -m bench.harness --help
    ;;
  --client)
    shift
    exec "$PYTHON" "$ROOT/bench/client_bench.py" "$@"
    ;;
esac

if [ ! -x "$PYTHON" ]; then
  echo "bench/run.sh: $PYTHON not found; run .ci/run (or pip install -e '.[all]') first" >&2
  exit 1
fi
dry_run=0
for x in "$@"; do
  if [ "$x" = --dry-run ]; then dry_run=1; fi
done
if [ "$dry_run" = 0 ] && ! command -v wrk >/dev/null 2>&1; then
  echo "bench/run.sh: installing wrk from apt" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
exec "$PYTHON" -m bench.harness "$@"
