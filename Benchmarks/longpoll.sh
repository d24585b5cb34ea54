#!/usr/bin/env bash
# Long-poll benchmarks for Lookout (release build) on loopback, driven by the C client in
# Benchmarks/longpoll/client.c:
#
#   held sessions   server RSS per held long-poll, 10,000 held and the most this machine
#                   allows (MAX_SESSIONS, default 19,000: the process limit is 20,000 open
#                   files and the server needs a few of its own); a fresh server each,
#                   every session answered 304 at its deadline afterwards
#   fan-out         10,000 polls on items/1, one PATCH: time from the PATCH being sent to
#                   the last poll's answer complete; FANOUT_RUNS runs, median
#   selective wake  10,000 polls on 10,000 ids; a PATCH to one of them wakes exactly that
#                   one; median PATCH round trip (one keep-alive connection) with nothing
#                   held (WRITES before the polls + WRITES after they ended) / with 10k
#                   held on other ids / waking one of the 10k
#   single wake     one poll, one PATCH on another connection: PATCH sent -> poll answer
#                   complete, ROUNDS rounds
#
# Environment:
#   MAX_SESSIONS   sessions in the "most this machine allows" run        default 19000
#   FANOUT_RUNS    fan-out runs                                          default 3
#   ROUNDS         single-wake rounds                                    default 1000
#   WRITES         writes per latency sample in the selective run        default 20
#   HOLD_WAIT      ?wait= of the held-sessions runs (they end in 304)    default 20
#   THREADS        Lookout --threads                                     default 2
#   DOCUMENTS      documents in the generated collection `items`         default 20000
#   EXTRA_ARGS     more Lookout flags, e.g. "--max-header-bytes 4096"    default none
#   ONLY           phases to run, comma-separated, from
#                  held,max,fanout,selective,single                      default all
#   LOOKOUT_BIN    measure this binary instead of building .build/release/lookout
#   KEEP_TMP=1     keep the temp dir (server logs, raw client output)
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

MAX_SESSIONS="${MAX_SESSIONS:-19000}"
FANOUT_RUNS="${FANOUT_RUNS:-3}"
ROUNDS="${ROUNDS:-1000}"
WRITES="${WRITES:-20}"
HOLD_WAIT="${HOLD_WAIT:-20}"
THREADS="${THREADS:-2}"
DOCUMENTS="${DOCUMENTS:-20000}"
EXTRA_ARGS="${EXTRA_ARGS:-}"
ONLY="${ONLY:-held,max,fanout,selective,single}"
KEEP_TMP="${KEEP_TMP:-0}"

for name in MAX_SESSIONS FANOUT_RUNS ROUNDS WRITES HOLD_WAIT THREADS DOCUMENTS; do
    [[ ${!name} =~ ^[1-9][0-9]*$ ]] || { printf 'error: %s must be a positive integer, got %q\n' "$name" "${!name}" >&2; exit 2; }
done
((MAX_SESSIONS <= 19500)) || { echo "error: MAX_SESSIONS over 19500 cannot fit in 20,000 files" >&2; exit 2; }
((DOCUMENTS >= 19600)) || { echo "error: DOCUMENTS must be at least 19600 (the phases use ids up to 19520)" >&2; exit 2; }
phase() { [[ ",$ONLY," == *",$1,"* ]]; }
read -r -a EXTRA <<<"$EXTRA_ARGS"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"


TMP=""
SERVER_PID=""
SERVER_LOG=""
declare -a CLIENT_PIDS=()
cleanup_at_exit client:CLIENT_PIDS lookout:SERVER_PID

free_port() {
    local port attempt
    for ((attempt = 0; attempt < 200; attempt++)); do
        port=$((20000 + RANDOM % 12000))  # below the ephemeral range (32768-60999)
        if ! (: </dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
            printf '%s\n' "$port"
            return 0
        fi
    done
    die "no free port found"
}

# field NAME FILE-or-LINE...: the value of NAME=VALUE on the "result"/"summary" line
field() { grep -o "\b$1=[0-9.]*" | head -n 1 | cut -d= -f2; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status"; }
fd_count() { find "/proc/$SERVER_PID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
now_ns() { "$CLIENT" now; }
# Median write round trip in µs over the "write ID STATUS T0 T1" lines of client patch outputs.
write_median_us() {
    local -a us
    mapfile -t us < <(awk '$1 == "write" { printf "%.1f\n", ($5 - $4) / 1000 }' "$@")
    median "${us[@]}"
}

# --- build and data ----------------------------------------------------------------

TMP="$(mktemp -d "${TMPDIR:-/tmp}/lookout-longpoll.XXXXXX")"
CLIENT="$TMP/client"
log "building the client: cc -O2 Benchmarks/longpoll/client.c"
cc -O2 -Wall -Wextra -o "$CLIENT" "$REPO_ROOT/Benchmarks/longpoll/client.c"

release_binary "$REPO_ROOT"

DATA_FILE="$TMP/items.json"
python3 - "$REPO_ROOT/Sources/LookoutApp/Resources/demo-data.json" "$DATA_FILE" "$DOCUMENTS" <<'EOF'
import json, sys
users = json.load(open(sys.argv[1]))["users"]
docs = [{"id": i, "v": 0} for i in range(1, int(sys.argv[3]) + 1)]
json.dump({"collections": [{"name": "items", "public": True, "documents": docs}], "users": users},
          open(sys.argv[2], "w"), separators=(",", ":"))
EOF
log "data file: items, $DOCUMENTS documents {\"id\":N,\"v\":0} ($(wc -c <"$DATA_FILE") bytes)"

# --- server ------------------------------------------------------------------------

PORT=""
TOKEN=""
BASE=""
SERVER_COUNT=0

start_server() {
    SERVER_COUNT=$((SERVER_COUNT + 1))
    PORT="$(free_port)"
    SERVER_LOG="$TMP/lookout-$SERVER_COUNT.stderr"
    FAILURE_LOGS=("Lookout stderr:$SERVER_LOG")
    mkdir -p "$TMP/data"
    "$LOOKOUT_BIN" --port "$PORT" --bind 127.0.0.1 --data-dir "$TMP/data" --data-file "$DATA_FILE" \
        --log-level warning --max-connections 20000 --max-connections-per-client 0 \
        --threads "$THREADS" --max-wait 300 --idle-timeout 600 "${EXTRA[@]}" \
        >"$TMP/lookout-$SERVER_COUNT.stdout" 2>"$SERVER_LOG" &
    SERVER_PID=$!
    BASE="http://127.0.0.1:$PORT"
    local i
    for ((i = 0; i < 150; i++)); do
        kill -0 "$SERVER_PID" 2>/dev/null || die "lookout exited at start-up"
        curl -fsS -o /dev/null --max-time 1 "$BASE/v1/items/1?fields=v" 2>/dev/null && break
        sleep 0.1
    done
    ((i < 150)) || die "lookout did not answer within 15s"
    TOKEN="$(curl -fsS -X POST "$BASE/v1/auth/login" -H 'Content-Type: application/json' \
        -d '{"email":"editor@example.com","password":"editor-password"}' | sed -E 's/.*"token":"([^"]+)".*/\1/')"
    [[ -n $TOKEN && $TOKEN != *'{'* ]] || die "login as editor failed"
    log "lookout #$SERVER_COUNT (pid $SERVER_PID) on $BASE, logged in as editor"
}

stop_server() {
    local pid=$SERVER_PID status=0
    kill -0 "$pid" 2>/dev/null || die "lookout (pid $pid) died before it was stopped"
    kill -TERM "$pid"
    wait "$pid" || status=$?
    SERVER_PID=""
    ((status == 0)) || { show_tail "$SERVER_LOG" "Lookout stderr"; die "lookout exited with status $status on SIGTERM"; }
    if [[ -s $SERVER_LOG ]]; then
        log "note: lookout #$SERVER_COUNT wrote to stderr:"
        show_tail "$SERVER_LOG" "Lookout stderr"
    fi
}

check_server() { kill -0 "$SERVER_PID" 2>/dev/null || die "lookout (pid $SERVER_PID) died ($1)"; }

etag_of() { # id
    local tag
    tag="$(curl -fsS -o /dev/null -w '%header{etag}' "$BASE/v1/items/$1?fields=v")"
    [[ $tag == \"*\" ]] || die "no ETag for items/$1"
    printf '%s\n' "$tag"
}

# Warm-up: some plain reads, 200 polls answered at their 1 s deadline, some writes.
warm_up() {
    local i
    for ((i = 0; i < 20; i++)); do curl -fsS -o /dev/null "$BASE/v1/items/$((19000 + i))?fields=v"; done
    "$CLIENT" hold --port "$PORT" --src 127.0.0.250 -n 200 --etag "$(etag_of 19001)" --ids-from 19001 \
        --wait 1 --timeout 10 >"$TMP/warmup.out" 2>&1
    grep -q 's304=200 ' "$TMP/warmup.out" || { cat "$TMP/warmup.out" >&2; die "warm-up polls did not all end in 304"; }
    "$CLIENT" patch --port "$PORT" --token "$TOKEN" --ids 19501-19520 --value-base 1 >"$TMP/warmup-writes.out" ||
        die "warm-up writes failed"
    sleep 1
}

# --- holders -----------------------------------------------------------------------

declare -a HOLD_OUT=()

# hold_start NAME PROCS PER_PROC SRC_BASE ETAG WAIT TIMEOUT (same ID | ids FROM) [extra client args]
hold_start() {
    local name=$1 procs=$2 per=$3 src_base=$4 etag=$5 wait_s=$6 timeout=$7 kind=$8 arg=$9 p out
    shift 9
    conntrack_room $((procs * per))
    HOLD_OUT=()
    CLIENT_PIDS=()
    for ((p = 0; p < procs; p++)); do
        out="$TMP/$name-$p.out"
        HOLD_OUT+=("$out")
        local -a idargs
        if [[ $kind == same ]]; then idargs=(--same-id "$arg"); else idargs=(--ids-from $((arg + p * per))); fi
        "$CLIENT" hold --port "$PORT" --src "127.0.0.$((src_base + p))" -n "$per" --etag "$etag" \
            "${idargs[@]}" --wait "$wait_s" --timeout "$timeout" "$@" >"$out" 2>"$out.err" &
        CLIENT_PIDS+=($!)
    done
}

# Waits until every holder printed "ready"; fails if one exits first or after 120 s.
hold_wait_ready() {
    local i p ready
    for ((i = 0; i < 1200; i++)); do
        ready=0
        for p in "${!HOLD_OUT[@]}"; do
            if grep -q '^ready ' "${HOLD_OUT[$p]}"; then
                ready=$((ready + 1))
            elif ! kill -0 "${CLIENT_PIDS[$p]}" 2>/dev/null; then
                cat "${HOLD_OUT[$p]}" "${HOLD_OUT[$p]}.err" >&2
                die "a client exited before it was ready"
            fi
        done
        ((ready == ${#HOLD_OUT[@]})) && return 0
        check_server "while clients connect"
        sleep 0.1
    done
    die "clients not ready after 120 s"
}

# Sum of "ready N" over the holders.
hold_ready_total() { awk '$1 == "ready" { s += $2 } END { print s + 0 }' "${HOLD_OUT[@]}"; }
# Count of "resp" lines so far (holders run with --print-each).
hold_resp_count() { cat "${HOLD_OUT[@]}" | grep -c '^resp ' || true; }

# Waits for every holder to exit and sets R_OK200 R_S304 R_OTHER R_ERRORS R_PENDING R_FIRST R_LAST.
hold_finish() {
    local pid out line
    for pid in "${CLIENT_PIDS[@]}"; do wait "$pid" || die "a client failed"; done
    CLIENT_PIDS=()
    R_OK200=0 R_S304=0 R_OTHER=0 R_ERRORS=0 R_PENDING=0 R_FIRST=0 R_LAST=0
    for out in "${HOLD_OUT[@]}"; do
        line="$(grep '^result ' "$out")" || die "no result from a client ($out)"
        R_OK200=$((R_OK200 + $(field ok200 <<<"$line")))
        R_S304=$((R_S304 + $(field s304 <<<"$line")))
        R_OTHER=$((R_OTHER + $(field other <<<"$line")))
        R_ERRORS=$((R_ERRORS + $(field errors <<<"$line")))
        R_PENDING=$((R_PENDING + $(field pending <<<"$line")))
        local f l
        f="$(field first_ns <<<"$line")"
        l="$(field last_ns <<<"$line")"
        if ((f > 0)) && { ((R_FIRST == 0)) || ((f < R_FIRST)); }; then R_FIRST=$f; fi
        ((l > R_LAST)) && R_LAST=$l
        if [[ -s $out.err ]]; then
            log "client stderr ($out.err):"
            head -n 10 "$out.err" >&2
        fi
    done
}

declare -a SUMMARY=()
row() { SUMMARY+=("$(printf '%-46s %-28s %-14s %s' "$1" "$2" "$3" "$4")"); }

# --- held sessions -----------------------------------------------------------------

held_sessions() { # label procs per_proc src_base
    local label=$1 procs=$2 per=$3 src_base=$4 total before after fds per_kib verdict
    total=$((procs * per))
    start_server
    warm_up
    before="$(rss_kib)"
    log "held sessions: $procs clients x $per = $total polls on distinct ids (wait=$HOLD_WAIT), RSS before ${before} KiB"
    hold_start "held-$total" "$procs" "$per" "$src_base" "$(etag_of 1)" "$HOLD_WAIT" $((HOLD_WAIT + 60)) ids 1 --print-each
    hold_wait_ready
    sleep 2
    check_server "with $total sessions held"
    after="$(rss_kib)"
    fds="$(fd_count)"
    local early ready
    early="$(hold_resp_count)"
    ready="$(hold_ready_total)"
    log "  ready $ready, answered before the deadline $early, server fds $fds, RSS after ${after} KiB"
    ((early == 0)) || log "  WARNING: $early polls were answered although nothing changed"
    per_kib="$(awk -v a="$after" -v b="$before" -v n="$total" 'BEGIN { printf "%.2f", (a - b) / n }')"
    log "  waiting for the ${HOLD_WAIT}s deadlines (each poll must end 304)"
    hold_finish
    log "  answers: 200=$R_OK200 304=$R_S304 other=$R_OTHER errors=$R_ERRORS unanswered=$R_PENDING"
    check_server "after the deadlines"
    sleep 1
    local answered
    answered="$(rss_kib)"
    log "  RSS after every poll was answered and its connection closed: ${answered} KiB"
    stop_server
    verdict="$(awk -v k="$per_kib" 'BEGIN { print (k <= 3 ? "met" : "NOT met") }')"
    ((R_S304 == total && ready == total && early == 0)) || verdict="$verdict; $((total - R_S304)) sessions not held/answered 304"
    row "$label: $total held ($procs x $per)" "$per_kib KiB/session" "<= 3 KiB" "$verdict"
    DETAIL+=("$label: $total held: RSS ${before} -> ${after} KiB (+$((after - before)) KiB; ${answered} KiB once all were answered and closed), server fds $fds, ready $ready, early answers $early, at deadline 304=$R_S304 200=$R_OK200 other=$R_OTHER errors=$R_ERRORS unanswered=$R_PENDING")
}

declare -a DETAIL=()
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"

phase held && held_sessions "held sessions" 2 5000 10
max_procs=4
phase max && held_sessions "held sessions, max" "$max_procs" $((MAX_SESSIONS / max_procs)) 20

# --- fan-out, selective wake, single wake: one server --------------------------------

if phase fanout || phase selective || phase single; then
start_server
warm_up
fi
VALUE=1000000

if phase fanout; then

declare -a fan_ms=() fan_first_ms=() fan_write_ms=() fan_woken=()
fan_bad=0
for ((run = 1; run <= FANOUT_RUNS; run++)); do
    log "fan-out run $run: 2 x 5000 polls on items/1"
    hold_start "fanout-$run" 2 5000 $((30 + 2 * run)) "$(etag_of 1)" 60 60 same 1
    hold_wait_ready
    sleep 1
    check_server "fan-out run $run, all held"
    fds="$(fd_count)"
    VALUE=$((VALUE + 1))
    "$CLIENT" patch --port "$PORT" --token "$TOKEN" --ids 1 --value-base "$VALUE" >"$TMP/fanout-$run-write.out" ||
        die "fan-out PATCH failed: $(cat "$TMP/fanout-$run-write.out")"
    read -r _ _ wstatus t0 t1 < <(grep '^write ' "$TMP/fanout-$run-write.out")
    hold_finish
    ms="$(awk -v a="$R_LAST" -v b="$t0" 'BEGIN { printf "%.1f", (a - b) / 1e6 }')"
    first_ms="$(awk -v a="$R_FIRST" -v b="$t0" 'BEGIN { printf "%.1f", (a - b) / 1e6 }')"
    wms="$(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.1f", (a - b) / 1e6 }')"
    log "  server fds $fds; woken $R_OK200 (304=$R_S304 other=$R_OTHER errors=$R_ERRORS unanswered=$R_PENDING); first +$first_ms ms, last +$ms ms; the PATCH's own answer +$wms ms"
    fan_ms+=("$ms")
    fan_first_ms+=("$first_ms")
    fan_write_ms+=("$wms")
    fan_woken+=("$R_OK200")
    ((R_OK200 == 10000)) || fan_bad=$((fan_bad + 1))
    DETAIL+=("fan-out run $run: woken $R_OK200/10000, first +$first_ms ms, last +$ms ms, PATCH answered +$wms ms (status $wstatus), 304=$R_S304 other=$R_OTHER errors=$R_ERRORS unanswered=$R_PENDING")
done
fan_med="$(median "${fan_ms[@]}")"
verdict="$(awk -v m="$fan_med" 'BEGIN { print (m <= 40 ? "met" : "NOT met") }')"
((fan_bad == 0)) || verdict="$verdict; $fan_bad run(s) did not wake all 10,000"
row "fan-out: 10,000 on items/1, PATCH -> last answer" "median $fan_med ms (${fan_ms[*]})" "<= 40 ms" "$verdict"
row "  woken per run" "${fan_woken[*]}" "10000" "$( ((fan_bad == 0)) && echo met || echo NOT met)"
row "  the PATCH's own answer, per run" "${fan_write_ms[*]} ms" "" ""
fi

if phase selective; then

log "selective wake: baseline, $WRITES writes with nothing held"
"$CLIENT" patch --port "$PORT" --token "$TOKEN" --ids "15001-$((15000 + WRITES))" --value-base "$VALUE" >"$TMP/sel-base.out"
base_before_us="$(write_median_us "$TMP/sel-base.out")"

log "selective wake: 2 x 5000 polls on items/1-10000"
hold_start selective 2 5000 40 "$(etag_of 1)" 30 60 ids 1 --print-each
hold_wait_ready
sleep 1
check_server "selective, all held"
sel_fds="$(fd_count)"
early="$(hold_resp_count)"

"$CLIENT" patch --port "$PORT" --token "$TOKEN" --ids "10001-$((10000 + WRITES))" --value-base "$VALUE" >"$TMP/sel-elsewhere.out"
elsewhere_us="$(write_median_us "$TMP/sel-elsewhere.out")"
sleep 2
after_elsewhere="$(hold_resp_count)"

"$CLIENT" patch --port "$PORT" --token "$TOKEN" --ids 4242 --value-base "$VALUE" >"$TMP/sel-one.out"
sleep 2
one_answered="$(hold_resp_count)"
one_lines="$(cat "${HOLD_OUT[@]}" | grep '^resp ' | awk '{ print $2 "/" $3 }' | tr '\n' ' ')"

wake_ids="$(seq -s, 100 $((10000 / WRITES)) 9999 | cut -d, -f1-"$WRITES")"
"$CLIENT" patch --port "$PORT" --token "$TOKEN" --ids "$wake_ids" --value-base "$VALUE" >"$TMP/sel-waking.out"
waking_us="$(write_median_us "$TMP/sel-waking.out")"
sleep 2
after_waking="$(hold_resp_count)"
log "  server fds $sel_fds; answered: before any write $early, after $WRITES writes elsewhere $after_elsewhere, after PATCH items/4242 $one_answered ($one_lines), after $WRITES waking writes $after_waking"
log "  waiting for the other polls' 30 s deadline"
hold_finish
log "  answers: 200=$R_OK200 304=$R_S304 other=$R_OTHER errors=$R_ERRORS unanswered=$R_PENDING"
"$CLIENT" patch --port "$PORT" --token "$TOKEN" --ids "15101-$((15100 + WRITES))" --value-base "$VALUE" >"$TMP/sel-base-after.out"
base_after_us="$(write_median_us "$TMP/sel-base-after.out")"
# The baseline: nothing held, $WRITES writes before the polls and $WRITES after they ended.
base_us="$(write_median_us "$TMP/sel-base.out" "$TMP/sel-base-after.out")"

sel_ok=0
((early == 0 && after_elsewhere == 0 && one_answered == 1)) && [[ $one_lines == '4242/200 ' ]] && sel_ok=1
((after_waking == 1 + WRITES && R_OK200 == 1 + WRITES && R_S304 == 10000 - 1 - WRITES)) || sel_ok=0
row "selective: PATCH one of 10k held ids" "answered: $one_answered ($one_lines)" "exactly 1" "$( ((sel_ok == 1)) && echo met || echo NOT met)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
r1="$(ratio "$waking_us" "$base_us")"
r2="$(ratio "$elsewhere_us" "$base_us")"
row "  write, nothing held (median of 2 x $WRITES)" "$base_us us" "" "(before $base_before_us, after $base_after_us us)"
row "  write waking one of 10k held" "$waking_us us (${r1}x)" "<= 1.2x" "$(awk -v r="$r1" 'BEGIN { print (r <= 1.2 ? "met" : "NOT met") }')"
row "  write with 10k held elsewhere" "$elsewhere_us us (${r2}x)" "<= 1.2x" "$(awk -v r="$r2" 'BEGIN { print (r <= 1.2 ? "met" : "NOT met") }')"
DETAIL+=("selective: server fds $sel_fds; answered before any write $early, after $WRITES writes to unheld ids $after_elsewhere, after PATCH items/4242 $one_answered ($one_lines), after $WRITES more waking writes $after_waking; at the end 200=$R_OK200 304=$R_S304 other=$R_OTHER errors=$R_ERRORS unanswered=$R_PENDING")
DETAIL+=("selective: write p50/p99 us: nothing held $(grep '^summary ' "$TMP/sel-base.out" | cut -d' ' -f3-4), 10k held elsewhere $(grep '^summary ' "$TMP/sel-elsewhere.out" | cut -d' ' -f3-4), waking one $(grep '^summary ' "$TMP/sel-waking.out" | cut -d' ' -f3-4), nothing held afterwards $(grep '^summary ' "$TMP/sel-base-after.out" | cut -d' ' -f3-4)")

fi

if phase single; then
log "single wake: $ROUNDS rounds"
"$CLIENT" single --port "$PORT" --token "$TOKEN" --rounds "$ROUNDS" --value-base $((VALUE + 100000)) >"$TMP/single.out" ||
    { cat "$TMP/single.out" >&2; die "single-wake client failed"; }
cat "$TMP/single.out" >&2
wake_line="$(grep '^wake ' "$TMP/single.out")"
s_p50="$(field p50_us <<<"$wake_line")"
s_p99="$(field p99_us <<<"$wake_line")"
row "single wake: PATCH sent -> poll answered" "p50 $s_p50 us, p99 $s_p99 us" "p99 <= 100 us" "$(awk -v p="$s_p99" 'BEGIN { print (p <= 100 ? "met" : "NOT met") }')"
alone_line="$(grep '^write_alone ' "$TMP/single.out")"
row "  PATCH round trip, nothing held" "p50 $(field p50_us <<<"$alone_line") us, p99 $(field p99_us <<<"$alone_line") us" "" ""
DETAIL+=("single: $(tr '\n' ';' <"$TMP/single.out")")
fi

if [[ -n $SERVER_PID ]]; then
    check_server "at the end"
    stop_server
fi

printf '\n'
printf 'Lookout long-poll benchmarks, %s, %s, nproc %s, --threads %s%s, %s documents, load average %s at start, %s at end\n' \
    "$(date -u '+%Y-%m-%d %H:%M UTC')" "$BINARY" \
    "$(nproc)" "$THREADS" "${EXTRA_ARGS:+ $EXTRA_ARGS}" "$DOCUMENTS" "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-46s %-28s %-14s %s\n' measurement result target verdict
printf '%s\n' "${SUMMARY[@]}"
printf '\n'
printf '%s\n' "${DETAIL[@]}"
