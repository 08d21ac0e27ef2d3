"""Real nodes: a kubelet and its own containerd, per node, in the cluster's node network.

Each node ``i`` is a kubelet registered as ``real-node-<i>`` with the InternalIP
``network.node_ip(i)``, talking CRI to a containerd of its own (one containerd shared by two
kubelets would let each kill the other's pods as orphans). Both run inside the namespaces of
:mod:`.network`, so their mounts, pod sandboxes and containers end with the cluster. runc
and the CNI plugins come from Debian; containerd, the kubelet and the pause program are built
by ``hack/build-node.sh``. Each node's containerd starts from a root that already holds the
images :mod:`.images` builds (:mod:`.noderoot`: imported once, then linked), so nothing is
pulled from a registry.

What this machine needs from them (found by trying): the kubelet runs on cgroup v1 only with
``failCgroupV1: false`` and the ``cgroupfs`` driver; containerd must not try to lower
``oom_score_adj`` below its own (``restrict_oom_score_adj``), because processes here lack
``CAP_SYS_RESOURCE`` and runc fails every sandbox otherwise. Each node's pods get a cgroup
root of their own, ``/kubetrain/<slot>/<node>``, so two kubelets never manage the same
cgroups; :func:`remove_cgroups` removes it when the cluster stops (and sweeps what a killed
run left behind).

Faults, for the tests and benchmarks that inject them: :func:`stop_kubelet` (the kubelet dies,
its containers run on), :func:`restart_containerd` (SIGKILLed and started again under running
pods), :func:`lose` (the whole node dies: kubelet, containerd, shims and containers) and
:func:`bring_back` (it boots again). A node's network is cut by :mod:`.network`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import pathlib
import signal
import socket
import time
from collections.abc import Sequence

import attrs
import yaml

from kubetrain.devcluster import controlplane, images, network, noderoot, process
from kubetrain.operator import pki

__all__ = [
    "RealNode",
    "bring_back",
    "cgroup_root",
    "kubelet_pid",
    "lose",
    "remove_cgroups",
    "restart_containerd",
    "restart_kubelet",
    "start",
    "stop_kubelet",
]

CGROUP_V1 = pathlib.Path("/sys/fs/cgroup")
LABEL = "kubetrain.dev/node"
# A kubelet renews its Lease every quarter of this: NotReady within the grace period after it stops.
LEASE_SECONDS = 8


@attrs.define
class RealNode:
    name: str
    index: int
    ip: str
    dir: pathlib.Path
    containerd: process.Process
    kubelet: process.Process

    @property
    def socket(self) -> pathlib.Path:
        return _socket(self.dir)


def node_name(index: int) -> str:
    return f"real-node-{index}"


def cgroup_root(slot: int, name: str = "") -> str:
    return f"/kubetrain/{slot}/{name}".rstrip("/")


def start(
    cp: controlplane.ControlPlane,
    net: network.NodeNetwork,
    count: int,
    archives: Sequence[pathlib.Path],
    *,
    timeout: float,
) -> list[RealNode]:
    """Start ``count`` nodes holding the images of ``archives``, and wait until every one is Ready."""
    remove_cgroups(stale_only=True)

    def load(d: pathlib.Path) -> None:
        seeder = _start_containerd(cp, net, d, "seed", timeout)
        try:
            for archive in archives:
                images.load(cp.bins["ctr"], str(_socket(d)), archive)
        finally:
            seeder.stop()
            cp.processes.remove(seeder)

    seed = noderoot.seeded(pathlib.Path(cp.bins["containerd"]), archives, load)
    nodes = []
    for i in range(count):
        net.add_node_ip(i)
        node = _start_node(cp, net, i, seed, timeout)
        nodes.append(node)
        _start_kubelet(cp, net, node)
    process.wait_until(
        f"{count} real node(s) to be Ready",
        lambda: all(_ready(cp, n.name) for n in nodes),
        timeout=timeout,
        watch=[p for n in nodes for p in (n.containerd, n.kubelet)],
        interval=0.5,
    )
    return nodes


def _ready(cp: controlplane.ControlPlane, name: str) -> bool:
    result = cp.kubectl("get", "node", name, "-o", "json", check=False)
    if result.returncode != 0:
        return False
    conditions = json.loads(result.stdout).get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _start_node(
    cp: controlplane.ControlPlane, net: network.NodeNetwork, index: int, seed: pathlib.Path, timeout: float
) -> RealNode:
    name = node_name(index)
    d = cp.workdir / "nodes" / name
    for sub in ("cni/net.d", "cni/ipam", "kubelet", "pki", "pod-logs"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / "cni" / "net.d" / "10-kubetrain.conflist").write_text(
        network.cni_config(net, index, d / "cni" / "ipam")
    )
    noderoot.clone(seed, d / noderoot.ROOT)
    return RealNode(
        name=name,
        index=index,
        ip=net.node_ip(index),
        dir=d,
        containerd=_start_containerd(cp, net, d, str(index), timeout),
        kubelet=process.Process(f"kubelet-{index}", [], cp.workdir / "logs" / f"kubelet-{index}.log"),
    )


def _start_containerd(
    cp: controlplane.ControlPlane, net: network.NodeNetwork, d: pathlib.Path, suffix: str, timeout: float
) -> process.Process:
    """A containerd whose socket, root and state are under ``d / "containerd"``, ready."""
    (d / "containerd").mkdir(parents=True, exist_ok=True)
    config = d / "containerd.toml"
    config.write_text(_containerd_config(cp, d))
    containerd = process.Process(
        f"containerd-{suffix}",
        net.enter([cp.bins["containerd"], f"--config={config}", "--log-level=warn"]),
        cp.workdir / "logs" / f"containerd-{suffix}.log",
        env={**os.environ, "PATH": f"{pathlib.Path(cp.bins['containerd']).parent}:{os.environ['PATH']}"},
    )
    containerd.start()
    cp.processes.append(containerd)
    process.wait_until(f"containerd-{suffix}", _socket(d).exists, timeout=timeout, watch=[containerd])
    return containerd


def _socket(d: pathlib.Path) -> pathlib.Path:
    """The socket of the containerd whose directory is ``d``."""
    return d / "containerd" / "containerd.sock"


def _containerd_config(cp: controlplane.ControlPlane, d: pathlib.Path) -> str:
    c = d / "containerd"
    return f"""\
version = 3
root = '{c / "root"}'
state = '{c / "state"}'
disabled_plugins = ['io.containerd.nri.v1.nri']

[grpc]
  address = '{_socket(d)}'

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '{images.PAUSE_REF}'

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = 'io.containerd.runc.v2'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = '{cp.bins["runc"]}'
      Root = '{c / "runc"}'
      SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['{pathlib.Path(cp.bins["host-local"]).parent}']
    conf_dir = '{d / "cni" / "net.d"}'
"""


def _start_kubelet(cp: controlplane.ControlPlane, net: network.NodeNetwork, node: RealNode) -> None:
    d = node.dir
    kubeconfig = _kubelet_kubeconfig(cp, node)
    root = cgroup_root(net.slot, node.name)
    _make_cgroup(root)
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": root,
        "containerRuntimeEndpoint": f"unix://{node.socket}",
        "address": node.ip,
        "healthzBindAddress": node.ip,
        "readOnlyPort": 0,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(cp.workdir / "pki" / "ca.crt")},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "clusterDNS": [net.dns_ip],
        "clusterDomain": "cluster.local",
        "resolvConf": str(_empty_resolv_conf(d)),
        "podLogsDir": str(d / "pod-logs"),
        "failSwapOn": False,
        "nodeLeaseDurationSeconds": LEASE_SECONDS,
        "nodeStatusUpdateFrequency": "2s",
        "syncFrequency": "10s",
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "serializeImagePulls": False,
        "registerNode": True,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
    }
    config_path = d / "kubelet.yaml"
    config_path.write_text(yaml.safe_dump(config))
    node.kubelet = process.Process(
        f"kubelet-{node.index}",
        net.enter(
            [
                cp.bins["kubelet"],
                f"--config={config_path}",
                f"--kubeconfig={kubeconfig}",
                f"--root-dir={d / 'kubelet'}",
                f"--cert-dir={d / 'pki'}",
                f"--hostname-override={node.name}",
                f"--node-ip={node.ip}",
                f"--node-labels={LABEL}=real",
                "--v=1",
            ]
        ),
        cp.workdir / "logs" / f"kubelet-{node.index}.log",
    )
    node.kubelet.start()
    cp.processes.append(node.kubelet)


def _empty_resolv_conf(d: pathlib.Path) -> pathlib.Path:
    # No upstream: nothing leaves this machine, so pods resolve cluster names only.
    path = d / "resolv.conf"
    path.write_text("")
    return path


def _kubelet_kubeconfig(cp: controlplane.ControlPlane, node: RealNode) -> pathlib.Path:
    ca = pki.KeyPair(
        (cp.workdir / "pki" / "ca.crt").read_bytes(), (cp.workdir / "pki" / "ca.key").read_bytes()
    )
    cert = pki.issue(ca, f"system:node:{node.name}", organizations=("system:nodes",), client=True)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "kubelet",
        "clusters": [
            {
                "name": "local",
                "cluster": {
                    "server": cp.server,
                    "certificate-authority-data": base64.b64encode(ca.cert_pem).decode(),
                },
            }
        ],
        "users": [
            {
                "name": "kubelet",
                "user": {
                    "client-certificate-data": base64.b64encode(cert.cert_pem).decode(),
                    "client-key-data": base64.b64encode(cert.key_pem).decode(),
                },
            }
        ],
        "contexts": [{"name": "kubelet", "context": {"cluster": "local", "user": "kubelet"}}],
    }
    path = node.dir / "kubelet.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def _hierarchies() -> list[pathlib.Path]:
    return sorted(p for p in CGROUP_V1.iterdir() if p.is_dir() and (p / "cgroup.procs").exists())


def _make_cgroup(root: str) -> None:
    """Create ``root`` in every hierarchy; cpuset needs its CPUs and memory nodes copied down."""
    for hierarchy in _hierarchies():
        path = hierarchy
        for part in root.strip("/").split("/"):
            parent, path = path, path / part
            path.mkdir(exist_ok=True)
            for knob in ("cpuset.cpus", "cpuset.mems"):
                if (path / knob).exists() and not (path / knob).read_text().strip():
                    (path / knob).write_text((parent / knob).read_text())


def remove_cgroups(slot: int | None = None, *, stale_only: bool = False) -> None:
    """Remove ``/kubetrain/<slot>`` (every slot with ``None``) once no process is left in it.

    With ``stale_only``, only slots whose node network is gone (a killed run's leftovers).
    """
    in_use = network.slots_in_use() if stale_only else set[int]()
    for hierarchy in _hierarchies():
        base = hierarchy / "kubetrain"
        if not base.is_dir():
            continue
        for slot_dir in base.iterdir():
            if not slot_dir.is_dir() or (slot is not None and slot_dir.name != str(slot)):
                continue
            if stale_only and slot_dir.name.isdigit() and int(slot_dir.name) in in_use:
                continue
            _rmdir_tree(slot_dir)


def _rmdir_tree(path: pathlib.Path, timeout: float = 10) -> None:
    # A cgroup directory goes with rmdir once it holds no process; its children first.
    deadline = time.monotonic() + timeout
    for child in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        _rmdir(child, deadline)
    _rmdir(path, deadline)


def _rmdir(path: pathlib.Path, deadline: float) -> None:
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def stop_kubelet(node: RealNode) -> None:
    """The kubelet dies; its containers keep running, as on a node cut off from the cluster."""
    node.kubelet.stop()


def restart_kubelet(node: RealNode) -> None:
    node.kubelet.start()


def restart_containerd(node: RealNode, *, timeout: float = 30) -> None:
    """containerd SIGKILLed and started again, under running pods: their shims and containers
    live on, and the new containerd finds them."""
    node.containerd.stop(timeout=0)
    node.containerd.start()
    process.wait_until(
        f"{node.containerd.name} back", lambda: _answers(node), timeout=timeout, watch=[node.containerd]
    )


def lose(node: RealNode, slot: int) -> None:
    """The node is lost, as a machine that dies: its kubelet and containerd SIGKILLed, and every
    process of its pods with them (their shims, and whatever runs in the node's pod cgroups).
    Its pods' objects stay as they were until the control plane sees the node gone."""
    node.kubelet.stop(timeout=0)
    node.containerd.stop(timeout=0)
    for pid in _shims(node) + _pod_processes(cgroup_root(slot, node.name)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def bring_back(node: RealNode, *, timeout: float = 30) -> None:
    """A lost node boots again: containerd first (it finds its containers dead), then the kubelet."""
    node.containerd.start()
    process.wait_until(
        f"{node.containerd.name} back", lambda: _answers(node), timeout=timeout, watch=[node.containerd]
    )
    node.kubelet.start()


def kubelet_pid(node: RealNode) -> int | None:
    """The kubelet's own PID on the host (it runs as the child of the ``nsenter`` started for it)."""
    pid = node.kubelet.pid
    if pid is None or not node.kubelet.alive():
        return None
    try:
        children = pathlib.Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        return None
    return int(children[0]) if children else None


def _answers(node: RealNode) -> bool:
    """Whether the node's containerd listens again (its socket file may outlive a killed one)."""
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(node.socket))
        except OSError:
            return False
    return True


def _shims(node: RealNode) -> list[int]:
    """The containerd shims of ``node``'s containerd: each names its socket as ``-address``."""
    out = []
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"containerd-shim-runc-v2") and str(node.socket).encode() in argv:
            out.append(int(d.name))
    return out


def _pod_processes(root: str) -> list[int]:
    """Every process in the cgroup ``root`` and below, in any hierarchy."""
    pids: set[int] = set()
    for hierarchy in _hierarchies():
        base = hierarchy / root.strip("/")
        if not base.is_dir():
            continue
        for procs in base.rglob("cgroup.procs"):
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in procs.read_text().split())
    return sorted(pids)
