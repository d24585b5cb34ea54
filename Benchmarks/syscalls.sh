#!/usr/bin/env bash
# The system calls a single wake and a fan-out cost the server, Lookout (--database
# memory) against Nchan, counted by `strace -c -f` on the server's processes. Counts do
# not swing with the machine's load as times do, so they compare two builds, or Lookout
# and Nchan, on a busy machine:
#
#   single wake   ROUNDS rounds of the long-poll client's `single` after 100 unmeasured
#                 ones: calls per round, where a round is one wake (a poll, and a write on
#                 another connection; Lookout's client asks the poll's cursor with a GET
#                 first) and one write with nothing held
#   fan-out       FANOUT polls on one key, one write: calls per woken poll, from just before
#                 the write until every poll has its answer
#
# strace stops the traced threads at each call, so times are not measured here; only how
# many calls of each kind, and how many failed (EAGAIN for a read that finds nothing).
#
# Environment:
#   ROUNDS        single-wake rounds                         default 500
#   FANOUT        polls woken by the fan-out's write          default 10000
#   TARGETS       what to measure, from "lookout nchan"       default both
#   LOOKOUT_BIN   measure this binary instead of building .build/release/lookout
#   KEEP_TMP=1    keep the temp dir (strace summaries, server logs, client output)
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ROUNDS="${ROUNDS:-500}"
FANOUT="${FANOUT:-10000}"
TARGETS="${TARGETS:-lookout nchan}"
KEEP_TMP="${KEEP_TMP:-0}"
for name in ROUNDS FANOUT; do
    [[ ${!name} =~ ^[1-9][0-9]*$ ]] || die "$name must be a positive integer, not '${!name}'"
done
((FANOUT % 2 == 0)) || die "FANOUT must be even (two client processes hold half each)"
check_targets

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"

packages=()
command -v strace >/dev/null 2>&1 || packages+=(strace)
[[ " $TARGETS " != *" nchan "* ]] || add_nchan_packages
apt_install "${packages[@]}"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/lookout-syscalls.XXXXXX")"
SERVER_PID=""
STRACE_PID=""
declare -a CLIENT_PIDS=()
cleanup_at_exit client:CLIENT_PIDS strace:STRACE_PID server:SERVER_PID

release_binary "$REPO_ROOT"
CLIENT="$TMP/client"
cc -O2 -Wall -Wextra -o "$CLIENT" Benchmarks/longpoll/client.c
items_data_file "$TMP/items.json" 20000

PORT=""
TARGET_ARGS=()

start_target() { # target
    if [[ $1 == lookout ]]; then start_compared_lookout memory; else start_compared_nchan; fi
}

stop_target() {
    stop_pid "$SERVER_PID" server
    SERVER_PID=""
}

# Starts counting the calls of the server's processes (nginx's workers are its children)
# into FILE; returns once strace has attached to every thread.
strace_start() { # file
    local -a pids=()
    local pid
    for pid in "$SERVER_PID" $(pgrep -P "$SERVER_PID" || true); do pids+=(-p "$pid"); done
    strace -c -f -o "$1" "${pids[@]}" 2>"$1.err" &
    STRACE_PID=$!
    # strace reports each process it attached to, with all of its threads, on one line.
    local i
    for ((i = 0; i < 100; i++)); do
        (($(grep -c 'attached' "$1.err" 2>/dev/null || true) >= ${#pids[@]} / 2)) && return 0
        kill -0 "$STRACE_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$1.err" >&2
    die "strace did not attach to the server's processes (${pids[*]})"
}

strace_stop() {
    kill -INT "$STRACE_PID" 2>/dev/null || true
    wait "$STRACE_PID" 2>/dev/null || true
    STRACE_PID=""
}

# Prints "syscall calls errors" for each row of a `strace -c` summary.
strace_rows() { # file
    awk '$1 ~ /^[0-9.]+$/ && $NF ~ /^[a-z_0-9]+$/ && $NF != "total" {
        errors = (NF == 6) ? $5 : 0
        print $NF, $4, errors
    }' "$1"
}

declare -A CALLS=()
declare -A SEEN=()
record() { # figure target file divisor
    local name calls errors
    while read -r name calls errors; do
        CALLS[$1,$2,$name]=$(awk -v c="$calls" -v n="$4" 'BEGIN { printf "%.2f", c / n }')
        ((errors == 0)) || CALLS[$1,$2,$name]+=" ($(awk -v e="$errors" -v n="$4" 'BEGIN { printf "%.2f", e / n }') failed)"
        SEEN[$1,$name]=1
    done < <(strace_rows "$3")
}

single() { # target
    local target=$1
    start_target "$target"
    timeout 300 "$CLIENT" single "${TARGET_ARGS[@]}" --port "$PORT" --id 7 --rounds 100 >/dev/null ||
        die "$target: the unmeasured single wakes failed or took over 300 s"
    strace_start "$TMP/$target-single.strace"
    # 20 ms between a poll and its write, not 1: traced, nginx may read the poll after the
    # publish, and an Nchan subscriber then waits for a message that never comes.
    timeout 900 "$CLIENT" single "${TARGET_ARGS[@]}" --port "$PORT" --id 7 --rounds "$ROUNDS" --value-base 1000 \
        --gap-us 20000 >"$TMP/$target-single.out" || die "$target: the single wakes failed or took over 900 s"
    strace_stop
    stop_target
    # The client runs 10 unmeasured rounds of each kind before its ROUNDS: all are counted.
    record single "$target" "$TMP/$target-single.strace" $((ROUNDS + 10))
}

fanout() { # target
    local target=$1 p ok
    start_target "$target"
    local -a etag
    mapfile -t etag < <(etag_args "$target")
    conntrack_room "$FANOUT"
    CLIENT_PIDS=()
    for p in 0 1; do
        "$CLIENT" hold "${TARGET_ARGS[@]}" --port "$PORT" --src "127.0.0.$((60 + p))" -n $((FANOUT / 2)) \
            --same-id 1 "${etag[@]}" --wait 120 --timeout 150 >"$TMP/$target-fan-$p.out" 2>"$TMP/$target-fan-$p.err" &
        CLIENT_PIDS+=($!)
    done
    local i
    for ((i = 0; i < 1200; i++)); do
        [[ $(cat "$TMP/$target-fan-0.out" "$TMP/$target-fan-1.out" 2>/dev/null | grep -c '^ready ') == 2 ]] && break
        kill -0 "$SERVER_PID" || die "$target died while clients connected"
        sleep 0.1
    done
    ((i < 1200)) || die "$target: clients not ready after 120 s"
    sleep 1
    strace_start "$TMP/$target-fan.strace"
    "$CLIENT" patch "${TARGET_ARGS[@]}" --port "$PORT" --ids 1 --value-base 5000 >"$TMP/$target-fan-write.out"
    for p in "${CLIENT_PIDS[@]}"; do wait "$p" || true; done
    CLIENT_PIDS=()
    strace_stop
    stop_target
    ok=$(cat "$TMP/$target-fan"-[01].out | grep -o '\bok200=[0-9]*' | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }')
    ((ok == FANOUT)) || die "$target: the fan-out woke $ok of $FANOUT polls"
    record fanout "$target" "$TMP/$target-fan.strace" "$FANOUT"
}

for target in $TARGETS; do
    log "$target: $ROUNDS single wakes under strace"
    single "$target"
    log "$target: a fan-out to $FANOUT under strace"
    fanout "$target"
done

table() { # figure title
    local figure=$1 name target
    printf '\n%s\n' "$2"
    printf '%-16s' syscall
    for target in $TARGETS; do printf ' %-24s' "$target"; done
    printf '\n'
    for name in $(for key in "${!SEEN[@]}"; do [[ $key == "$figure,"* ]] && echo "${key#*,}"; done | sort); do
        # Calls made less than once per 20 rounds or polls are start-up and housekeeping.
        local shown=0 value
        for target in $TARGETS; do
            value=${CALLS[$figure,$target,$name]:-0}
            awk -v v="${value%% *}" 'BEGIN { exit !(v >= 0.05) }' && shown=1
        done
        ((shown)) || continue
        printf '%-16s' "$name"
        for target in $TARGETS; do printf ' %-24s' "${CALLS[$figure,$target,$name]:--}"; done
        printf '\n'
    done
}

printf 'System calls of the server, %s UTC, %s, nproc %s, load %s\n' "$(date -u '+%Y-%m-%d %H:%M')" "$BINARY" \
    "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
table single "per single-wake round ($ROUNDS rounds; a round is a wake and a write with nothing held)"
table fanout "per woken poll, fan-out to $FANOUT (write sent -> every answer read)"
