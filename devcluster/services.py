"""Cluster DNS and Service addresses for real nodes: CoreDNS and kube-proxy.

Both run inside the node network (:mod:`.network`), as host processes of the nodes rather
than pods, so they are up before any pod and need no image:

- CoreDNS answers ``cluster.local`` from the apiserver (its ``kubernetes`` plugin) on
  ``network.dns_ip``, the address every kubelet writes into its pods' resolv.conf. It has no
  upstream: nothing leaves this machine. The per-replica headless Services kubetrain creates
  resolve to the pods' own IPs (``publishNotReadyAddresses``, so ranks find each other
  before they are Ready).
- kube-proxy (iptables mode) turns ClusterIPs into the namespace's iptables rules — what
  the operator's pod needs to reach the ``kubernetes`` Service. One serves every node, since
  the nodes share one network namespace. It leaves the conntrack sysctls alone (they are not
  the namespace's to change).
"""

from __future__ import annotations

import socket
import struct

import yaml

from kubetrain.devcluster import controlplane, network, process

__all__ = ["start"]

DNS_READY_PORT = 8181


def start(c: controlplane.ControlPlane, net: network.NodeNetwork, timeout: float) -> None:
    _start_coredns(c, net, timeout)
    _start_kube_proxy(c, net)


def _start_coredns(c: controlplane.ControlPlane, net: network.NodeNetwork, timeout: float) -> None:
    corefile = c.workdir / "Corefile"
    corefile.write_text(
        f"""\
.:53 {{
    bind {net.dns_ip}
    errors
    ready {net.dns_ip}:{DNS_READY_PORT}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {c.kubeconfig} kubetrain
        pods insecure
        ttl 5
    }}
}}
"""
    )
    coredns = process.Process(
        "coredns",
        net.enter([c.bins["coredns"], "-conf", str(corefile)]),
        c.workdir / "logs" / "coredns.log",
    )
    coredns.start()
    c.processes.append(coredns)
    process.wait_until(
        "CoreDNS to answer for the kubernetes Service",
        lambda: resolve(net, "kubernetes.default.svc.cluster.local") == "10.0.0.1",
        timeout=timeout,
        watch=[coredns],
        interval=0.3,
    )


def _start_kube_proxy(c: controlplane.ControlPlane, net: network.NodeNetwork) -> None:
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(c.kubeconfig)},
        "mode": "iptables",
        "clusterCIDR": net.pod_cidr,
        "hostnameOverride": "real-node-0",
        "bindAddress": net.gateway_ip,
        "healthzBindAddress": f"{net.gateway_ip}:10256",
        "metricsBindAddress": f"{net.gateway_ip}:10249",
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
        "iptables": {"localhostNodePorts": False},
    }
    path = c.workdir / "kube-proxy.yaml"
    path.write_text(yaml.safe_dump(config))
    proxy = process.Process(
        "kube-proxy",
        net.enter([c.bins["kube-proxy"], f"--config={path}", "--v=1"]),
        c.workdir / "logs" / "kube-proxy.log",
    )
    proxy.start()
    c.processes.append(proxy)


def resolve(net: network.NodeNetwork, name: str) -> str | None:
    """The first A record CoreDNS gives for ``name`` (one UDP query to its address), or None."""
    query = struct.pack(">HHHHHH", 0x6B74, 0x0100, 1, 0, 0, 0)
    query += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    query += struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(1)
        # The host reaches the node network's addresses through its veth.
        s.sendto(query, (net.dns_ip, 53))
        answer, _ = s.recvfrom(512)
    if struct.unpack(">H", answer[6:8])[0] == 0:
        return None
    return ".".join(str(b) for b in answer[-4:])
