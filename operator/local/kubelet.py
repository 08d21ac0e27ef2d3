"""The kubelet of a local run: pods as process groups, and what a cluster would show of them.

:class:`Kubelet` does for the local runner what a node does for the operator, and nothing the
operator decides: it starts a pod's main container (:mod:`.plan` says how), restarts it where
the pod's ``restartPolicy`` says a kubelet would (``Always``; ``OnFailure`` after a non-zero
exit), counts those restarts, stops a pod when it is deleted (SIGTERM to its process group,
SIGKILL once its grace period is over, at once when forced) and forgets it once every process
of it has ended, keeping its last state as a tombstone. When a container's main process ends,
what it left running in its group is killed, as a container's end takes its processes with it.
:meth:`Kubelet.pods` and :meth:`Kubelet.gone` show the pods as the operator's caches would, as
:class:`~kubetrain.api.observed.Pod` values: phase, exit code and reason of the main container,
restarts, start time, attempt label, deletion — the same facts the step decides on in a
cluster.

It also plays kubetrain's agent where a pod has one (``spec.progress``): it reads the pod's
progress file five times a second, and once the process has reported, and
``startupGraceSeconds`` after that first report, a line unchanged for ``deadlineSeconds`` is a
hang, shown as the agent's exit is (``hung_at``); the agent starts again, with a file of its own
(the rule of :mod:`kubetrain.operator.agent`). Whether that is a failure, and what it restarts,
is the step's to decide.
"""

from __future__ import annotations

import datetime
import os
import pathlib
import queue
import shutil
import signal
import uuid
from collections.abc import Callable

import attrs

from kubetrain.api import observed, v1beta1
from kubetrain.operator.local import plan, processes, said

__all__ = ["Kubelet"]

Clock = Callable[[], datetime.datetime]


@attrs.define(kw_only=True)
class _Sense:
    """The agent's memory: since when it looks, the last line, when it moved, when first seen."""

    since: datetime.datetime
    last: str = ""
    moved: datetime.datetime
    seen: datetime.datetime | None = None


@attrs.define(kw_only=True)
class _Pod:
    launch: plan.Launch
    uid: str
    created: datetime.datetime
    process: processes.Started | None = None
    phase: str = "Pending"
    running: bool = False
    restarts: int = 0
    exit_code: int | None = None
    reason: str | None = None
    started_at: datetime.datetime | None = None
    deleted: datetime.datetime | None = None  # when its grace period ends
    killed: bool = False
    hung_at: datetime.datetime | None = None
    sense: _Sense | None = None


class Kubelet:
    """The pods of one local run."""

    def __init__(
        self,
        lines: queue.Queue[said.Line],
        clock: Clock,
        progress: v1beta1.ProgressSpec | None = None,
        start: processes.Start = processes.Process,
    ) -> None:
        self.lines, self.clock, self.progress, self._start_process = lines, clock, progress, start
        self._pods: dict[str, _Pod] = {}
        self._gone: dict[str, _Pod] = {}  # by uid: the tombstones

    # --- what the operator's caches show -----------------------------------------------------

    def pods(self) -> list[observed.Pod]:
        return [self._observed(p) for p in self._pods.values()]

    def gone(self) -> list[observed.Pod]:
        return [attrs.evolve(self._observed(p), gone=True) for p in self._gone.values()]

    def has(self, name: str) -> bool:
        return name in self._pods

    def launch_of(self, name: str) -> plan.Launch | None:
        """The launch of the pod ``name``, live or, last made, gone."""
        if name in self._pods:
            return self._pods[name].launch
        found = [p for p in self._gone.values() if p.launch.pod == name]
        return found[-1].launch if found else None

    def empty(self) -> bool:
        """Whether no pod is left."""
        return not self._pods

    def _observed(self, p: _Pod) -> observed.Pod:
        ended = p.exit_code is not None
        return observed.Pod(
            name=p.launch.pod,
            uid=p.uid,
            replica_type=p.launch.replica_type,
            index=p.launch.index,
            attempt=p.launch.attempt,
            phase=p.phase,
            ready=p.running,
            created=p.created,
            deleted=p.deleted,
            node="localhost",
            restarts=p.restarts,
            exit_codes={p.launch.container: p.exit_code} if ended and p.exit_code is not None else {},
            reasons=(p.reason,) if p.reason else (),
            running=p.running,
            started_at=p.started_at,
            hung_at=p.hung_at,
            restart_policy=p.launch.restart_policy,
        )

    # --- what the executor asks --------------------------------------------------------------

    def create(self, launch: plan.Launch) -> None:
        """Make the pod ``launch`` says and start its main container."""
        now = self.clock()
        for folder in launch.empty:
            shutil.rmtree(folder, ignore_errors=True)
        for folder in (launch.root, *launch.empty, *launch.folders):
            pathlib.Path(folder).mkdir(parents=True, exist_ok=True)
        for path, text, mode in launch.files:
            pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
            pathlib.Path(path).write_text(text)
            os.chmod(path, mode)
        pod = _Pod(launch=launch, uid=str(uuid.uuid4()), created=now)
        self._pods[launch.pod] = pod
        if launch.attempt > 0:
            self._notice(pod, f"--- a new pod (attempt {launch.attempt}) ---")
        self._start(pod, now)

    def delete(self, name: str, uid: str, *, force: bool) -> None:
        """Stop the pod ``name`` if it is still the one of ``uid``: SIGTERM now and SIGKILL after
        its grace period, or SIGKILL at once (``force``)."""
        pod = self._pods.get(name)
        if pod is None or (uid and pod.uid != uid):
            return
        now = self.clock()
        if pod.deleted is None or force:
            grace = 0.0 if force else pod.launch.grace
            pod.deleted = now + datetime.timedelta(seconds=grace)
            if pod.process is not None:
                pod.process.signal(signal.SIGKILL if force else signal.SIGTERM)
                pod.killed = force
        self.sync()

    def stop(self, *, kill: bool) -> None:
        """Stop every pod: SIGTERM (their grace period then runs), or SIGKILL at once."""
        for pod in list(self._pods.values()):
            self.delete(pod.launch.pod, pod.uid, force=kill)

    def running(self) -> int:
        """How many pods still have a process."""
        return sum(1 for p in self._pods.values() if p.process is not None)

    # --- the node's own loop -----------------------------------------------------------------

    def sync(self) -> None:
        """Reap what ended, restart what the pods' policies restart, kill what outlived its grace
        period, forget what has gone, and sense hangs."""
        now = self.clock()
        for pod in list(self._pods.values()):
            process = pod.process
            if process is not None and pod.running and process.returncode is not None:
                self._ended(pod, process.returncode, now)
            if pod.deleted is not None:
                if pod.process is not None and now >= pod.deleted and not pod.killed:
                    pod.process.kill()
                    pod.killed = True
                if pod.process is None or pod.process.gone():
                    if pod.process is not None:
                        pod.process.drained(1.0)
                    del self._pods[pod.launch.pod]
                    pod.running = False
                    self._gone[pod.uid] = pod
            elif pod.running and pod.sense is not None:
                self._sense(pod, now)

    def _start(self, pod: _Pod, now: datetime.datetime) -> None:
        launch = pod.launch
        pod.phase, pod.running, pod.started_at = "Running", True, now
        if launch.progress_file is not None and pod.sense is None:
            self._agent_starts(pod, now)
        if launch.stand_in:
            return
        tag = said.Line(
            replica=launch.replica,
            replica_type=launch.replica_type,
            index=launch.index,
            attempt=launch.attempt,
            pod=launch.pod,
            text="",
        )
        try:
            pod.process = self._start_process(
                launch.argv, env=launch.env, cwd=launch.cwd, tag=tag, lines=self.lines
            )
        except OSError as e:
            # The runtime could not start it: a container that ended at once (as a StartError).
            pod.process = None
            self._notice(pod, f"--- {launch.argv[0]}: {e.strerror or e} ---")
            self._ended(pod, 128, now, reason="StartError")

    def _ended(self, pod: _Pod, code: int, now: datetime.datetime, reason: str | None = None) -> None:
        """The main container ended with ``code``: restarted, or the pod finished."""
        if pod.process is not None:
            pod.process.kill()  # what it left running ends with the container
            pod.process.drained(1.0)
        pod.exit_code, pod.reason = code, reason or ("Completed" if code == 0 else "Error")
        policy = pod.launch.restart_policy
        again = policy == "Always" or (policy == "OnFailure" and code != 0)
        if pod.deleted is None and again:
            pod.restarts += 1
            self._notice(pod, f"--- container restarted (restart {pod.restarts}) ---")
            self._start(pod, now)
            return
        pod.running = False
        pod.phase = "Succeeded" if code == 0 else "Failed"
        if pod.deleted is None:
            pod.process = None

    # --- kubetrain's agent --------------------------------------------------------------------

    def _agent_starts(self, pod: _Pod, now: datetime.datetime) -> None:
        """A new agent: only a line written from now on counts."""
        assert pod.launch.progress_file is not None
        pathlib.Path(pod.launch.progress_file).unlink(missing_ok=True)
        pod.sense = _Sense(since=now, moved=now)

    def _sense(self, pod: _Pod, now: datetime.datetime) -> None:
        sense, spec = pod.sense, self.progress
        assert sense is not None
        assert pod.launch.progress_file is not None
        line = read_line(pod.launch.progress_file)
        if line != sense.last:
            sense.last, sense.moved = line, now
            if sense.seen is None and line:
                sense.seen = now
        if spec is None or spec.deadline_seconds is None or sense.seen is None:
            return
        grace = datetime.timedelta(seconds=spec.startup_grace)
        if now - sense.seen >= grace and now - sense.moved >= datetime.timedelta(
            seconds=spec.deadline_seconds
        ):
            self._notice(
                pod, f"--- the step has not moved for {int((now - sense.moved).total_seconds())}s: hung ---"
            )
            pod.hung_at = now
            self._agent_starts(pod, now)

    def _notice(self, pod: _Pod, text: str) -> None:
        launch = pod.launch
        self.lines.put(
            said.Line(
                replica=launch.replica,
                replica_type=launch.replica_type,
                index=launch.index,
                attempt=launch.attempt,
                pod=launch.pod,
                text=text,
                notice=True,
            )
        )


def read_line(path: str) -> str:
    """The progress file's line ("" while there is none)."""
    try:
        with open(path, errors="replace") as f:
            return f.readline(4096).strip()
    except OSError:
        return ""
