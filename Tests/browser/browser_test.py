"""The example page in a real browser (issue 19): CORS and EventSource, end to end.

Serves examples/browser from two origins on 127.0.0.1, starts lookout with only the first
in --cors-origins, and opens the page from each in headless Chromium (see cdp.py). From
the allowed origin the page must sign in and show the gallery in both views; a write made
with curl must then reach both, the EventSource view and the long-poll view, with the
cursor the API gives. From the other origin the browser must refuse every answer. Every
wait is for a condition, with a generous deadline; nothing sleeps to synchronize.

    python3 Tests/browser/browser_test.py --lookout .build/debug/lookout --output DIR

Leaves in DIR: browser-test.png (the page after the write), refused-origin.png, and the
logs of lookout, Chromium and the pages' consoles.
"""

import argparse
import functools
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime

from cdp import Chromium

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAGE_DIR = os.path.join(ROOT, "examples", "browser")
VIEWS = {"EventSource": "view-sse", "long-poll": "view-poll"}


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve_page():
    """Serves examples/browser on 127.0.0.1 at a free port, from a daemon thread."""
    handler = functools.partial(QuietHandler, directory=PAGE_DIR)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def start_lookout(binary, work, cors_origins, log_path, timeout):
    """Starts lookout on a free port with fresh in-memory state; returns it and its base URL."""
    log = open(log_path, "wb")
    process = subprocess.Popen(
        [binary, "--port", "0", "--bind", "127.0.0.1", "--data-dir", os.path.join(work, "data"),
         "--database", "memory", "--cors-origins", cors_origins],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
    )
    log.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_path, errors="replace") as file:
            found = re.search(r"port=(\d+).*listening", file.read())
        if found:
            return process, f"http://127.0.0.1:{found.group(1)}"
        if process.poll() is not None:
            raise Failure(f"lookout exited with status {process.returncode}:\n{tail(log_path)}")
        time.sleep(0.02)
    raise Failure(f"lookout did not listen within {timeout} s:\n{tail(log_path)}")


def stop(process, grace=10):
    """Stops a process this test started: SIGTERM, then SIGKILL after `grace` seconds."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def curl(*arguments):
    """Runs curl; returns (status, headers as a lowercase dict, body)."""
    result = subprocess.run(
        ["curl", "-s", "-S", "--max-time", "60", "-D", "-", *arguments],
        capture_output=True, check=True,
    )
    head, _, body = result.stdout.decode().partition("\r\n\r\n")
    lines = head.split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def gallery_page(api):
    """What the views show, as the API answers it: [[id, title], …] and the cursor."""
    _, headers, body = curl(f"{api}/v1/galleries?page=1&per_page=6")
    return [[photo["id"], photo["title"]] for photo in json.loads(body)], headers["etag"].removeprefix("W/").strip('"')


def tail(path, lines=20):
    with open(path, errors="replace") as file:
        return "".join(file.readlines()[-lines:])


class Failure(Exception):
    pass


def view_state(view_id):
    """A JavaScript expression: what one view shows, as a plain object."""
    return f"""(() => {{
        const view = document.getElementById({json.dumps(view_id)});
        return {{
            state: view.dataset.state, updates: Number(view.dataset.updates),
            cursor: view.dataset.cursor, updatedAt: view.dataset.updatedAt || null,
            photos: [...view.querySelectorAll('li[data-id]')].map((li) => [Number(li.dataset.id), li.querySelector('.title').textContent]),
        }};
    }})()"""


SESSION_STATE = "(() => { const s = document.getElementById('session'); return {state: s.dataset.state, user: s.dataset.user, text: s.textContent.trim()}; })()"


def read_probe(api):
    """JavaScript: whether this page may read a plain GET of the API."""
    return f"fetch({json.dumps(api + '/v1/galleries')}).then((r) => 'read ' + r.status, (e) => 'refused: ' + e)"


def stream_probe(api, timeout):
    """JavaScript: whether this page gets an event from an EventSource on the API."""
    return f"""new Promise((resolve) => {{
        const source = new EventSource({json.dumps(api + '/v1/galleries')});
        const done = (what) => {{ source.close(); resolve(what); }};
        source.onmessage = () => done('event');
        source.onerror = () => {{ if (source.readyState === EventSource.CLOSED) done('refused'); }};
        setTimeout(() => done('no answer within {timeout} s'), {timeout * 1000});
    }})"""


class Run:
    """The checks, in order; each later one builds on the earlier ones."""

    def __init__(self, arguments, work):
        self.arguments = arguments
        self.work = work
        self.output = arguments.output
        self.timeout = arguments.timeout
        self.passed = []
        self.lookout = None
        self.browser = None
        self.servers = []

    def check(self, name, condition, detail=""):
        if not condition:
            raise Failure(f"{name}: {detail}")
        self.passed.append(name)
        print(f"ok: {name}", flush=True)

    def run(self):
        allowed_server, allowed = serve_page()
        refused_server, refused = serve_page()
        self.servers = [allowed_server, refused_server]
        cors = self.arguments.cors_origins or allowed
        self.lookout, api = start_lookout(self.arguments.lookout, self.work, cors,
                                          os.path.join(self.output, "lookout.log"), self.timeout)
        print(f"lookout at {api} with --cors-origins {cors}; the page at {allowed}, refused at {refused}", flush=True)
        self.browser = Chromium(self.arguments.chromium, os.path.join(self.work, "profile"),
                                os.path.join(self.output, "chromium.log"))
        self.allowed_origin(self.browser.open_page(f"{allowed}/?api={api}"), api)
        self.refused_origin(self.browser.open_page(f"{refused}/?api={api}"), api, refused)

    def allowed_origin(self, page, api):
        """The page signs in, shows the gallery in both views, and both show a write."""
        session = page.wait_for(SESSION_STATE, lambda s: s["state"] == "signed-in", "the page signs in", self.timeout)
        self.check("the page signs in from an allowed origin", session["user"] == "demo@example.com", session)

        photos, cursor = gallery_page(api)
        for name, view_id in VIEWS.items():
            shown = page.wait_for(view_state(view_id), lambda v: v["state"] == "live" and v["updates"] > 0,
                                  f"the {name} view is live and shows the gallery", self.timeout)
            self.check(f"the {name} view shows the gallery at the API's cursor",
                       shown["photos"] == photos and shown["cursor"] == cursor,
                       f"shows {shown}, the API answers {photos} at {cursor}")

        photo_id, old_title = photos[0]
        new_title = f"{old_title}, edited at {datetime.now():%H:%M:%S}"
        _, _, login = curl("-X", "POST", f"{api}/v1/auth/login", "-H", "Content-Type: application/json",
                           "-d", '{"email":"editor@example.com","password":"editor-password"}')
        editor = json.loads(login)["token"]
        write_sent = time.time()
        status, _, body = curl("-X", "PATCH", f"{api}/v1/galleries/{photo_id}", "-H", "Content-Type: application/json",
                               "-H", f"Authorization: Bearer {editor}", "-d", json.dumps({"title": new_title}))
        write_answered = time.time()
        self.check("the editor's PATCH is accepted", status == 200, f"{status} {body}")
        print(f"wrote galleries/{photo_id}.title = {new_title!r}", flush=True)

        photos, cursor = gallery_page(api)
        for name, view_id in VIEWS.items():
            shown = page.wait_for(view_state(view_id), lambda v: [photo_id, new_title] in v["photos"],
                                  f"the {name} view shows the new title", self.timeout)
            self.check(f"the write reaches the {name} view, at the API's new cursor",
                       shown["photos"] == photos and shown["cursor"] == cursor,
                       f"shows {shown}, the API answers {photos} at {cursor}")
            delay = datetime.fromisoformat(shown["updatedAt"].replace("Z", "+00:00")).timestamp() - write_sent
            print(f"  {name}: {shown['updates']} renderings, the last {delay * 1000:.0f} ms after curl sent the write"
                  f" (curl had its answer after {(write_answered - write_sent) * 1000:.0f} ms)", flush=True)

        screenshot = os.path.join(self.output, "browser-test.png")
        page.screenshot(screenshot)
        print(f"screenshot: {screenshot}", flush=True)
        self.check("the allowed origin can read a GET and open an EventSource",
                   (page.evaluate(read_probe(api)), page.evaluate(stream_probe(api, self.timeout))) == ("read 200", "event"))

    def refused_origin(self, page, api, origin):
        """From an origin not in --cors-origins the browser withholds every answer."""
        session = page.wait_for(SESSION_STATE, lambda s: s["state"] == "error",
                                "the page from a disallowed origin reports that it cannot sign in", self.timeout)
        self.check("a disallowed origin cannot sign in, and the page says why", origin in session["text"], session)
        read, stream = page.evaluate(read_probe(api)), page.evaluate(stream_probe(api, self.timeout))
        self.check("a disallowed origin can neither read a GET nor open an EventSource",
                   read.startswith("refused") and stream == "refused", f"GET: {read}, EventSource: {stream}")
        page.screenshot(os.path.join(self.output, "refused-origin.png"))

    def close(self):
        if self.browser:
            with open(os.path.join(self.output, "console.txt"), "w") as file:
                file.write("\n".join(self.browser.console()) + "\n")
            self.browser.close()
        stop(self.lookout)
        for server in self.servers:
            server.shutdown()
            server.server_close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lookout", required=True, help="the lookout binary")
    parser.add_argument("--output", required=True, help="where the screenshots and logs go")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for each condition")
    parser.add_argument("--cors-origins", help="lookout's --cors-origins (default: the page's origin); to see the test fail")
    arguments = parser.parse_args()
    os.makedirs(arguments.output, exist_ok=True)
    # SIGTERM (a CI time-out) unwinds through the finally below like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    work = tempfile.mkdtemp(prefix="lookout-browser.")
    run = Run(arguments, work)
    failed = 0
    started = time.monotonic()
    try:
        run.run()
    except Exception as error:  # report any failure the same way, with the logs that explain it
        failed = 1
        print(f"FAIL: {error}", file=sys.stderr)
    finally:
        run.close()
        shutil.rmtree(work, ignore_errors=True)
    if failed:
        for what, name in (("the pages' consoles", "console.txt"), ("lookout's log", "lookout.log")):
            path = os.path.join(arguments.output, name)
            if os.path.exists(path):
                print(f"--- {what}:\n{tail(path)}", file=sys.stderr)
        print(f"logs in {arguments.output}", file=sys.stderr)
    print(f"took {time.monotonic() - started:.1f} s")
    print(f"browser: {len(run.passed)} passed, {failed} failed")
    return failed


if __name__ == "__main__":
    sys.exit(main())
