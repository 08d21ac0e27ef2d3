"""Fake processes and a clock for the local runner's unit tests (kubetrain.operator.local).

A :class:`FakeStart` stands where the kubelet starts a process group. Each :class:`FakeProcess`
plays a script read from its env, so a job states in its own template what each replica does:

- ``FAKE_EXIT``: the exit code it ends with (default: it runs until stopped); ``FAKE_EXIT_<N>``:
  the one of attempt N (``KUBETRAIN_RESTART_ATTEMPT``), ``FAKE_EXIT_RESTART_<R>``: of its R-th
  start in the same pod (a container the kubelet restarted);
- ``FAKE_AFTER``: after how many seconds of the clock (default 1);
- ``FAKE_STEPS``: it writes ``step=N`` to its progress file for that many seconds, one step a
  second, then stands still (a hang, if it has not ended);
- a SIGTERM ends it at once with 143 unless ``FAKE_IGNORES_TERM`` is set; SIGKILL with 137.

:class:`Clock` moves a little at every look (``step`` seconds), so that a run's passes, its grace
periods and its deadlines go by without anyone waiting.
"""

from __future__ import annotations

import datetime
import queue
import signal
from collections.abc import Mapping, Sequence

import attrs

from kubetrain.operator.local import said

T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)


class Clock:
    def __init__(self, step: float = 0.1) -> None:
        self.now, self.step = T0, datetime.timedelta(seconds=step)

    def __call__(self) -> datetime.datetime:
        self.now += self.step
        return self.now


class FakeProcess:
    def __init__(self, argv: Sequence[str], env: Mapping[str, str], clock: Clock, start: int) -> None:
        self.argv, self.env, self.clock = tuple(argv), dict(env), clock
        self.started = clock.now
        self.signals: list[int] = []
        self._code: int | None = None
        attempt = env.get("KUBETRAIN_RESTART_ATTEMPT", "0")
        code = env.get(f"FAKE_EXIT_RESTART_{start}", env.get(f"FAKE_EXIT_{attempt}", env.get("FAKE_EXIT")))
        self.exit = None if code is None else int(code)
        self.after = datetime.timedelta(seconds=float(env.get("FAKE_AFTER", "1")))
        self.steps = int(env.get("FAKE_STEPS", "0"))
        self._progress = env.get("KUBETRAIN_PROGRESS_FILE")

    @property
    def returncode(self) -> int | None:
        if self._code is None and self.exit is not None and self.clock.now >= self.started + self.after:
            self._code = self.exit
        self._report()
        return self._code

    def _report(self) -> None:
        if self._progress and self._code is None and self.steps:
            step = min(int((self.clock.now - self.started).total_seconds()), self.steps)
            with open(self._progress, "w") as f:
                f.write(f"step={step} total=100 loss={1 / (step + 1):.4f}\n")

    def gone(self) -> bool:
        return self.returncode is not None

    def drained(self, timeout: float = 0) -> bool:
        return True

    def signal(self, sig: int) -> None:
        self.signals.append(sig)
        if self._code is not None:
            return
        if sig == signal.SIGKILL:
            self._code = 137
        elif sig == signal.SIGTERM and "FAKE_IGNORES_TERM" not in self.env:
            self._code = 143

    def kill(self) -> None:
        self.signal(signal.SIGKILL)


@attrs.define
class FakeStart:
    """Starts fake processes; remembers each by its pod."""

    clock: Clock
    started: list[tuple[str, FakeProcess]] = attrs.field(factory=list)

    def __call__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        tag: said.Line,
        lines: queue.Queue[said.Line],
    ) -> FakeProcess:
        attempt = env.get("KUBETRAIN_RESTART_ATTEMPT")
        start = sum(
            1
            for pod, p in self.started
            if pod == tag.pod and p.env.get("KUBETRAIN_RESTART_ATTEMPT") == attempt
        )
        p = FakeProcess(argv, env, self.clock, start)
        self.started.append((tag.pod, p))
        lines.put(attrs.evolve(tag, text=f"started {' '.join(argv)}"))
        return p

    def of(self, pod: str) -> list[FakeProcess]:
        return [p for name, p in self.started if name == pod]
