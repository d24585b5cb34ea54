#!/usr/bin/env bash
# What a write costs as its collection grows: the PATCH round trip p50 and the server's
# CPU per PATCH with nothing held, in a collection of SMALL documents and in one of LARGE,
# alternating round by round, so the ratio large/small is the figure (this machine's
# absolute numbers swing twofold). A store whose writes copy something proportional to
# the collection shows it here; one that copies a bounded amount gives ~1.0.
#
#   Benchmarks/write-scale.sh
#   ROUNDS=3 LARGE=1000000 Benchmarks/write-scale.sh
#
# Each round starts a fresh release server (`--database memory`, so no fsync hides the
# store's own work) on a data file of N documents {"id": i, "v": 0}, sends 1,000 warm-up
# PATCHes, then `client patch` PATCHes ids 1..WRITES once each on one keep-alive
# connection. The server's CPU is read from /proc before and after (user + system).
#
# Environment:
#   SMALL         documents in the small collection                     default 20000
#   LARGE         documents in the large collection                     default 400000
#   WRITES        PATCHes per run                                        default 10000
#   ROUNDS        runs per size, alternating                             default 2
#   LOOKOUT_BIN   measure this binary instead of building .build/release/lookout
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SMALL="${SMALL:-20000}"
LARGE="${LARGE:-400000}"
WRITES="${WRITES:-10000}"
ROUNDS="${ROUNDS:-2}"
((WRITES <= SMALL)) || die "WRITES ($WRITES) must not pass SMALL ($SMALL): each PATCH names an existing id"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/lookout-writescale.XXXXXX")"
SERVER_PID=""
trap 'stop_pid "$SERVER_PID" lookout; rm -rf -- "$TMP"' EXIT

cc -O2 -Wall -Wextra -o "$TMP/client" Benchmarks/longpoll/client.c
release_binary "$REPO_ROOT"
for size in "$SMALL" "$LARGE"; do
    items_data_file "$TMP/items-$size.json" "$size"
done

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# One run, in this shell (so that the exit trap stops its server): writes
# "p50_us cpu_us_per_write" to $TMP/result.
run() { # documents
    local size=$1 port token before after
    port=$(free_port)
    rm -rf "$TMP/data"
    "$LOOKOUT_BIN" --port "$port" --bind 127.0.0.1 --data-dir "$TMP/data" --data-file "$TMP/items-$size.json" \
        --database memory --log-level warning 2>"$TMP/lookout-$size.log" &
    SERVER_PID=$!
    wait_until_answers "http://127.0.0.1:$port/v1/items/1" "$SERVER_PID" lookout
    token="$(editor_token "http://127.0.0.1:$port")"
    "$TMP/client" patch --token "$token" --port "$port" --ids 1-1000 --value-base 100 >/dev/null ||
        die "warm-up PATCHes failed"
    before=$(cpu_ticks "$SERVER_PID")
    "$TMP/client" patch --token "$token" --port "$port" --ids "1-$WRITES" --value-base 9000 >"$TMP/patch.out" ||
        { cat "$TMP/patch.out" >&2; die "PATCHes failed"; }
    after=$(cpu_ticks "$SERVER_PID")
    # Every PATCH must have been answered 200: the client prints one line per write.
    local failed
    failed=$(awk '$1 == "write" && $3 != 200' "$TMP/patch.out" | wc -l)
    ((failed == 0)) || die "$failed PATCHes were not answered 200 at $size documents"
    stop_pid "$SERVER_PID" lookout
    SERVER_PID=""
    awk -v cpu=$(((after - before) * 10000)) -v n="$WRITES" '$1 == "summary" {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "p50_us") p50 = kv[2] }
        printf "%s %.1f\n", p50, cpu / n }' "$TMP/patch.out" >"$TMP/result"
}

LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
declare -a small_p50=() large_p50=() small_cpu=() large_cpu=()
for ((round = 1; round <= ROUNDS; round++)); do
    log "round $round: $SMALL documents"
    run "$SMALL"
    read -r p cpu <"$TMP/result"
    small_p50+=("$p") small_cpu+=("$cpu")
    log "round $round: $LARGE documents"
    run "$LARGE"
    read -r p cpu <"$TMP/result"
    large_p50+=("$p") large_cpu+=("$cpu")
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
sp="$(median "${small_p50[@]}")" lp="$(median "${large_p50[@]}")"
sc="$(median "${small_cpu[@]}")" lc="$(median "${large_cpu[@]}")"
printf '\nWrite cost by collection size, %s, %s, nproc %s, %s PATCHes per run, %s rounds alternating, load %s at start, %s at end\n' \
    "$(date -u '+%Y-%m-%d %H:%M UTC')" "$BINARY" "$(nproc)" "$WRITES" "$ROUNDS" "$LOAD_START" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %-22s %-22s %s\n' "figure" "$SMALL docs (runs)" "$LARGE docs (runs)" "large/small"
printf '%-34s %-22s %-22s %s\n' "PATCH round trip p50, us" "$sp (${small_p50[*]})" "$lp (${large_p50[*]})" "$(ratio "$lp" "$sp")"
printf '%-34s %-22s %-22s %s\n' "server CPU per PATCH, us" "$sc (${small_cpu[*]})" "$lc (${large_cpu[*]})" "$(ratio "$lc" "$sc")"
