#!/usr/bin/env bash
# Runs every shell example of README.md against a real Lookout, so the README stays true.
#
# Each ```sh block runs as one script (variables carry from line to line within it). The
# examples talk to port 3001 (what `make run` serves); this script starts the debug build
# on a free port instead and substitutes it, so it can run beside a `make run`.
# A block must exit 0 and print something; a block that shows no headers (-i, -I, -D)
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

serves() {
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$1/v1/galleries" && return 0
        sleep 0.1
    done
    return 1
}

port=$(free_port)
# With the CORS origin README "Web pages on other origins" names, as it says.
"$binary" --port "$port" --data-dir "$work/data" --cors-origins http://localhost:8000 2>"$work/server.log" &
server_pid=$!
serves "$port"

# Split the ```sh blocks into files, skipping the quick start's make lines.
awk -v dir="$work" '
    /^```sh$/ { inside = 1; count += 1; next }
    /^```/ { inside = 0 }
    inside && !/^make / { print > (dir "/block-" count ".sh") }
' README.md

passed=0
failed=0
for block in "$work"/block-*.sh; do
    sed -i "s/localhost:3001/localhost:$port/g" "$block"
    if grep -q '^LOOKOUT_.*lookout' "$block"; then
        # A server-starting example: run it on another free port and check it serves.
        other=$(free_port)
        # exec: the example's shell becomes the server, so stopping it stops the server.
        sed -i "s/--port 8080/--port $other/; s|\.build/release/lookout|exec $binary --data-dir $work/other|" "$block"
        bash "$block" 2>"$work/other.log" &
        other_pid=$!
        if serves "$other"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $(cat "$block")" >&2; fi
        kill "$other_pid"
        wait "$other_pid" || true
        continue
    fi
    # Commands on the data directory run the same binary on the test server's directory.
    sed -i -E "/--data-dir/! s#\.build/release/lookout (backup|export|import|user [a-z]+|keys [a-z]+)#$binary \1 --data-dir $work/data#; s#\.build/release/lookout#$binary#" "$block"
    shows_headers=no
    grep -qE -- ' -(i|I|D) ' "$block" && shows_headers=yes
    if output=$(bash -e "$block" 2>&1) && [ -n "$output" ] &&
        { [ "$shows_headers" = yes ] || [[ $output != *'"error"'* ]]; }; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAILED:" >&2
        cat "$block" >&2
        echo "--- output:" >&2
        echo "$output" >&2
    fi
done

kill -0 "$server_pid" || { echo "the server died:" >&2; cat "$work/server.log" >&2; exit 1; }
echo "readme: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
