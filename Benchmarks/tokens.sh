#!/usr/bin/env bash
# What tokens cost: verification per core in-process (token-bench) and over HTTP
# (`POST /v1/auth/verify` with wrk), for HS256 and EdDSA; and one login, in-process
# (scrypt alone) and over HTTP (`POST /v1/auth/login`, one connection, then one per core).
#
# Environment:
#   DURATION       wrk -d per run                 default 10s
#   CONNECTIONS    wrk -c for verify              default 32
#   LOOKOUT_BIN    measure this binary instead of building .build/release/lookout
#   KEEP_TMP=1     keep the temp dir (server logs, raw wrk output)
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

DURATION="${DURATION:-10s}"
CONNECTIONS="${CONNECTIONS:-32}"
KEEP_TMP="${KEEP_TMP:-0}"
CORES="$(nproc)"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"
command -v wrk >/dev/null 2>&1 || die "wrk is missing: apt-get install wrk"

TMP="$(mktemp -d)"
SERVER_PID=""
cleanup_at_exit lookout:SERVER_PID

release_binary "$REPO_ROOT"
log "building: swift build -c release --package-path Benchmarks --product token-bench"
swift build -c release --package-path Benchmarks --product token-bench >/dev/null

log "in-process: Benchmarks/.build/release/token-bench 5"
Benchmarks/.build/release/token-bench 5 | tee "$TMP/in-process.txt"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
login_body='{"email":"demo@example.com","password":"demo-password"}'

start_server() { # algorithm
    stop_pid "$SERVER_PID" lookout
    rm -rf "$TMP/data"
    "$LOOKOUT_BIN" --port "$port" --bind 127.0.0.1 --data-dir "$TMP/data" --token-algorithm "$1" \
        2>"$TMP/server-$1.log" &
    SERVER_PID=$!
    wait_until_answers "$base/healthz" "$SERVER_PID" lookout
}

lua() { # file method path body [token]
    {
        printf 'wrk.method = "%s"\nwrk.path = "%s"\nwrk.body = [[%s]]\n' "$2" "$3" "$4"
        printf 'wrk.headers["Content-Type"] = "application/json"\n'
        if [[ -n ${5:-} ]]; then printf 'wrk.headers["Authorization"] = "Bearer %s"\n' "$5"; fi
    } >"$1"
}

wrk_p50_ms() {
    awk '$1 == "50%" { v = $2; n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000
        printf "%.3f\n", n }' "$1"
}

printf '\n%-34s %12s %10s %10s %7s\n' "over HTTP (wrk -d $DURATION)" "requests/s" "p50 ms" "p99 ms" "errors"
for algorithm in HS256 EdDSA; do
    start_server "$algorithm"
    token=$(curl -fsS -X POST "$base/v1/auth/login" -H 'Content-Type: application/json' -d "$login_body" |
        sed -E 's/.*"token":"([^"]+)".*/\1/')
    lua "$TMP/verify.lua" POST /v1/auth/verify '{}' "$token"
    wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -s "$TMP/verify.lua" "$base" >"$TMP/verify-$algorithm.txt"
    printf '%-34s %12s %10s %10s %7s\n' "verify $algorithm, $CONNECTIONS connections" \
        "$(wrk_rps "$TMP/verify-$algorithm.txt")" "$(wrk_p50_ms "$TMP/verify-$algorithm.txt")" \
        "$(wrk_p99_ms "$TMP/verify-$algorithm.txt")" "$(wrk_errors "$TMP/verify-$algorithm.txt")"
done

lua "$TMP/login.lua" POST /v1/auth/login "$login_body"
for connections in 1 "$CORES"; do
    wrk -t1 -c"$connections" -d"$DURATION" --latency -s "$TMP/login.lua" "$base" >"$TMP/login-$connections.txt"
    printf '%-34s %12s %10s %10s %7s\n' "login (scrypt ln=15), $connections connection(s)" \
        "$(wrk_rps "$TMP/login-$connections.txt")" "$(wrk_p50_ms "$TMP/login-$connections.txt")" \
        "$(wrk_p99_ms "$TMP/login-$connections.txt")" "$(wrk_errors "$TMP/login-$connections.txt")"
done
echo "machine: $CORES cores, $(date -u '+%Y-%m-%d %H:%M UTC'), $BINARY"
