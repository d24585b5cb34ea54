#!/usr/bin/env bash
# Schemathesis against a live server, driven by the server's own OpenAPI document
# (GET /openapi.json): generated requests to every operation, with an editor's token,
# fail on any 5xx, any status, content type or body the document does not allow, and a
# server that stops answering. Bounded: at most MAX_EXAMPLES cases per operation and
# MAX_TIME seconds in all.
#
#   bash Tests/schemathesis/run.sh
#
# Environment: LOOKOUT_BIN (default .build/debug/lookout), MAX_EXAMPLES (default 15),
# MAX_TIME (default 110), SEED (default random; printed, to replay the same cases),
# KEEP_WORK=1 keeps the temp directory (the server's log, the report) for inspection.
# Needs the tools `make python-tools` installs in .build-py/.
set -euo pipefail
binary=${LOOKOUT_BIN:-.build/debug/lookout}
[[ $binary == /* || -z ${LOOKOUT_BIN:-} ]] || binary=$PWD/$binary
cd "$(dirname "$0")/../.."
# shellcheck source=Tests/server-port.sh
source Tests/server-port.sh

st=$PWD/.build-py/bin/st
[ -x "$binary" ] || { echo "schemathesis: no server binary at $binary (build first: swift build)" >&2; exit 1; }
[ -x "$st" ] || { echo "schemathesis: $st is missing (make python-tools)" >&2; exit 1; }
max_examples=${MAX_EXAMPLES:-15}
max_time=${MAX_TIME:-110}
seed=${SEED:-$((RANDOM * 32768 + RANDOM))}

work=$(mktemp -d "${TMPDIR:-/tmp}/lookout-schemathesis.XXXXXX")
server_pid=""
cleanup() {
    # Only the server this script started, by its id.
    if [ -n "$server_pid" ]; then
        kill -9 "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    if [ "${KEEP_WORK:-0}" = 1 ]; then echo "schemathesis: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
    echo "schemathesis: FAIL: $*" >&2
    if [ -s "$work/server.log" ]; then
        echo "--- last lines of the server's log:" >&2
        tail -n 15 "$work/server.log" >&2
    fi
    echo "schemathesis: replay with SEED=$seed (KEEP_WORK=1 keeps the server's log)" >&2
    exit 1
}

# The demo data in SQLite, in the temp directory; a short --max-wait keeps long-polls short.
: >"$work/server.log"
"$binary" --port 0 --bind 127.0.0.1 --data-dir "$work/data" --max-wait 2 2>"$work/server.log" &
server_pid=$!
port=$(server_port "$work/server.log" "$server_pid") ||
    fail "the server did not log a listening port within 60 s (or exited)"
base=http://127.0.0.1:$port

# A user of its own, an editor, made with the CLI as an operator would (a running server
# looks users up at each login).
password="schemathesis-$seed-password"
printf '%s\n' "$password" | "$binary" user add schemathesis@example.com --role editor --data-dir "$work/data" \
    >/dev/null || fail "lookout user add"

token=$(curl -sf -X POST "$base/v1/auth/login" -H 'Content-Type: application/json' \
    -d "{\"email\":\"schemathesis@example.com\",\"password\":\"$password\"}" | sed -E 's/.*"token":"([^"]+)".*/\1/')
[ -n "$token" ] || fail "no token for the editor"

echo "schemathesis: $base/openapi.json, seed $seed, at most $max_examples cases per operation, $max_time s"
# The document's statuses, content types and bodies; no 5xx; and an undocumented method on
# a documented path is 405 with an Allow that lists the path's methods (that found PUT on
# /v1/auth/* answering 404). One worker: CPython 3.11 can fail compiling schemathesis'
# generated code in two threads at once ("AST constructor recursion depth mismatch").
checks=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance
checks=$checks,unsupported_method,allow_header_conformance
started=$SECONDS
status=0
# From the temp directory, where schemathesis keeps its cache (.schemathesis/).
(cd "$work" && "$st" run "$base/openapi.json" \
    --checks "$checks" \
    --header "Authorization: Bearer $token" \
    --max-examples "$max_examples" --max-time "$max_time" --seed "$seed" \
    --request-timeout 10 --workers 1 \
    --generation-database none --no-color \
    --report junit --report-dir "$work/report") || status=$?
echo "schemathesis: ran in $((SECONDS - started)) s"

# Still alive and answering after all of it; then a clean stop.
kill -0 "$server_pid" 2>/dev/null || { server_pid=""; fail "the server died during the run"; }
curl -sf "$base/healthz" >/dev/null || fail "the server no longer answers /healthz"
kill -TERM "$server_pid"
stopped=0
wait "$server_pid" || stopped=$?
server_pid=""
[ "$stopped" = 0 ] || fail "the server exited $stopped on SIGTERM"
[ "$status" = 0 ] || fail "schemathesis found failures (above)"
echo "schemathesis: passed"
