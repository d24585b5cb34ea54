#!/usr/bin/env bash
# The example page (examples/browser) in headless Chromium, against a real Lookout
# (issue 19): from an origin in --cors-origins it signs in and shows the gallery, and a
# write made with curl reaches both its views, EventSource and long-poll; from another
# origin the browser refuses the API's answers. Tests/browser/browser_test.py drives it
# through the DevTools protocol (Tests/browser/cdp.py): Python's standard library only.
#
#   bash Tests/browser/browser-test.sh        (make browser-test installs Chromium first)
#
# Environment: LOOKOUT_BIN (default .build/debug/lookout), CHROMIUM (default
# /usr/bin/chromium, Debian's package), TEST_OUTPUT (default .build/browser-test: the
# screenshots browser-test.png and refused-origin.png, and the logs).
set -euo pipefail
binary=${LOOKOUT_BIN:-.build/debug/lookout}
[[ $binary == /* || -z ${LOOKOUT_BIN:-} ]] || binary=$PWD/$binary
output=${TEST_OUTPUT:-.build/browser-test}
[[ $output == /* || -z ${TEST_OUTPUT:-} ]] || output=$PWD/$output
cd "$(dirname "$0")/../.."

chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$binary" ] || { echo "browser-test: no server binary at $binary (build first: swift build)" >&2; exit 1; }
[ -x "$chromium" ] || { echo "browser-test: no Chromium at $chromium (make browser-test installs it)" >&2; exit 1; }

exec python3 Tests/browser/browser_test.py --lookout "$binary" --chromium "$chromium" --output "$output" "$@"
