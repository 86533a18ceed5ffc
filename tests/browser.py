"""A headless Chromium driven over the DevTools protocol, for tests of what a person sees.

Chromium comes from Debian's package and the other tools from scripts/install_test_tools.sh, which
.ci/run calls in CI; a test that needs one fails, with what to run, when it is missing. The client
is websocket-client speaking the DevTools protocol to ``chromium --remote-debugging-port`` on the
loopback address; it records console errors, uncaught exceptions and every network request.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

TOOLS = REPO / ".tools"
INSTALL = "scripts/install_test_tools.sh"


def require(path: Path, what: str) -> Path:
    """``path``, or a failed test saying how to install ``what``."""
    if not path.exists():
        pytest.fail(f"{what} is missing ({path}): run {INSTALL} (.ci/run does in CI)", pytrace=False)
    return path


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.fail(f"chromium is not on PATH: run {INSTALL} (apt-get install chromium; .ci/run does it in CI)",
                    pytrace=False)
    return found


@dataclass
class Page:
    """One tab: send DevTools commands, evaluate script, and what the page did so far."""

    socket: Any
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    _next: int = 0

    def _event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.console_errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            self.console_errors.append(params["exceptionDetails"].get("exception", {}).get("description", "exception"))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.console_errors.append(params["entry"]["text"])
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        self.socket.send(json.dumps({"id": self._next, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self._next:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._event(message)

    def wait_for(self, method: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        self.socket.settimeout(timeout)
        while time.monotonic() < deadline:
            message = json.loads(self.socket.recv())
            self._event(message)
            if message.get("method") == method:
                return
        raise AssertionError(f"no {method} within {timeout} s")

    def open(self, url: str, width: int = 1300, height: int = 900) -> None:
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        self.send("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_until(self, expression: str, timeout: float = 20) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"{expression!r} stayed false for {timeout} s")

    def close(self) -> None:
        self.socket.close()

    def screenshot(self, path: Path, selector: str | None = None, *, max_height: int = 2400) -> Path:
        """A PNG of the element ``selector`` matches (else of the page's top), at most ``max_height`` pixels tall."""
        box = self.evaluate(
            "(() => { const e = " + (f"document.querySelector({json.dumps(selector)})" if selector else
                                     "document.documentElement") + "; if (!e) return null;"
            " const r = e.getBoundingClientRect(); return [r.left + scrollX, r.top + scrollY, r.width, r.height]; })()")
        if box is None:
            raise AssertionError(f"nothing matches {selector!r} to take a screenshot of")
        x, y, width, height = box
        clip = {"x": x, "y": y, "width": max(width, 1), "height": max(min(height, max_height), 1), "scale": 1}
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path


class Browser:
    """``chromium --headless`` with a DevTools port on the loopback address; ``page()`` opens a tab."""

    def __init__(self) -> None:
        import websocket  # websocket-client, a test dependency

        self._websocket = websocket
        self._profile = tempfile.mkdtemp(prefix="groundkit-chromium-")
        self._process = subprocess.Popen(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--user-data-dir={self._profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.is_file() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self._process.poll() is not None:
                self.close()
                raise AssertionError("chromium did not open its DevTools port")
            time.sleep(0.05)
        self.port = int(port_file.read_text().splitlines()[0])

    def page(self) -> Page:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT")
        with urllib.request.urlopen(request, timeout=30) as answer:
            if answer.status != 200:
                raise AssertionError("chromium did not open a tab")
            target = json.loads(answer.read())
        socket = self._websocket.create_connection(target["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
        page = Page(socket)
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.send(f"{domain}.enable")
        return page

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self._profile, ignore_errors=True)
