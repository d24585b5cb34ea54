#!/usr/bin/env bash
# What a poll answered at its deadline costs the server, against Nchan: COUNT polls held on
# one key by two client processes, nothing written, each answered when its wait ends.
#   - Lookout (--database memory): GET items/1?fields=v&wait=WAIT with its ETag, answered
#     304 after WAIT s plus a jitter of up to WAIT/16.
#   - Nchan: a long-poll on /sub/1 with nchan_subscriber_timeout WAIT s, answered 408.
# The figure is the server's CPU time (user + system, from /proc: every thread of Lookout,
# every nginx process) from the moment all polls are held until 1 s after the clients have
# read every answer and exited, divided by COUNT. So it includes closing the connections,
# for both. A second figure is what holding them cost: the server's CPU time from just
# before the clients start until every poll is held (connections accepted, requests read
# and parsed, polls registered), divided by COUNT. ROUNDS rounds, each starting both
# servers afresh, alternating; medians.
#
#   Benchmarks/timeouts.sh
#   COUNT=10000 WAIT=20 ROUNDS=3 LOOKOUT_BIN=/path/to/lookout Benchmarks/timeouts.sh
#
# Environment:
#   COUNT         polls held per round (two client processes, each half)   default 10000
#   WAIT          seconds each poll waits                                  default 20
#   ROUNDS        rounds, alternating Lookout and Nchan                    default 3
#   LOOKOUT_BIN   measure this binary instead of building .build/release/lookout
#   KEEP_TMP=1    keep the temp dir (server logs, client output)
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

COUNT="${COUNT:-10000}"
WAIT="${WAIT:-20}"
ROUNDS="${ROUNDS:-3}"
for name in COUNT WAIT ROUNDS; do
    [[ ${!name} =~ ^[1-9][0-9]*$ ]] || die "$name must be a positive integer, got '${!name}'"
done
((COUNT % 2 == 0 && COUNT <= 19000)) || die "COUNT must be even and at most 19000 (the open-file limit)"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"
packages=()
add_nchan_packages
apt_install "${packages[@]}"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/lookout-timeouts.XXXXXX")"
SERVER_PID=""
declare -a CLIENT_PIDS=()
cleanup_at_exit client:CLIENT_PIDS server:SERVER_PID

release_binary "$REPO_ROOT"
CLIENT="$TMP/client"
cc -O2 -Wall -Wextra -o "$CLIENT" Benchmarks/longpoll/client.c
python3 - Sources/LookoutApp/Resources/demo-data.json "$TMP/items.json" <<'PY'
import json, sys
users = json.load(open(sys.argv[1]))["users"]
docs = [{"id": i, "v": 0} for i in range(1, 101)]
json.dump({"collections": [{"name": "items", "public": True, "documents": docs}], "users": users},
          open(sys.argv[2], "w"), separators=(",", ":"))
PY

start_lookout() {
    PORT=$(free_port)
    rm -rf "$TMP/data"
    "$LOOKOUT_BIN" --port "$PORT" --bind 127.0.0.1 --data-dir "$TMP/data" --data-file "$TMP/items.json" \
        --database memory --log-level warning --max-connections 20000 --max-connections-per-client 0 \
        --max-wait 300 2>"$TMP/lookout.log" &
    SERVER_PID=$!
    wait_until_answers "http://127.0.0.1:$PORT/v1/items/1" "$SERVER_PID" lookout
    mapfile -t TARGET_ARGS < <(etag_args lookout)
}

# CPU ticks (user + system) of the server: its process and, for nginx, its workers.
server_ticks() {
    local pid total=0
    for pid in "$SERVER_PID" $(pgrep -P "$SERVER_PID" || true); do
        total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
    done
    echo "$total"
}

# measure TARGET: holds COUNT polls, waits for their deadline answers; sets HOLD_US and
# CPU_US (server CPU per poll to hold it, and then to answer it at its deadline) and
# ANSWERED (answers with the status expected at the deadline).
measure() {
    local target=$1 p ready start before after
    conntrack_room "$COUNT"
    CLIENT_PIDS=()
    start=$(server_ticks)
    for p in 0 1; do
        "$CLIENT" hold "${TARGET_ARGS[@]}" --port "$PORT" --src "127.0.0.$((90 + p))" -n $((COUNT / 2)) \
            --same-id 1 --wait "$WAIT" --timeout $((WAIT + 60)) >"$TMP/$target-$p.out" 2>"$TMP/$target-$p.err" &
        CLIENT_PIDS+=($!)
    done
    for ((ready = 0; ready < 1200; ready++)); do
        (($(cat "$TMP/$target"-[01].out | grep -c '^ready') == 2)) && break
        sleep 0.1
    done
    ((ready < 1200)) || die "$target: the polls were not all held within 120 s"
    before=$(server_ticks)
    HOLD_US=$(awk -v t=$((before - start)) -v hz="$(getconf CLK_TCK)" -v n="$COUNT" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')
    for p in "${CLIENT_PIDS[@]}"; do wait "$p" || die "$target: a client failed: $(cat "$TMP/$target"-[01].err)"; done
    CLIENT_PIDS=()
    sleep 1
    after=$(server_ticks)
    CPU_US=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$COUNT" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')
    local field=s304
    [[ $target == nchan ]] && field=other  # Nchan answers a long-poll's timeout 408
    ANSWERED=$(cat "$TMP/$target"-[01].out | grep '^result ' | grep -o "\b$field=[0-9]*" | cut -d= -f2 |
        awk '{ s += $1 } END { print s + 0 }')
}

declare -a lookout_us=() nchan_us=() lookout_hold=() nchan_hold=()
for ((round = 1; round <= ROUNDS; round++)); do
    for target in lookout nchan; do
        if [[ $target == lookout ]]; then start_lookout; else start_compared_nchan "$WAIT"; fi
        measure "$target"
        stop_pid "$SERVER_PID" "$target"
        SERVER_PID=""
        ((ANSWERED == COUNT)) || die "$target: $ANSWERED of $COUNT polls answered at their deadline"
        log "round $round $target: $HOLD_US us of server CPU per poll to hold it, $CPU_US to answer it at its deadline ($ANSWERED of $COUNT)"
        if [[ $target == lookout ]]; then
            lookout_us+=("$CPU_US")
            lookout_hold+=("$HOLD_US")
        else
            nchan_us+=("$CPU_US")
            nchan_hold+=("$HOLD_US")
        fi
    done
done

# figure LABEL LOOKOUT_VALUES... -- NCHAN_VALUES...: medians, values and their ratio.
figure() {
    local label=$1 lookout=() nchan=() side=lookout value
    shift
    for value in "$@"; do
        if [[ $value == -- ]]; then side=nchan; elif [[ $side == lookout ]]; then lookout+=("$value"); else nchan+=("$value"); fi
    done
    local a b
    a=$(median "${lookout[@]}")
    b=$(median "${nchan[@]}")
    printf '%s, us: lookout %s (%s)  nchan %s (%s)  ratio %s\n' "$label" "$a" "${lookout[*]}" "$b" "${nchan[*]}" \
        "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
}
printf '\n%s polls answered at their deadline (wait %s s), %s rounds, %s, load %s\n' \
    "$COUNT" "$WAIT" "$ROUNDS" "$BINARY" "$(cut -d' ' -f1-3 /proc/loadavg)"
figure 'server CPU per poll to hold it' "${lookout_hold[@]}" -- "${nchan_hold[@]}"
figure 'server CPU per poll answered at its deadline' "${lookout_us[@]}" -- "${nchan_us[@]}"
