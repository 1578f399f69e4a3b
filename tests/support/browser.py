"""A real headless Chromium for tests, driven over the DevTools protocol (one websocket, no driver binary).

    path = ensure_chromium()                   # Debian's chromium; installed with apt-get when missing
    with Chromium(path, tmp_path) as browser:
        browser.open(page.as_uri())            # waits for the load event
        browser.evaluate("document.title")
        browser.errors                         # uncaught exceptions, console errors, log errors
        browser.requests                       # every URL the page asked for
        browser.screenshot(target_png)

Chromium's own browser download (as playwright does it) is not needed: Debian's package is the browser.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
from websockets.sync.client import ClientConnection, connect

CHROMIUM = Path("/usr/bin/chromium")
# Flags that work in a container as root with no GPU and no network: no sandbox (root), no first-run UI,
# nothing fetched in the background (updates, sync, QUIC probes), a fresh profile per run.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
    "--remote-debugging-port=0",
)
APT_TIMEOUT_S = 900


class ChromiumUnavailable(RuntimeError):
    """No chromium, and no way to install it here (not root, or no apt-get)."""


def ensure_chromium() -> Path:
    """Debian's `chromium`, installed with apt-get (non-interactive, no stdin) when it is missing."""
    found = shutil.which("chromium") or (str(CHROMIUM) if CHROMIUM.exists() else None)
    if found:
        return Path(found)
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        raise ChromiumUnavailable(
            "chromium is not installed and cannot be installed here (needs root and apt-get): "
            "`apt-get install chromium`"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = "-o", "DPkg::Lock::Timeout=600"
    for command in ([apt, *lock, "update"], [apt, *lock, "install", "-y", "--no-install-recommends", "chromium"]):
        done = subprocess.run(
            command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=APT_TIMEOUT_S
        )
        if done.returncode != 0:
            raise ChromiumUnavailable(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    if not CHROMIUM.exists():
        raise ChromiumUnavailable("apt-get installed chromium, but /usr/bin/chromium is not there")
    return CHROMIUM


class Chromium:
    """One headless Chromium with one page, spoken to over the DevTools protocol."""

    def __init__(self, executable: Path, workdir: Path, *, start_timeout_s: float = 60.0) -> None:
        self.executable = executable
        self.profile = workdir / "chromium-profile"
        self.start_timeout_s = start_timeout_s
        self.errors: list[str] = []
        self.requests: list[str] = []
        self._events: list[dict[str, Any]] = []
        self._next_id = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: ClientConnection | None = None
        self._stack = contextlib.ExitStack()

    # --- life cycle -----------------------------------------------------------------------------------

    def __enter__(self) -> Chromium:
        self.profile.mkdir(parents=True)
        self._process = subprocess.Popen(
            [str(self.executable), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port = self._debugging_port()
        pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list").json() if t["type"] == "page"]
        self._socket = self._stack.enter_context(
            connect(pages[0]["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024, open_timeout=30)
        )
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        return self

    def _debugging_port(self) -> int:
        # With --remote-debugging-port=0 the browser picks a free port and writes it into the profile.
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self._process.returncode} during start-up")
            if marker.is_file() and marker.read_text().strip():
                return int(marker.read_text().splitlines()[0])
            time.sleep(0.05)
        raise RuntimeError(f"chromium did not open its DevTools port within {self.start_timeout_s:g} s")

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stack.close()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    # --- the protocol ---------------------------------------------------------------------------------

    def send(self, method: str, params: dict[str, Any] | None = None, *, timeout_s: float = 30.0) -> dict[str, Any]:
        """One command; the events that arrive meanwhile are recorded."""
        assert self._socket is not None
        self._next_id += 1
        self._socket.send(json.dumps({"id": self._next_id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout_s
        while True:
            message = json.loads(self._socket.recv(timeout=max(deadline - time.monotonic(), 0.001)))
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            self._record(message)

    def _record(self, event: dict[str, Any]) -> None:
        self._events.append(event)
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in {"error", "assert"}:
            self.errors.append(" ".join(str(arg.get("value", arg.get("description"))) for arg in params["args"]))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append(f"{params['entry'].get('source')}: {params['entry']['text']}")
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])

    def wait_for_event(self, method: str, *, timeout_s: float = 30.0) -> dict[str, Any]:
        """The first event `method` not yet waited for (recorded or still to come)."""
        assert self._socket is not None
        for i, event in enumerate(self._events):
            if event.get("method") == method:
                return self._events.pop(i)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            event = json.loads(self._socket.recv(timeout=max(deadline - time.monotonic(), 0.001)))
            self._record(event)
            if event.get("method") == method:
                self._events.remove(event)
                return event
        raise TimeoutError(f"no {method} within {timeout_s:g} s")

    # --- what tests use -------------------------------------------------------------------------------

    def open(self, url: str) -> None:
        self._events.clear()
        self.send("Page.navigate", {"url": url})
        self.wait_for_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page (exceptions recorded as errors)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            self.errors.append(result["exceptionDetails"].get("exception", {}).get("description", "exception"))
            return None
        return result["result"].get("value")

    def screenshot(self, target: Path) -> Path:
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(base64.b64decode(data))
        return target
