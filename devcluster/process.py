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
import contextlib
import ctypes
import os
import pathlib
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

__all__ = [
    "Process",
    "StartError",
    "Supervisor",
    "free_port",
    "pids_alive",
    "popen",
    "started_at",
    "wait_until",
]

_PR_SET_PDEATHSIG = 1
_running: set[Process] = set()


class StartError(RuntimeError):
    """A component did not start; the message ends with the tail of its log."""


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def popen(argv: Sequence[str], *, from_thread: bool = False, **kwargs: Any) -> subprocess.Popen[bytes]:
    """A child that dies with this process (for helpers whose output goes to the terminal).

    ``from_thread`` allows a thread other than the main one, for a thread that outlives the
    child (the :class:`Supervisor`'s).
    """
    if not from_thread and threading.current_thread() is not threading.main_thread():
        # PR_SET_PDEATHSIG fires when the *thread* that forked the child ends.
        raise RuntimeError(f"start {argv[0]} from the main thread: a worker thread's exit would kill it")
    return subprocess.Popen(list(argv), preexec_fn=_die_with_parent, **kwargs)


class Process:
    """A component: started, stopped, and restarted by a :class:`Supervisor` if it exits unbidden."""

    def __init__(
        self, name: str, argv: Sequence[str], log: pathlib.Path, *, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self.env = env
        # Whether it should be running: set by start(), cleared by stop().
        self.wanted = False
        self.exits: list[int] = []
        self._popen: subprocess.Popen[bytes] | None = None

    def start(self, *, from_thread: bool = False) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self._popen = popen(
                self.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=self.env,
                from_thread=from_thread,
            )
        self.wanted = True
        _running.add(self)

    @property
    def pid(self) -> int | None:
        return None if self._popen is None else self._popen.pid

    @property
    def returncode(self) -> int | None:
        return None if self._popen is None else self._popen.poll()

    def alive(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def check_alive(self) -> None:
        if not self.alive():
            code = None if self._popen is None else self._popen.returncode
            raise StartError(f"{self.name} exited with status {code}\n{self.tail()}")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to its process group, then SIGKILL after ``timeout`` seconds; waits until it is gone.

        The group, because a component started through ``nsenter`` is nsenter's child.
        """
        self.wanted = False
        _running.discard(self)
        if self._popen is None or self._popen.poll() is not None:
            return
        self._signal(signal.SIGTERM)
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self._popen.wait()

    def _signal(self, sig: int) -> None:
        assert self._popen is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._popen.pid, sig)

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


def started_at(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot; None if no such process.

    With the pid, it names one process: a pid alone may have been given to another since.
    """
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # Field 22, counted from the state (field 3) that follows the parenthesised command name.
    return int(stat.rsplit(")", 1)[1].split()[19])


def runs(pid: int, started: object) -> bool:
    """Whether the process ``pid`` that started at ``started`` (:func:`started_at`) still runs.

    A pid alone may since have been given to another process: the start time tells them apart.
    """
    return bool(pids_alive([pid])) and started_at(pid) == started


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class Supervisor:
    """Restarts components that exit unbidden, as a kubelet does for static pods.

    A thread polls every ``interval`` seconds; a wanted process found dead has its exit
    logged — in ``log`` and at the end of its own log — and is started again after a
    back-off of 1 s, doubling up to 30 s while it keeps exiting within a minute of its
    start. Children it restarts die with its thread (``PR_SET_PDEATHSIG``), so
    :meth:`stop` ends the thread only after the caller has stopped the processes.
    """

    def __init__(self, processes: list[Process], log: pathlib.Path, interval: float = 0.5) -> None:
        self._processes = processes
        self._log = log
        self._interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="devcluster-supervisor", daemon=True)
        self._next_start: dict[str, float] = {}
        self._backoff: dict[str, float] = {}
        self._started: dict[str, float] = {}

    def start(self) -> None:
        self._thread.start()

    def pause(self) -> None:
        """Stop restarting anything (before the processes are stopped)."""
        self._stopping.set()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stopping.wait(self._interval):
            now = time.monotonic()
            for p in list(self._processes):
                if not p.wanted or self._stopping.is_set():
                    continue
                if not p.alive():
                    self._restart(p, now)
                elif now - self._started.get(p.name, 0.0) >= 60:
                    self._backoff.pop(p.name, None)  # a calm minute resets the back-off

    def _restart(self, p: Process, now: float) -> None:
        if p.name not in self._next_start:
            code = p.returncode
            p.exits.append(-1 if code is None else code)
            self._backoff[p.name] = min(self._backoff.get(p.name, 0.5) * 2, 30.0)
            self._next_start[p.name] = now + self._backoff[p.name]
            self._note(p, f"{p.name} exited with status {code}; restarting in {self._backoff[p.name]:.0f}s")
            return
        if now < self._next_start[p.name]:
            return
        del self._next_start[p.name]
        try:
            p.start(from_thread=True)
        except OSError as e:
            self._note(p, f"{p.name} could not be restarted: {e}")
            return
        self._started[p.name] = now
        self._note(p, f"{p.name} restarted (pid {p.pid}, restart {len(p.exits)})")

    def _note(self, p: Process, message: str) -> None:
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} kubetrain-supervisor: {message}\n"
        for path in (self._log, p.log):
            with contextlib.suppress(OSError), path.open("a") as f:
                f.write(line)
