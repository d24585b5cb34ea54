#!/usr/bin/env bash
# Runs every shell example of README.md against a real Lookout, so the README stays true.
#
# The examples talk to port 3001 (what `make run` serves); this script starts the debug
# build on a free port instead and substitutes it, so it can run beside a `make run`.
# Each example must exit 0 and print something; one that does not show headers (-i, -I)
# must not print an error body; and the server must survive them all.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=.build/debug/lookout
[ -x "$binary" ] || { echo "build first: swift build" >&2; exit 1; }
work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

port=$(free_port)
"$binary" --port "$port" --data-dir "$work/data" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/v1/galleries" && break
    sleep 0.1
done

# The commands of ```sh blocks, except the quick start's make lines.
examples=$(awk '/^```sh$/ { inside = 1; next } /^```/ { inside = 0 } inside && !/^make / { print }' README.md)
passed=0
failed=0
while IFS= read -r example; do
    [ -n "$example" ] || continue
    command=${example//localhost:3001/localhost:$port}
    if [[ $example == LOOKOUT_*lookout* ]]; then
        # A server-starting example: run it on another free port and check it serves.
        other=$(free_port)
        command=${command//--port 8080/--port $other}
        command=${command//.build\/release\/lookout/$binary --data-dir $work/other}
        bash -c "$command" 2>"$work/other.log" &
        other_pid=$!
        ok=no
        for _ in $(seq 100); do
            curl -s -o /dev/null "http://127.0.0.1:$other/v1/galleries" && { ok=yes; break; }
            sleep 0.1
        done
        kill "$other_pid"
        wait "$other_pid" || true
        if [ "$ok" = yes ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $example" >&2; fi
        continue
    fi
    expects_error=no
    [[ $example == *" -i "* || $example == *" -I "* ]] && expects_error=yes
    if output=$(bash -c "export TOKEN=${TOKEN:-}; $command; echo \"TOKEN=\$TOKEN\" >$work/token" 2>&1) &&
        [ -n "$output$(cat "$work/token")" ] &&
        { [ "$expects_error" = yes ] || [[ $output != *'"error"'* ]]; }; then
        TOKEN=$(sed -n 's/^TOKEN=//p' "$work/token")
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAILED: $example" >&2
        echo "$output" >&2
    fi
done <<<"$examples"

kill -0 "$server_pid" || { echo "the server died:" >&2; cat "$work/server.log" >&2; exit 1; }
echo "readme: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
