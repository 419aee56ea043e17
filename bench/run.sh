#!/usr/bin/env bash
# peerwire benchmarks: the shared A2A harness (../shared/bench) with peerwire's targets beside
# the official a2a-sdk and the bare-HTTP floor, in one interleaved run. Ratios are what count.
#
#   bench/run.sh                          # peerwire (memory), peerwire (sqlite), sdk, floor
#   bench/run.sh --scenarios a,b --repeat 2
#   bench/run.sh --scenarios p --server peerwire   # py-spy profile of peerwire under load
#
# Extra arguments go to the harness (its --help lists them). Targets are started fresh per
# scenario, pinned to CPU 0, loaded from CPU 1, on loopback only.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="${PEERWIRE_SHARED_BENCH:-$ROOT/../shared/bench}"
PEERWIRE="${PEERWIRE_BIN:-$ROOT/.venv/bin/peerwire}"
if [ ! -x "$PEERWIRE" ]; then
  echo "bench/run.sh: $PEERWIRE not found; run .ci/run (or pip install -e '.[all]') first" >&2
  exit 1
fi
DB_DIR="$(mktemp -d)"
trap 'rm -rf "$DB_DIR"' EXIT
serve="env PYTHONPATH=$ROOT $PEERWIRE serve bench.echo_agent:agent --no-grpc --port {port}"
if ! "$PEERWIRE" serve --help 2>/dev/null | grep -q -- "--no-grpc"; then
  serve="env PYTHONPATH=$ROOT $PEERWIRE serve bench.echo_agent:agent --port {port}"
fi
targets=(
  --server "peerwire=$serve --store memory"
  # \$\$ is expanded by the harness's shell: a fresh database file for every start.
  --server "peerwire-sqlite=$serve --store sqlite:$DB_DIR/bench-\$\$.db"
  --server sdk
  --server floor
  --baseline floor
)
for x in "$@"; do
  case "$x" in --server|--server=*|--url|--url=*) targets=() ;; esac
done
exec "$SHARED/run.sh" "${targets[@]}" "$@"
