"""One failover, from the jobs' creation to the checks after it, and the figures it gives.

1. ``--jobs`` TrainingJobs are created (through the webhooks, so through both replicas) and
   waited for until every one is Running; the Lease's renewals meanwhile say how late a leader
   under load renews.
2. The load starts (:mod:`.load`): admission requests and job changes at their rates.
3. After ``--before`` seconds, a wave of ``--wave`` new jobs is created and, once a quarter of
   their pods are made, the leader is SIGKILLed while it makes the rest and answers the changes.
4. ``--after`` seconds later the load stops; the benchmark waits (``--grace``) until every
   accepted change and every job is reflected in its status, then checks what it saw.

The **status lag** of a change is the time from the apiserver's answer to it (a job's
create, or a spec change) to the benchmark's watch showing the job's
``status.observedGeneration`` at that generation or later. It is given for the changes
answered *before* the kill, *during* the switch (from the kill until the lag recovered) and
*after*. *Before* is every change answered and reflected before the kill: a healthy leader. The lag has
**recovered** at the last moment a change not reflected before the kill was reflected later than
the worst lag before it: from then on, no change waits longer than it did with a healthy leader.
*During* is every other change answered before that moment, *after* every change answered
since. An admission answer is put in the period it was answered in (or given up on) the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import pathlib
import time
from collections.abc import Callable
from typing import Any

from kubetrain.devcluster import deploy
from kubetrain.operator.runtime import client
from kubetrain_bench.console import log
from kubetrain_bench.ha import load, observe
from kubetrain_bench.ha.replicas import LEASE, Setup
from kubetrain_bench.jobs.bodies import job_body
from kubetrain_bench.jobs.common import BenchTimeoutError
from kubetrain_bench.jobs.watches import ensure_namespace
from kubetrain_bench.samples import load as sample
from kubetrain_bench.stats import percentiles

NAMESPACE = "ha"


async def _until(what: str, done: Callable[[], bool], timeout: float, check: Callable[[], None]) -> None:
    deadline = time.perf_counter() + timeout
    while not done():
        check()
        if time.perf_counter() > deadline:
            raise BenchTimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.25)


def lags(changes: list[load.Change], jobs: observe.Jobs) -> list[tuple[load.Change, float | None]]:
    """Each accepted change with its status lag (None: never reflected)."""
    out = []
    for c in changes:
        if c.generation:
            reflected = jobs.reflected(c.job, c.generation)
            out.append((c, None if reflected is None else max(0.0, reflected - c.answered)))
    return out


def balancer_events(log_file: pathlib.Path) -> list[tuple[float, int, str]]:
    """(unix time, webhook port, ready|gone) for each change the balancer printed."""
    events = []
    for line in log_file.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in ("ready", "gone"):
            events.append((float(parts[0]), int(parts[1]), parts[2]))
    return events


async def measure(s: Setup, args: argparse.Namespace) -> dict[str, Any]:
    clock = time.perf_counter
    figures: dict[str, Any] = {"load_average": {"start": os.getloadavg()[0]}}
    api = await client.Client.connect(str(s.kubeconfig), qps=1e6, burst=1_000_000, timeout=60)
    asker = await client.Client.connect(
        str(s.kubeconfig), qps=1e6, burst=1_000_000, timeout=args.admission_timeout
    )
    lease, jobs, children = observe.Lease(LEASE, clock), observe.Jobs(clock), observe.Children()
    try:
        await ensure_namespace(api, NAMESPACE, collections.Counter())
        watches = [
            observe.watch(api, client.LEASES, deploy.NAMESPACE, lease.see),
            observe.watch(api, client.TRAININGJOBS, NAMESPACE, jobs.see),
            observe.watch(api, client.PODS, NAMESPACE, children.see_pod),
            observe.watch(api, client.SERVICES, NAMESPACE, children.see_service),
        ]

        def check() -> None:
            for w in watches:
                if w.done():
                    w.result()
                    raise RuntimeError("the benchmark's watch ended")
            for r in s.replicas:
                if r is not killed_replica:
                    r.process.check_alive()

        killed_replica = None
        names = [f"job-{i:05d}" for i in range(args.jobs)]
        log(f"creating {args.jobs} TrainingJobs of {args.replicas} replicas")
        t = clock()
        made = await load.creates(
            api, [job_body(n, args.replicas, NAMESPACE, "PerJob") for n in names], args.concurrency
        )
        if refused := [c for c in made if not c.generation]:
            raise RuntimeError(f"{len(refused)} creates refused, the first: {refused[0].message}")
        await _until(
            "every job to be Running",
            lambda: sum(jobs.state.get(n) == "Running" for n in names) == len(names),
            args.timeout,
            check,
        )
        figures["base_jobs"], figures["all_running_seconds"] = args.jobs, clock() - t
        figures["lease_gap_creating"] = lease.longest_gap(t, clock())
        log(f"  all Running after {figures['all_running_seconds']:.1f}s")
        old = lease.holder()

        stop = asyncio.Event()
        probe = sample("v1beta1", "pytorch-ddp")
        probe["metadata"] = {"name": "admission-probe", "namespace": NAMESPACE}
        asking = asyncio.create_task(load.admissions(asker, probe, NAMESPACE, args.admission_rate, stop))
        changing = asyncio.create_task(load.changes(api, names, NAMESPACE, args.change_rate, stop))
        started = clock()
        log(
            f"load: {args.admission_rate:g} admissions/s, {args.change_rate:g} changes/s; {args.before:g}s before the kill"
        )
        await asyncio.sleep(args.before)
        check()
        wave_bodies = [
            job_body(f"wave-{i:05d}", args.replicas, NAMESPACE, "PerJob") for i in range(args.wave)
        ]
        waving = asyncio.create_task(load.creates(api, wave_bodies, args.concurrency))
        # The kill lands while the leader makes the wave's pods: once a quarter of them are made.
        await _until(
            "the wave's pods to be made",
            lambda: (
                sum(1 for k in children.pods if k[0].startswith("wave-")) >= args.wave * args.replicas / 4
            ),
            args.timeout,
            check,
        )
        if len(lease.holders) != 1 or not s.replicas[0].process.alive():
            raise RuntimeError(f"leadership moved before the kill: {lease.holders}")
        killed_replica = s.replicas[0]
        figures["load_average"]["kill"] = os.getloadavg()[0]
        figures["pods_before_kill"] = sum(1 for k in children.pods if k[0].startswith("wave-"))
        killed, killed_unix = killed_replica.kill(), time.time()
        log(f"  SIGKILLed the leader (replica a); {args.after:g}s more of load")
        await asyncio.sleep(args.after)
        stop.set()
        answers, changes, wave = await asking, await changing, await waving
        figures["load_seconds"] = clock() - started
        accepted = [c for c in [*changes, *wave] if c.generation]
        log(f"  load stopped; waiting up to {args.grace:g}s for every change to be reflected")
        try:
            await _until(
                "every change to be reflected",
                lambda: (
                    all(jobs.reflected(c.job, c.generation) is not None for c in accepted)
                    and not jobs.behind()
                ),
                args.grace,
                check,
            )
        except BenchTimeoutError as e:
            log(f"  {e}")
        figures["load_average"]["end"] = os.getloadavg()[0]
        figures.update(
            _figures(
                killed=killed,
                killed_unix=killed_unix,
                old=old,
                lease=lease,
                jobs=jobs,
                children=children,
                answers=answers,
                changes=[*changes, *wave],
                balancer=balancer_events(s.balancer.log),
                killed_port=killed_replica.webhook_port,
                started=started,
            )
        )
        figures["wave"] = {"sent": len(wave), "refused": sum(1 for c in wave if not c.generation)}
        figures["expected_pods"] = args.replicas * sum(1 for n in jobs.generation)
        for w in watches:
            w.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
        return figures
    finally:
        await asker.close()
        await api.close()


def _figures(
    *,
    killed: float,
    killed_unix: float,
    old: str,
    lease: observe.Lease,
    jobs: observe.Jobs,
    children: observe.Children,
    answers: list[load.Answer],
    changes: list[load.Change],
    balancer: list[tuple[float, int, str]],
    killed_port: int,
    started: float,
) -> dict[str, Any]:
    f: dict[str, Any] = {}
    taken = lease.taken_after(killed, old)
    f["lease_taken"] = None if taken is None else taken - killed
    write = jobs.first_write_after(taken) if taken is not None else None
    f["first_status_write"] = None if write is None else write - killed
    gone = next(
        (t for t, port, what in balancer if port == killed_port and what == "gone" and t >= killed_unix), None
    )
    f["endpoint_removed"] = None if gone is None else gone - killed_unix
    f["lease_gap_loaded"] = lease.longest_gap(started, killed)

    measured = lags(changes, jobs)
    # Normal operation: changes answered and reflected before the kill. The changes the dead
    # leader left unreflected, and those made since, wait for the next one.
    healthy = [lag for c, lag in measured if lag is not None and c.answered + lag < killed]
    worst_before = max(healthy, default=0.0)
    late = [
        c.answered + lag
        for c, lag in measured
        if lag is not None and c.answered + lag >= killed and lag > worst_before
    ]
    recovered = max(late, default=killed)
    f["recovered"] = recovered - killed
    f["worst_before"] = worst_before

    def period(answered: float, done: float) -> str:
        return "before" if done < killed else "during" if answered < recovered else "after"

    f["lag"] = {
        p: percentiles(
            lag for c, lag in measured if lag is not None and period(c.answered, c.answered + lag) == p
        )
        for p in ("before", "during", "after")
    }
    # For the JSON: when each change after the kill was answered, and its lag (s).
    f["timeline"] = sorted(
        (round(c.answered - killed, 3), None if lag is None else round(lag, 3))
        for c, lag in measured
        if c.answered + (lag or 0) >= killed
    )
    f["changes"] = {
        "sent": len(changes),
        "refused": sum(1 for c in changes if not c.generation),
        "never_reflected": sum(1 for _c, lag in measured if lag is None),
    }
    f["behind_at_end"] = len(jobs.behind())
    f["admission"] = {}
    for p in ("before", "during", "after"):
        mine = [a for a in answers if period(a.sent, a.sent + a.seconds) == p]
        f["admission"][p] = {
            "sent": len(mine),
            "failed": sum(1 for a in mine if a.outcome == "failed"),
            "timeout": sum(1 for a in mine if a.outcome == "timeout"),
            "ok_latency": percentiles(a.seconds for a in mine if a.outcome == "ok"),
        }
    lost = [a for a in answers if a.outcome != "ok"]
    f["admission_lost"] = {
        "count": len(lost),
        "first": min((a.sent - killed for a in lost), default=None),
        "last": max((a.sent - killed for a in lost), default=None),
        "messages": sorted({a.message for a in lost})[:3],
    }
    f["duplicate_pods"], f["duplicate_services"] = children.duplicates()
    f["pods_seen"] = len(children.pods)
    f["services_seen"] = len(children.services)
    return f
