# shellcheck shell=bash
# Sourced by the scripts that start a server with --port 0 (crash test, schemathesis, the
# example client).
#
# server_port LOG PID: prints the port the server logged ("listening ... port=N") to LOG,
# waiting up to 60 s; fails (status 1, nothing printed) if process PID exits first or no
# port comes.
server_port() {
    local log=$1 pid=$2 port
    for _ in $(seq 3000); do
        port=$(sed -nE '/listening/ s/.*port=([0-9]+).*/\1/p' "$log" | head -n 1)
        if [ -n "$port" ]; then
            echo "$port"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.02
    done
    return 1
}
