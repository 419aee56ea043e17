#!/usr/bin/env bash
# peerwire benchmarks: the shared A2A harness (../shared/bench) with peerwire's targets beside
# the official a2a-sdk and the bare-HTTP floor, in one interleaved run. Ratios are what count.
#
#   bench/run.sh                          # peerwire (memory), peerwire (sqlite), sdk, floor
#   bench/run.sh --scenarios a,b --repeat 2 --json bench.json
#   bench/run.sh --scenarios p --server peerwire   # py-spy profile of peerwire under load
#   bench/run.sh --server peerwire --server sdk --baseline sdk
#   bench/run.sh --server peerwire --server peerwire-uvicorn --server floor   # HTTP server vs uvicorn
#   bench/run.sh --client [--repeat 3 --json client.json]   # client bench (client_bench.py)
#   bench/run.sh --help                   # this, and the harness's options (runs nothing)
#
# Extra arguments go to the harness (its --help lists them). Any --server/--url replaces the
# default targets; "peerwire", "peerwire-sqlite" and "peerwire-uvicorn" (the same app on
# uvicorn, to measure peerwire's HTTP server) name peerwire's own targets there, the harness knows "sdk", "sdk-notrace", "floor" and "floor-asgi". Targets are started fresh per
# scenario, pinned to CPU 0, loaded from CPU 1, on loopback only. Environment:
#   PEERWIRE_SHARED_BENCH  the harness folder (default: ../shared/bench beside the repository)
#   PEERWIRE_BIN           the peerwire command (default: .venv/bin/peerwire)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="${PEERWIRE_SHARED_BENCH:-$ROOT/../shared/bench}"
PEERWIRE="${PEERWIRE_BIN:-$ROOT/.venv/bin/peerwire}"

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

case "${1:-}" in
  -h | --help)
    usage
    if [ -f "$SHARED/a2a_bench.py" ]; then
      echo
      echo "The harness ($SHARED/a2a_bench.py):"
      # The harness itself is stdlib only: its help needs neither wrk nor the a2a-sdk venv.
      python3 "$SHARED/a2a_bench.py" --help
    else
      echo "bench/run.sh: no harness at $SHARED (set PEERWIRE_SHARED_BENCH)" >&2
      exit 2
    fi
    exit 0
    ;;
  --client)
    shift
    exec "$(dirname "$PEERWIRE")/python" "$ROOT/bench/client_bench.py" "$@"
    ;;
esac

if [ ! -x "$SHARED/run.sh" ]; then
  echo "bench/run.sh: no harness at $SHARED (set PEERWIRE_SHARED_BENCH)" >&2
  exit 2
fi
if [ ! -x "$PEERWIRE" ]; then
  echo "bench/run.sh: $PEERWIRE not found; run .ci/run (or pip install -e '.[all]') first" >&2
  exit 1
fi
DB_DIR="$(mktemp -d)"
trap 'rm -rf "$DB_DIR"' EXIT
serve="env PYTHONPATH=$ROOT $PEERWIRE serve bench.echo_agent:agent --port {port}"
# The help text is read whole: "| grep -q" would stop reading early, and under pipefail the
# writer's SIGPIPE would then randomly count as "no such option".
serve_help="$("$PEERWIRE" serve --help 2>/dev/null || true)"
if [[ "$serve_help" == *--no-grpc* ]]; then
  serve="env PYTHONPATH=$ROOT $PEERWIRE serve bench.echo_agent:agent --no-grpc --port {port}"
fi
declare -A ours=(
  [peerwire]="peerwire=$serve --store memory"
  # \$\$ is expanded by the harness's shell: a fresh database file for every start.
  [peerwire-sqlite]="peerwire-sqlite=$serve --store sqlite:$DB_DIR/bench-\$\$.db"
  # The same app on uvicorn instead of peerwire's HTTP server (docs/PERFORMANCE.md).
  [peerwire-uvicorn]="peerwire-uvicorn=env PYTHONPATH=$ROOT PEERWIRE_BENCH_URL=http://127.0.0.1:{port} $(dirname "$PEERWIRE")/python -m uvicorn --factory bench.echo_agent:uvicorn_app --port {port} --log-level warning --no-access-log --no-proxy-headers"
)
targets=(
  --server "${ours[peerwire]}"
  --server "${ours[peerwire-sqlite]}"
  --server sdk
  --server floor
  --baseline floor
)
args=()
expect_target=0
for x in "$@"; do
  if [ "$expect_target" = 1 ] && [ -n "${ours[$x]+set}" ]; then
    x="${ours[$x]}"
  fi
  expect_target=0
  case "$x" in
    --server | --url) targets=() expect_target=1 ;;
    --server=* | --url=*) targets=() ;;
  esac
  case "$x" in
    --server=peerwire | --server=peerwire-sqlite | --server=peerwire-uvicorn)
      x="--server=${ours[${x#--server=}]}"
      ;;
  esac
  args+=("$x")
done
exec "$SHARED/run.sh" "${targets[@]}" "${args[@]}"
