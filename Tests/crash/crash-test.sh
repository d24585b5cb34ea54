#!/usr/bin/env bash
# Crash-safety test (issue 5, item 3): writes from several connections while the server
# is killed with SIGKILL at random moments, then checks through the API that nothing
# acknowledged was lost, no revision went backwards, the epoch stayed, and nothing is
# half-written. See Tests/crash/writer.py for the client and the checker.
#
# SIGKILL ends the process but not the kernel: what was written to a file survives even
# without fsync. So this proves a write reaches SQLite (committed) before it is
# acknowledged, and that restarts recover. That it reaches the disk is checked apart
# (step 6): under strace, every acknowledged write is followed by a sync of SQLite's log
# before its answer. A power cut itself is not simulated.
#
#   bash Tests/crash/crash-test.sh
#
# Environment: LOOKOUT_BIN (default .build/debug/lookout), CYCLES (kills, default 20),
# WRITERS (writer connections, default 4), SEED (default random; printed, to replay the
# same random choices, not the same timing), SYNCED_WRITES (writes watched by strace in
# step 6, default 40), KEEP_WORK=1 keeps the temp directory (the log, the database, the
# server logs, the trace) for inspection.
set -euo pipefail
binary=${LOOKOUT_BIN:-.build/debug/lookout}
[[ $binary == /* || -z ${LOOKOUT_BIN:-} ]] || binary=$PWD/$binary
cd "$(dirname "$0")/../.."
# shellcheck source=Tests/server-port.sh
source Tests/server-port.sh

cycles=${CYCLES:-20}
writers=${WRITERS:-4}
seed=${SEED:-$((RANDOM * 32768 + RANDOM))}
client=Tests/crash/writer.py
[ -x "$binary" ] || { echo "crash-test: no server binary at $binary (build first: swift build)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/lookout-crash.XXXXXX")
server_pid=""
writer_pid=""
strace_pid=""
port=""
starts=0
server_err=""
cleanup() {
    # Only the processes this script started, by their ids.
    local pid
    for pid in "$strace_pid" "$writer_pid" "$server_pid"; do
        if [ -n "$pid" ]; then
            kill -9 "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    if [ "${KEEP_WORK:-0}" = 1 ]; then
        echo "crash-test: kept $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
    echo "crash-test: FAIL: $*" >&2
    if [ -n "$server_err" ] && [ -s "$server_err" ]; then
        echo "--- last lines of the server's log (start $starts):" >&2
        tail -n 15 "$server_err" >&2
    fi
    echo "crash-test: replay with SEED=$seed CYCLES=$cycles WRITERS=$writers (KEEP_WORK=1 keeps the data)" >&2
    exit 1
}

# Starts the server on a data directory (default the run's); sets server_pid and port
# (it logs the port it was given for --port 0).
start_server() {
    local data=${1:-$work/data}
    starts=$((starts + 1))
    server_err=$work/server-$starts.log
    : >"$server_err"  # before the background shell opens it, so the loop below can read it
    "$binary" --port 0 --bind 127.0.0.1 --data-dir "$data" 2>"$server_err" &
    server_pid=$!
    port=$(server_port "$server_err" "$server_pid") ||
        fail "the server on $data did not log a listening port within 60 s (or exited)"
}

kill_server() {
    kill -9 "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}

started=$SECONDS
echo "crash-test: $cycles cycles, $writers writers, seed $seed, server $binary"
RANDOM=$seed

# 1. The checker must catch what it is meant to catch (no server needed).
python3 "$client" self-test || fail "the checker's self-test failed"

# 2. A fresh data directory with the demo data; the editor logs in once (the token
#    stays valid across restarts: its key is in the data directory).
start_server
python3 "$client" init --dir "$work" --port "$port" || fail "init"

# 3. Write, kill -9 while writes are in flight, restart on the same data, check.
for cycle in $(seq 1 "$cycles"); do
    if [ "$cycle" -eq "$cycles" ]; then
        # For step 4: the data as it is now, before the last cycle's writes (the server
        # is idle after the check, so the database and its WAL are consistent).
        cp -a "$work/data" "$work/stale"
    fi
    rm -f "$work/writing"
    python3 "$client" write --dir "$work" --port "$port" --cycle "$cycle" --threads "$writers" --seed "$seed" &
    writer_pid=$!
    for _ in $(seq 500); do
        [ -e "$work/writing" ] && break
        kill -0 "$writer_pid" 2>/dev/null || break
        sleep 0.01
    done
    [ -e "$work/writing" ] || fail "cycle $cycle: no write was acknowledged"
    delay_ms=$((50 + RANDOM % 551))
    sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
    kill_server
    status=0
    wait "$writer_pid" || status=$?
    writer_pid=""
    [ "$status" -eq 0 ] || fail "cycle $cycle: the writer failed (exit $status)"
    if [ "$cycle" -eq "$cycles" ]; then
        # 4. A server that comes back with older data (the copy made before this cycle's
        #    writes, as if they had never reached the disk) must fail the check.
        start_server "$work/stale"
        if python3 "$client" check --dir "$work" --port "$port" --no-record 2>"$work/stale.err" >/dev/null; then
            fail "the checker accepted a server that lost the last cycle's writes"
        fi
        grep -q -e "acknowledged" -e "revision went backwards" "$work/stale.err" ||
            { cat "$work/stale.err" >&2; fail "the check of the stale copy failed for another reason"; }
        echo "crash-test: a server restarted on the data from before the last cycle was refused:"
        sed -n '1s/^crash-test: /  /p' "$work/stale.err"
        kill_server
    fi
    start_server
    python3 "$client" check --dir "$work" --port "$port" --cycle "$cycle" || fail "cycle $cycle: check after restart"
done

# 5. The live checker objects to acknowledgements the server never gave.
for kind in lost-patch lost-create lost-delete revision epoch; do
    if python3 "$client" check --dir "$work" --port "$port" --doctor "$kind" 2>"$work/doctored.err" >/dev/null; then
        fail "the checker accepted a doctored log ($kind)"
    fi
    grep -q VIOLATION "$work/doctored.err" || fail "the doctored check ($kind) failed without naming a violation"
done
echo "crash-test: doctored logs (lost patch, create, delete; revision; epoch) were all refused"

# 6. Every acknowledged write was synced to the disk first: with strace attached, each of
#    SYNCED_WRITES writes, one after another, must be followed by an fsync or fdatasync
#    of SQLite's log (-wal) before its answer. (Before stop 43, GRDB's pool had turned
#    synchronous = FULL into NORMAL, which syncs the log only at checkpoints: 3 syncs
#    for 300 writes.)
synced_writes=${SYNCED_WRITES:-40}
strace -f -y -tt -e trace=fsync,fdatasync,sendmsg,sendto,write -p "$server_pid" -o "$work/syncs.txt" 2>"$work/strace.err" &
strace_pid=$!
for _ in $(seq 3000); do
    grep -q attached "$work/strace.err" && break
    kill -0 "$strace_pid" 2>/dev/null || fail "strace could not attach to the server: $(cat "$work/strace.err")"
    sleep 0.02
done
grep -q attached "$work/strace.err" || fail "strace did not attach to the server within 60 s"
token=$(cat "$work/token")
for index in $(seq "$synced_writes"); do
    status=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/v1/galleries" \
        -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
        -d "{\"title\": \"synced $index\"}")
    [ "$status" = 201 ] || fail "a write for the sync check answered $status"
done
kill -INT "$strace_pid"
wait "$strace_pid" 2>/dev/null || true
strace_pid=""
# Walk the trace (strace writes it in the order the calls happened): a 201 sent with no
# completed sync of the log since the previous answer is an acknowledgement that a power
# cut could take back. A call another thread interrupts is split in two lines, the second
# without the file's name: the sync counts when it returns.
unsynced=$(awk '
    /(fsync|fdatasync)\([0-9]+<[^>]*-wal>/ {
        if (/unfinished/) pending[$1] = 1; else if (/= 0/) synced = 1 }
    /<\.\.\. f(data)?sync resumed>/ { if (pending[$1] && /= 0/) synced = 1; delete pending[$1] }
    /HTTP\/1\.1 201/ { answers++; if (!synced) unsynced++; synced = 0 }
    END { printf "%d %d", answers, unsynced }' "$work/syncs.txt")
read -r answered unsynced_count <<<"$unsynced"
[ "$answered" -ge "$synced_writes" ] || fail "the trace shows $answered answers of 201 for $synced_writes writes"
[ "$unsynced_count" -eq 0 ] ||
    fail "$unsynced_count of $answered acknowledged writes were answered before SQLite's log was synced"
echo "crash-test: each of $answered acknowledged writes was preceded by a sync of SQLite's log"

# 7. A clean stop still works after all that.
kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=""
[ "$status" -eq 0 ] || fail "the server exited $status on SIGTERM"

python3 "$client" summary --dir "$work"
echo "crash-test: passed in $((SECONDS - started)) s"
