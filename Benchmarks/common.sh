# shellcheck shell=bash
# Helpers shared by the benchmark scripts; sourced, not run.

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Stops a process we started: SIGTERM, then SIGKILL after 10 s.
stop_pid() { # pid name
    local pid=$1 name=$2 i
    [[ -n $pid ]] || return 0
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "$name (pid $pid) ignored SIGTERM for 10s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# Whether Debian package $1 is installed (a library has no command to look for).
package_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -qx 'install ok installed'; }

# Installs Debian packages, with sudo only when not root; nothing when given none.
apt_install() {
    (($# > 0)) || return 0
    local -a sudo=()
    ((EUID == 0)) || sudo=(sudo)
    log "installing $*"
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
}

show_tail() { # file label
    if [[ -s $1 ]]; then
        printf -- '--- last lines of %s (%s) ---\n' "$2" "$1" >&2
        tail -n 40 "$1" >&2
        printf -- '---\n' >&2
    fi
}

# Cleans up whenever the script exits, however it exits: stops the processes held by the
# given variables, in order; shows the tail of each log in FAILURE_LOGS when the status is
# not 0; removes $TMP (if it exists by then) unless KEEP_TMP=1; and exits with the script's
# status. INT and TERM exit with 130 and 143. Each argument is label:VARIABLE, whose
# processes stop_pid stops, or label:VARIABLE:SIGNAL, whose processes are sent SIGNAL and
# waited for, however long they take. The variables and FAILURE_LOGS (an array of
# label:file) are read at exit, so they may change meanwhile; a variable may be empty, or
# an array of PIDs.
cleanup_at_exit() { # label:VARIABLE[:SIGNAL]...
    CLEANUP_STOPS=("$@")
    trap run_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}
FAILURE_LOGS=()

# The exit trap that cleanup_at_exit sets.
run_cleanup() {
    local status=$? entry label name signal pids pid
    # Only in the script's own shell: a child forked for `command &` has these traps until
    # it runs the command, and if SIGTERM from here comes first, runs them too.
    ((BASHPID == $$)) || exit "$status"
    trap - EXIT
    for entry in "${CLEANUP_STOPS[@]}"; do
        IFS=: read -r label name signal <<<"$entry"
        pids="${name}[@]"
        for pid in "${!pids}"; do
            if [[ -z $signal ]]; then
                stop_pid "$pid" "$label"
            elif [[ -n $pid ]]; then
                kill -"$signal" "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
            fi
        done
    done
    if ((status != 0)); then
        for entry in "${FAILURE_LOGS[@]}"; do show_tail "${entry#*:}" "${entry%%:*}"; done
    fi
    if [[ -n ${TMP:-} && -d $TMP ]]; then
        if [[ ${KEEP_TMP:-0} == 1 ]]; then log "kept $TMP"; else rm -rf -- "$TMP"; fi
    fi
    exit "$status"
}

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# Sets LOOKOUT_BIN to the release binary: the one given in LOOKOUT_BIN, or one built now.
# Sets BINARY to what a results line names: the given path, or the commit built (and
# whether Sources/ had uncommitted changes).
release_binary() { # repo-root
    if [[ -n ${LOOKOUT_BIN:-} ]]; then
        [[ -x $LOOKOUT_BIN ]] || die "LOOKOUT_BIN $LOOKOUT_BIN is not an executable"
        BINARY="$LOOKOUT_BIN"
        return 0
    fi
    log "building: swift build -c release --product lookout"
    (cd "$1" && swift build -c release --product lookout) >&2
    LOOKOUT_BIN="$1/.build/release/lookout"
    [[ -x $LOOKOUT_BIN ]] || die "$LOOKOUT_BIN not found after the build"
    BINARY="commit $(git -C "$1" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    [[ -z "$(git -C "$1" status --porcelain -- Sources Package.swift 2>/dev/null)" ]] || BINARY+=" + uncommitted changes"
}

# A loopback port free right now, chosen by the kernel.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Waits up to `seconds` (15 unless given) for url to answer 2xx while pid lives.
wait_until_answers() { # url pid name [seconds]
    local url=$1 pid=$2 name=$3 limit=${4:-15}
    local deadline=$((SECONDS + limit))
    while ((SECONDS < deadline)); do
        kill -0 "$pid" 2>/dev/null || die "$name (pid $pid) exited before answering $url"
        if curl -fsS -o /dev/null --max-time 5 "$url" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    die "$name did not answer $url within ${limit}s"
}

# --- wrk parsing -------------------------------------------------------------------

# Requests/sec from a wrk report.
# Waits (up to 4 minutes) until the kernel's connection-tracking table has room for
# `count` more connections, with a tenth of it to spare. Loopback connections are tracked
# here, and a closed one stays in the table for two minutes: back-to-back runs of 10,000
# connections fill it, and then the kernel drops SYNs ("nf_conntrack: table full" in
# dmesg), connecting takes a minute, and polls reach their deadline before the write is
# sent. Without conntrack (no /proc entry) it returns at once.
conntrack_room() { # count
    local used=/proc/sys/net/netfilter/nf_conntrack_count max=/proc/sys/net/netfilter/nf_conntrack_max i
    [[ -r $used && -r $max ]] || return 0
    for ((i = 0; i < 240; i++)); do
        (($(<"$used") + $1 <= $(<"$max") * 9 / 10)) && return 0
        ((i == 0)) && log "waiting for room in the conntrack table ($(<"$used") of $(<"$max") used, $1 more needed)"
        sleep 1
    done
    log "WARNING: conntrack table still nearly full ($(<"$used") of $(<"$max")): connections may be dropped"
}

wrk_rps() { awk '$1 == "Requests/sec:" { print $2 }' "$1"; }

# The 99% latency from a wrk --latency report, in milliseconds.
wrk_p99_ms() {
    awk '$1 == "99%" {
        v = $2; n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000
        else if (u == "m") n *= 60000; else if (u == "h") n *= 3600000
        printf "%.3f\n", n
    }' "$1"
}

# Non-2xx/3xx responses plus socket errors (connect, read, write, timeout).
wrk_errors() {
    awk '/^  Non-2xx or 3xx responses:/ { e += $NF }
         /^  Socket errors:/ { gsub(",", ""); e += $4 + $6 + $8 + $10 }
         END { print e + 0 }' "$1"
}

# The temp-file paths of an nginx running unprivileged from DIR, for its http block.
nginx_temp_paths() { # dir
    local kind
    for kind in client_body proxy fastcgi uwsgi scgi; do printf '    %s_temp_path %s/%s;\n' "$kind" "$1" "${kind#client_}"; done
}

NCHAN_MODULE=/usr/lib/nginx/modules/ngx_nchan_module.so

# Adds to the caller's array `packages` the Debian packages Nchan needs that are missing.
add_nchan_packages() {
    [[ -x $NGINX ]] || packages+=(nginx-light)
    [[ -f $NCHAN_MODULE ]] || packages+=(libnginx-mod-nchan)
}

# Dies unless each word of TARGETS is lookout or nchan.
check_targets() {
    local target
    for target in $TARGETS; do
        [[ $target == lookout || $target == nchan ]] || die "unknown target '$target' in TARGETS"
    done
}

# Writes DIR/nginx.conf: nginx with Nchan on 127.0.0.1:PORT, in the foreground, a worker per
# core. /sub/ID is a long-poll on channel ID and /events/ID an EventSource, both ended after
# TIMEOUT seconds; /pub/ID publishes (one message kept); /healthz answers 200.
write_nchan_conf() { # dir port timeout-seconds
    local dir=$1 port=$2 timeout=$3
    cat >"$dir/nginx.conf" <<CONF
load_module $NCHAN_MODULE;
$(if [[ ${NCHAN_ONE_PROCESS:-0} == 1 ]]; then echo "worker_processes 1;"; echo "master_process off;"; else echo "worker_processes $(nproc);"; fi)
worker_rlimit_nofile 20000;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
daemon off;
events { worker_connections 20000; }
http {
    access_log off;
$(nginx_temp_paths "$dir")
    keepalive_requests 1000000;
    keepalive_timeout 600s;
    server {
        listen 127.0.0.1:$port;
        location = /healthz { return 200 "ok"; }
        location ~ ^/sub/(\\w+)\$ {
            nchan_subscriber longpoll;
            nchan_channel_id \$1;
            nchan_subscriber_first_message newest;
            nchan_subscriber_timeout ${timeout}s;
        }
        # EventSource: "oldest" of a one-message buffer is the newest message, sent at
        # once like Lookout's current value ("newest" would wait for the next one).
        location ~ ^/events/(\\w+)\$ {
            nchan_subscriber eventsource;
            nchan_channel_id \$1;
            nchan_subscriber_first_message oldest;
            nchan_subscriber_timeout ${timeout}s;
        }
        location ~ ^/pub/(\\w+)\$ {
            nchan_publisher;
            nchan_channel_id \$1;
            nchan_message_buffer_length 1;
        }
    }
}
CONF
}

# Writes a data file of one public collection, `items`, with documents {"id": 1..count,
# "v": 0}, and the demo data's users.
items_data_file() { # file count
    python3 - "$(dirname "${BASH_SOURCE[0]}")/../Sources/LookoutApp/Resources/demo-data.json" "$1" "$2" <<'PY'
import json, sys
users = json.load(open(sys.argv[1]))["users"]
docs = [{"id": i, "v": 0} for i in range(1, int(sys.argv[3]) + 1)]
json.dump({"collections": [{"name": "items", "public": True, "documents": docs}], "users": users},
          open(sys.argv[2], "w"), separators=(",", ":"))
PY
}

# Writes 1,000 times to items 19,001-20,000 (the long-poll client's `patch`, its target
# arguments after the binary), so that SQLite's log is past its first growth before any
# write is timed: until its first checkpoint wraps it, the log grows and each commit costs
# ~50 us more on this disk (Benchmarks/README.md, stop 45). The items must exist and be
# held and written by nothing timed. Fails unless all 1,000 succeed; output in `out`.
warm_up_writes() { # client out target-args...
    local client=$1 out=$2
    shift 2
    "$client" patch "$@" --ids 19001-20000 --value-base 1 >"$out" || true
    grep -qx 'ok 1000' "$out"
}

# The demo editor's access token from the server at base URL `base`.
editor_token() { # base
    curl -fsS -X POST "$1/v1/auth/login" -H 'Content-Type: application/json' \
        -d '{"email":"editor@example.com","password":"editor-password"}' | sed -E 's/.*"token":"([^"]+)".*/\1/'
}

# Servers for the scripts that measure Lookout against Nchan (compare.sh, syscalls.sh,
# timeouts.sh): each starts one on a free PORT, sets SERVER_PID, and TARGET_ARGS for the
# long-poll client. They use TMP (the items data file at $TMP/items.json, logs) and
# LOOKOUT_BIN. Named apart from the start_lookout some scripts define for their own runs.
# A caller may set LAUNCHER, an array put before the server's command (instructions.sh:
# valgrind), and STARTUP_SECONDS, how long the server may take to answer (15 unless set);
# NCHAN_ONE_PROCESS=1 runs nginx as one process, without its master.
NGINX=/usr/sbin/nginx

start_compared_lookout() { # mode
    PORT=$(free_port)
    rm -rf "$TMP/data"
    ${LAUNCHER[@]+"${LAUNCHER[@]}"} "$LOOKOUT_BIN" --port "$PORT" --bind 127.0.0.1 --data-dir "$TMP/data" \
        --data-file "$TMP/items.json" --database "$1" --log-level warning --max-connections 20000 \
        --max-connections-per-client 0 --max-wait 300 --idle-timeout 600 2>"$TMP/lookout.log" &
    SERVER_PID=$!
    wait_until_answers "http://127.0.0.1:$PORT/v1/items/1" "$SERVER_PID" lookout "${STARTUP_SECONDS:-15}"
    # shellcheck disable=SC2034 # read by the scripts that source this file
    TARGET_ARGS=(--token "$(editor_token "http://127.0.0.1:$PORT")")
}

# The client's arguments for a poll on items/1?fields=v, one a line: the cursor Lookout's
# polls wait from (`--etag`); none for Nchan, whose polls need none.
etag_args() { # target: lookout* or nchan
    if [[ $1 == lookout* ]]; then
        printf '%s\n' --etag "$(curl -fsS -o /dev/null -w '%header{etag}' "http://127.0.0.1:$PORT/v1/items/1?fields=v")"
    fi
}

# shellcheck disable=SC2120 # its one argument is optional; most callers leave it out
start_compared_nchan() { # [longest wait, seconds: 300]
    PORT=$(free_port)
    rm -rf "$TMP/nginx"
    mkdir -p "$TMP/nginx"
    write_nchan_conf "$TMP/nginx" "$PORT" "${1:-300}"
    ${LAUNCHER[@]+"${LAUNCHER[@]}"} "$NGINX" -c "$TMP/nginx/nginx.conf" -p "$TMP/nginx" 2>"$TMP/nginx.log" &
    SERVER_PID=$!
    wait_until_answers "http://127.0.0.1:$PORT/healthz" "$SERVER_PID" nchan "${STARTUP_SECONDS:-15}"
    # shellcheck disable=SC2034 # read by the scripts that source this file
    TARGET_ARGS=(--nchan)
}
