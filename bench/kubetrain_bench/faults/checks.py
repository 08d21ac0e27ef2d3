"""The checks run after the faults: each a function of what was seen, returning a :class:`Verdict`.

- :func:`one_pod_per_rank`: no two pods of one rank ran at once — from the pod watch (a rank's
  pods, one UID after another) and from the ranks' own lines (each pod instance's first and last
  line: an old pod still printing after its successor began would be a rank running twice).
- :func:`attempts_agree`: no rank of an old attempt in a new world — the ranks that met in one
  rendezvous (their ``rank R attempt A`` lines, printed right after it) all say the same attempt,
  and no world says an attempt below an earlier world's.
- :func:`no_orphans`: nothing left of a finished job that its ``cleanPodPolicy`` removes, and
  nothing at all of a deleted one (pods, Services).
- :func:`charged_once`: each restart charged once (``status.restarts`` adds up to the attempt the
  job is at) and every failure recorded for a restart explained by a fault that touched the job,
  of a class that fault may cause (faults.MAY_CHARGE); each eviction charged.
- :func:`outcomes`: each job ended as its policy dictates: Succeeded within its budgets, Failed
  with the budget's reason past one.
- :func:`resumed_from_checkpoint`: each DDP attempt that resumed went on from the last checkpoint
  rank 0 saved before it, and its first loss is the loss the job had at that step (the training
  is deterministic), not the loss of the start.
- :func:`machine_clean`: nothing of the cluster left on this machine once it stopped.
"""

from __future__ import annotations

import datetime
import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from kubetrain_bench.faults.faults import MAY_CHARGE, MUST_CHARGE, Injected
from kubetrain_bench.faults.observe import Line

ATTEMPT = re.compile(r"^rank (\d+) attempt (\d+) after")
SAVED = re.compile(r"^rank 0 saved a checkpoint at step (\d+)")
RESUMED = re.compile(r"^rank 0 resumed at step (\d+)")
STEP = re.compile(r"^rank 0 step (\d+) loss ([0-9.e+-]+)")
# Ranks meet within this of each other: lines further apart are of two worlds.
WORLD_SECONDS = 10.0
# A failure belongs to a fault up to this long after the jobs were back from it.
LATE_SECONDS = 15.0


@attrs.frozen(kw_only=True)
class Verdict:
    name: str
    ok: bool
    detail: str


def one_pod_per_rank(
    pod_events: Sequence[tuple[float, str, dict[str, Any]]], lines: Sequence[Line]
) -> Verdict:
    bad: list[str] = []
    # The watch: a name's next UID appears only after the one before was deleted.
    alive: dict[str, str] = {}
    uids: set[str] = set()
    for _, kind, obj in pod_events:
        name, uid = obj["metadata"]["name"], obj["metadata"]["uid"]
        uids.add(uid)
        if kind == "DELETED":
            if alive.get(name) == uid:
                del alive[name]
        elif alive.setdefault(name, uid) != uid:
            bad.append(f"{name}: {uid[:8]} while {alive[name][:8]} was there")
            alive[name] = uid
    # The lines: each instance's span, per pod name (a rank), must not overlap the next one's.
    spans: dict[str, dict[str, list[datetime.datetime]]] = {}
    for at, pod, uid, _, _ in lines:
        span = spans.setdefault(pod, {}).setdefault(uid, [at, at])
        span[0], span[1] = min(span[0], at), max(span[1], at)
    instances = 0
    for pod, by_uid in spans.items():
        ordered = sorted(by_uid.items(), key=lambda kv: kv[1][0])
        instances += len(ordered)
        for (u1, (_, end1)), (u2, (start2, _)) in itertools.pairwise(ordered):
            if start2 < end1:
                bad.append(
                    f"{pod}: {u2[:8]} printed from {start2:%H:%M:%S.%f}, {u1[:8]} until {end1:%H:%M:%S.%f}"
                )
    detail = f"{len(spans)} ranks' pods, {instances} instances printing, {len(uids)} UIDs watched"
    return Verdict(name="one pod per rank", ok=not bad, detail="; ".join(bad) or detail)


def attempts_agree(lines: Sequence[Line], worlds: Mapping[str, tuple[str, int]]) -> Verdict:
    """``worlds``: job -> (the pod whose log holds every rank's lines, or "" for each its own; ranks)."""
    bad: list[str] = []
    met = 0
    for job, (holder, size) in worlds.items():
        said = [
            (at, int(m.group(1)), int(m.group(2)))
            for at, pod, _, _, text in lines
            if pod.startswith(job + "-") and (not holder or pod == holder) and (m := ATTEMPT.match(text))
        ]
        groups: list[list[tuple[datetime.datetime, int, int]]] = []
        for entry in sorted(said):
            g = groups[-1] if groups else None
            if (
                g is None
                or entry[1] in {r for _, r, _ in g}
                or (entry[0] - g[0][0]).total_seconds() > WORLD_SECONDS
            ):
                groups.append([entry])
            else:
                g.append(entry)
        highest = -1
        for g in groups:
            attempts = {a for _, _, a in g}
            met += 1
            if len(attempts) > 1:
                bad.append(f"{job}: a world at {g[0][0]:%H:%M:%S} of attempts {sorted(attempts)}")
            if min(attempts) < highest:
                bad.append(
                    f"{job}: attempt {min(attempts)} met at {g[0][0]:%H:%M:%S} after attempt {highest}"
                )
            highest = max(highest, *attempts)
            if len(g) != size:
                bad.append(f"{job}: {len(g)} of {size} ranks said their attempt at {g[0][0]:%H:%M:%S}")
    return Verdict(
        name="attempts agree", ok=not bad, detail="; ".join(bad) or f"{met} worlds met, each of one attempt"
    )


def no_orphans(finished_left: Mapping[str, Sequence[str]], deleted_left: Sequence[str]) -> Verdict:
    bad = [f"{job}: {', '.join(objs)}" for job, objs in finished_left.items() if objs]
    if deleted_left:
        bad.append(f"after the jobs were deleted: {', '.join(deleted_left)}")
    return Verdict(
        name="no orphans",
        ok=not bad,
        detail="; ".join(bad)
        or f"{len(finished_left)} finished jobs cleaned by policy, nothing after deletion",
    )


def charged_once(
    jobs: Mapping[str, dict[str, Any]], injected: Sequence[Injected], recover_timeout: float
) -> Verdict:
    bad: list[str] = []
    charged = 0
    for name, job in jobs.items():
        status = job.get("status", {})
        r = status.get("restarts", {})
        total = sum(int(r.get(k, 0)) for k in ("userCode", "infrastructure", "uncharged"))
        attempt = max(
            (int(s.get("attempt", 0)) for s in status.get("replicaStatuses", {}).values()), default=0
        )
        if total != attempt:
            bad.append(f"{name}: restarts {r} add up to {total}, at attempt {attempt}")
        for f in status.get("failures", []):
            if f.get("action") == "Tolerate":
                continue
            charged += 1
            at = _seconds(f["time"])
            cls = f.get("class")
            why = [
                i
                for i in injected
                if name in i.jobs or i.kind in ("operator-kill", "apiserver")
                if i.start - 2 <= at <= i.end + (i.recovered or recover_timeout) + LATE_SECONDS
            ]
            if not any(cls in MAY_CHARGE[i.kind] for i in why):
                kinds = ", ".join(i.kind for i in why) or "no fault"
                bad.append(f"{name}: {f.get('pod')} {cls} {f.get('reason')} at {f['time']}, after {kinds}")
    for i in injected:
        pod = i.target.split("(")[-1].split(" ")[0]  # "POD" or "operator (POD evicted)"
        if i.kind in MUST_CHARGE and i.jobs and pod != "-":
            job = jobs.get(i.jobs[0], {})
            if not any(
                f.get("pod") == pod and i.start - 2 <= _seconds(f["time"])
                for f in job.get("status", {}).get("failures", [])
            ):
                bad.append(f"{i.jobs[0]}: {i.kind} of {pod} not charged")
    return Verdict(
        name="charged once, right class",
        ok=not bad,
        detail="; ".join(bad)
        or f"{charged} failures, each explained by a fault; restarts add up to attempts",
    )


def outcomes(jobs: Mapping[str, dict[str, Any]], limits: Mapping[str, Mapping[str, int | None]]) -> Verdict:
    bad: list[str] = []
    said = []
    for name, job in jobs.items():
        status = job.get("status", {})
        r = status.get("restarts", {})
        over = [
            reason
            for key, reason in (
                ("userCode", "BackoffLimitExceeded"),
                ("infrastructure", "InfrastructureLimitExceeded"),
            )
            if (limit := limits[name].get(key)) is not None and int(r.get(key, 0)) > limit
        ]
        state = status.get("state")
        failed: dict[str, Any] = next((c for c in status.get("conditions", []) if c["type"] == "Failed"), {})
        want = "Failed" if over else "Succeeded"
        said.append(f"{name} {state}")
        if state != want or (over and failed.get("reason") not in over):
            bad.append(f"{name}: {state} ({failed.get('reason', '-')}), restarts {r}: should be {want}")
    return Verdict(name="outcomes by policy", ok=not bad, detail="; ".join(bad) or ", ".join(said))


def resumed_from_checkpoint(lines: Sequence[Line], ddp_jobs: Sequence[str]) -> Verdict:
    bad: list[str] = []
    resumes = 0
    for job in ddp_jobs:
        rank0 = [(at, uid, text) for at, pod, uid, _, text in lines if pod == f"{job}-master-0"]
        saved: int | None = None
        losses: dict[int, float] = {}
        pending: int | None = None  # a resume whose first loss is still to come
        attempts = 0
        for at, _, text in sorted(rank0):
            if m := SAVED.match(text):
                saved = int(m.group(1))
            elif ATTEMPT.match(text):
                attempts += 1
                if attempts > 1 and saved is not None:
                    pending = -1  # this attempt must say it resumed
            elif m := RESUMED.match(text):
                step = int(m.group(1))
                resumes += 1
                if step != saved:
                    bad.append(
                        f"{job}: resumed at step {step} at {at:%H:%M:%S}, the last checkpoint was {saved}"
                    )
                pending = step
            elif m := STEP.match(text):
                step, loss = int(m.group(1)), float(m.group(2))
                if pending == -1:
                    bad.append(
                        f"{job}: an attempt began at step {step} at {at:%H:%M:%S}, checkpoint {saved} ignored"
                    )
                elif pending is not None:
                    before = losses.get(step)
                    if before is not None and abs(loss - before) > 1e-3 * max(1.0, before):
                        bad.append(f"{job}: loss {loss:g} at step {step} on resuming, {before:g} before")
                    if step > 0 and 0 in losses and loss >= losses[0]:
                        bad.append(f"{job}: loss back to the start's ({loss:g}) at step {step}")
                pending = None
                losses.setdefault(step, loss)
    return Verdict(
        name="resumed from checkpoint",
        ok=not bad,
        detail="; ".join(bad) or f"{resumes} resumes, each from the last checkpoint, losses continuous",
    )


def machine_clean(left: Mapping[str, Sequence[str]]) -> Verdict:
    bad = [f"{kind}: {'; '.join(list(items)[:3])}" for kind, items in left.items()]
    return Verdict(
        name="machine clean",
        ok=not bad,
        detail="; ".join(bad) or "no process, mount, interface, route, iptables rule or cgroup left",
    )


def _seconds(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
