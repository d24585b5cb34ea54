#!/usr/bin/env bash
# The latency budget of a single wake: where each microsecond goes between a write
# being read and the woken poll's answer being sent, stage by stage, stamped inside the
# server (LookoutTrace's WakeTrace, on only when LOOKOUT_TRACE_WAKES names a file).
#
#   Benchmarks/wake-budget.sh                     # both storage modes, 1000 rounds
#   MODES=memory ROUNDS=2000 Benchmarks/wake-budget.sh
#
# Per mode: a fresh release server with 20,000 public documents, 1,000 warm-up writes to
# items 19,001-20,000, the long-poll client's `single` run (one poll on items/7?fields=v,
# one PATCH on another connection, ROUNDS times), SIGTERM (the server writes its stamps),
# then per stage the p50 and p99 of the time since the previous stage, and the client's
# own write-sent -> answer-read figure. The client stamps each round on the server's clock
# (CLOCK_MONOTONIC), so two more rows place it: from the PATCH sent to the server's
# `received`, and from the server's `sent` to the answer read.
# Stamping costs a little itself (a clock read and a table update per stage), so the
# stages add up to slightly more than an untraced run.
#
# Environment:
#   MODES         Lookout --database modes to run                        default "memory sqlite"
#   ROUNDS        single-wake rounds per mode                            default 1000
#   LOOKOUT_BIN   measure this binary instead of building .build/release/lookout
#   BUSY          CPU-bound processes (`yes`) run beside it, as on a shared machine   default 0
#   GAP_US        microseconds the client waits between a poll and its write (the
#                 server's thread sleeps through it when over its polling)       default 1000
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

MODES="${MODES:-memory sqlite}"
ROUNDS="${ROUNDS:-1000}"
GAP_US="${GAP_US:-1000}"
[[ $GAP_US =~ ^[0-9]+$ ]] || die "GAP_US must be a whole number of microseconds, not '$GAP_US'"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/lookout-budget.XXXXXX")"
SERVER_PID=""
BUSY_PIDS=()
stop_busy() { for pid in "${BUSY_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap 'stop_busy; stop_pid "$SERVER_PID" lookout; rm -rf -- "$TMP"' EXIT

cc -O2 -Wall -Wextra -o "$TMP/client" Benchmarks/longpoll/client.c
release_binary "$REPO_ROOT"
items_data_file "$TMP/items.json" 20000

for ((i = 0; i < ${BUSY:-0}; i++)); do
    yes >/dev/null &
    BUSY_PIDS+=($!)
done

for mode in $MODES; do
    port=$(free_port)
    rm -rf "$TMP/data"
    LOOKOUT_TRACE_WAKES="$TMP/trace-$mode.tsv" "$LOOKOUT_BIN" --port "$port" --bind 127.0.0.1 \
        --data-dir "$TMP/data" --data-file "$TMP/items.json" --database "$mode" --log-level warning \
        2>"$TMP/lookout-$mode.log" &
    SERVER_PID=$!
    wait_until_answers "http://127.0.0.1:$port/v1/items/1" "$SERVER_PID" lookout
    token="$(editor_token "http://127.0.0.1:$port")"
    warm_up_writes "$TMP/client" "$TMP/warm-up-$mode.out" --token "$token" --port "$port" ||
        die "the 1,000 warm-up writes did not all succeed"
    "$TMP/client" single --token "$token" --port "$port" --id 7 --rounds "$ROUNDS" --gap-us "$GAP_US" \
        --stamps "$TMP/stamps-$mode.txt" >"$TMP/single-$mode.out"
    stop_pid "$SERVER_PID" lookout
    SERVER_PID=""
    printf '\n--database %s, %s rounds, %s us between poll and write, %s, %s CPU-bound beside it, load %s\n' \
        "$mode" "$ROUNDS" "$GAP_US" "$BINARY" "${BUSY:-0}" "$(cut -d' ' -f1-3 /proc/loadavg)"
    python3 - "$TMP/trace-$mode.tsv" "$TMP/stamps-$mode.txt" <<'PY'
import bisect, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
stages, rows = rows[0][1:], [[int(v) for v in row[1:]] for row in rows[1:]]
# Only complete single wakes: every stage stamped.
rows = [row for row in rows if all(row)]
def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))] / 1000
print(f"{'stage':<12} {'since':<12} {'p50 us':>8} {'p99 us':>8}")
for index in range(1, len(stages)):
    deltas = [row[index] - row[index - 1] for row in rows]
    print(f"{stages[index]:<12} {stages[index - 1]:<12} {pct(deltas, 50):>8.1f} {pct(deltas, 99):>8.1f}")
totals = [row[-1] - row[0] for row in rows]
print(f"{'total':<12} {stages[0]:<12} {pct(totals, 50):>8.1f} {pct(totals, 99):>8.1f}   ({len(rows)} wakes)")
# The client's side, on the same clock: each round's t0 (PATCH sent) and t1 (the poll's
# answer read), matched to the traced wake whose write was received between them.
rows.sort(key=lambda row: row[0])
received = [row[0] for row in rows]
before, after = [], []
for line in open(sys.argv[2]):
    sent, read = map(int, line.split())
    index = bisect.bisect_left(received, sent)
    if index < len(rows) and received[index] < read:
        before.append(received[index] - sent)
        after.append(read - rows[index][-1])
if before:
    print(f"{stages[0]:<12} {'client sent':<12} {pct(before, 50):>8.1f} {pct(before, 99):>8.1f}   ({len(before)} rounds matched)")
    print(f"{'client read':<12} {stages[-1]:<12} {pct(after, 50):>8.1f} {pct(after, 99):>8.1f}   (negative: read before the callback that stamps {stages[-1]})")
PY
    grep -E '^(wake|write_alone)' "$TMP/single-$mode.out" | sed 's/^/client: /'
done
