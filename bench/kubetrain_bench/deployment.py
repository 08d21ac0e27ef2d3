"""``config/default`` deployed on a cluster of its own, the manager serving kubetrain's webhooks.

What the hostile-input and admission benchmarks (and the e2e hostile-input test) send their
TrainingJobs through: the cluster tier with kwok nodes, the overlay applied, and the manager
as a local process with the Deployment's ServiceAccount (``--webhook-self-signed``), exactly
as tests/e2e/test_deploy.py builds it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pathlib
import shutil
import tempfile
from collections.abc import Iterable, Iterator

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import deploy, dev, process
from kubetrain_bench import ROOT, operator_process

ALPHA = "trainingjobs.v1alpha1.training.kubetrain.dev"


@dataclasses.dataclass
class Deployment:
    cluster: devcluster.Cluster
    manager: process.Process

    @property
    def kubeconfig(self) -> pathlib.Path:
        return self.cluster.kubeconfig

    def namespace(self, name: str) -> str:
        """A namespace where pods can be made (its default ServiceAccount exists)."""
        self.cluster.kubectl("create", "namespace", name)
        self.cluster.kubectl("wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", name)
        return name


@contextlib.contextmanager
def deployment(nodes: int = 2, manager_flags: Iterable[str] = ()) -> Iterator[Deployment]:
    """A cluster with kwok nodes and ``config/default``, as tests/e2e/test_deploy.py deploys it.

    The overlay's optional parts (cert-manager, Prometheus Operator) are left out; the manager
    runs locally with the Deployment's ServiceAccount and serves the webhooks on 127.0.0.1.
    """
    work = pathlib.Path(tempfile.mkdtemp(prefix="kubetrain-hostile-"))
    c = devcluster.start(devcluster.Tier.CLUSTER, nodes=nodes)
    try:
        c.kubectl("create", "namespace", deploy.NAMESPACE)
        deploy.apply(c, deploy.overlay(c, ROOT / "config"))
        port = process.free_port()
        deploy.point_webhooks_at(c, f"https://127.0.0.1:{port}")
        kubeconfig = deploy.service_account_kubeconfig(c, work / "manager.kubeconfig")
        probes = process.free_port()
        argv = dev.operator_argv(
            c,
            f"--health-probe-bind-address=127.0.0.1:{probes}",
            "--metrics-bind-address=0",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            *deploy.manager_flags(kubeconfig, work / "certs", port),
            *manager_flags,
        )
        manager = operator_process.start(argv, c.workdir / "logs" / "operator-manager.log", probes)
        try:
            process.wait_until(
                "TrainingJobs to be served through the conversion webhook",
                lambda: c.kubectl("get", ALPHA, "-A", check=False).returncode == 0,
                timeout=60,
                interval=0.2,
            )
            deploy.wait_defaults_given(c)
            yield Deployment(c, manager)
        finally:
            manager.stop()
    finally:
        c.stop()
        shutil.rmtree(work, ignore_errors=True)
