#!/usr/bin/env bash
# Three Lookout instances (release build) on one PostgreSQL, all on loopback:
#
#   wake latency   a long-poll held on instance B (GET /v1/galleries/ID?fields=title with
#                  If-None-Match), a PATCH of that title sent to instance A: time from the
#                  PATCH being sent to B's answer received; ROUNDS rounds, p50/p99. The
#                  same with the poll on A itself, for comparison (no cross-instance hop),
#                  and with both through nginx configured by Docker/nginx-cluster.conf
#                  (the compose file's balancer; its host names rewritten to the local
#                  ports), which proves that configuration holds long-polls.
#   throughput     wrk PATCHes random galleries with random titles (every write changes
#                  something) on all three instances at once, CONNECTIONS connections each;
#                  then on one instance alone with 3 x CONNECTIONS. Every write is committed
#                  in PostgreSQL (fsync on; synchronous_commit as set below) before
#                  it is answered; any non-2xx answer fails the run.
#
# PostgreSQL is the installed one (initdb, postgres in /usr/lib/postgresql/*/bin or
# LOOKOUT_PG_BIN), a fresh cluster in a temp dir, trust auth on 127.0.0.1; as root it
# runs as nobody (setpriv). Everything started is stopped by PID on exit.
#
# Environment:
#   ROUNDS        wake-latency rounds per phase     default 300
#   DURATION      wrk duration                      default 10s
#   CONNECTIONS   wrk connections per instance      default 8
#   SYNCHRONOUS_COMMIT  PostgreSQL's synchronous_commit   default on; off takes the
#                 WAL fsync out of every write, to show what the rest costs
#   LOOKOUT_BIN   measure this binary instead of building .build/release/lookout
#   KEEP_TMP=1    keep the temp dir (logs, wrk reports)
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ROUNDS="${ROUNDS:-300}"
DURATION="${DURATION:-10s}"
CONNECTIONS="${CONNECTIONS:-8}"
KEEP_TMP="${KEEP_TMP:-0}"
SYNCHRONOUS_COMMIT="${SYNCHRONOUS_COMMIT:-on}"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"
command -v wrk >/dev/null || die "wrk is needed: apt-get install wrk"
NGINX=${NGINX:-/usr/sbin/nginx}
[[ -x $NGINX ]] || die "nginx is needed: apt-get install nginx-light"
PG_BIN="${LOOKOUT_PG_BIN:-$(compgen -G '/usr/lib/postgresql/*/bin' | sort -V | tail -1)}"
[[ -x $PG_BIN/initdb ]] || die "PostgreSQL's initdb not found (apt-get install postgresql, or set LOOKOUT_PG_BIN)"

TMP=$(mktemp -d)
chmod 755 "$TMP"
PG_PID=""
NGINX_PID=""
declare -a PIDS=()
FAILURE_LOGS=("PostgreSQL:$TMP/pg.log")  # and each Lookout's stderr, as it starts
# PostgreSQL last, after its clients, with SIGINT: its fast shutdown.
cleanup_at_exit nginx:NGINX_PID lookout:PIDS postgres:PG_PID:INT

# PostgreSQL refuses root: as root it runs as nobody. Not a function, so that a server
# started in the background is this shell's child, with its PID in $!.
as_pg=()
[[ $(id -u) != 0 ]] || as_pg=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

release_binary "$REPO_ROOT"

log "starting PostgreSQL ($PG_BIN)"
mkdir -p "$TMP/pg"
[[ $(id -u) != 0 ]] || chown nobody:nogroup "$TMP/pg"
${as_pg[@]+"${as_pg[@]}"} "$PG_BIN/initdb" -D "$TMP/pg/data" -U lookout --auth=trust -E UTF8 --no-locale >/dev/null
PG_PORT=$(free_port)
${as_pg[@]+"${as_pg[@]}"} "$PG_BIN/postgres" -D "$TMP/pg/data" -p "$PG_PORT" -k "$TMP/pg" -c listen_addresses=127.0.0.1 \
    -c max_connections=100 -c synchronous_commit="$SYNCHRONOUS_COMMIT" >"$TMP/pg.log" 2>&1 &
# shellcheck disable=SC2034 # read at exit, by cleanup_at_exit
PG_PID=$!
for ((i = 0; i < 100; i++)); do
    "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
    sleep 0.1
done
"$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U lookout lookout
URL="postgres://lookout@127.0.0.1:$PG_PORT/lookout"
TOKEN_KEY=$(head -c 32 /dev/urandom | base64)

declare -a PORTS=()
for name in a b c; do
    port=$(free_port)
    FAILURE_LOGS+=("Lookout $name stderr:$TMP/lookout-$name.stderr")
    "$LOOKOUT_BIN" --port "$port" --bind 127.0.0.1 --data-dir "$TMP/data-$name" --database "$URL" \
        --token-key "$TOKEN_KEY" --log-level warning 2>>"$TMP/lookout-$name.stderr" &
    PIDS+=($!)
    PORTS+=("$port")
    # One at a time: the first start imports the demo data.
    wait_until_answers "http://127.0.0.1:$port/readyz" "$!" "lookout $name"
done
TOKEN=$(curl -s -X POST "http://127.0.0.1:${PORTS[0]}/v1/auth/login" -H 'Content-Type: application/json' \
    -d '{"email":"editor@example.com","password":"editor-password"}' | sed -E 's/.*"token":"([^"]+)".*/\1/')

log "starting nginx with Docker/nginx-cluster.conf in front of the three"
BALANCER_PORT=$(free_port)
mkdir -p "$TMP/nginx"
sed -e "s/lookout-1:3001/127.0.0.1:${PORTS[0]}/; s/lookout-2:3001/127.0.0.1:${PORTS[1]}/" \
    -e "s/lookout-3:3001/127.0.0.1:${PORTS[2]}/; s/listen 3000;/listen 127.0.0.1:$BALANCER_PORT;/" \
    Docker/nginx-cluster.conf >"$TMP/nginx/cluster.conf"
cat >"$TMP/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
daemon off;
events { worker_connections 1024; }
http {
    access_log off;
$(nginx_temp_paths "$TMP/nginx")
    include $TMP/nginx/cluster.conf;
}
CONF
"$NGINX" -c "$TMP/nginx/nginx.conf" -p "$TMP/nginx" 2>"$TMP/nginx.log" &
NGINX_PID=$!
wait_until_answers "http://127.0.0.1:$BALANCER_PORT/readyz" "$NGINX_PID" nginx

log "wake latency: $ROUNDS rounds, poll on B, on A, and through nginx; PATCH on A (through nginx for the last)"
python3 - "${PORTS[0]}" "${PORTS[1]}" "$BALANCER_PORT" "$TOKEN" "$ROUNDS" >"$TMP/wake.txt" <<'PY'
import http.client, random, sys, threading, time
port_a, port_b, port_balancer, token, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
auth = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}

def run(write_port, poll_port):
    writer = http.client.HTTPConnection("127.0.0.1", write_port)
    reader = http.client.HTTPConnection("127.0.0.1", poll_port)
    poller = http.client.HTTPConnection("127.0.0.1", poll_port)
    samples = []
    for n in range(rounds):
        gallery = random.randint(1, 24)
        path = f"/v1/galleries/{gallery}?fields=title"
        reader.request("GET", path, headers=auth)
        response = reader.getresponse(); response.read()
        tag = response.getheader("ETag")
        done = {}
        def poll():
            poller.request("GET", path + "&wait=30", headers={**auth, "If-None-Match": tag})
            answer = poller.getresponse(); answer.read()
            done["at"] = time.perf_counter(); done["status"] = answer.status
        thread = threading.Thread(target=poll); thread.start()
        time.sleep(0.02)  # the poll is held by now
        sent = time.perf_counter()
        writer.request("PATCH", f"/v1/galleries/{gallery}", body=f'{{"title":"wake {n} {random.random()}"}}', headers=auth)
        answer = writer.getresponse(); answer.read()
        assert answer.status == 200, answer.status
        thread.join()
        assert done["status"] == 200, done["status"]
        samples.append((done["at"] - sent) * 1000)
    samples.sort()
    pick = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]
    return pick(0.5), pick(0.99), samples[-1]

for label, write_port, poll_port in (
    ("A -> B (other instance)", port_a, port_b),
    ("A -> A (same instance)", port_a, port_a),
    ("nginx -> nginx", port_balancer, port_balancer),
):
    p50, p99, worst = run(write_port, poll_port)
    print(f"{label:26} {p50:8.2f} {p99:8.2f} {worst:8.2f}")
PY

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
bench() { # label port... (CONNECTIONS each, concurrently)
    local label=$1 port total=0 errors=0 p99s=() i=0
    shift
    declare -a wrk_pids=()
    for port in "$@"; do
        TOKEN=$TOKEN wrk -t1 -c"$CONNECTIONS_EACH" -d"$DURATION" --latency -s "$TMP/patch.lua" \
            "http://127.0.0.1:$port" >"$TMP/wrk-$label-$i.txt" &
        wrk_pids+=($!)
        i=$((i + 1))
    done
    wait "${wrk_pids[@]}"
    for ((i = 0; i < $#; i++)); do
        total=$(awk -v a="$total" -v b="$(wrk_rps "$TMP/wrk-$label-$i.txt")" 'BEGIN { print a + b }')
        errors=$((errors + $(wrk_errors "$TMP/wrk-$label-$i.txt")))
        p99s+=("$(wrk_p99_ms "$TMP/wrk-$label-$i.txt")")
    done
    ((errors == 0)) || { cat "$TMP"/wrk-"$label"-*.txt >&2; die "$errors failed writes"; }
    printf '%-24s %10.0f %12s\n' "$label" "$total" "$(median "${p99s[@]}")ms"
}
log "throughput: wrk -d$DURATION on three instances at once, then on one"
{
    CONNECTIONS_EACH=$CONNECTIONS bench three "${PORTS[@]}"
    CONNECTIONS_EACH=$((3 * CONNECTIONS)) bench one "${PORTS[0]}"
} >"$TMP/throughput.txt"
# Every instance must converge on the same state (each follows the others within a poll
# interval at most).
for ((i = 0; i < 50; i++)); do
    tags=$(for port in "${PORTS[@]}"; do curl -s -o /dev/null -w '%header{etag}\n' "http://127.0.0.1:$port/v1/galleries"; done | sort -u | wc -l)
    ((tags == 1)) && break
    sleep 0.1
done
((tags == 1)) || die "the instances disagree on the galleries' cursor"

echo
echo "Wake latency, PATCH sent on A -> long-poll answer received, $ROUNDS rounds (ms)"
printf '%-26s %8s %8s %8s\n' poll p50 p99 max
cat "$TMP/wake.txt"
echo
echo "Writes on PostgreSQL (synchronous_commit=$SYNCHRONOUS_COMMIT): PATCH /v1/galleries/{id}, wrk -d$DURATION, $((3 * CONNECTIONS)) connections in all"
printf '%-24s %10s %12s\n' instances "writes/s" "median p99"
cat "$TMP/throughput.txt"
