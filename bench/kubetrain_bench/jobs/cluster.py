"""The control plane the jobs benchmark runs on: its own users (for the audit log), the namespaces of
each phase, and cleaning them away between phases."""

from __future__ import annotations

import argparse
import asyncio
import base64
import pathlib
import time
from typing import Any

import yaml

from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator import pki
from kubetrain.operator.runtime import client
from kubetrain_bench import ROOT
from kubetrain_bench.console import log
from kubetrain_bench.jobs.common import NAMESPACES
from kubetrain_bench.jobs.requests import request_totals

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
"""


def start(
    args: argparse.Namespace, workdir: pathlib.Path, audit_log: pathlib.Path | None, figures: dict[str, Any]
) -> devcluster.Cluster:
    """The control plane with ``--nodes`` kwok nodes and kube-scheduler at ``--scheduler-qps``, and
    with ``audit_log``, the apiserver's audit log there; how long it took to start is in ``figures``."""
    apiserver_args: tuple[str, ...] = ()
    if audit_log is not None:
        (workdir / "audit-policy.yaml").write_text(AUDIT_POLICY)
        apiserver_args = (
            f"--audit-policy-file={workdir / 'audit-policy.yaml'}",
            f"--audit-log-path={audit_log}",
            "--audit-log-maxsize=100000",
            "--audit-log-format=json",
        )
    log(f"starting the control plane with {args.nodes} kwok nodes")
    t = time.perf_counter()
    qps = args.scheduler_qps
    c = devcluster.start(
        devcluster.Tier.CLUSTER,
        nodes=args.nodes,
        timeout=180,
        apiserver_args=apiserver_args,
        scheduler_args=(f"--kube-api-qps={qps:g}", f"--kube-api-burst={int(2 * qps)}"),
    )
    figures["cluster_start_seconds"] = time.perf_counter() - t
    return c


def install_crd(c: devcluster.Cluster, figures: dict[str, Any]) -> None:
    """The TrainingJob CRD, from config/; how long it took is in ``figures``."""
    t = time.perf_counter()
    c.install_crds(ROOT / "config")
    figures["crd_seconds"] = time.perf_counter() - t
    log(f"  up in {figures['cluster_start_seconds']:.1f}s, CRD installed in {figures['crd_seconds']:.1f}s")


def user_kubeconfig(c: devcluster.Cluster, user: str, path: pathlib.Path) -> pathlib.Path:
    """A kubeconfig like the admin's, but with a client certificate of its own (for the audit log)."""
    pki_dir = c.workdir / "pki"
    ca = pki.KeyPair((pki_dir / "ca.crt").read_bytes(), (pki_dir / "ca.key").read_bytes())
    pair = pki.issue(ca, user, organizations=("system:masters",), client=True)
    config = yaml.safe_load(c.kubeconfig.read_text())
    config["users"][0]["user"] = {
        "client-certificate-data": base64.b64encode(pair.cert_pem).decode(),
        "client-key-data": base64.b64encode(pair.key_pem).decode(),
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def spread(base: str, count: int) -> list[str]:
    """The namespaces the jobs of one run are spread over: ``base``, ``base-1``, ..."""
    return [base, *(f"{base}-{i}" for i in range(1, count))]


async def delete_namespace(kubeconfig: pathlib.Path, namespace: str, timeout: float) -> None:
    """Delete a namespace and wait until its pods are gone, so the next phase has the nodes to itself."""
    async with await client.Client.connect(str(kubeconfig), timeout=60) as api:
        await _delete_namespace(api, namespace, timeout)


async def _delete_namespace(api: client.Client, namespace: str, timeout: float) -> None:
    # The pods at once, in one request: the namespace controller would delete them one by one at
    # kube-controller-manager's 20 requests a second (400 s for 8,000 pods).
    try:
        await api.request("DELETE", client.PODS, namespace=namespace, body={"gracePeriodSeconds": 0})
    except client.ApiError as e:
        if e.status != 504:  # tens of thousands outlast the request's deadline: it goes on regardless
            raise
    await api.delete(NAMESPACES, namespace)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            await api.get(NAMESPACES, namespace)
        except client.ApiError as e:
            if e.not_found:
                return
            raise
        await asyncio.sleep(1)
    pods = await api.list(client.PODS, namespace)
    log(f"  warning: namespace {namespace} still has {len(pods['items'])} pods after {timeout:.0f}s")


def wait_quiet(c: devcluster.Cluster, timeout: float, interval: float = 2.0) -> None:
    """Wait until no request on an API resource reaches the apiserver for ``interval`` seconds.

    Leases and endpoints are left out: the apiserver renews its own every few seconds.
    """

    def busy() -> float:
        return sum(
            n
            for (_verb, _group, resource, _sub, _code), n in request_totals(c).items()
            if resource not in ("", "leases", "endpoints")
        )

    deadline = time.monotonic() + timeout
    last = busy()
    while time.monotonic() < deadline:
        time.sleep(interval)
        now = busy()
        if now == last:
            return
        last = now
    log(f"  warning: the apiserver was still busy {timeout:.0f}s after the namespace was deleted")


def clean(c: devcluster.Cluster, kubeconfig: pathlib.Path, namespaces: list[str], timeout: float) -> None:
    log(f"  deleting {', '.join(namespaces)}")

    async def delete_all() -> None:
        await asyncio.gather(*(delete_namespace(kubeconfig, n, timeout) for n in namespaces))

    asyncio.run(delete_all())
    wait_quiet(c, timeout=60)
