#!/usr/bin/env bash
# How long the server's send calls take during single wakes, Lookout (--database memory)
# against Nchan: each sendmsg, writev and send timed inside the server's processes by an
# LD_PRELOAD library (Benchmarks/longpoll/sendtime.c). On loopback the sender's call also
# carries the receiving socket's TCP work and the wake-up of the reader, so this is the
# part of the wake-budget's `sent` stage that any server pays; the two servers' figures
# come from the same run, one after the other.
#
# Only the calls made while the measured ROUNDS ran are counted: a round's sends are the
# poll's answer and the write's (and, for Lookout, the answer of the GET the client sends
# for the poll's cursor), then those of a write with nothing held.
#
# Environment:
#   ROUNDS        single-wake rounds                         default 2000
#   TARGETS       what to measure, from "lookout nchan"       default both
#   LOOKOUT_BIN   measure this binary instead of building .build/release/lookout
#   KEEP_TMP=1    keep the temp dir (the raw send times, server logs, client output)
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ROUNDS="${ROUNDS:-2000}"
TARGETS="${TARGETS:-lookout nchan}"
KEEP_TMP="${KEEP_TMP:-0}"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$ROUNDS'"
check_targets

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"

packages=()
[[ " $TARGETS " != *" nchan "* ]] || add_nchan_packages
apt_install "${packages[@]}"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/lookout-send-time.XXXXXX")"
chmod 711 "$TMP" # nginx's workers run as nobody, and write their send times below it
SERVER_PID=""
cleanup_at_exit server:SERVER_PID

BINARY="no Lookout"
[[ " $TARGETS " != *" lookout "* ]] || release_binary "$REPO_ROOT"
CLIENT="$TMP/client"
cc -O2 -Wall -Wextra -o "$CLIENT" Benchmarks/longpoll/client.c
cc -O2 -Wall -Wextra -shared -fPIC -o "$TMP/sendtime.so" Benchmarks/longpoll/sendtime.c -ldl
items_data_file "$TMP/items.json" 20000

PORT=""
TARGET_ARGS=()

monotonic_ns() { python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))'; }

# Prints "calls p10 p50 p90 p99" (µs) of the sends in the files that started in [from, to].
send_stats() { # from to files...
    python3 - "$@" <<'PY'
import sys
low, high = int(sys.argv[1]), int(sys.argv[2])
took = []
for path in sys.argv[3:]:
    for line in open(path):
        start, duration = map(int, line.split())
        if low <= start <= high:
            took.append(duration / 1000)
took.sort()
if not took:
    sys.exit("no send was recorded while the rounds ran")
def pct(p):
    return took[min(len(took) - 1, int(p / 100 * len(took)))]
print(len(took), *(f"{pct(p):.1f}" for p in (10, 50, 90, 99)))
PY
}

declare -A STATS=()
declare -A WAKE=()
measure() { # target
    local target=$1 sends="$TMP/sends-$1" from to pid
    mkdir -p "$sends"
    chmod 1777 "$sends"
    if [[ $target == lookout ]]; then
        SENDTIME_DIR="$sends" LD_PRELOAD="$TMP/sendtime.so" start_compared_lookout memory
    else
        SENDTIME_DIR="$sends" LD_PRELOAD="$TMP/sendtime.so" start_compared_nchan
    fi
    timeout 300 "$CLIENT" single "${TARGET_ARGS[@]}" --port "$PORT" --id 7 --rounds 200 >/dev/null ||
        die "$target: the unmeasured single wakes failed or took over 300 s"
    from=$(monotonic_ns)
    timeout 900 "$CLIENT" single "${TARGET_ARGS[@]}" --port "$PORT" --id 7 --rounds "$ROUNDS" --value-base 100000 \
        >"$TMP/$target-single.out" || die "$target: the single wakes failed or took over 900 s"
    to=$(monotonic_ns)
    local -a servers=("$SERVER_PID")
    for pid in $(pgrep -P "$SERVER_PID" || true); do servers+=("$pid"); done
    stop_pid "$SERVER_PID" server
    SERVER_PID=""
    local -a files=()
    for pid in "${servers[@]}"; do [[ -f $sends/sends.$pid ]] && files+=("$sends/sends.$pid"); done
    ((${#files[@]} > 0)) || die "$target: no send times were written (is LD_PRELOAD honoured?)"
    STATS[$target]=$(send_stats "$from" "$to" "${files[@]}")
    WAKE[$target]=$(awk '$1 == "wake" { sub("p50_us=", "", $3); print $3 }' "$TMP/$target-single.out")
}

for target in $TARGETS; do
    log "$target: $ROUNDS single wakes, its sends timed"
    measure "$target"
done

printf '\nSend calls of the server during %s single wakes, %s, %s, load %s\n' "$ROUNDS" \
    "$(date -u '+%Y-%m-%d %H:%M UTC')" "$BINARY" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %8s %9s %9s %9s %9s %16s\n' target calls "p10 us" "p50 us" "p90 us" "p99 us" "wake p50 us"
for target in $TARGETS; do
    read -r calls p10 p50 p90 p99 <<<"${STATS[$target]}"
    printf '%-10s %8s %9s %9s %9s %9s %16s\n' "$target" "$calls" "$p10" "$p50" "$p90" "$p99" "${WAKE[$target]}"
done
