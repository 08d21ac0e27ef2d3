"""A local cluster in one of two tiers, with fake nodes, real nodes, or both.

``start(Tier.APISERVER)`` runs etcd and kube-apiserver, as envtest does. ``start(Tier.CLUSTER)``
adds kube-controller-manager, kube-scheduler and nodes: ``nodes`` kwok fake nodes (fast, for
scale and the quick tiers) and ``real_nodes`` real ones — a kubelet and containerd each,
running real containers from images built here (:mod:`.realnode`), in a node network of
their own (:mod:`.network`) with CoreDNS and kube-proxy. Real nodes make the control plane
listen on the host's end of that network instead of 127.0.0.1, and make node heartbeats
matter: a node whose kubelet stops goes NotReady after :data:`REAL_NODE_GRACE` and its pods
are evicted 5 s later, as on a cluster whose node was lost.

``Cluster.stop()`` — or leaving the ``with`` block — stops every process, the node network
with everything in it, and removes the working directory.
"""

from __future__ import annotations

import enum
import pathlib

import attrs

from kubetrain.devcluster import binaries as binaries_
from kubetrain.devcluster import controlplane, images, kwok, network, realnode, services
from kubetrain.devcluster import workdir as workdir_
from kubetrain.devcluster.controlplane import KubectlError

__all__ = ["Cluster", "KubectlError", "Tier", "start"]

REAL_NODE_GRACE = "12s"


class Tier(enum.StrEnum):
    APISERVER = "apiserver"
    CLUSTER = "cluster"


@attrs.define
class Cluster(controlplane.ControlPlane):
    tier: Tier = Tier.CLUSTER
    nodes: int = 0
    network: network.NodeNetwork | None = None
    real_nodes: list[realnode.RealNode] = attrs.field(factory=list)

    def stop(self) -> None:
        try:
            self.stop_processes()
        finally:
            if self.network is not None:
                # Everything in the node network — pods' containers too — ends with it.
                self.network.stop()
                realnode.remove_cgroups(self.network.slot)
            self.remove_workdir()


def start(
    tier: Tier = Tier.CLUSTER,
    *,
    nodes: int = 2,
    real_nodes: int = 0,
    workdir: pathlib.Path | None = None,
    bins: binaries_.Binaries | None = None,
    timeout: float = 90,
    apiserver_args: tuple[str, ...] = (),
    scheduler_args: tuple[str, ...] = (),
    root: pathlib.Path | None = None,
    seed_images: bool = False,
) -> Cluster:
    """Start a cluster; on any failure, stop what was started and raise.

    ``root`` is the repository, for the images real nodes run (default: the working directory);
    with ``seed_images`` they also hold the stand-ins for the first operators' README images.
    """
    owns = workdir is None
    wd = workdir_.create() if workdir is None else workdir
    wd.mkdir(parents=True, exist_ok=True)
    names = binaries_.NAMES + (binaries_.NODE_NAMES if real_nodes else ())
    cluster = Cluster(
        tier=tier,
        workdir=wd,
        bins=bins or binaries_.find(names),
        nodes=nodes,
        owns_workdir=owns,
        apiserver_args=apiserver_args,
        scheduler_args=scheduler_args,
    )
    try:
        _start(cluster, real_nodes, root or pathlib.Path.cwd(), timeout, seed_images)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start(c: Cluster, real_nodes: int, root: pathlib.Path, timeout: float, seed_images: bool) -> None:
    if real_nodes:
        # Built first: the apiserver binds the node network's host address.
        wanted = images.for_nodes(root, pathlib.Path(c.bins["pause"]), seeds=seed_images)
        archives = images.build_all(wanted)
        c.network = network.create(c.workdir, pathlib.Path(c.bins["pause"]), controlplane.SERVICE_CIDR)
        c.host = c.network.host_ip
        c.apiserver_args = (*REAL_NODE_APISERVER_ARGS, *c.apiserver_args)
    certs = controlplane.write_pki(c.workdir, c.host)
    etcd_url = controlplane.start_etcd(c, timeout)
    controlplane.start_apiserver(c, etcd_url, certs, timeout)
    if c.tier is Tier.CLUSTER:
        if real_nodes:
            controlplane.start_controller_manager(
                c,
                certs,
                timeout,
                controllers=controlplane.CONTROLLERS + controlplane.REAL_NODE_CONTROLLERS,
                node_grace=REAL_NODE_GRACE,
            )
        else:
            controlplane.start_controller_manager(c, certs, timeout)
        controlplane.start_scheduler(c, timeout)
        if c.nodes:
            # With real nodes, heartbeats count: kwok then renews its nodes' Leases too.
            kwok.start(c, timeout, nodes=c.nodes, lease_seconds=40 if real_nodes else 0)
        if real_nodes:
            assert c.network is not None
            services.start(c, c.network, timeout)
            c.real_nodes = realnode.start(c, c.network, real_nodes, archives, timeout=max(timeout, 180))
    c.supervise()


# Pods tolerate a NotReady or unreachable node for 5 s instead of 300 s (DefaultTolerationSeconds),
# kubelets are authorized as nodes, and the apiserver calls webhook Services at their endpoints'
# pod IPs (routed into the node network) rather than at ClusterIPs only kube-proxy there knows.
REAL_NODE_APISERVER_ARGS = (
    "--enable-aggregator-routing=true",
    "--default-not-ready-toleration-seconds=5",
    "--default-unreachable-toleration-seconds=5",
    "--authorization-mode=Node",
)
