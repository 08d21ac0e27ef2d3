"""The local run's loop: observe → step → execute, as the reconciler's, over processes.

:func:`run` is a second user of the operator's shell, not a second implementation of it. Every
pass, the :class:`~.kubelet.Kubelet` brings its pods up to date (exits, restarts by policy,
grace periods, hangs), :func:`kubetrain.operator.observe.observe` reads them through
:class:`~.caches.LocalCaches` into the step's input — with the first rank's progress, read from
its progress file as the operator reads its agent's — :func:`kubetrain.operator.lifecycle.step`
decides, and the :class:`~.executor.Executor` carries the decision out. Success policies, restart
policies and exit-code rules, failure rules, budgets, restart scopes and backoff, the restart env,
progress and hangs are all the step's, exactly as in a cluster.

It looks again as soon as a replica writes or ends, and at least every :data:`POLL_SECONDS`. The
run ends once the job has finished and none of its processes runs any more: the step stops the
running replicas of a finished job (``cleanPodPolicy``); whatever it leaves running is stopped
then, since nothing outlives a local run. Ctrl-C (``KeyboardInterrupt``) stops every replica's
process group with SIGTERM and waits for them (their grace periods); a second Ctrl-C kills them
at once. A SIGTERM or SIGHUP to the runner itself is taken as a Ctrl-C. :class:`Outcome` is the job as it ended and what to exit with: 0 Succeeded, 1 Failed,
130 stopped.
"""

from __future__ import annotations

import contextlib
import datetime
import queue
import signal
import threading
import uuid
from collections.abc import Callable, Iterator

import attrs

from kubetrain.api import observed, v1beta1
from kubetrain.operator import lifecycle, observe
from kubetrain.operator.local import caches, executor, kubelet, prepared, processes, said
from kubetrain.operator.policies import progress

__all__ = ["POLL_SECONDS", "Outcome", "run"]

POLL_SECONDS = 0.2


@attrs.frozen(kw_only=True)
class Outcome:
    job: v1beta1.TrainingJob
    # The pods as the job's end found them (or Ctrl-C), before the run stopped what still ran.
    pods: tuple[observed.Pod, ...] = ()
    # Every pod the run stopped or made again, as it ended (their exit codes, their restarts).
    gone: tuple[observed.Pod, ...] = ()
    stopped: bool = False  # by Ctrl-C (or ``stopping``)

    @property
    def state(self) -> v1beta1.JobState:
        return v1beta1.state_of(self.job.status.conditions)

    @property
    def code(self) -> int:
        """What ``kubetrain run --local`` exits with: 0 Succeeded, 1 Failed, 130 stopped."""
        if self.stopped:
            return 130
        return 0 if self.state is v1beta1.JobState.SUCCEEDED else 1


def now_utc() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def run(
    ready: prepared.Prepared,
    tell: said.Tell,
    *,
    clock: Callable[[], datetime.datetime] = now_utc,
    stopping: Callable[[], bool] = lambda: False,
    start: processes.Start = processes.Process,
    poll: float = POLL_SECONDS,
    change: Callable[[v1beta1.TrainingJob], v1beta1.TrainingJob] | None = None,
) -> Outcome:
    """Run the prepared job until it has finished (or is stopped); every line, state change and
    Event is told to ``tell``. ``stopping`` is asked every pass: True stops the run as Ctrl-C does.
    ``start`` starts a process, ``poll`` is the longest wait between two passes (the unit tests
    give fakes). ``change`` is what someone does to the job while it runs, as ``kubectl scale`` or
    an edit would: asked every pass, it returns the job, its spec changed or not (a change is a new
    generation)."""
    with _signals_stop():
        return _run(ready, tell, clock=clock, stopping=stopping, start=start, poll=poll, change=change)


@contextlib.contextmanager
def _signals_stop() -> Iterator[None]:
    """SIGTERM and SIGHUP (``kill``, a closed terminal) stop the run as Ctrl-C does: the processes
    are in sessions of their own, and nothing else would stop them. Only the main thread can
    take signals; elsewhere the caller's handlers stand."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    before = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _run(
    ready: prepared.Prepared,
    tell: said.Tell,
    *,
    clock: Callable[[], datetime.datetime],
    stopping: Callable[[], bool],
    start: processes.Start,
    poll: float,
    change: Callable[[v1beta1.TrainingJob], v1beta1.TrainingJob] | None,
) -> Outcome:
    for w in ready.warnings:
        tell(said.Warned(text=w))
    job = _local(ready.job, clock())
    lines: queue.Queue[said.Line] = queue.Queue()
    pods = kubelet.Kubelet(lines, clock, progress=job.spec.progress, start=start)
    looked = caches.LocalCaches(pods, job.metadata.name or "")
    mine = caches.Mine()
    act = executor.Executor(ready, pods, mine, tell)
    expected = {"Pod": caches.NOTHING, "Service": caches.NOTHING}
    last: tuple[observed.Pod, ...] = ()
    try:
        while True:
            pods.sync()
            _drain(lines, tell, 0)
            if change is not None:
                job = _changed(job, change(job))
            inp = observe.observe(
                job,
                ready.fw,
                looked,
                mine,
                expected,
                scheduler=prepared.SCHEDULER,
                now=clock(),
                reading=_reading(job, pods, ready),
            )
            decision = lifecycle.step(inp)
            # The pods as the step saw them: as the job's end found them, before it stops them.
            last = tuple(p for p in inp.pods if not p.gone)
            job = act.run(job, decision)
            _drain(lines, tell, 0)
            if progress.finished(job.status):
                pods.stop(kill=False)
                _wait(pods, lines, tell, poll)
                return Outcome(job=job, pods=last, gone=tuple(pods.gone()))
            if stopping():
                raise KeyboardInterrupt
            _drain(lines, tell, poll)
    except KeyboardInterrupt:
        last = tuple(pods.pods())
        tell(said.Warned(text="stopping every replica (Ctrl-C again to kill them)"))
        try:
            pods.stop(kill=False)
            _wait(pods, lines, tell, poll)
        except KeyboardInterrupt:
            tell(said.Warned(text="killing every replica"))
            pods.stop(kill=True)
            _wait(pods, lines, tell, poll)
        return Outcome(job=job, pods=last, gone=tuple(pods.gone()), stopped=True)
    finally:
        pods.stop(kill=True)


def _local(job: v1beta1.TrainingJob, now: datetime.datetime) -> v1beta1.TrainingJob:
    """The job as a local run's apiserver would store it: a UID and a creation time of its own."""
    md = job.metadata
    return attrs.evolve(
        job,
        metadata=attrs.evolve(
            md,
            uid=md.uid or f"local-{uuid.uuid4()}",
            namespace=md.namespace or "default",
            creation_timestamp=md.creation_timestamp or now,
            generation=md.generation or 1,
        ),
    )


def _changed(job: v1beta1.TrainingJob, changed: v1beta1.TrainingJob) -> v1beta1.TrainingJob:
    """``changed``'s spec stored over ``job``: a new generation if it differs."""
    if changed.spec == job.spec:
        return job
    md = attrs.evolve(job.metadata, generation=(job.metadata.generation or 1) + 1)
    return attrs.evolve(job, metadata=md, spec=changed.spec)


def _reading(
    job: v1beta1.TrainingJob, pods: kubelet.Kubelet, ready: prepared.Prepared
) -> progress.Reading | None:
    """The first rank's progress line, as the operator reads it from that rank's agent."""
    defaults = lifecycle.Defaults.of(ready.fw, job.spec)
    pod = progress.source(job, [*pods.pods(), *pods.gone()], defaults.progress_from)
    launch = pods.launch_of(pod.name) if pod is not None else None
    if pod is None or launch is None or launch.progress_file is None:
        return None
    line = kubelet.read_line(launch.progress_file)
    return progress.parse(pod.name, f"progress {line}") if line else None


def _drain(lines: queue.Queue[said.Line], tell: said.Tell, timeout: float) -> None:
    """Tell every line written so far, waiting up to ``timeout`` for the first."""
    try:
        first = lines.get(timeout=timeout) if timeout > 0 else lines.get_nowait()
    except queue.Empty:
        return
    tell(first)
    while True:
        try:
            tell(lines.get_nowait())
        except queue.Empty:
            return


def _wait(pods: kubelet.Kubelet, lines: queue.Queue[said.Line], tell: said.Tell, poll: float) -> None:
    """Until every process of the run has ended (their grace periods run out), telling their lines."""
    while True:
        pods.sync()
        _drain(lines, tell, 0)
        if pods.running() == 0:
            return
        _drain(lines, tell, poll)
