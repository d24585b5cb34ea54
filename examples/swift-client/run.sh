#!/usr/bin/env bash
# Runs the generated client (examples/swift-client, built by `make example-client`) against
# the debug server on demo data in a temp directory, and checks what it printed: a login
# and the reviews listed with the token, private fields included.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=Tests/server-port.sh
source Tests/server-port.sh
binary=.build/debug/lookout
client=.build-client/debug/LookoutClientExample
[ -x "$binary" ] || { echo "example-client: no server binary at $binary (swift build)" >&2; exit 1; }
[ -x "$client" ] || { echo "example-client: no client at $client (make example-client)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/lookout-client.XXXXXX")
server_pid=""
cleanup() {
    # Only the server this script started, by its id.
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

: >"$work/server.log"
"$binary" --port 0 --bind 127.0.0.1 --data-dir "$work/data" 2>"$work/server.log" &
server_pid=$!
port=$(server_port "$work/server.log" "$server_pid") ||
    { echo "example-client: the server did not log a listening port within 60 s (or exited)" >&2; exit 1; }

output=$(timeout 60 "$client" "http://127.0.0.1:$port")
echo "$output"
grep -q 'aki@example.com' <<<"$output" || { echo "example-client: FAIL: no private field in the list" >&2; exit 1; }
echo "example-client: passed"
