"""One container of a local run as an OS process: started, read, signalled, and seen gone.

Each process starts in a session of its own, so it leads a process group: what it starts
(torchrun's workers, mpirun's ranks) is in that group too, and a signal to the group reaches
them all; the terminal's Ctrl-C reaches none of them, only ``kubetrain run``, which decides.
A process is *gone* only when its whole group is: a leader that exited while its children run
still holds the pod, as a container holds its pod until every process of it has ended.

Its standard output and error are read by a thread each, line by line, and handed on tagged with
the pod's replica and attempt (:class:`~.said.Line`), in order within each stream.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Protocol

import attrs

from kubetrain.operator.local import said

__all__ = ["Process", "Start", "Started", "exit_code"]


class Started(Protocol):
    """What the kubelet needs of a started process group (a fake one in the unit tests)."""

    @property
    def returncode(self) -> int | None: ...
    def gone(self) -> bool: ...
    def drained(self, timeout: float = 0) -> bool: ...
    def signal(self, sig: int) -> None: ...
    def kill(self) -> None: ...


class Start(Protocol):
    """How the kubelet starts one (:class:`Process`)."""

    def __call__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        tag: said.Line,
        lines: queue.Queue[said.Line],
    ) -> Started: ...


class Process:
    """A started process group."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        tag: said.Line,
        lines: queue.Queue[said.Line],
    ) -> None:
        self._popen = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.pid = self._popen.pid
        self._readers = [
            threading.Thread(target=_read, args=(stream, tag, lines), daemon=True)
            for stream in (self._popen.stdout, self._popen.stderr)
            if stream is not None
        ]
        for t in self._readers:
            t.start()

    @property
    def returncode(self) -> int | None:
        """The leader's exit status as a container's exit code (128 + signal), once it exited."""
        code = self._popen.poll()
        return None if code is None else exit_code(code)

    def gone(self) -> bool:
        """Whether the leader exited and no process of its group is left."""
        if self._popen.poll() is None:
            return False
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def drained(self, timeout: float = 0) -> bool:
        """Whether every line the process wrote has been read."""
        for t in self._readers:
            t.join(timeout)
        return not any(t.is_alive() for t in self._readers)

    def signal(self, sig: int) -> None:
        """Send ``sig`` to every process of the group."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)


def exit_code(returncode: int) -> int:
    """Popen's ``-N`` for a signal N is the 128 + N a shell and a container report."""
    return 128 - returncode if returncode < 0 else returncode


def _read(stream: IO[bytes], tag: said.Line, lines: queue.Queue[said.Line]) -> None:
    with stream:
        for raw in iter(stream.readline, b""):
            text = raw.decode(errors="replace").rstrip("\r\n")
            lines.put(attrs.evolve(tag, text=text))
