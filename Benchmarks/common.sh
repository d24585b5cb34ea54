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

show_tail() { # file label
    if [[ -s $1 ]]; then
        printf -- '--- last lines of %s (%s) ---\n' "$2" "$1" >&2
        tail -n 40 "$1" >&2
        printf -- '---\n' >&2
    fi
}

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
