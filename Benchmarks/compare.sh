#!/usr/bin/env bash
# Lookout side by side with what users would pick instead, on this machine, in one run:
#
#   throughput   GET /v1/info_feed?page=1 against nginx serving the same bytes as a static
#                file (Benchmarks/throughput.sh, ROUNDS rounds alternating), at each of
#                CONNECTION_COUNTS open connections
#   long-poll    against nginx's Nchan module (libnginx-mod-nchan) with long-poll
#                subscribers, ROUNDS rounds alternating Lookout with in-memory storage,
#                Lookout with SQLite (the default, durable), Nchan, ..., each round on
#                freshly started servers:
#                  memory per held session at 10,000 (PSS of every server process, after
#                    minus before, from /proc/PID/smaps_rollup, so shared memory counts once)
#                  fan-out: 1,000, 10,000 and 19,000 sessions on one field/channel, write
#                    sent -> last answer
#                  selective wake: 10,000 sessions on 10,000 fields/channels; 20 writes to
#                    20 of them must answer exactly those 20; the median write round trip
#                  single wake: one session, one write: write sent -> answer, p50 and p99
#   sse          against Nchan's EventSource subscribers, in the same alternating rounds,
#                each on freshly started servers (Lookout: GET /v1/items/N?fields=v with
#                Accept: text/event-stream; Nchan: GET /events/N; every stream has
#                received its first event, the current value, before anything is measured):
#                  memory per stream at 10,000 on 10,000 keys (PSS, as for held sessions)
#                  fan-out: 10,000 streams on one key, write sent -> last stream has the
#                    event; every stream must get exactly one event, with the value written
#                  single event: one stream, one write: write sent -> event, p50 and p99
#   durability   one durable SQLite commit on the same disk (WAL, synchronous=FULL, as
#                Lookout's), p50 and p99 of 500 at the start of every round, timed once the
#                log has wrapped (after 2,500), the median of the rounds: what SQLite's
#                figures may add to Nchan's. Timed twice: back to back, as the fan-outs'
#                and selective writes follow each other, and each after the 1 ms pause
#                that comes before every single wake's and single event's write, because
#                this disk's commit after a pause costs more (Benchmarks/README.md, stop
#                48). Beside them, timed back to back, a commit of Lookout's own shape (its
#                schema, a document replaced among 20,000)
#
# Every server whose writes are timed first takes 1,000 writes to items it does not
# otherwise use. SQLite's log file grows until its first checkpoint wraps it, and while it
# grows each commit also allocates blocks and syncs the file's inode: ~50 us more per
# commit on this disk. A running server is past that, and the commit subtracted is timed
# past it too, so the two are measured in the same state (Benchmarks/README.md, stop 45).
#
# It prints one table: per figure the median of the rounds, the range, the goal (README),
# and the ratio Lookout / anchor, for each storage mode; SQLite's goals are Nchan's plus
# one durable commit.
#
# Environment:
#   PHASES            what to run, from "throughput longpoll sse"           default all three
#   ROUNDS            rounds per target                                     default 3
#   DURATION          wrk -d of the throughput runs                         default 10s
#   CONNECTION_COUNTS wrk -c of the throughput runs                         default "64 256 1000"
#   SINGLE_ROUNDS     single-wake rounds per run                            default 1000
#   MODES             Lookout's storage modes to run                        default "memory sqlite"
#   FANOUTS           fan-out sizes                                         default "1000 10000 19000"
#   SSE_FANOUTS       SSE fan-out sizes                                     default 10000
#   BUDGET_FANOUT     after the measured fan-outs, one more of this size under
#                     `perf record -a -g` (apt: linux-perf), for a table of where
#                     each server's CPU went per woken poll (cpu-budget.py)     default none
#   LOOKOUT_BIN       measure this binary instead of building .build/release/lookout
#   KEEP_TMP=1        keep the temp dir (configs, logs, raw client output)
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PHASES="${PHASES:-throughput longpoll sse}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-10s}"
CONNECTION_COUNTS="${CONNECTION_COUNTS:-64 256 1000}"
SINGLE_ROUNDS="${SINGLE_ROUNDS:-1000}"
MODES="${MODES:-memory sqlite}"
FANOUTS="${FANOUTS:-1000 10000 19000}"
SSE_FANOUTS="${SSE_FANOUTS:-10000}"
BUDGET_FANOUT="${BUDGET_FANOUT:-}"
KEEP_TMP="${KEEP_TMP:-0}"
SESSIONS=10000

phase() { [[ " $PHASES " == *" $1 "* ]]; }
for name in $PHASES; do
    [[ $name == throughput || $name == longpoll || $name == sse ]] || die "unknown phase '$name' in PHASES"
done

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"

install_missing() {
    local -a packages=()
    command -v wrk >/dev/null 2>&1 || packages+=(wrk)
    add_nchan_packages
    [[ -z $BUDGET_FANOUT ]] || command -v perf >/dev/null 2>&1 || packages+=(linux-perf)
    apt_install "${packages[@]}"
}
install_missing

TMP="$(mktemp -d "${TMPDIR:-/tmp}/lookout-compare.XXXXXX")"
SERVER_PID=""
declare -a CLIENT_PIDS=()
cleanup_at_exit client:CLIENT_PIDS server:SERVER_PID

# --- builds --------------------------------------------------------------------------

release_binary "$REPO_ROOT"
export LOOKOUT_BIN  # throughput.sh measures the same binary
CLIENT="$TMP/client"
cc -O2 -Wall -Wextra -o "$CLIENT" Benchmarks/longpoll/client.c

# --- throughput ----------------------------------------------------------------------

phase throughput || CONNECTION_COUNTS=""
for connections in $CONNECTION_COUNTS; do
    log "throughput: CONNECTIONS=$connections ROUNDS=$ROUNDS DURATION=$DURATION Benchmarks/throughput.sh"
    CONNECTIONS="$connections" ROUNDS="$ROUNDS" DURATION="$DURATION" bash Benchmarks/throughput.sh \
        >"$TMP/throughput-$connections.out" 2>"$TMP/throughput-$connections.err" ||
        { cat "$TMP/throughput-$connections.err" >&2; die "throughput.sh failed"; }
    cat "$TMP/throughput-$connections.out" >&2
done

# --- long-poll and SSE: data ---------------------------------------------------------

python3 - Sources/LookoutApp/Resources/demo-data.json "$TMP/items.json" <<'PY'
import json, sys
users = json.load(open(sys.argv[1]))["users"]
docs = [{"id": i, "v": 0} for i in range(1, 20001)]
json.dump({"collections": [{"name": "items", "public": True, "documents": docs}], "users": users},
          open(sys.argv[2], "w"), separators=(",", ":"))
PY

field() { grep -o "\b$1=[0-9.]*" | head -n 1 | cut -d= -f2; }

# PSS of a process and its children, in KiB.
pss_kib() {
    local total=0 pid kib
    for pid in "$1" $(pgrep -P "$1" || true); do
        kib=$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
        total=$((total + kib))
    done
    echo "$total"
}

PORT=""
TARGET_ARGS=()

# start_clients MODE NAME COUNT (same ID | ids FROM) [client options]: 2 clients x COUNT/2
# polls (MODE hold) or streams (MODE streams), each process on its own source address (one
# process may hold ~20,000 files); returns 1 s after both are ready.
start_clients() {
    local mode=$1 name=$2 count=$3 kind=$4 arg=$5 p
    shift 5
    local per_client=$((count / 2))
    conntrack_room "$count"
    CLIENT_PIDS=()
    for p in 0 1; do
        local -a ids
        if [[ $kind == same ]]; then ids=(--same-id "$arg"); else ids=(--ids-from $((arg + p * per_client))); fi
        "$CLIENT" "$mode" "${TARGET_ARGS[@]}" --port "$PORT" --src "127.0.0.$((20 + p))" -n "$per_client" \
            "${ids[@]}" "$@" >"$TMP/$name-$p.out" 2>"$TMP/$name-$p.err" &
        CLIENT_PIDS+=($!)
    done
    local i
    for ((i = 0; i < 1200; i++)); do
        [[ $(cat "$TMP/$name-0.out" "$TMP/$name-1.out" 2>/dev/null | grep -c '^ready ') == 2 ]] && { sleep 1; return 0; }
        kill -0 "$SERVER_PID" || die "$TARGET died while clients connected"
        sleep 0.1
    done
    cat "$TMP/$name"-[01].err >&2
    die "$TARGET: clients not ready after 120 s"
}

stop_clients() {
    local pid
    for pid in "${CLIENT_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    CLIENT_PIDS=()
}

# hold NAME COUNT (same ID | ids FROM) WAIT [--print-each]: 2 clients x COUNT/2 polls.
hold() {
    local name=$1 count=$2 kind=$3 arg=$4 wait_s=$5
    shift 5
    local -a etag
    mapfile -t etag < <(etag_args "$TARGET")
    start_clients hold "$name" "$count" "$kind" "$arg" "${etag[@]}" --wait "$wait_s" --timeout $((wait_s + 30)) "$@"
}

# finish_hold NAME -> R_OK200 R_LAST, for clients started with --keep-open: once both have
# printed their result, they are told to close their connections and exit. A client done
# first would otherwise close its half while the other still reads its answers, and the
# server's work for those closes would count in the fan-out's time.
finish_hold() {
    local pid i
    for ((i = 0; i < 2400; i++)); do
        (($(cat "$TMP/$1"-[01].out | grep -c '^result ') == 2)) && break
        for pid in "${CLIENT_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || break 2; done
        sleep 0.05
    done
    for pid in "${CLIENT_PIDS[@]}"; do kill -USR2 "$pid" 2>/dev/null || true; wait "$pid" || true; done
    CLIENT_PIDS=()
    R_OK200=$(cat "$TMP/$1"-[01].out | grep -o '\bok200=[0-9]*' | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }')
    R_LAST=$(for f in "$TMP/$1"-[01].out; do grep '^result ' "$f" | field last_ns; done | sort -n | tail -n 1)
}

# finish_streams NAME COUNT -> R_LAST: the streams' clients must each end with every stream
# having had exactly one event after its first, with the value written (--expect).
finish_streams() {
    local name=$1 count=$2 pid status=0 right
    for pid in "${CLIENT_PIDS[@]}"; do wait "$pid" || status=$?; done
    CLIENT_PIDS=()
    right=$(for f in "$TMP/$name"-[01].out; do grep '^result ' "$f" | field right; done | awk '{ s += $1 } END { print s + 0 }')
    if ((status != 0 || right != count)); then
        cat "$TMP/$name"-[01].out "$TMP/$name"-[01].err >&2
        die "$TARGET: $right of $count streams had exactly one event with the value written"
    fi
    R_LAST=$(for f in "$TMP/$name"-[01].out; do grep '^result ' "$f" | field last_ns; done | sort -n | tail -n 1)
}

write() { # id value -> the client's output
    "$CLIENT" patch "${TARGET_ARGS[@]}" --port "$PORT" --ids "$1" --value-base "$2"
}

declare -A RESULTS=()
record() { RESULTS[$1,$2]+="$3 "; }  # figure target value

start_target() { if [[ $TARGET == lookout-* ]]; then start_compared_lookout "${TARGET#lookout-}"; else start_compared_nchan; fi; }

# A server whose writes are timed: started, then warmed (warm_up_writes; no phase holds or
# writes items 19,001-20,000).
start_target_for_writes() {
    start_target
    warm_up_writes "$CLIENT" "$TMP/$TARGET-warm-up.out" "${TARGET_ARGS[@]}" --port "$PORT" ||
        die "$TARGET: the 1,000 warm-up writes did not all succeed"
}

per_session() { awk -v a="$2" -v b="$1" -v n="$SESSIONS" 'BEGIN { printf "%.2f", (a - b) / n }'; }  # before after
ms_since() { awk -v a="$2" -v b="$1" 'BEGIN { printf "%.1f", (a - b) / 1e6 }'; }                      # t0 t1 (ns)

# One more fan-out of BUDGET_FANOUT under `perf record -a -g` (not among the measured
# ones: perf slows what it records); records the server's CPU per woken poll by bucket.
budget_fanout() { # round
    local name="$TARGET-budget-$1" perf_pid line t0 bucket value
    hold "$name" "$BUDGET_FANOUT" same 1 60 --keep-open
    perf record -a -g -k mono -F 4000 -o "$TMP/$name.perf" >/dev/null 2>&1 &
    perf_pid=$!
    sleep 1  # perf has started recording
    VALUE=$((VALUE + 1))
    line=$(write 1 "$VALUE" | grep '^write ')
    t0=$(awk '{ print $4 }' <<<"$line")
    finish_hold "$name"
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    ((R_OK200 == BUDGET_FANOUT)) || log "WARNING: $TARGET budget fan-out woke $R_OK200 of $BUDGET_FANOUT"
    # shellcheck disable=SC2046 # the server's process ids, one word each
    while IFS=$'\t' read -r bucket value; do
        record "budget:$bucket" "$TARGET" "$value"
        BUDGET_BUCKETS[$bucket]=1
    done < <(python3 Benchmarks/cpu-budget.py "$TMP/$name.perf" "$t0" "$R_LAST" "$R_OK200" \
        "$SERVER_PID" $(pgrep -P "$SERVER_PID" || true))
    [[ $KEEP_TMP == 1 ]] || rm -f "$TMP/$name.perf"
}
declare -A BUDGET_BUCKETS=()

VALUE=1000
one_round() { # target round
    TARGET=$1
    local round=$2 before after t0 line
    # memory per held session
    start_target
    sleep 1
    before=$(pss_kib "$SERVER_PID")
    hold "$TARGET-held-$round" "$SESSIONS" ids 1 15
    after=$(pss_kib "$SERVER_PID")
    record memory "$TARGET" "$(per_session "$before" "$after")"
    stop_clients
    stop_pid "$SERVER_PID" "$TARGET"
    SERVER_PID=""

    # fan-out, selective and single wake on one fresh server
    start_target_for_writes
    local size
    for size in $FANOUTS; do
        hold "$TARGET-fan$size-$round" "$size" same 1 60 --keep-open
        VALUE=$((VALUE + 1))
        line=$(write 1 "$VALUE" | grep '^write ')
        t0=$(awk '{ print $4 }' <<<"$line")
        finish_hold "$TARGET-fan$size-$round"
        ((R_OK200 == size)) || log "WARNING: $TARGET fan-out woke $R_OK200 of $size"
        record "fanout$size" "$TARGET" "$(ms_since "$t0" "$R_LAST")"
        record "fanout${size}_woken" "$TARGET" "$R_OK200"
    done
    [[ -z $BUDGET_FANOUT ]] || budget_fanout "$round"

    # 20 writes, each to a different held id: each must answer exactly its own poll.
    hold "$TARGET-sel-$round" "$SESSIONS" ids 1 30 --print-each
    local wake_ids answered wrong
    wake_ids=$(seq -s, 242 500 9999)
    write "$wake_ids" $((VALUE + 1)) >"$TMP/$TARGET-sel-$round-writes.out"
    VALUE=$((VALUE + 100))
    # shellcheck disable=SC2046 # one value per line
    record selective_us "$TARGET" "$(median $(awk '$1 == "write" { printf "%.0f\n", ($5 - $4) / 1000 }' \
        "$TMP/$TARGET-sel-$round-writes.out"))"
    sleep 2
    answered=$(cat "$TMP/$TARGET-sel-$round"-[01].out | grep -c '^resp ' || true)
    wrong=$(cat "$TMP/$TARGET-sel-$round"-[01].out | awk -v ids=",$wake_ids," '$1 == "resp" && index(ids, "," $2 ",") == 0' | wc -l)
    record selective_answered "$TARGET" "$answered/$wrong"
    stop_clients

    "$CLIENT" single "${TARGET_ARGS[@]}" --port "$PORT" --id 7 --rounds "$SINGLE_ROUNDS" --value-base $((VALUE + 10)) \
        >"$TMP/$TARGET-single-$round.out"
    line=$(grep '^wake ' "$TMP/$TARGET-single-$round.out")
    record wake_p50 "$TARGET" "$(field p50_us <<<"$line")"
    record wake_p99 "$TARGET" "$(field p99_us <<<"$line")"
    stop_pid "$SERVER_PID" "$TARGET"
    SERVER_PID=""
    log "round $round $TARGET: memory ${RESULTS[memory,$TARGET]}KiB; fan-out 10k ${RESULTS[fanout10000,$TARGET]-}ms; selective answered ${RESULTS[selective_answered,$TARGET]}; wake p99 ${RESULTS[wake_p99,$TARGET]}us"
}

# Every stream is established and idle (it has had its first event, the key's current
# value) before anything is measured. Nchan's EventSource sends a channel's buffered
# message first, so each key is written before its streams open, on both servers alike.
sse_round() { # target round
    TARGET=$1
    local round=$2 before after t0 line size
    # memory per stream
    start_target
    VALUE=$((VALUE + SESSIONS))
    write "1-$SESSIONS" "$VALUE" >/dev/null
    sleep 1
    before=$(pss_kib "$SERVER_PID")
    start_clients streams "$TARGET-sse-held-$round" "$SESSIONS" ids 1 --timeout 120
    after=$(pss_kib "$SERVER_PID")
    record sse_memory "$TARGET" "$(per_session "$before" "$after")"
    stop_clients
    [[ $(cat "$TMP/$TARGET-sse-held-$round"-[01].out | grep -c "^ready $((SESSIONS / 2)) ") == 2 ]] ||
        die "$TARGET: not every one of $SESSIONS streams had its first event"
    stop_pid "$SERVER_PID" "$TARGET"
    SERVER_PID=""

    # single event, and each fan-out, on a fresh server: a server may keep a stream whose
    # client has gone until a heartbeat fails to reach it
    start_target_for_writes
    "$CLIENT" stream-single "${TARGET_ARGS[@]}" --port "$PORT" --id 7 --rounds "$SINGLE_ROUNDS" --value-base "$VALUE" \
        >"$TMP/$TARGET-sse-single-$round.out" || die "$TARGET: stream-single failed: $(cat "$TMP/$TARGET-sse-single-$round.out")"
    VALUE=$((VALUE + SINGLE_ROUNDS + 20))
    line=$(grep '^event ' "$TMP/$TARGET-sse-single-$round.out")
    record sse_p50 "$TARGET" "$(field p50_us <<<"$line")"
    record sse_p99 "$TARGET" "$(field p99_us <<<"$line")"
    stop_pid "$SERVER_PID" "$TARGET"
    SERVER_PID=""
    for size in $SSE_FANOUTS; do
        start_target_for_writes
        write 1 $((VALUE + 1)) >/dev/null
        VALUE=$((VALUE + 2))
        start_clients streams "$TARGET-ssefan$size-$round" "$size" same 1 --expect "$VALUE" --timeout 60
        line=$(write 1 "$VALUE" | grep '^write ')
        t0=$(awk '{ print $4 }' <<<"$line")
        finish_streams "$TARGET-ssefan$size-$round" "$size"
        record "ssefanout$size" "$TARGET" "$(ms_since "$t0" "$R_LAST")"
        record "ssefanout${size}_right" "$TARGET" "$size"
        stop_pid "$SERVER_PID" "$TARGET"
        SERVER_PID=""
    done
    log "round $round $TARGET: SSE memory ${RESULTS[sse_memory,$TARGET]}KiB; fan-out ${RESULTS[ssefanout10000,$TARGET]-}ms; single event p99 ${RESULTS[sse_p99,$TARGET]}us"
}

# --- one durable commit on this disk ------------------------------------------------

# Times 500 SQLite commits (WAL, synchronous=FULL, as Lookout's) in a new file on the same
# disk, after 2,500 untimed ones: by then the log has wrapped at its checkpoints (every
# 1,000 pages), so commits no longer grow it, as a running server's do not. Prints "p50
# p99" in microseconds. Run in every round: this disk's sync time moves from minute to
# minute by more than a whole wake.
#   row       one row of a one-row table: the least a durable commit costs, the allowance
#             SQLite's figures get
#   document  the shape of Lookout's commit of one PATCH, in its schema: SQLite's
#             data_version read, and a document replaced among 20,000 (items 7 and
#             19,001-20,000 in turn, as the rounds and their warm-up write): printed beside
#             the allowance, to show how much of what SQLite adds is its own commit's
#   pause     (third argument, microseconds) each timed commit comes this long after the
#             one before, as a single wake's does after the client's pause (client.c's
#             --gap-us and stream-single's 1 ms): the disk has been idle that long
commit_times() { # file shape [pause-us]
    python3 - "$1" "$2" "${3:-0}" <<'PY'
import sqlite3, sys, time
pause = int(sys.argv[3]) / 1e6
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=FULL")
if sys.argv[2] == "row":
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    db.execute("INSERT INTO t VALUES (1, '')")
    begin = "BEGIN"
    statements = [lambda i: db.execute("UPDATE t SET v = ? WHERE id = 1", ('{"id":1,"v":%d}' % i,))]
else:  # Lookout's schema and statements (Sources/LookoutPersistence/SQLitePersistence.swift)
    db.execute("""CREATE TABLE documents (collection TEXT NOT NULL, id INTEGER NOT NULL, fields TEXT NOT NULL,
        revisions TEXT NOT NULL, created INTEGER NOT NULL, field_names_revision INTEGER NOT NULL,
        PRIMARY KEY (collection, id)) WITHOUT ROWID""")
    db.execute("BEGIN")
    db.executemany("INSERT INTO documents VALUES ('items', ?, '{\"v\":0}', '{\"v\":0}', 0, 0)",
                   ((i,) for i in range(1, 20001)))
    db.execute("COMMIT")
    begin = "BEGIN IMMEDIATE"
    # The document row carries the write's revision, so meta is not written (stop 47).
    statements = [
        lambda i: db.execute("PRAGMA data_version").fetchone(),
        lambda i: db.execute("INSERT OR REPLACE INTO documents VALUES ('items', ?, ?, ?, 0, 0)",
                             (7 if i % 2 else 19001 + i % 1000, '{"v":%d}' % i, '{"v":%d}' % i)),
    ]
times = []
for i in range(3000):
    if pause and i >= 2500:
        time.sleep(pause)
    t0 = time.perf_counter_ns()
    db.execute(begin)
    for statement in statements:
        statement(i)
    db.execute("COMMIT")
    times.append(time.perf_counter_ns() - t0)
times = sorted(times[2500:])
print("%.1f %.1f" % (times[len(times) // 2] / 1000, times[int(len(times) * 0.99)] / 1000))
PY
}

TARGETS=()
for mode in $MODES; do TARGETS+=("lookout-$mode"); done
TARGETS+=(nchan)
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
COMMIT_P50S=()
COMMIT_P99S=()
PAUSED_P50S=()
PAUSED_P99S=()
DOCUMENT_P50S=()
DOCUMENT_P99S=()
for ((round = 1; round <= ROUNDS; round++)); do
    read -r commit_p50 commit_p99 < <(commit_times "$TMP/commit-$round.sqlite" row)
    COMMIT_P50S+=("$commit_p50")
    COMMIT_P99S+=("$commit_p99")
    read -r paused_p50 paused_p99 < <(commit_times "$TMP/paused-$round.sqlite" row 1000)
    PAUSED_P50S+=("$paused_p50")
    PAUSED_P99S+=("$paused_p99")
    read -r document_p50 document_p99 < <(commit_times "$TMP/document-$round.sqlite" document)
    DOCUMENT_P50S+=("$document_p50")
    DOCUMENT_P99S+=("$document_p99")
    rm -f "$TMP/commit-$round.sqlite"* "$TMP/paused-$round.sqlite"* "$TMP/document-$round.sqlite"*
    log "round $round: 500 durable SQLite commits (WAL, synchronous=FULL): one row p50 $commit_p50 us, p99 $commit_p99 us; one row after a 1 ms pause p50 $paused_p50 us, p99 $paused_p99 us; Lookout's shape p50 $document_p50 us, p99 $document_p99 us"
    for target in "${TARGETS[@]}"; do
        if phase longpoll; then one_round "$target" "$round"; fi
        if phase sse; then sse_round "$target" "$round"; fi
    done
done
# The median of the rounds' commits is what SQLite's figures may add to Nchan's.
COMMIT_P50=$(median "${COMMIT_P50S[@]}")
COMMIT_P99=$(median "${COMMIT_P99S[@]}")
PAUSED_P50=$(median "${PAUSED_P50S[@]}")
PAUSED_P99=$(median "${PAUSED_P99S[@]}")

# --- the table -----------------------------------------------------------------------

stats() { # values... -> "median min max"
    local med
    med=$(median "$@")
    printf '%s %s %s\n' "$med" "$(printf '%s\n' "$@" | sort -g | head -n 1)" "$(printf '%s\n' "$@" | sort -g | tail -n 1)"
}
verdict() { # ratio goal-op goal (below 0: the commit subtracted was more than the figure, so no verdict)
    awk -v r="$1" -v op="$2" -v g="$3" 'BEGIN { ok = (op == ">=") ? r >= g : r <= g
        print r < 0 ? "n/a (commit > figure)" : ok ? "met" : "NOT met" }'
}
line() { # label unit lookout-values anchor-values goal-op goal anchor-name
    local label=$1 unit=$2 op=$5 goal=$6 anchor=$7 ratio lk_med lk_min lk_max ng_med ng_min ng_max
    # shellcheck disable=SC2086 # the values are a space-separated list
    read -r lk_med lk_min lk_max <<<"$(stats $3)"
    # shellcheck disable=SC2086
    read -r ng_med ng_min ng_max <<<"$(stats $4)"
    ratio=$(awk -v a="$lk_med" -v b="$ng_med" 'BEGIN { printf "%.2f", (b == 0 ? 0 : a / b) }')
    printf '%-40s %10s %-19s %10s %-19s %7s  %-9s %s\n' "$label" "$lk_med" "($lk_min-$lk_max $unit)" \
        "$ng_med" "($ng_min-$ng_max)" "$ratio" "$op $goal" "$(verdict "$ratio" "$op" "$goal") ($anchor)"
}

printf '\nLookout vs nginx / Nchan, %s, %s, nproc %s, Lookout modes %s, %s rounds alternating, load %s at start, %s at end\n' \
    "$(date -u '+%Y-%m-%d %H:%M UTC')" "$BINARY" "$(nproc)" "$MODES" "$ROUNDS" \
    "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-40s %10s %-19s %10s %-19s %7s  %-9s %s\n' figure lookout '(range)' anchor '(range)' ratio goal verdict
for connections in $CONNECTION_COUNTS; do
    out="$TMP/throughput-$connections.out"
    tp_lk=$(awk '$1 == "lookout" { print $2 }' "$out")
    tp_ng=$(awk '$1 == "nginx" { print $2 }' "$out")
    tp_ratio=$(awk -v a="$tp_lk" -v b="$tp_ng" 'BEGIN { printf "%.2f", a / b }')
    p99_lk=$(awk '$1 == "lookout" { print $4 }' "$out")
    p99_ng=$(awk '$1 == "nginx" { print $4 }' "$out")
    p99_ratio=$(awk -v a="$p99_lk" -v b="$p99_ng" 'BEGIN { printf "%.2f", a / b }')
    printf '%-40s %10s %-19s %10s %-19s %7s  %-9s %s\n' "GET info_feed?page=1, req/s (wrk -c$connections)" "$tp_lk" \
        "($(awk '$1 == "lookout" { print $3 }' "$out"))" "$tp_ng" "($(awk '$1 == "nginx" { print $3 }' "$out"))" \
        "$tp_ratio" ">= 1.0" "$(verdict "$tp_ratio" ">=" 1.0) (nginx static file)"
    printf '%-40s %10s %-19s %10s %-19s %7s  %-9s %s\n' "  p99 ms (median of rounds)" "$p99_lk" "" "$p99_ng" "" \
        "$p99_ratio" "<= 1.0" "$(verdict "$p99_ratio" "<=" 1.0)"
done
plus() { # values... allowance: each value minus the allowance, for the ratio against Nchan
    local offset=${*: -1}
    printf '%s\n' "${@:1:$#-1}" | awk -v o="$offset" '{ if (o == 0) printf "%s ", $1; else printf "%.1f ", $1 - o }'
}
against_nchan() { # label unit figure allowance goal: Lookout's figure (each value minus the allowance) / Nchan's
    # shellcheck disable=SC2086 # the values are a space-separated list
    line "$1" "$2" "$(plus ${RESULTS[$3,$target]} "$4")" "${RESULTS[$3,nchan]}" "<=" "$5" Nchan
}
for mode in $MODES; do
    target="lookout-$mode"
    # SQLite's goals allow one durable commit more than Nchan's: for the single wake and
    # the single event, one made after the pause their writes come after.
    extra_p50=0
    single_p50=0
    single_p99=0
    if [[ $mode == sqlite ]]; then
        extra_p50=$COMMIT_P50
        single_p50=$PAUSED_P50
        single_p99=$PAUSED_P99
    fi
    extra_ms=$(awk -v u="$extra_p50" 'BEGIN { print u / 1000 }')
    printf -- '-- Lookout --database %s%s\n' "$mode" \
        "$([[ $mode == sqlite ]] && printf ' (ratios after subtracting one durable commit: p50 %s us, p99 %s us; single wake and event: one after a 1 ms pause, p50 %s us, p99 %s us)' \
            "$COMMIT_P50" "$COMMIT_P99" "$PAUSED_P50" "$PAUSED_P99")"
    if phase longpoll; then
        against_nchan "memory per held session, KiB (10,000)" KiB memory 0 0.5
        for size in $FANOUTS; do against_nchan "fan-out to $size on one key, ms" ms "fanout$size" "$extra_ms" 1.0; done
        against_nchan "selective: write waking 1 of 10k, p50 us" us selective_us "$extra_p50" 1.5
        against_nchan "single wake p50, us" us wake_p50 "$single_p50" 1.0
        against_nchan "single wake p99, us" us wake_p99 "$single_p99" 1.0
    fi
    if phase sse; then
        against_nchan "memory per SSE stream, KiB (10,000)" KiB sse_memory 0 0.5
        for size in $SSE_FANOUTS; do against_nchan "SSE fan-out to $size, ms" ms "ssefanout$size" "$extra_ms" 1.0; done
        against_nchan "SSE single event p50, us" us sse_p50 "$single_p50" 1.0
        against_nchan "SSE single event p99, us" us sse_p99 "$single_p99" 1.0
    fi
    if phase longpoll; then
        for size in $FANOUTS; do
            printf 'fan-out to %s woken per round: lookout %s; nchan %s\n' "$size" "${RESULTS[fanout${size}_woken,$target]}" \
                "${RESULTS[fanout${size}_woken,nchan]}"
        done
        printf 'selective: polls answered by the 20 writes / of them not written to, per round: lookout %s; nchan %s (20/0 is right)\n' \
            "${RESULTS[selective_answered,$target]}" "${RESULTS[selective_answered,nchan]}"
    fi
    if phase sse; then
        for size in $SSE_FANOUTS; do
            printf 'SSE fan-out to %s: streams with exactly one event, the value written, per round: lookout %s; nchan %s\n' \
                "$size" "${RESULTS[ssefanout${size}_right,$target]}" "${RESULTS[ssefanout${size}_right,nchan]}"
        done
        printf 'SSE single event: every one of %s writes brought exactly one event with its value, every round (checked)\n' \
            "$((SINGLE_ROUNDS + 10))"
    fi
done
printf 'one durable SQLite commit on this disk, median of the rounds: p50 %s us (rounds: %s), p99 %s us (rounds: %s)\n' \
    "$COMMIT_P50" "${COMMIT_P50S[*]}" "$COMMIT_P99" "${COMMIT_P99S[*]}"
printf 'the same disk, one durable commit 1 ms after the one before (as a single wake'"'"'s), median of the rounds: p50 %s us (rounds: %s), p99 %s us (rounds: %s)\n' \
    "$PAUSED_P50" "${PAUSED_P50S[*]}" "$PAUSED_P99" "${PAUSED_P99S[*]}"
printf "the same disk, a commit of Lookout's shape (a document replaced among 20,000), median of the rounds: p50 %s us (rounds: %s), p99 %s us (rounds: %s)\n" \
    "$(median "${DOCUMENT_P50S[@]}")" "${DOCUMENT_P50S[*]}" "$(median "${DOCUMENT_P99S[@]}")" "${DOCUMENT_P99S[*]}"
if [[ -n $BUDGET_FANOUT ]] && phase longpoll; then
    printf '\nServer CPU per woken poll during a fan-out to %s, us (median of rounds; perf record -a -g):\n' "$BUDGET_FANOUT"
    targets=()
    for mode in $MODES; do targets+=("lookout-$mode"); done
    targets+=(nchan)
    printf '%-42s' bucket
    printf ' %15s' "${targets[@]}"
    printf '\n'
    while IFS= read -r bucket; do
        printf '%-42s' "$bucket"
        for target in "${targets[@]}"; do
            # shellcheck disable=SC2086 # the values are a space-separated list
            printf ' %15s' "$( [[ -n ${RESULTS[budget:$bucket,$target]-} ]] && median ${RESULTS[budget:$bucket,$target]} || echo -)"
        done
        printf '\n'
    done < <(echo total; printf '%s\n' "${!BUDGET_BUCKETS[@]}" | grep -v '^total$' | sort)
fi
