#!/usr/bin/env bash
# CPU per request of discovery and JWKS with the server saturated, product and stock oidc-provider
# side by side (bench/README.md, "When the load generator is the limit").
#
# autocannon runs in one thread of the bench's own process; on these two rows the product answers
# faster than it asks, goes idle between requests and pays a wake-up for each, which `npm run bench`
# counts in its CPU µs/req. wrk (C, two threads) keeps the product busy, so this reads the cost of a
# request itself. Stock oidc-provider is saturated under either tool.
#
#   npm run bench:saturated            (or: bash bench/saturated-cpu.sh [seconds per window, default 8] [rounds, default 2])
#
# Needs wrk (Debian: apt-get install wrk). Servers on 127.0.0.1 only, stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER=${1:-8}
ROUNDS=${2:-2}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }
[ -f dist/src/main.js ] || { echo "build first: npm run build" >&2; exit 2; }

DIR=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$DIR"; }
trap cleanup EXIT

PRODUCT_PORT=$((20000 + RANDOM % 20000))
BASELINE_PORT=$((PRODUCT_PORT + 1))
# The product as an operator starts it (production, default logging), on SQLite in the temp dir.
(cd "$DIR" && SVC_ENCRYPTION_KEY=$(head -c32 /dev/urandom | base64) PORT=$PRODUCT_PORT HOST=127.0.0.1 NODE_ENV=production \
  exec node "$OLDPWD/dist/src/main.js" >"$DIR/product.log" 2>&1) &
PIDS+=($!)
NODE_ENV=production BASELINE_PORT=$BASELINE_PORT \
  BASELINE_CLIENTS='[{"client_id":"bench","client_secret":"saturated-cpu-bench-secret-0123456789","alg":"RS256"}]' \
  node dist/bench/baseline-main.js >"$DIR/baseline.log" 2>&1 &
PIDS+=($!)
for port in $PRODUCT_PORT $BASELINE_PORT; do
  for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/oidc/v1/jwks" && break; sleep 0.1; done
done

TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# One window: req/s and server CPU µs per request (user + system, all threads of the server).
window() {
  local pid=$1 url=$2 c0 c1 out reqs
  c0=$(cpu_ticks "$pid")
  out=$(wrk -t2 -c50 -d"${SECONDS_PER}s" "$url")
  c1=$(cpu_ticks "$pid")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  awk -v c="$((c1 - c0))" -v t="$TCK" -v n="$reqs" -v s="$SECONDS_PER" 'BEGIN { printf "%8.0f req/s  %6.1f µs/req", n / s, c / t * 1e6 / n }'
}

printf '%-10s %-9s %s\n' path server "saturated (wrk -t2 -c50, ${SECONDS_PER} s)"
for _ in $(seq "$ROUNDS"); do
  for path in /oidc/v1/.well-known/openid-configuration /oidc/v1/jwks; do
    name=$([ "$path" = /oidc/v1/jwks ] && echo jwks || echo discovery)
    p=$(window "${PIDS[0]}" "http://127.0.0.1:$PRODUCT_PORT$path")
    b=$(window "${PIDS[1]}" "http://127.0.0.1:$BASELINE_PORT$path")
    printf '%-10s %-9s %s\n%-10s %-9s %s\n' "$name" product "$p" "$name" baseline "$b"
  done
done
