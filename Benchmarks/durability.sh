#!/usr/bin/env bash
# Durable writes and start-up, on the release build:
#   1. write throughput and latency (p50, p99) with wrk: PATCHes of the demo galleries, by
#      one writer and by several concurrent writers; each answer comes after its fsync;
#      and the server's CPU time (user + system, /proc) per write;
#   2. start-up time with a data file of DOCUMENTS x FIELDS fields (default 100,000 x 10 =
#      1 million): the first start (which imports it) and a restart (which loads it from
#      SQLite), timed until /readyz answers 200, with the server's resident memory.
#
# Environment:
#   DURATION     wrk -d per write run                 default 10s
#   WRITERS      concurrent connections, second run   default 16
#   DOCUMENTS    documents in the start-up data file  default 100000
#   FIELDS       fields per document (besides id)     default 10
#   LOOKOUT_BIN  measure this binary instead of building .build/release/lookout
#   KEEP_TMP=1   keep the temp dir
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

DURATION="${DURATION:-10s}"
WRITERS="${WRITERS:-16}"
DOCUMENTS="${DOCUMENTS:-100000}"
FIELDS="${FIELDS:-10}"
KEEP_TMP="${KEEP_TMP:-0}"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"
command -v wrk >/dev/null || die "wrk is needed: apt-get install wrk"

TMP=$(mktemp -d)
LOOKOUT_PID=""
FAILURE_LOGS=("Lookout stderr:$TMP/lookout.stderr")
cleanup_at_exit lookout:LOOKOUT_PID


# Starts Lookout on $PORT with the given extra arguments; sets LOOKOUT_PID.
start_lookout() {
    "$LOOKOUT_BIN" --port "$PORT" --bind 127.0.0.1 --data-dir "$TMP/data" "$@" 2>>"$TMP/lookout.stderr" &
    LOOKOUT_PID=$!
}

# Seconds (with ms) until /readyz answers 200.
time_until_ready() {
    local start end
    start=$(date +%s%N)
    for ((i = 0; i < 6000; i++)); do
        kill -0 "$LOOKOUT_PID" 2>/dev/null || die "lookout exited while starting"
        if [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz" 2>/dev/null) == 200 ]]; then
            end=$(date +%s%N)
            awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
            return 0
        fi
        sleep 0.01
    done
    die "not ready within 60s"
}

rss_mib() { awk '/^VmRSS:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

# The process's CPU time so far (user + system), in clock ticks.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
TICKS_PER_SECOND=$(getconf CLK_TCK)

release_binary "$REPO_ROOT"

# --- 1. durable writes -------------------------------------------------------------
PORT=$(free_port)
start_lookout
wait_until_answers "http://127.0.0.1:$PORT/readyz" "$LOOKOUT_PID" lookout
TOKEN=$(curl -s -X POST "http://127.0.0.1:$PORT/v1/auth/login" -H 'Content-Type: application/json' \
    -d '{"email":"editor@example.com","password":"editor-password"}' | sed -E 's/.*"token":"([^"]+)".*/\1/')
cat >"$TMP/patch.lua" <<'LUA'
-- PATCH a random gallery with a random title: every write changes something.
local token = os.getenv("TOKEN")
function setup(thread) thread:set("seed", math.random(1, 1000000)) end
function init() math.randomseed(seed) end
function request()
    local id = math.random(1, 24)
    local body = '{"title":"bench ' .. math.random(1, 1000000000) .. '"}'
    return wrk.format("PATCH", "/v1/galleries/" .. id,
        { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token }, body)
end
LUA
results=()
for connections in 1 "$WRITERS"; do
    threads=$((connections < 2 ? 1 : 2))
    log "wrk -t$threads -c$connections -d$DURATION --latency (PATCH /v1/galleries/{id})"
    cpu_before=$(cpu_ticks "$LOOKOUT_PID")
    TOKEN=$TOKEN wrk -t"$threads" -c"$connections" -d"$DURATION" --latency -s "$TMP/patch.lua" \
        "http://127.0.0.1:$PORT" >"$TMP/wrk-$connections.txt"
    cpu_after=$(cpu_ticks "$LOOKOUT_PID")
    writes=$(awk '$2 == "requests" && $3 == "in" { print $1 }' "$TMP/wrk-$connections.txt")
    cpu_per_write=$(awk -v t=$((cpu_after - cpu_before)) -v hz="$TICKS_PER_SECOND" -v n="$writes" \
        'BEGIN { printf "%.0fus", (n > 0 ? t / hz * 1e6 / n : 0) }')
    errors=$(wrk_errors "$TMP/wrk-$connections.txt")
    ((errors == 0)) || { cat "$TMP/wrk-$connections.txt" >&2; die "$errors failed writes"; }
    p50=$(awk '$1 == "50%" { print $2 }' "$TMP/wrk-$connections.txt")
    results+=("$(printf '%-10s %10s %10s %10s %18s' "$connections" "$(wrk_rps "$TMP/wrk-$connections.txt")" "$p50" \
        "$(wrk_p99_ms "$TMP/wrk-$connections.txt")ms" "$cpu_per_write")")
done
revision=$(curl -s -o /dev/null -w '%header{etag}' "http://127.0.0.1:$PORT/v1/galleries" | tr -d '"')
stop_pid "$LOOKOUT_PID" lookout
LOOKOUT_PID=""

# --- 2. start-up with many fields ---------------------------------------------------
log "writing a data file of $DOCUMENTS documents x $FIELDS fields"
python3 - "$TMP/big.json" "$DOCUMENTS" "$FIELDS" <<'PY'
import json, sys
path, documents, fields = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "w") as out:
    out.write('{"collections": [{"name": "items", "public": true, "documents": [')
    for i in range(1, documents + 1):
        doc = {"id": i}
        for f in range(fields):
            doc[f"f{f}"] = (i * 31 + f) % 1000 if f % 2 else f"value {i}-{f}"
        out.write(("," if i > 1 else "") + json.dumps(doc, ensure_ascii=False))
    out.write(']}], "users": []}')
PY
rm -rf "$TMP/data"
PORT=$(free_port)
start_lookout --data-file "$TMP/big.json"
first=$(time_until_ready)
first_rss=$(rss_mib "$LOOKOUT_PID")
stop_pid "$LOOKOUT_PID" lookout
database_mib=$(du -m "$TMP/data/lookout.sqlite" | cut -f1)
start_lookout --data-file "$TMP/big.json"
second=$(time_until_ready)
second_rss=$(rss_mib "$LOOKOUT_PID")
count=$(curl -s -o /dev/null -D - "http://127.0.0.1:$PORT/v1/items?limit=1" | awk -F': ' 'tolower($1) == "x-total-count" { print $2 }' | tr -d '\r')
[[ $count == "$DOCUMENTS" ]] || die "expected $DOCUMENTS documents after the restart, found '$count'"

echo
echo "Durable writes: PATCH /v1/galleries/{id}, wrk -d$DURATION, each answered after its fsync (store at $revision)"
printf '%-10s %10s %10s %10s %18s\n' writers "req/s" p50 p99 "server CPU/write"
printf '%s\n' "${results[@]}"
echo
echo "Start-up with $DOCUMENTS documents x $FIELDS fields ($((DOCUMENTS * FIELDS)) fields, database ${database_mib} MiB)"
printf '%-28s %8ss %6s MiB RSS\n' "first start (import)" "$first" "$first_rss"
printf '%-28s %8ss %6s MiB RSS\n' "restart (load from SQLite)" "$second" "$second_rss"
