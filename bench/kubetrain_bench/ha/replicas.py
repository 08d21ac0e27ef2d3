"""The cluster of the failover benchmark: ``config/default`` with two manager replicas as local processes.

Built as :mod:`kubetrain_bench.deployment` builds one manager (the overlay applied, the
Deployment's ServiceAccount, webhooks on 127.0.0.1), with what two replicas need besides:

- one serving certificate for both, made here and its CA injected once (each replica's
  ``--webhook-self-signed`` would make a CA of its own and inject it over the other's);
- the webhook Service's stand-in (:mod:`.balancer`) in front of both, which the CRD's
  conversion webhook and the validating webhooks are pointed at;
- kube-scheduler at the jobs benchmark's ``--kube-api-qps`` (1000), so that thousands of pods
  are bound at the rate kwok can run them.

Replica ``a`` starts first and is waited for until it holds the Lease; ``b`` starts then, a
follower with warm caches that serves the webhooks too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import pathlib
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import deploy, dev, process
from kubetrain.operator import webhook_endpoints
from kubetrain.operator.runtime import client
from kubetrain.operator.webhooks import certificates
from kubetrain_bench import BENCH, ROOT, operator_process
from kubetrain_bench.console import log
from kubetrain_bench.deployment import ALPHA
from kubetrain_bench.jobs import cluster as jobs_cluster

LEASE = "kubetrain-operator-leader"  # --leader-election-id's default


@dataclasses.dataclass
class Replica:
    name: str
    process: process.Process
    webhook_port: int
    probe_port: int

    def kill(self) -> float:
        """SIGKILL, as a node lost or an OOM kill would; when it was sent."""
        assert self.process.pid is not None
        os.kill(self.process.pid, signal.SIGKILL)
        return time.perf_counter()


@dataclasses.dataclass
class Setup:
    cluster: devcluster.Cluster
    replicas: list[Replica]
    balancer: process.Process
    balancer_port: int

    @property
    def kubeconfig(self) -> pathlib.Path:
        return self.cluster.kubeconfig


def lease_holder(c: devcluster.Cluster) -> str:
    out = c.kubectl(
        "get", "lease", LEASE, "-n", deploy.NAMESPACE, "-o", "jsonpath={.spec.holderIdentity}", check=False
    )
    return out.stdout.strip() if out.returncode == 0 else ""


async def _inject(kubeconfig: pathlib.Path, ca: bytes) -> None:
    async with await client.Client.connect(str(kubeconfig)) as api:
        await certificates.inject(
            api, ca, webhook_endpoints.CONFIGURATION_NAME, webhook_endpoints.MUTATING_CONFIGURATION_NAME
        )


@contextlib.contextmanager
def setup(args: argparse.Namespace, lease_flags: list[str]) -> Iterator[Setup]:
    """The cluster, the balancer and both replicas, with ``lease_flags``; all stopped on the way out."""
    work = pathlib.Path(tempfile.mkdtemp(prefix="kubetrain-ha-"))
    figures: dict[str, float] = {}
    c = jobs_cluster.start(args, work, None, figures)
    started: list[process.Process] = []
    try:
        c.kubectl("create", "namespace", deploy.NAMESPACE)
        deploy.apply(c, deploy.overlay(c, ROOT / "config"))
        certs = work / "certs"
        ca = certificates.write(certs, ["127.0.0.1"])
        port = process.free_port()
        deploy.point_webhooks_at(c, f"https://127.0.0.1:{port}")
        asyncio.run(_inject(c.kubeconfig, ca))
        kubeconfig = deploy.service_account_kubeconfig(c, work / "manager.kubeconfig")
        ports = {name: (process.free_port(), process.free_port()) for name in ("a", "b")}
        balancer = process.Process(
            "webhook-balancer",
            [
                sys.executable,
                "-P",
                "-m",
                "kubetrain_bench.ha.balancer",
                str(port),
                *(f"{w}:{r}" for w, r in ports.values()),
                f"--period={args.endpoint_period:g}",
            ],
            c.workdir / "logs" / "webhook-balancer.log",
            env={**os.environ, "PYTHONPATH": str(BENCH)},
        )
        balancer.start()
        started.append(balancer)
        replicas = []
        for name, (webhook, probes) in ports.items():
            argv = dev.operator_argv(
                c,
                f"--kubeconfig={kubeconfig}",
                f"--health-probe-bind-address=127.0.0.1:{probes}",
                "--metrics-bind-address=0",
                f"--webhook-port={webhook}",
                f"--cert-dir={certs}",
                "--leader-elect",
                f"--leader-election-namespace={deploy.NAMESPACE}",
                "--gang-scheduler=none",
                *lease_flags,
            )
            log(f"  starting replica {name}")
            op = operator_process.start(
                argv, c.workdir / "logs" / f"operator-{name}.log", probes, timeout=120
            )
            started.append(op)
            replicas.append(Replica(name, op, webhook, probes))
            if name == "a":
                process.wait_until(
                    "replica a to lead", lambda: bool(lease_holder(c)), timeout=60, interval=0.2
                )
        process.wait_until(
            "TrainingJobs to be served through the conversion webhook",
            lambda: c.kubectl("get", ALPHA, "-A", check=False).returncode == 0,
            timeout=60,
            interval=0.2,
        )
        deploy.wait_defaults_given(c)
        yield Setup(c, replicas, balancer, port)
    finally:
        for p in reversed(started):
            p.stop()
        c.stop()
        shutil.rmtree(work, ignore_errors=True)
