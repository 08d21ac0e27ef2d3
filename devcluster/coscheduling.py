"""scheduler-plugins' Coscheduling, run as a second scheduler beside kube-scheduler.

kubetrain's ``--gang-scheduler=coscheduling`` backend creates a ``scheduling.x-k8s.io/v1alpha1``
PodGroup per gang and hands its pods to a scheduler named ``scheduler-plugins-scheduler``
(``spec.schedulerName``). That scheduler is scheduler-plugins' build of kube-scheduler with
the Coscheduling plugin; ``hack/build-schedulers.sh`` builds it (a release built against older
Kubernetes libraries than the control plane: it needs only the core API, which is stable),
scheduler-plugins' controller, and keeps their CRDs beside them.

:func:`start` installs those CRDs, starts the controller, writes a KubeSchedulerConfiguration
with one profile — scheduler-plugins' own sample: Coscheduling at every extension point it
implements, and as the only queue sort, so a gang's pods are queued together — and starts the
scheduler. Both are components of the control plane: on 127.0.0.1 only, logged to the
cluster's working directory, restarted by the supervisor if they exit, and stopped with the
cluster, or before with :func:`stop`.

The plugin holds a gang's pods at Permit until ``minMember`` of them are reserved; when one
cannot be placed, it rejects the siblings waiting there, so two gangs that fit only one at a
time never deadlock half-placed. The controller is what wakes a rejected gang up again:
the plugin retries pods it rejected only when a pod is added or a PodGroup changes, and the
controller keeps every PodGroup's status (phase, running, succeeded) up to date with its pods
— so when the placed gang's pods end, its PodGroup changes and the waiting gang is tried
again. Without the controller that retry would wait for the scheduler's periodic flush of
unschedulable pods (every 5 minutes): in 3 of 7 runs of tests/e2e/test_gang_coscheduling.py
without it, the waiting gang was still not placed a minute after the first one finished. It is
part of scheduler-plugins' own installation, and needs the ElasticQuota CRD too (it runs that
resource's controller as well).

The default scheduler leaves these pods alone (they name another scheduler), and both see
every bound pod, so they agree on what a node has left.
"""

from __future__ import annotations

import json
import pathlib
import ssl
import urllib.request
from typing import Any

import yaml

from kubetrain.devcluster import binaries as binaries_
from kubetrain.devcluster import controlplane, process

__all__ = [
    "CONTROLLER",
    "CRDS",
    "PERMIT_WAITING_SECONDS",
    "SCHEDULER",
    "SCHEDULER_NAME",
    "config",
    "install_crds",
    "podgroup",
    "start",
    "stop",
]

SCHEDULER = "coscheduling-scheduler"
CONTROLLER = "scheduler-plugins-controller"
# Each CRD and the manifest hack/build-schedulers.sh keeps it in (../manifests from the binaries).
CRDS = {
    "podgroups.scheduling.x-k8s.io": "coscheduling-crd.yaml",
    "elasticquotas.scheduling.x-k8s.io": "elasticquota-crd.yaml",
}
PODGROUPS = "podgroups.scheduling.x-k8s.io"
# The name scheduler-plugins' manifests give it (and kubetrain's default --coscheduling-scheduler-name).
SCHEDULER_NAME = "scheduler-plugins-scheduler"
# How long the plugin holds a gang's reserved pods at Permit before giving up on that try (its sample's value).
PERMIT_WAITING_SECONDS = 10


def config(kubeconfig: pathlib.Path, scheduler_name: str) -> dict[str, object]:
    """scheduler-plugins' manifests/coscheduling/scheduler-config.yaml, under ``scheduler_name``."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "profiles": [
            {
                "schedulerName": scheduler_name,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                },
                "pluginConfig": [
                    {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": PERMIT_WAITING_SECONDS}}
                ],
            }
        ],
    }


def install_crds(c: controlplane.ControlPlane, binary: pathlib.Path, timeout: float) -> None:
    """Apply scheduler-plugins' CRDs and wait until each is Established and served."""
    for crd, file in CRDS.items():
        c.kubectl("apply", "--server-side", "-f", str(binaries_.manifest(file, beside=binary.name)))
        c.wait_established(timeout, crd)
        plural, group = crd.split(".", 1)
        path = f"/apis/{group}/v1alpha1/{plural}?limit=1"
        process.wait_until(
            f"{crd} to be served",
            lambda path=path: c.kubectl("get", "--raw", path, check=False).returncode == 0,
            timeout=timeout,
            interval=0.2,
        )


def _healthy(url: str, context: ssl.SSLContext | None = None) -> bool:
    with urllib.request.urlopen(url, timeout=2, context=context) as r:
        return bool(r.status == 200)


def start(
    c: controlplane.ControlPlane, timeout: float = 60, *, scheduler_name: str = SCHEDULER_NAME
) -> process.Process:
    """Install the CRDs, start the controller and the Coscheduling scheduler as ``scheduler_name``.

    Both are healthy on return; the scheduler is returned. On failure, what was started is stopped.
    """
    # Missing binaries raise naming them and hack/build-schedulers.sh: a test fails, never skips.
    bins = binaries_.find((SCHEDULER, CONTROLLER))
    scheduler_bin = pathlib.Path(bins[SCHEDULER])
    try:
        install_crds(c, scheduler_bin, timeout)
        if not any(p.name == CONTROLLER for p in c.processes):
            probes = process.free_port()
            controller = controlplane.component(
                c,
                CONTROLLER,
                [
                    bins[CONTROLLER],
                    f"--kubeconfig={c.kubeconfig}",
                    "--metricsAddr=0",
                    f"--probeAddr=127.0.0.1:{probes}",
                    "--qps=20",
                    "--burst=40",
                ],
            )
            process.wait_until(
                f"{CONTROLLER} to be healthy",
                lambda: _healthy(f"http://127.0.0.1:{probes}/healthz"),
                timeout=timeout,
                watch=[controller],
            )
        config_file = c.workdir / f"{SCHEDULER}-{scheduler_name}.yaml"
        config_file.write_text(yaml.safe_dump(config(c.kubeconfig, scheduler_name)))
        port = process.free_port()
        scheduler = controlplane.component(
            c,
            f"{SCHEDULER}-{scheduler_name}",
            [
                str(scheduler_bin),
                f"--config={config_file}",
                f"--authentication-kubeconfig={c.kubeconfig}",
                f"--authorization-kubeconfig={c.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                "--v=2",
            ],
        )
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        process.wait_until(
            f"{scheduler_name} to be healthy",
            lambda: _healthy(f"https://127.0.0.1:{port}/healthz", insecure),
            timeout=timeout,
            watch=[scheduler],
        )
    except BaseException:
        stop(c, remove_crds=False)
        raise
    return scheduler


def stop(c: controlplane.ControlPlane, *, remove_crds: bool = True) -> None:
    """Stop what :func:`start` started (never restarted again); delete the CRDs and their objects."""
    for p in [p for p in c.processes if p.name == CONTROLLER or p.name.startswith(f"{SCHEDULER}-")]:
        p.stop()
        c.processes.remove(p)
    if remove_crds:
        c.kubectl("delete", "crd", *CRDS, "--ignore-not-found", "--wait=false", check=False)


def podgroup(c: controlplane.ControlPlane, namespace: str, name: str) -> dict[str, Any] | None:
    """The PodGroup ``name`` in ``namespace``, or None."""
    r = c.kubectl("get", PODGROUPS, name, "-n", namespace, "-o", "json", check=False)
    return dict(json.loads(r.stdout)) if r.returncode == 0 else None
