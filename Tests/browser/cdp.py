"""A headless Chromium driven through the Chrome DevTools Protocol over a pipe.

`--remote-debugging-pipe` makes Chromium read protocol messages from its file descriptor 3
and write its own to descriptor 4, each a JSON object followed by a NUL byte. That needs
no websocket client, no port and nothing beyond Python's standard library.
"""

import base64
import json
import os
import select
import signal
import subprocess
import time


class ProtocolError(Exception):
    """Chromium answered a command with an error, closed the pipe, or did not answer in time."""


class ScriptError(ProtocolError):
    """A JavaScript expression threw (for instance while its page was still loading)."""


class Chromium:
    """One headless browser, its own temporary profile, stopped by `close`.

    Commands go to the browser (`call`) or to one page (`Page.call`); events that arrive
    meanwhile are kept in `events`, so the console of every page can be read afterwards.
    """

    def __init__(self, executable, profile_dir, log_path, window=(1280, 1000)):
        to_chromium_read, self._to_chromium = os.pipe()
        self._from_chromium, from_chromium_write = os.pipe()
        arguments = [
            executable,
            "--headless=new",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile_dir}",
            f"--window-size={window[0]},{window[1]}",
            "--hide-scrollbars",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-extensions",
            "--disable-sync",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-dev-shm-usage",
            # A busy machine must not slow the page's timers or its background tab.
            "--disable-background-timer-throttling",
            "--disable-renderer-backgrounding",
            "--disable-backgrounding-occluded-windows",
            "about:blank",
        ]
        if os.geteuid() == 0:
            arguments.insert(1, "--no-sandbox")  # Chromium's sandbox refuses to run as root.

        def wire_pipes():
            os.dup2(to_chromium_read, 3)
            os.dup2(from_chromium_write, 4)

        with open(log_path, "wb") as log:
            # Its own session: its helper processes form one group, ended together in close().
            self.process = subprocess.Popen(
                arguments,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(3, 4),
                preexec_fn=wire_pipes,
                start_new_session=True,
            )
        os.close(to_chromium_read)
        os.close(from_chromium_write)
        self._buffer = b""
        self._next_id = 0
        self.events = []

    def call(self, method, params=None, session=None, timeout=60):
        """Sends one command and returns its result; raises ProtocolError on an error."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_chromium, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline, method)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise ProtocolError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            if "method" in answer:
                self.events.append(answer)

    def open_page(self, url):
        """Opens a new tab at `url` and returns it."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.call("Runtime.enable")
        page.call("Log.enable")
        page.call("Page.enable")
        page.call("Page.navigate", {"url": url})
        return page

    def console(self, session=None):
        """The console messages, exceptions and browser log entries seen so far, as lines."""
        lines = []
        for event in self.events:
            if session and event.get("sessionId") != session:
                continue
            params = event.get("params", {})
            if event["method"] == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                lines.append(f"console.{params.get('type')}: {text}")
            elif event["method"] == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                lines.append(f"exception: {details.get('exception', {}).get('description', details.get('text'))}")
            elif event["method"] == "Log.entryAdded":
                entry = params.get("entry", {})
                lines.append(f"{entry.get('source')} {entry.get('level')}: {entry.get('text')} {entry.get('url', '')}".rstrip())
        return lines

    def close(self):
        """Asks the browser to quit, then ends what is left of its process group."""
        if self.process.poll() is None:
            try:
                self.call("Browser.close", timeout=10)
            except (ProtocolError, OSError):
                pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # helpers that outlived the browser
        except ProcessLookupError:
            pass
        self.process.wait()
        os.close(self._to_chromium)
        os.close(self._from_chromium)

    def _read(self, deadline, method):
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProtocolError(f"{method}: no answer from Chromium in time")
            readable, _, _ = select.select([self._from_chromium], [], [], remaining)
            if readable:
                chunk = os.read(self._from_chromium, 1 << 20)
                if not chunk:
                    raise ProtocolError(f"{method}: Chromium closed the pipe (exit status {self.process.poll()})")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)


class Page:
    """One tab, attached with a flat session."""

    def __init__(self, browser, session):
        self.browser = browser
        self.session = session

    def call(self, method, params=None, timeout=60):
        return self.browser.call(method, params, self.session, timeout)

    def evaluate(self, expression, timeout=60):
        """The value of a JavaScript expression in the page; awaits it if it is a promise."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True, "timeout": timeout * 1000},
            timeout=timeout + 5,
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise ScriptError(f"{expression!r} threw: {details.get('exception', {}).get('description', details.get('text'))}")
        return result["result"].get("value")

    def wait_for(self, expression, condition, what, timeout=60, interval=0.1):
        """Evaluates `expression` until `condition` holds for its value, and returns the value.

        An expression that throws counts as not yet (the page may still be loading). Raises
        TimeoutError, naming `what` and the last value or error seen, after `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
                if condition(value):
                    return value
            except ScriptError as error:
                value = error
            time.sleep(interval)
        raise TimeoutError(f"not within {timeout} s: {what} (last seen: {value})")

    def screenshot(self, path):
        """Saves the whole page as a PNG."""
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        with open(path, "wb") as file:
            file.write(base64.b64decode(shot["data"]))
