"""``make bench-faults``: the arguments, and one seeded run from the cluster's start to its checks.

:func:`run` is the whole run, for the benchmark and for the node tier's quick form of it
(tests/node/test_faults.py): the host read, a cluster with real nodes started, CRDs and an
operator, the jobs created, the faults drawn and injected one after another once every job runs,
the jobs waited for to end, then deleted, the cluster stopped, the host read again, and every
check made.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import attrs

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import dev, process
from kubetrain_bench import ROOT, console, operator_process
from kubetrain_bench.faults import checks, faults, jobs, machine, report
from kubetrain_bench.faults.observe import Observed

NAMESPACE = "faults"


@attrs.frozen(kw_only=True)
class Params:
    seed: int = 1
    nodes: int = 2
    job_kinds: tuple[str, ...] = jobs.KINDS
    fault_kinds: tuple[str, ...] = faults.KINDS
    faults: int = 8
    hold: float = 25.0
    steps: int | None = None
    step_seconds: float = 0.2
    checkpoint_every: int = 20
    gap: tuple[float, float] = (2.0, 8.0)
    recover_timeout: float = 300.0
    keep: pathlib.Path | None = None

    @property
    def job_steps(self) -> int:
        """The DDP jobs' steps: by default, enough for them to outlast the faults."""
        return self.steps or int(self.faults * (self.hold + 15) / self.step_seconds)


@attrs.frozen(kw_only=True)
class Result:
    figures: dict[str, Any]
    verdicts: tuple[checks.Verdict, ...]

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=1, help="the RNG's seed: the faults, their targets and times")
    p.add_argument("--nodes", type=int, default=2, help="real nodes (2 or 3)")
    p.add_argument(
        "--jobs", default=",".join(jobs.KINDS), help=f"comma-separated, of {', '.join(jobs.KINDS)}"
    )
    p.add_argument("--faults", type=int, default=8, help="faults to inject")
    p.add_argument("--kinds", default=",".join(faults.KINDS), help="comma-separated fault kinds to draw from")
    p.add_argument("--hold", type=float, default=25.0, help="seconds a node stays lost or cut off")
    p.add_argument("--steps", type=int, help="the DDP jobs' steps (default: enough to outlast the faults)")
    p.add_argument("--step-seconds", type=float, default=0.2, help="each training step's length")
    p.add_argument("--checkpoint-every", type=int, default=20, help="rank 0 saves every this many steps")
    p.add_argument(
        "--recover-timeout", type=float, default=300.0, help="seconds a fault's jobs may take to be back"
    )
    p.add_argument("--keep", type=pathlib.Path, help="copy the ranks' lines and the logs of the run here")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args()
    kinds = tuple(k for k in args.kinds.split(",") if k)
    wanted = tuple(j for j in args.jobs.split(",") if j)
    for value, known, what in ((kinds, faults.KINDS, "fault kind"), (wanted, jobs.KINDS, "job")):
        if unknown := [v for v in value if v not in known]:
            sys.exit(f"error: unknown {what} {', '.join(unknown)} (known: {', '.join(known)})")
    if not 1 <= args.nodes <= 3:
        sys.exit("error: --nodes must be 1, 2 or 3")
    params = Params(
        seed=args.seed,
        nodes=args.nodes,
        job_kinds=wanted,
        faults=args.faults,
        fault_kinds=kinds,
        hold=args.hold,
        steps=args.steps,
        step_seconds=args.step_seconds,
        checkpoint_every=args.checkpoint_every,
        recover_timeout=args.recover_timeout,
        keep=args.keep,
    )
    result = run(params)
    report.show(result.figures, as_json=args.json)
    sys.exit(0 if result.ok else 1)


def run(params: Params) -> Result:
    console.log(f"==> {params}")
    before = machine.snapshot()
    began = time.monotonic()
    shared = tempfile.mkdtemp(prefix="kubetrain-faults-")
    os.chmod(shared, 0o755)
    console.log(f"==> start a control plane with {params.nodes} real nodes (images built or reused)")
    c = devcluster.start(
        devcluster.Tier.CLUSTER, nodes=0, real_nodes=params.nodes, root=ROOT, timeout=600, seed_images=True
    )
    assert c.network is not None
    scope = machine.Scope(workdir=str(c.workdir), slot=c.network.slot)
    op: faults.Operator | None = None
    observed: Observed | None = None
    try:
        c.install_crds(ROOT / "config")
        c.kubectl("create", "namespace", NAMESPACE)
        c.kubectl("wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", NAMESPACE)
        port = process.free_port()
        argv = dev.operator_argv(
            c, f"--health-probe-bind-address=127.0.0.1:{port}", "--metrics-bind-address=0"
        )
        log = c.workdir / "logs" / "operator.log"
        op = faults.Operator(lambda: operator_process.start(argv, log, port))
        observed = Observed(c, NAMESPACE)
        bodies = _create(c, params, shared)
        injected, finished = _inject(c, params, op, observed, bodies)
        final, finished_left, deleted_left = _end(c, observed, bodies, params)
        lines, pod_events = observed.lines, observed.pods.since()
        if params.keep is not None:
            _keep(params.keep, c, lines)
    finally:
        if observed is not None:
            observed.stop()
        if op is not None:
            op.stop()
        c.stop()
        shutil.rmtree(shared, ignore_errors=True)
    seconds = time.monotonic() - began
    left = machine.left(before, machine.snapshot(scope))
    worlds = {
        name: (f"{name}-launcher-0", 2) if kind == "mpi" else ("", jobs.ranks(bodies[name]))
        for name, kind in _names(params).items()
    }
    verdicts = (
        checks.one_pod_per_rank(pod_events, lines),
        checks.attempts_agree(lines, worlds),
        checks.no_orphans(finished_left, deleted_left),
        checks.charged_once(final, injected, params.recover_timeout),
        checks.outcomes(final, {n: jobs.limits(b) for n, b in bodies.items()}),
        checks.resumed_from_checkpoint(lines, [n for n, k in _names(params).items() if k != "mpi"]),
        checks.machine_clean(left),
    )
    console.log(f"    {finished} of {len(bodies)} jobs ended while faults were still drawn")
    return Result(figures=report.figures(injected, verdicts, final, seconds), verdicts=verdicts)


def _names(params: Params) -> dict[str, str]:
    return {f"{kind}-{n}": kind for n, kind in enumerate(params.job_kinds)}


def _create(c: devcluster.Cluster, params: Params, shared: str) -> dict[str, dict[str, Any]]:
    bodies = {}
    for name, kind in _names(params).items():
        d = pathlib.Path(shared) / name
        d.mkdir()
        bodies[name] = jobs.body(
            kind,
            name,
            steps=params.job_steps,
            step_seconds=params.step_seconds,
            every=params.checkpoint_every,
            shared=str(d),
        )
        c.kubectl("create", "-n", NAMESPACE, "-f", "-", input=json.dumps(bodies[name]))
    console.log(f"==> {len(bodies)} jobs created: {', '.join(bodies)}; {params.job_steps} steps each")
    return bodies


def _inject(
    c: devcluster.Cluster,
    params: Params,
    op: faults.Operator,
    observed: Observed,
    bodies: dict[str, dict[str, Any]],
) -> tuple[list[faults.Injected], int]:
    rng = random.Random(params.seed)
    injector = faults.Injector(
        c, op, observed, NAMESPACE, rng, hold=params.hold, recover_timeout=params.recover_timeout
    )
    names = list(bodies)
    started = time.monotonic()
    process.wait_until(
        "every job running",
        lambda: _polled(observed, lambda: all(injector.back(n) for n in names)),
        timeout=600,
        interval=1,
    )
    # A checkpoint saved before the first fault.
    observed.wait(params.checkpoint_every * params.step_seconds + 5)
    console.log(
        f"==> every job running after {time.monotonic() - started:.0f} s; faults (seed {params.seed})"
    )
    in_place = [n for n in names if _names(params)[n] == "ddp-inplace"]
    injected: list[faults.Injected] = []
    for kind in faults.draw(rng, params.fault_kinds, params.faults):
        active = [n for n in names if _state(c, n) not in ("Succeeded", "Failed")]
        if not active:
            break
        injected.append(injector.inject(kind, active, [n for n in in_place if n in active]))
        observed.wait(rng.uniform(*params.gap))
    return injected, len(names) - len([n for n in names if _state(c, n) not in ("Succeeded", "Failed")])


def _end(
    c: devcluster.Cluster, observed: Observed, bodies: dict[str, dict[str, Any]], params: Params
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]], list[str]]:
    """Wait for every job to end; the jobs as they ended, what their cleanPodPolicy left that it
    should have removed, and what is left of them once deleted."""
    console.log("==> faults done; waiting for the jobs to end")
    process.wait_until(
        "every job to end",
        lambda: _polled(observed, lambda: all(_state(c, n) in ("Succeeded", "Failed") for n in bodies)),
        timeout=params.job_steps * params.step_seconds * 2 + 600,
        interval=2,
    )
    observed.wait(15)  # the policy's clean-up, and the last lines
    final = {
        n: json.loads(c.kubectl("get", "trainingjob", n, "-n", NAMESPACE, "-o", "json").stdout)
        for n in bodies
    }
    finished_left = {}
    for n, body in bodies.items():
        policy = body["spec"]["runPolicy"].get("cleanPodPolicy", "Running")
        left = []
        for pod in _objects(c, "pods", n):
            phase = pod.get("status", {}).get("phase")
            if policy == "All" or (policy == "Running" and phase in ("Running", "Pending")):
                left.append(f"pod {pod['metadata']['name']} ({phase})")
        finished_left[n] = left
    c.kubectl(
        "delete", "trainingjobs", "--all", "-n", NAMESPACE, "--wait=true", "--timeout=120s", check=False
    )
    deadline = time.monotonic() + 120
    deleted_left: list[str] = []
    while time.monotonic() < deadline:
        deleted_left = [
            f"{kind} {o['metadata']['name']}"
            for kind in ("pods", "services")
            for n in bodies
            for o in _objects(c, kind, n)
        ]
        if not deleted_left:
            break
        observed.wait(2)
    return final, finished_left, deleted_left


def _polled(observed: Observed, ready: Callable[[], bool]) -> bool:
    observed.poll()
    return ready()


def _objects(c: devcluster.Cluster, kind: str, job: str) -> list[dict[str, Any]]:
    return faults.objects(c, kind, NAMESPACE, job)


def _state(c: devcluster.Cluster, name: str) -> str:
    return faults.state(c, NAMESPACE, name)


def _keep(keep: pathlib.Path, c: devcluster.Cluster, lines: list[Any]) -> None:
    keep.mkdir(parents=True, exist_ok=True)
    with (keep / "lines.txt").open("w") as f:
        for at, pod, uid, container, text in lines:
            f.write(f"{at.isoformat()} {pod} {uid[:8]} {container} {text}\n")
    for log in (c.workdir / "logs").glob("*.log"):
        shutil.copy(log, keep / log.name)
