"""Memory and state under churn: jobs made and deleted for a long while, on kwok nodes.

The operator runs as a process of its own against a control plane with ``--nodes`` kwok nodes.
Jobs of one Master and one Worker (two pods, two Services) are made at ``--rate`` a second and
each is deleted ``--lifetime`` seconds after it was made, so about rate times lifetime live at once;
the run stops making jobs at ``--jobs`` or after ``--minutes``, whichever comes first, deletes
what is left and waits until every job is gone.

Every ``--sample`` seconds it reads the operator's RSS (``/proc``) and its
``kubetrain_remembered_entries`` (what the process keeps per job: its memory, expectations,
tombstones, progress reads, the work queue's keys and backoffs, Events to aggregate), and prints
them. At the end: the RSS at the start (caches synced, no job), after the first tenth of the run
(the caches full), in the middle, at the end, and once every job is gone; the peak entries of
each map, and their entries once the jobs are gone, which must all be 0 — the run exits 1 if one
is not within ``--settle`` seconds.

A run only stands for churn if the operator keeps up: a job deleted before its first pass costs
it a queue entry and a cache entry, never its pods, Services or memory. So it also says whether it
did: the work queue's peak depth, how long first passes waited (p50/p99, from the operator's
``workqueue_queue_duration_seconds{priority="-100"}``) against ``--lifetime``, and how many jobs
were deleted before a first pass wrote their ``Created`` condition (the jobs made less the
operator's ``kubetrain_jobs_created_total``). Past 1% of the jobs, or a p99 first-pass wait past a
tenth of the lifetime, the report says the operator did not keep up at this rate.

A deleted job's pods and Services are deleted by kube-controller-manager's garbage collector, whose
client is limited to 20 requests a second: at more than a few jobs a second it falls behind, and
the pods and Services of deleted jobs pile up in the apiserver — and in the operator's caches, which
must show them while they exist. So every sample also counts the namespace's pods and Services, the
run waits for the collector to finish before its "all gone" sample, and the report gives their peak.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

import attrs

from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator.runtime import client
from kubetrain_bench import ROOT
from kubetrain_bench.console import log
from kubetrain_bench.jobs.bodies import job_body
from kubetrain_bench.jobs.metrics import operator_samples, operator_waits
from kubetrain_bench.jobs.operator_phase import start_operator
from kubetrain_bench.procs import proc_figures

NAMESPACE = "churn"


@attrs.frozen(kw_only=True)
class Sample:
    seconds: float  # since the first job was made
    made: int
    deleted: int
    rss_mib: float
    remembered: dict[str, float]  # owner/map -> entries
    depth: float  # the work queue's keys waiting
    children: int  # pods and Services in the namespace, of live and deleted jobs
    first_passed: float  # jobs whose first pass wrote their Created condition

    @property
    def entries(self) -> float:
        return sum(self.remembered.values())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--jobs", type=int, default=100_000, help="make at most this many jobs (100,000)")
    p.add_argument("--minutes", type=float, default=60, help="make jobs for at most this long (60)")
    p.add_argument("--rate", type=float, default=28, help="jobs made a second (28: 100,000 an hour)")
    p.add_argument("--lifetime", type=float, default=20, help="seconds from a job's creation to its deletion")
    p.add_argument("--nodes", type=int, default=50, help="kwok nodes")
    p.add_argument("--sample", type=float, default=30, help="seconds between samples")
    p.add_argument(
        "--settle",
        type=float,
        default=600,
        help="seconds the collector and the maps have to finish at the end (600)",
    )
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    for name in ("jobs", "minutes", "rate", "lifetime", "nodes", "sample", "settle"):
        if getattr(args, name) <= 0:
            p.error(f"--{name} must be above 0")
    return args


# The operator's share of jobs deleted before their first pass, and its first passes' p99 wait as a
# share of the jobs' lifetime, past which the run does not stand for churn.
UNREACHED_MAX = 0.01
FIRST_WAIT_MAX = 0.1


def remembered(samples: list[Any]) -> dict[str, float]:
    return {
        f"{s.labels['owner']}/{s.labels['map']}": s.value
        for s in samples
        if s.name == "kubetrain_remembered_entries"
    }


def first_passed(samples: list[Any]) -> float:
    return float(
        sum(
            s.value
            for s in samples
            if s.name == "kubetrain_jobs_created_total" and s.labels.get("namespace") == NAMESPACE
        )
    )


def depth(samples: list[Any]) -> float:
    return float(
        sum(s.value for s in samples if s.name == "workqueue_depth" and s.labels.get("name") == "trainingjob")
    )


class Churn:
    """The run: a maker, a deleter and a sampler, against one operator process."""

    def __init__(self, args: argparse.Namespace, api: client.Client, pid: int, metrics_port: int) -> None:
        self.args, self.api, self.pid, self.metrics_port = args, api, pid, metrics_port
        self.made = self.deleted = self.failed = 0
        self.samples: list[Sample] = []
        self.scraped: list[Any] = []  # the operator's metrics at the last sample
        self.started = time.monotonic()
        self._due: asyncio.Queue[tuple[float, str]] = asyncio.Queue()
        self._making = True

    async def count(self, resource: client.Resource) -> int:
        page = await self.api.list(resource, NAMESPACE, limit="1")
        return len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)

    async def sample(self) -> Sample:
        children = await self.count(client.PODS) + await self.count(client.SERVICES)
        scraped = operator_samples(self.metrics_port)
        self.scraped = scraped
        s = Sample(
            seconds=time.monotonic() - self.started,
            made=self.made,
            deleted=self.deleted,
            rss_mib=proc_figures(self.pid)["rss_mib"],
            remembered=remembered(scraped),
            depth=depth(scraped),
            children=children,
            first_passed=first_passed(scraped),
        )
        self.samples.append(s)
        log(
            f"  {s.seconds:6.0f}s made {s.made:6d} deleted {s.deleted:6d} live {s.made - s.deleted:5d} "
            f"rss {s.rss_mib:6.1f} MiB remembered {s.entries:6.0f} queue {s.depth:5.0f} "
            f"first passes {s.first_passed:6.0f} pods+services {s.children:6d}"
        )
        return s

    async def run(self) -> None:
        self.started = time.monotonic()
        await self.sample()
        sampler = asyncio.create_task(self._sampler())
        deleter = asyncio.create_task(self._deleter())
        try:
            await self._maker()
            await self._due.join()
        finally:
            self._making = False
            deleter.cancel()
            sampler.cancel()
        await self.sample()

    async def _maker(self) -> None:
        a = self.args
        deadline = self.started + 60 * a.minutes
        limit = asyncio.Semaphore(32)
        pending: set[asyncio.Task[None]] = set()
        while self.made + self.failed < a.jobs and time.monotonic() < deadline:
            due = self.started + (self.made + self.failed) / a.rate
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            await limit.acquire()
            task = asyncio.create_task(self._make(f"churn-{self.made + self.failed}", limit))
            pending.add(task)
            task.add_done_callback(pending.discard)
            self.made += 1  # counted when sent: names stay unique; a refusal is taken back
        await asyncio.gather(*pending)

    async def _make(self, name: str, limit: asyncio.Semaphore) -> None:
        try:
            await self.api.create(client.TRAININGJOBS, job_body(name, 2, NAMESPACE), NAMESPACE)
            self._due.put_nowait((time.monotonic() + self.args.lifetime, name))
        except client.ApiError as e:
            self.made -= 1
            self.failed += 1
            log(f"  create {name}: {e}")
        finally:
            limit.release()

    async def _deleter(self) -> None:
        deleting: set[asyncio.Task[None]] = set()
        while True:
            due, name = await self._due.get()
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            task = asyncio.create_task(self._delete(name))
            deleting.add(task)
            task.add_done_callback(deleting.discard)

    async def _delete(self, name: str) -> None:
        try:
            await self.api.delete(client.TRAININGJOBS, name, NAMESPACE)
            self.deleted += 1
        except client.ApiError as e:
            if not e.not_found:
                log(f"  delete {name}: {e}")
        finally:
            self._due.task_done()

    async def _sampler(self) -> None:
        while True:
            await asyncio.sleep(self.args.sample)
            await self.sample()

    async def settle(self) -> Sample:
        """Once every job is gone (the apiserver lists none) and the garbage collector has deleted
        their pods and Services, until every map is empty or ``--settle``."""
        deadline = time.monotonic() + self.args.settle
        while (await self.api.list(client.TRAININGJOBS, NAMESPACE))["items"]:
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(2)
        last = await self.sample()
        while (last.entries or last.children) and time.monotonic() < deadline:
            await asyncio.sleep(5)
            last = await self.sample()
        return last


def figures(churn: Churn, gone: Sample, args: argparse.Namespace) -> dict[str, Any]:
    s = churn.samples
    making = [x for x in s if x.made > x.deleted or x is s[0]]
    last = making[-1]

    def at(fraction: float) -> Sample:
        return min(making, key=lambda x: abs(x.seconds - fraction * last.seconds))

    peak: dict[str, float] = {}
    for x in s:
        for k, v in x.remembered.items():
            peak[k] = max(peak.get(k, 0), v)
    rss = [x.rss_mib for x in making]
    # Jobs never given a first pass: the operator's count is read once every job is gone.
    unreached = max(0.0, churn.made - gone.first_passed)
    first_wait = operator_waits(churn.scraped).get("first passes", {})
    return {
        "params": vars(args),
        "made": churn.made,
        "deleted": churn.deleted,
        "refused": churn.failed,
        "seconds": round(last.seconds, 1),
        "rate": round(churn.made / last.seconds, 2) if last.seconds else 0.0,
        "rss_mib": {
            "start": round(s[0].rss_mib, 1),
            "tenth": round(at(0.1).rss_mib, 1),
            "middle": round(at(0.5).rss_mib, 1),
            "end": round(last.rss_mib, 1),
            "gone": round(gone.rss_mib, 1),
            "max": round(max(rss), 1),
            "median": round(statistics.median(rss), 1),
        },
        "peak_children": max(x.children for x in s),
        "children_when_gone": gone.children,
        "queue": {
            "peak_depth": max(x.depth for x in s),
            "first_passed": gone.first_passed,
            "unreached": unreached,
            "unreached_share": round(unreached / churn.made, 4) if churn.made else 0.0,
            "first_wait_p50": round(first_wait.get("p50", 0.0), 2),
            "first_wait_p99": round(first_wait.get("p99", 0.0), 2),
        },
        "kept_up": (
            unreached <= UNREACHED_MAX * churn.made
            and first_wait.get("p99", 0.0) <= FIRST_WAIT_MAX * args.lifetime
        ),
        "peak_entries": peak,
        "entries_when_gone": gone.remembered,
        "empty": not gone.entries,
    }


def report(f: dict[str, Any]) -> str:
    p, r, q = f["params"], f["rss_mib"], f["queue"]
    lines = [
        f"Churn on {p['nodes']} kwok nodes: {f['made']:,} jobs made ({f['refused']} refused) and "
        f"{f['deleted']:,} deleted in {f['seconds']:.0f} s ({f['rate']:g} a second; each lived "
        f"{p['lifetime']:g} s: 2 pods and 2 Services)",
        f"  operator RSS, MiB: start {r['start']}, after a tenth {r['tenth']}, middle {r['middle']}, "
        f"end {r['end']}, all gone {r['gone']} (max {r['max']}, median {r['median']})",
        f"  work queue: peak depth {q['peak_depth']:.0f}; first passes waited p50 {q['first_wait_p50']:g} s, "
        f"p99 {q['first_wait_p99']:g} s; {q['unreached']:,.0f} jobs ({100 * q['unreached_share']:.1f}%) "
        "deleted before a first pass wrote their status",
        f"  pods and Services in the namespace (live jobs', and deleted jobs' the garbage collector has "
        f"not deleted yet): peak {f['peak_children']:,}, {f['children_when_gone']:,} at the end",
    ]
    if not f["kept_up"]:
        lines.append(
            f"  THE OPERATOR DID NOT KEEP UP at {p['rate']:g} jobs a second: most jobs cost it a queue entry, "
            "not a pass; this run does not stand for churn (lower --rate or raise --lifetime)"
        )
    lines.append("  per-job maps (owner/map): peak entries -> entries once the jobs are gone")
    for k in sorted(f["peak_entries"]):
        lines.append(f"    {k:36} {f['peak_entries'][k]:8.0f} -> {f['entries_when_gone'].get(k, 0):.0f}")
    lines.append("  every map empty: " + ("yes" if f["empty"] else "NO"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log(f"starting the control plane with {args.nodes} kwok nodes")
    c = devcluster.start(devcluster.Tier.CLUSTER, nodes=args.nodes, timeout=180)
    try:
        c.install_crds(ROOT / "config")
        c.kubectl("create", "namespace", NAMESPACE)
        op, metrics_port = start_operator(
            c.kubeconfig, c.workdir / "logs" / "operator.log", 100, 200, "none", 8
        )
        try:
            pid = op.pid
            assert pid is not None

            async def go() -> dict[str, Any]:
                async with await client.Client.connect(str(c.kubeconfig), qps=500, burst=1000) as api:
                    churn = Churn(args, api, pid, metrics_port)
                    await churn.run()
                    gone = await churn.settle()
                    return figures(churn, gone, args)

            out = asyncio.run(go())
        finally:
            op.stop()
    finally:
        c.stop()
    print(json.dumps(out) if args.json else report(out))
    return 0 if out["empty"] else 1


if __name__ == "__main__":
    sys.exit(main())
