"""Child processes that never outlive the process that started them.

Each child runs in its own session (a Ctrl-C in the terminal reaches only us, and we stop
children in order) and asks the kernel for SIGKILL when its parent dies
(``PR_SET_PDEATHSIG``), so even a ``kill -9`` of the test runner leaves nothing behind.
The kernel ties that signal to the *thread* that started the child, so children are
started from the main thread only.
A normal exit stops whatever is still running (``atexit``).
"""

from __future__ import annotations

import atexit
import ctypes
import pathlib
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["Process", "StartError", "free_port", "popen", "wait_until"]

_PR_SET_PDEATHSIG = 1
_running: set[Process] = set()


class StartError(RuntimeError):
    """A component did not start; the message ends with the tail of its log."""


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def popen(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """A child that dies with this process (for helpers whose output goes to the terminal)."""
    if threading.current_thread() is not threading.main_thread():
        # PR_SET_PDEATHSIG fires when the *thread* that forked the child ends.
        raise RuntimeError(f"start {argv[0]} from the main thread: a worker thread's exit would kill it")
    return subprocess.Popen(list(argv), preexec_fn=_die_with_parent, **kwargs)


class Process:
    def __init__(self, name: str, argv: Sequence[str], log: pathlib.Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self._popen: subprocess.Popen[bytes] | None = None

    def start(self, env: dict[str, str] | None = None) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self._popen = popen(
                self.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=env,
            )
        _running.add(self)

    @property
    def pid(self) -> int | None:
        return None if self._popen is None else self._popen.pid

    def alive(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def check_alive(self) -> None:
        if not self.alive():
            code = None if self._popen is None else self._popen.returncode
            raise StartError(f"{self.name} exited with status {code}\n{self.tail()}")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; waits until it is gone."""
        _running.discard(self)
        if self._popen is None or self._popen.poll() is not None:
            return
        self._popen.send_signal(signal.SIGTERM)
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self._popen.kill()
            self._popen.wait()

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def wait_until(
    what: str, ready: object, *, timeout: float, watch: Sequence[Process] = (), interval: float = 0.1
) -> None:
    """Poll ``ready()`` until it is true; fail fast if a watched process dies."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        for p in watch:
            p.check_alive()
        try:
            if ready():  # type: ignore[operator]
                return
        except Exception as e:  # not ready yet; remember why for the timeout message
            last_error = e
        time.sleep(interval)
    detail = f" (last error: {last_error})" if last_error else ""
    logs = "\n".join(f"--- {p.name} ---\n{p.tail()}" for p in watch)
    raise StartError(f"timed out after {timeout:.0f}s waiting for {what}{detail}\n{logs}")


@atexit.register
def _stop_all() -> None:
    for p in list(_running):
        p.stop(timeout=5)


def pids_alive(pids: Sequence[int]) -> list[int]:
    """The pids that still name a running process; zombies count as gone."""
    alive = []
    for pid in pids:
        try:
            stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        # The state follows the parenthesised command name, which may itself hold spaces.
        if stat.rsplit(")", 1)[1].split()[0] != "Z":
            alive.append(pid)
    return alive


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
