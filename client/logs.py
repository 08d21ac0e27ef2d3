"""Log lines of a job's replicas, each tagged with the replica that wrote it.

Without ``follow``, :func:`lines` reads what each of the job's pods has written, one
replica after another — with the log of the container a restart replaced first, since a
person looking at a restarted replica wants to see why.

With ``follow``, it is what ``kubectl logs -f`` cannot be for a job: it waits for pods
that do not exist yet, follows every replica at once (lines merged as they come, in order
within a replica), carries on when a kubelet restarts a container in place (the next
container's log follows a notice line) and when a restart replaces the pod (the new
pod's lines follow, after a notice naming its attempt), and ends by itself once the job
has finished and its streams have drained. One task per pod reads its streams in turn,
so a replica's lines never interleave with themselves.

Notice lines are kubetrain's own (``notice=True``); everything else is the container's
output as written.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import attrs

from kubetrain.api import naming, observed, v1beta1
from kubetrain.client import connection, errors, jobs, pods, watch

__all__ = ["LogLine", "Selection", "lines"]

# Once the job has finished, streams still open (a replica the job no longer waits for) end after this.
DRAIN_SECONDS = 5.0
_END = object()


@attrs.frozen(kw_only=True)
class LogLine:
    """One line; unpacks as ``(replica, text)``."""

    replica: str  # worker-1
    replica_type: str  # Worker
    index: int
    attempt: int
    pod: str
    text: str
    notice: bool = False

    def __iter__(self) -> Iterator[str]:
        return iter((self.replica, self.text))


@attrs.frozen(kw_only=True)
class Selection:
    """Which lines: a replica type (``Worker``), one replica (``Worker/1``), an attempt."""

    replica_type: str | None = None
    index: int | None = None
    attempt: int | None = None

    @classmethod
    def parse(cls, replica: str | None, attempt: int | None) -> Selection:
        if not replica:
            return cls(attempt=attempt)
        rtype, _, index = replica.partition("/")
        if index and not index.isdigit():
            raise errors.InvalidInput(f"--replica {replica}: expected TYPE or TYPE/INDEX, e.g. Worker/1")
        return cls(replica_type=rtype.lower(), index=int(index) if index else None, attempt=attempt)

    def check(self, job: v1beta1.TrainingJob) -> None:
        """InvalidInput unless the job has such a replica."""
        types = {t.lower(): t for t in job.spec.replica_specs}
        if self.replica_type is None:
            return
        spec_type = types.get(self.replica_type)
        if spec_type is None:
            raise errors.InvalidInput(
                f"TrainingJob {job.metadata.name!r} has no replica type {self.replica_type!r}; "
                f"it has {', '.join(sorted(job.spec.replica_specs))}"
            )
        count = job.spec.replica_specs[spec_type].replicas
        if self.index is not None and self.index >= count:
            raise errors.InvalidInput(
                f"{spec_type} has {count} replica(s), numbered 0 to {count - 1}; there is no {spec_type}/{self.index}"
            )

    def wants(self, pod: observed.Pod) -> bool:
        return (
            (self.replica_type is None or pod.replica_type == self.replica_type)
            and (self.index is None or pod.index == self.index)
            and (self.attempt is None or pod.attempt == self.attempt)
        )


async def lines(
    c: connection.Connection, name: str, namespace: str | None, selection: Selection, follow: bool
) -> AsyncIterator[LogLine]:
    job = await jobs.get(c, name, namespace or c.namespace)
    selection.check(job)
    if not follow:
        for obj in await pods.list_pods(c, job):
            if selection.wants(observed.Pod.of(obj)):
                async for line in _written(c, job, obj):
                    yield line
        return
    async for line in _Follower(c, job, selection).run():
        yield line


async def _written(
    c: connection.Connection, job: v1beta1.TrainingJob, obj: Mapping[str, Any]
) -> AsyncIterator[LogLine]:
    tag = _Tag.of(job, obj)
    if observed.Pod.of(obj).restarts:
        yield tag.notice("--- the container before the last restart ---")
        async for text in _read(c, obj, previous=True):
            # The kubelet answers with this line, not an error, once that log is gone.
            gone = text.startswith("unable to retrieve container logs for ")
            yield tag.notice(f"--- its log is gone: {text} ---") if gone else tag.line(text)
        yield tag.notice("--- the container now ---")
    async for text in _read(c, obj):
        yield tag.line(text)


@attrs.frozen
class _Tag:
    replica: str
    replica_type: str
    index: int
    attempt: int
    pod: str

    @classmethod
    def of(cls, job: v1beta1.TrainingJob, obj: Mapping[str, Any]) -> _Tag:
        info = pods.info(obj, job)
        return cls(info.replica, info.replica_type, info.index, info.attempt, info.name)

    def line(self, text: str) -> LogLine:
        return LogLine(**attrs.asdict(self), text=text)

    def notice(self, text: str) -> LogLine:
        return LogLine(**attrs.asdict(self), text=text, notice=True)


async def _read(
    c: connection.Connection, obj: Mapping[str, Any], *, previous: bool = False, follow: bool = False
) -> AsyncIterator[str]:
    meta = obj["metadata"]
    params = {"container": _container(obj)}
    if previous:
        params["previous"] = "true"
    if follow:
        params["follow"] = "true"
    try:
        async with c.stream(
            connection.PODS, meta["namespace"], meta["name"], sub="log", params=params
        ) as out:
            async for text in out:
                yield text
    except errors.Rejected as e:
        # 400: the container has not started, or has no previous instance; not an error here.
        if e.status != 400:
            raise
    except errors.NotFound:
        return  # the pod went while we read it


def _container(obj: Mapping[str, Any]) -> str:
    annotations = obj["metadata"].get("annotations") or {}
    chosen = annotations.get(naming.DEFAULT_CONTAINER)
    return str(chosen or obj["spec"]["containers"][0]["name"])


def _started(obj: Mapping[str, Any]) -> tuple[bool, int]:
    """Whether the log container has started (running or ended), and its restart count."""
    name = _container(obj)
    for s in (obj.get("status") or {}).get("containerStatuses") or []:
        if s.get("name") == name:
            state = s.get("state") or {}
            return ("running" in state or "terminated" in state), int(s.get("restartCount", 0))
    return False, 0


class _Follower:
    def __init__(self, c: connection.Connection, job: v1beta1.TrainingJob, selection: Selection) -> None:
        self.c, self.job, self.selection = c, job, selection
        self.out: asyncio.Queue[LogLine | object] = asyncio.Queue()
        self.pods: dict[str, dict[str, Any]] = {}  # uid -> latest object
        self.changed = asyncio.Condition()
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.followed: dict[str, set[str]] = {}  # replica -> uids of its pods followed
        self.finished = asyncio.Event()
        self.error: BaseException | None = None

    async def run(self) -> AsyncIterator[LogLine]:
        watchers = [self._task(self._watch_pods()), self._task(self._watch_job())]
        ender = asyncio.create_task(self._end())
        try:
            while True:
                item = await self.out.get()
                if self.error is not None:
                    raise self.error
                if item is _END:
                    return
                assert isinstance(item, LogLine)
                yield item
        finally:
            for task in (*watchers, ender, *self.tasks.values()):
                task.cancel()
            await asyncio.gather(*watchers, ender, *self.tasks.values(), return_exceptions=True)

    def _task(self, coro: Any) -> asyncio.Task[None]:
        """A task whose failure ends the stream with its error (the cluster went away)."""

        async def guarded() -> None:
            try:
                await coro
            except errors.Error as e:
                self.error = e
                await self.out.put(_END)

        return asyncio.create_task(guarded())

    async def _end(self) -> None:
        """Put the end in the queue once the job has finished and its streams drained."""
        try:
            await self.finished.wait()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_followed(), DRAIN_SECONDS)
        finally:
            await self.out.put(_END)

    async def _all_followed(self) -> None:
        while True:
            await asyncio.gather(*self.tasks.values(), return_exceptions=True)
            if all(t.done() for t in self.tasks.values()):
                return

    async def _watch_job(self) -> None:
        params = {"fieldSelector": f"metadata.name={self.job.metadata.name}"}
        changes = watch.changes(self.c, connection.TRAININGJOBS, self.job.metadata.namespace, params)
        async with contextlib.aclosing(changes):
            async for kind, obj in changes:
                if kind == "DELETED" or obj["metadata"].get("uid") != self.job.metadata.uid:
                    break
                state = jobs.decode(obj).status.state
                if state in (v1beta1.JobState.SUCCEEDED, v1beta1.JobState.FAILED):
                    break
        self.finished.set()

    async def _watch_pods(self) -> None:
        params = {"labelSelector": f"{naming.JOB_NAME}={self.job.metadata.name}"}
        changes = watch.changes(self.c, connection.PODS, self.job.metadata.namespace, params)
        async with contextlib.aclosing(changes):
            async for kind, obj in changes:
                if not pods.owned(obj, self.job) or not self.selection.wants(observed.Pod.of(obj)):
                    continue
                uid = obj["metadata"]["uid"]
                async with self.changed:
                    self.pods[uid] = {**obj, "_deleted": kind == "DELETED"}
                    self.changed.notify_all()
                if uid not in self.tasks and kind != "DELETED":
                    self.tasks[uid] = self._task(self._follow(uid))

    async def _follow(self, uid: str) -> None:
        """Every container instance of one pod, in turn, until the pod is done."""
        seen_restarts: int | None = None
        emitted = 0  # lines of the current container instance already put out
        while True:
            obj = await self._until(uid, functools.partial(_next_instance, seen_restarts))
            if obj["_deleted"]:
                return
            tag = _Tag.of(self.job, obj)
            started, restarts = _started(obj)
            if seen_restarts is None:
                before = self.followed.setdefault(tag.replica, set())
                if before:
                    await self.out.put(tag.notice(f"--- a new pod (attempt {tag.attempt}) ---"))
                before.add(uid)
            elif restarts > seen_restarts:
                await self.out.put(tag.notice(f"--- container restarted (restart {restarts}) ---"))
                emitted = 0
            if not started:
                return  # done without ever starting (deleted while waiting)
            skip = emitted
            async for text in _read(self.c, obj, follow=True):
                if skip:
                    skip -= 1
                    continue
                emitted += 1
                await self.out.put(tag.line(text))
            seen_restarts = restarts
            latest = self.pods[uid]
            if latest["_deleted"] or _done(latest):
                return
            if _running(latest) and _started(latest)[1] == restarts:
                # The stream ended before the pod's status says the container did: look again soon.
                await asyncio.sleep(0.5)

    async def _until(self, uid: str, ready: Any) -> dict[str, Any]:
        async with self.changed:
            await self.changed.wait_for(lambda: ready(self.pods[uid]))
            return self.pods[uid]


def _next_instance(seen_restarts: int | None, obj: Mapping[str, Any]) -> bool:
    """Whether a container instance after ``seen_restarts`` can be read, or the pod is done."""
    if obj["_deleted"] or _done(obj):
        return True
    started, restarts = _started(obj)
    return started and (seen_restarts is None or restarts > seen_restarts or _running(obj))


def _running(obj: Mapping[str, Any]) -> bool:
    name = _container(obj)
    return any(
        "running" in (s.get("state") or {})
        for s in (obj.get("status") or {}).get("containerStatuses") or []
        if s.get("name") == name
    )


def _done(obj: Mapping[str, Any]) -> bool:
    return (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")
