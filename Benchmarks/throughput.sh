#!/usr/bin/env bash
# Throughput of `GET /v1/info_feed?page=1`: Lookout (release build) against nginx
# serving the very same bytes as a static file, measured in the same run with wrk,
# alternating A B A B ... so that drift on a shared machine hits both targets alike.
#
# Environment:
#   THREADS        Lookout --threads (server threads per address)    default 2
#   ROUNDS         wrk runs per target, alternating                   default 3
#   DURATION       wrk -d                                             default 10s
#   CONNECTIONS    wrk -c                                             default 64
#   WRK_THREADS    wrk -t                                             default 2
#   NGINX_WORKERS  nginx worker_processes                             default $(nproc)
#   LOOKOUT_BIN    measure this binary instead of building .build/release/lookout
#   KEEP_TMP=1     keep the temp dir (server logs, raw wrk output) instead of deleting it
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

THREADS="${THREADS:-2}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-10s}"
CONNECTIONS="${CONNECTIONS:-64}"
WRK_THREADS="${WRK_THREADS:-2}"
NGINX_WORKERS="${NGINX_WORKERS:-$(nproc)}"
KEEP_TMP="${KEEP_TMP:-0}"
NGINX=/usr/sbin/nginx
ROUTE=/v1/info_feed
QUERY='page=1'

for name in THREADS ROUNDS CONNECTIONS WRK_THREADS NGINX_WORKERS; do
    [[ ${!name} =~ ^[1-9][0-9]*$ ]] || { printf 'error: %s must be a positive integer, got %q\n' "$name" "${!name}" >&2; exit 2; }
done

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"


# --- tools -----------------------------------------------------------------------

install_missing() {
    local -a packages=()
    command -v wrk >/dev/null 2>&1 || packages+=(wrk)
    [[ -x $NGINX ]] || packages+=(nginx-light)
    command -v curl >/dev/null 2>&1 || packages+=(curl)
    apt_install "${packages[@]}"
}

# A TCP port on 127.0.0.1 that nothing answers on (racy, but the servers fail loudly
# if it is taken in between). Ports given as arguments are avoided too.
free_port() {
    local port taken attempt other
    for ((attempt = 0; attempt < 200; attempt++)); do
        port=$((20000 + RANDOM % 40000))
        taken=0
        for other in "$@"; do [[ $other == "$port" ]] && taken=1; done
        ((taken == 0)) || continue
        if ! (: </dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
            printf '%s\n' "$port"
            return 0
        fi
    done
    die "no free port found"
}

# --- servers and cleanup -------------------------------------------------------------

TMP=""
LOOKOUT_PID=""
NGINX_PID=""
cleanup_at_exit lookout:LOOKOUT_PID nginx:NGINX_PID


minimum() { printf '%s\n' "$@" | sort -g | head -n 1; }
maximum() { printf '%s\n' "$@" | sort -g | tail -n 1; }

# --- main --------------------------------------------------------------------------

install_missing

release_binary "$REPO_ROOT"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/lookout-throughput.XXXXXX")"
FAILURE_LOGS=("Lookout stderr:$TMP/lookout.stderr" "nginx error log:$TMP/nginx/error.log")
# nginx workers run as an unprivileged user when the master is root: let them reach www/.
chmod 711 "$TMP"
mkdir -p "$TMP/data" "$TMP/www" "$TMP/nginx"
chmod 755 "$TMP/www"
chmod 700 "$TMP/data"

LOOKOUT_PORT="$(free_port)"
NGINX_PORT="$(free_port "$LOOKOUT_PORT")"
LOOKOUT_URL="http://127.0.0.1:$LOOKOUT_PORT$ROUTE?$QUERY"
NGINX_URL="http://127.0.0.1:$NGINX_PORT$ROUTE?$QUERY"

log "starting Lookout on 127.0.0.1:$LOOKOUT_PORT (--threads $THREADS)"
"$LOOKOUT_BIN" --port "$LOOKOUT_PORT" --bind 127.0.0.1 --data-dir "$TMP/data" \
    --log-level warning --threads "$THREADS" \
    >"$TMP/lookout.stdout" 2>"$TMP/lookout.stderr" &
LOOKOUT_PID=$!
wait_until_answers "$LOOKOUT_URL" "$LOOKOUT_PID" lookout

BODY="$TMP/www/page1.json"
status="$(curl -sS -o "$BODY" -w '%{http_code}' "$LOOKOUT_URL")"
[[ $status == 200 ]] || die "Lookout answered $status to GET $ROUTE?$QUERY"
chmod 644 "$BODY"
BODY_BYTES="$(wc -c <"$BODY")"
log "Lookout: 200, $BODY_BYTES body bytes"

cat >"$TMP/nginx/nginx.conf" <<EOF
worker_processes $NGINX_WORKERS;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
daemon off;

events {
    worker_connections 1024;
}

http {
    access_log off;
    types { }
    default_type application/json;
    sendfile on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    open_file_cache max=16 inactive=60s;
    open_file_cache_valid 60s;
    client_body_temp_path $TMP/nginx/client_body;
    proxy_temp_path $TMP/nginx/proxy;
    fastcgi_temp_path $TMP/nginx/fastcgi;

    server {
        listen 127.0.0.1:$NGINX_PORT;
        server_name _;
        location = $ROUTE {
            alias $BODY;
        }
        location / {
            return 404;
        }
    }
}
EOF

log "starting nginx on 127.0.0.1:$NGINX_PORT (worker_processes $NGINX_WORKERS)"
"$NGINX" -p "$TMP/nginx/" -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/error.log" \
    >"$TMP/nginx/stdout" 2>"$TMP/nginx/stderr" &
NGINX_PID=$!
wait_until_answers "$NGINX_URL" "$NGINX_PID" nginx

status="$(curl -sS -o "$TMP/nginx-body" -w '%{http_code}' "$NGINX_URL")"
[[ $status == 200 ]] || die "nginx answered $status to GET $ROUTE?$QUERY"
cmp "$BODY" "$TMP/nginx-body" || die "nginx body differs from Lookout's"
log "nginx: 200, identical $BODY_BYTES bytes"

declare -a lookout_rps=() lookout_p99=() nginx_rps=() nginx_p99=()
lookout_errors=0
nginx_errors=0

run_wrk() { # target url round
    local target=$1 url=$2 round=$3 out rps p99 errors
    out="$TMP/wrk-$target-$round.txt"
    if [[ $target == lookout ]]; then
        kill -0 "$LOOKOUT_PID" 2>/dev/null || die "Lookout (pid $LOOKOUT_PID) is gone before round $round"
    else
        kill -0 "$NGINX_PID" 2>/dev/null || die "nginx (pid $NGINX_PID) is gone before round $round"
    fi
    wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "$url" >"$out" 2>&1 ||
        { cat "$out" >&2; die "wrk failed against $target"; }
    rps="$(wrk_rps "$out")"
    p99="$(wrk_p99_ms "$out")"
    errors="$(wrk_errors "$out")"
    [[ -n $rps && -n $p99 ]] || { cat "$out" >&2; die "could not parse wrk output for $target"; }
    printf '  round %d  %-8s %12.2f req/s   p99 %8.3f ms   errors %s\n' "$round" "$target" "$rps" "$p99" "$errors" >&2
    if ((errors > 0)); then
        log "wrk reported errors against $target:"
        cat "$out" >&2
    fi
    if [[ $target == lookout ]]; then
        lookout_rps+=("$rps")
        lookout_p99+=("$p99")
        lookout_errors=$((lookout_errors + errors))
        kill -0 "$LOOKOUT_PID" 2>/dev/null || die "Lookout (pid $LOOKOUT_PID) died during round $round"
    else
        nginx_rps+=("$rps")
        nginx_p99+=("$p99")
        nginx_errors=$((nginx_errors + errors))
        kill -0 "$NGINX_PID" 2>/dev/null || die "nginx (pid $NGINX_PID) died during round $round"
    fi
}

log "wrk -t$WRK_THREADS -c$CONNECTIONS -d$DURATION --latency, $ROUNDS rounds, alternating Lookout / nginx"
for ((round = 1; round <= ROUNDS; round++)); do
    run_wrk lookout "$LOOKOUT_URL" "$round"
    run_wrk nginx "$NGINX_URL" "$round"
done

# Lookout must still serve the same bytes after the load.
status="$(curl -sS -o "$TMP/lookout-after" -w '%{http_code}' "$LOOKOUT_URL")"
[[ $status == 200 ]] || die "after the runs Lookout answered $status"
cmp -s "$BODY" "$TMP/lookout-after" || log "note: Lookout's page 1 changed during the run"
if [[ -s $TMP/lookout.stderr ]]; then
    log "Lookout wrote to stderr during the run:"
    show_tail "$TMP/lookout.stderr" "Lookout stderr"
fi

summary_row() { # target errors rps... -- p99...
    local target=$1 errors=$2 med lo hi p99
    shift 2
    local -a rps=() p99s=()
    while (($# > 0)) && [[ $1 != -- ]]; do rps+=("$1"); shift; done
    shift
    p99s=("$@")
    med="$(median "${rps[@]}")"
    lo="$(minimum "${rps[@]}")"
    hi="$(maximum "${rps[@]}")"
    p99="$(median "${p99s[@]}")"
    printf '%-8s  %14.0f  %11.0f-%-11.0f  %14.2f  %6d\n' "$target" "$med" "$lo" "$hi" "$p99" "$errors"
}

lk_med="$(median "${lookout_rps[@]}")"
ng_med="$(median "${nginx_rps[@]}")"
printf '\n'
printf 'GET %s?%s (%s bytes), wrk -t%s -c%s -d%s, %s rounds alternating; Lookout --threads %s, nginx worker_processes %s\n' \
    "$ROUTE" "$QUERY" "$BODY_BYTES" "$WRK_THREADS" "$CONNECTIONS" "$DURATION" "$ROUNDS" "$THREADS" "$NGINX_WORKERS"
printf '%-8s  %14s  %23s  %14s  %6s\n' target 'median req/s' 'min-max req/s' 'median p99 ms' errors
summary_row lookout "$lookout_errors" "${lookout_rps[@]}" -- "${lookout_p99[@]}"
summary_row nginx "$nginx_errors" "${nginx_rps[@]}" -- "${nginx_p99[@]}"
awk -v a="$lk_med" -v b="$ng_med" 'BEGIN { printf "Lookout/nginx (median req/s): %.2f\n", a / b }'
