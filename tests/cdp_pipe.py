"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe``.

Enough to load a page in headless Chromium, collect its console errors and
uncaught exceptions, evaluate JS, move the mouse and take a screenshot -- with
no Python dependency beyond the standard library.

The browser reads commands from fd 3 and writes replies and events to fd 4;
each message is one JSON object followed by a NUL byte.  Every wait has a
timeout, and :meth:`Chromium.close` always kills the process.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any, Self

FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe"]


class CDPError(RuntimeError):
    """The browser answered a command with an error, closed the pipe, or did not answer in time."""


class Chromium:
    """One headless Chromium process; use as a context manager so it is always killed."""

    def __init__(self, exe: str, profile_dir: Path, timeout: float = 15.0):
        self.timeout = timeout
        self._next_id = 0
        self._buf = bytearray()
        self.events: list[dict[str, Any]] = []
        """Every event received, in order (method, params, sessionId)."""
        to_browser_r, self._w = os.pipe()
        self._r, from_browser_w = os.pipe()

        def child_fds() -> None:
            # The pipe ends may themselves be fds 3 or 4; move them out of the way before dup2.
            a = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        # Kept open for the browser's lifetime (close() closes it); read back for error messages.
        self._log = open(Path(profile_dir) / "chromium-stderr.log", "wb")  # noqa: SIM115
        try:
            # preexec_fn is unsafe only with threads forking meanwhile; tests run single-threaded.
            self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
                                         pass_fds=(3, 4), preexec_fn=child_fds)  # noqa: PLW1509
        finally:
            os.close(to_browser_r)
            os.close(from_browser_w)

    # -- plumbing ------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Ask the browser to quit, then kill it if it has not within a few seconds."""
        try:
            if self.proc.poll() is None:
                try:
                    self._send("Browser.close")
                except OSError:
                    pass
                try:
                    self.proc.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=5)
            for fd in (self._r, self._w):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._log.close()

    def stderr_tail(self, n: int = 2000) -> str:
        self._log.flush()
        return Path(self._log.name).read_bytes()[-n:].decode(errors="replace")

    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._w, data):]
        return self._next_id

    def _recv(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError(f"timed out waiting for {waiting_for}; chromium stderr:\n{self.stderr_tail()}")
            ready, _, _ = select.select([self._r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise CDPError(f"chromium closed the DevTools pipe (exit code {self.proc.poll()}) while waiting for "
                               f"{waiting_for}; stderr:\n{self.stderr_tail()}")
            self._buf += chunk
        end = self._buf.index(b"\0")
        msg = json.loads(bytes(self._buf[:end]))
        del self._buf[:end + 1]
        if "method" in msg:
            self.events.append(msg)
        return msg

    def call(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float | None = None) -> dict[str, Any]:
        """Send a command and return its result (events that arrive meanwhile are kept)."""
        want = self._send(method, params, session)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            msg = self._recv(deadline, f"the reply to {method}")
            if msg.get("id") == want:
                if "error" in msg:
                    raise CDPError(f"{method} failed: {msg['error']}")
                return msg.get("result", {})

    def wait_event(self, method: str, session: str | None = None, after: int = 0,
                   timeout: float | None = None) -> dict[str, Any]:
        """Params of the first event ``method`` (of ``session``) at or after index ``after`` of :attr:`events`."""
        deadline = time.monotonic() + (timeout or self.timeout)
        i = after
        while True:
            for e in self.events[i:]:
                if e["method"] == method and (session is None or e.get("sessionId") == session):
                    return e.get("params", {})
            i = len(self.events)
            self._recv(deadline, f"event {method}")

    # -- pages ---------------------------------------------------------------------------

    def new_page(self, width: int = 1400, height: int = 1000) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        page.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        return page


class Page:
    """One tab, driven through its flattened session."""

    def __init__(self, browser: Chromium, session: str):
        self.browser = browser
        self.session = session

    def call(self, method: str, params: dict | None = None, timeout: float | None = None) -> dict[str, Any]:
        return self.browser.call(method, params, self.session, timeout)

    def _events(self, method: str) -> list[dict[str, Any]]:
        return [e.get("params", {}) for e in self.browser.events
                if e["method"] == method and e.get("sessionId") == self.session]

    def navigate(self, url: str, timeout: float | None = None) -> None:
        mark = len(self.browser.events)
        reply = self.call("Page.navigate", {"url": url})
        if reply.get("errorText"):
            raise CDPError(f"navigating to {url}: {reply['errorText']}")
        self.browser.wait_event("Page.loadEventFired", self.session, after=mark, timeout=timeout)

    def evaluate(self, expression: str, timeout: float | None = None) -> Any:
        """The value of a JS expression (promises are awaited); JS exceptions raise CDPError."""
        reply = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                          timeout)
        if "exceptionDetails" in reply:
            d = reply["exceptionDetails"]
            raise CDPError(f"JS exception in {expression[:80]!r}: {d.get('exception', {}).get('description') or d.get('text')}")
        return reply["result"].get("value")

    def frames(self, n: int = 2) -> None:
        """Wait for ``n`` animation frames, so that redraws scheduled with requestAnimationFrame ran."""
        self.evaluate(f"new Promise((done) => {{ let n = {n}; const f = () => (--n ? requestAnimationFrame(f) : done()); "
                      "requestAnimationFrame(f); })")

    def mouse(self, kind: str, x: float, y: float, **extra: Any) -> None:
        """Input.dispatchMouseEvent: kind is mouseMoved, mousePressed, mouseReleased or mouseWheel."""
        self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra})

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"}, timeout=30)["data"])

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries so far."""
        out = []
        for p in self._events("Runtime.consoleAPICalled"):
            if p.get("type") in ("error", "assert"):
                out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description", "")))
                                                                  for a in p.get("args", [])))
        for p in self._events("Runtime.exceptionThrown"):
            d = p.get("exceptionDetails", {})
            out.append("uncaught: " + str(d.get("exception", {}).get("description") or d.get("text")))
        for p in self._events("Log.entryAdded"):
            if p.get("entry", {}).get("level") == "error":
                out.append("log: " + p["entry"].get("text", "") + " " + p["entry"].get("url", ""))
        return out

    def requests(self) -> list[str]:
        """URLs of every request the page made (a self-contained page makes only its own)."""
        return [p["request"]["url"] for p in self._events("Network.requestWillBeSent")]
