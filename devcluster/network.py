"""The network real nodes live in: one set of namespaces per cluster, gone when it stops.

Real nodes are not started on the host's own network. A *holder* — the pause program as
PID 1 of new PID, network and mount namespaces — is started first; every node process
(containerd, kubelet, kube-proxy, CoreDNS) then joins those namespaces through
``nsenter``. The kernel ends what the holder holds with it: when the holder dies (stopped,
or killed with the process that started it, since it dies with its parent) every process in
its PID namespace is killed — containerd's shims and the containers too — and the mounts,
bridges, veth pair, iptables rules and routes of its namespaces vanish. Nothing of a real
node survives its cluster on the host, whatever way the cluster ends.

Addresses, for cluster slot ``S`` (1 to 150, the first free one, see :func:`create`), all in
private ranges and on this host only:

- ``10.89.S.1/24`` — the host's end of a veth pair (``kt-S``); the apiserver binds it, so
  nodes and pods reach the control plane there. It disappears with the namespace.
- ``10.89.S.2/24`` — the namespace's end (``eth0``), its default route via ``.1``.
- ``10.89.S.3`` — CoreDNS, the cluster DNS every pod's resolv.conf names.
- ``10.89.S.(10+i)`` — node ``i``'s InternalIP (the kubelet refuses a loopback address),
  on the namespace's ``lo``; the apiserver reaches kubelets there for logs and exec.
- ``10.(100+S).i.0/24`` — node ``i``'s pods, on its own bridge ``ktbr<i>``; the host routes
  ``10.(100+S).0.0/16`` into the namespace (the apiserver calls webhooks in pods), and the
  Service range too, so no cluster address is ever sent to the host's default route.

Pods of different nodes reach each other through the namespace's routing (it forwards; the
host never does). Services' ClusterIPs are kube-proxy's iptables rules, inside the namespace.

A node's network is cut (:meth:`NodeNetwork.cut`, for the fault benchmark) by iptables rules in
the namespace, in chains of their own (``KT-CUT-<i>``; ``KT-CUT-<i>-K``, from OUTPUT alone, where the
cgroup match is allowed) that :meth:`NodeNetwork.restore` removes:
its pods' packets to and from other nodes' pods, the host and CoreDNS, packets to and from its
InternalIP (the apiserver calling its kubelet), and its kubelet's own connections to the
apiserver. Every kubelet leaves from the namespace's one address, so the kubelet is told apart
by its cgroup: it is moved into a cgroup v2 of its own, ``/kubetrain/S/cut-<i>``, which the
rules match for the sockets it opens from then on, and the sockets it holds already are matched
by their ports. The rules go with the namespace; the cgroup with the cluster's cgroups.
"""

from __future__ import annotations

import ipaddress
import json
import pathlib
import re
import subprocess
from collections.abc import Sequence

import attrs

from kubetrain.devcluster import binaries, process

__all__ = ["NetworkError", "NodeNetwork", "cni_config", "create", "slots_in_use"]

# Slot S uses 10.89.S.0/24 and pods in 10.(100+S).0.0/16, so S stays within 1..150.
SLOTS = range(1, 151)


class NetworkError(RuntimeError):
    pass


@attrs.define
class NodeNetwork:
    slot: int
    holder: process.Process
    # The holder's PID on the host: the namespaces to enter.
    pid: int

    @property
    def host_ip(self) -> str:
        return f"10.89.{self.slot}.1"

    @property
    def gateway_ip(self) -> str:
        return f"10.89.{self.slot}.2"

    @property
    def dns_ip(self) -> str:
        return f"10.89.{self.slot}.3"

    @property
    def host_link(self) -> str:
        return f"kt-{self.slot}"

    @property
    def pod_cidr(self) -> str:
        return f"10.{100 + self.slot}.0.0/16"

    def node_ip(self, index: int) -> str:
        return f"10.89.{self.slot}.{10 + index}"

    def node_pod_cidr(self, index: int) -> str:
        return f"10.{100 + self.slot}.{index}.0/24"

    def enter(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the namespaces (its own PID there, the node's network and mounts)."""
        return ["nsenter", f"--target={self.pid}", "--pid", "--net", "--mount", "--", *argv]

    def run(self, *argv: str) -> str:
        result = subprocess.run(self.enter(argv), capture_output=True, text=True, check=False, timeout=30)
        if result.returncode != 0:
            raise NetworkError(f"{' '.join(argv)} (in the node network) failed: {result.stderr.strip()}")
        return result.stdout

    def add_node_ip(self, index: int) -> None:
        self.run("ip", "addr", "add", f"{self.node_ip(index)}/32", "dev", "lo")

    def alive(self) -> bool:
        return self.holder.alive()

    def cut(self, index: int, kubelet: int | None) -> None:
        """Cut node ``index`` off: its pods, its InternalIP and its kubelet (host PID ``kubelet``,
        if running) neither send nor receive, until :meth:`restore`."""
        chain, pods = _cut_chain(index), self.node_pod_cidr(index)
        rules = [
            ["-s", pods, "!", "-d", pods],
            ["-d", pods, "!", "-s", pods],
            ["-d", self.node_ip(index)],
            ["-s", self.node_ip(index)],
        ]
        # The cgroup match is allowed in OUTPUT only (of the chains here): a chain of its own.
        sockets: list[list[str]] = []
        if kubelet is not None:
            path = f"kubetrain/{self.slot}/cut-{index}"
            group = _cgroup2() / path
            group.mkdir(parents=True, exist_ok=True)
            (group / "cgroup.procs").write_text(str(kubelet))
            sockets.append(["-m", "cgroup", "--path", path])
            for port in self._ports(kubelet):
                rules += [
                    ["-p", "tcp", "-s", self.gateway_ip, "--sport", port],
                    ["-p", "tcp", "-d", self.gateway_ip, "--dport", port],
                ]
        try:
            for name, hooks, drops in (
                (chain, ("INPUT", "OUTPUT", "FORWARD"), rules),
                (chain + "-K", ("OUTPUT",), sockets),
            ):
                self.run("iptables", "-w", "-N", name)
                for rule in drops:
                    self.run("iptables", "-w", "-A", name, *rule, "-j", "DROP")
                for hook in hooks:
                    self.run("iptables", "-w", "-I", hook, "1", "-j", name)
        except NetworkError:
            self.restore(index, strict=False)
            raise

    def restore(self, index: int, *, strict: bool = True) -> None:
        """Undo :meth:`cut`: the node's packets flow again (``strict``: each rule must be there)."""
        chain = _cut_chain(index)
        for name, hooks in ((chain, ("INPUT", "OUTPUT", "FORWARD")), (chain + "-K", ("OUTPUT",))):
            steps = [*(("-D", hook, "-j", name) for hook in hooks), ("-F", name), ("-X", name)]
            for step in steps:
                try:
                    self.run("iptables", "-w", *step)
                except NetworkError:
                    if strict:
                        raise

    def _ports(self, pid: int) -> list[str]:
        """The local TCP ports of ``pid``'s connections in the namespace."""
        argv = ["nsenter", f"--target={self.pid}", "--net", "--", "ss", "-tnpH"]
        out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout
        return sorted(
            {
                line.split()[3].rsplit(":", 1)[1]
                for line in out.splitlines()
                if re.search(rf"pid={pid},", line)
            }
        )

    def stop(self) -> None:
        """Kill the holder: everything in the namespaces goes with it."""
        self.holder.stop(timeout=10)


def _cut_chain(index: int) -> str:
    return f"KT-CUT-{index}"


def _cgroup2() -> pathlib.Path:
    """Where the cgroup v2 hierarchy is mounted (alone, or beside v1's as ``unified``)."""
    for line in pathlib.Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if fields[2] == "cgroup2":
            return pathlib.Path(fields[1])
    raise NetworkError("no cgroup v2 hierarchy is mounted: a kubelet cannot be cut off alone")


def slots_in_use() -> set[int]:
    out = subprocess.run(
        ["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=True
    ).stdout
    used = set()
    for line in out.splitlines():
        address = ipaddress.ip_interface(line.split()[3])
        if address.ip in ipaddress.ip_network("10.89.0.0/16"):
            used.add(int(str(address.ip).split(".")[2]))
    return used


def create(workdir: pathlib.Path, pause: pathlib.Path, service_cidr: str, timeout: float = 30) -> NodeNetwork:
    """Start the holder, wire the veth pair and addresses; on failure, undo and raise."""
    holder = process.Process(
        "node-network",
        [
            "unshare",
            "--pid",
            "--fork",
            "--kill-child",
            "--net",
            "--mount",
            "--propagation=private",
            "--mount-proc",
            str(pause),
        ],
        workdir / "logs" / "node-network.log",
    )
    holder.start()
    try:
        process.wait_until(
            "the node network's holder",
            lambda: _child(holder) is not None,
            timeout=timeout,
            watch=[holder],
            interval=0.05,
        )
        pid = _child(holder)
        assert pid is not None
        with binaries.locked(binaries.cache_dir() / "network.lock"):
            free = [s for s in SLOTS if s not in slots_in_use()]
            if not free:
                raise NetworkError("no free 10.89.S.0/24 slot for a node network")
            net = NodeNetwork(slot=free[0], holder=holder, pid=pid)
            _wire(net, service_cidr)
    except BaseException:
        holder.stop()
        raise
    return net


def _child(holder: process.Process) -> int | None:
    """The holder's PID: ``unshare --fork``'s only child."""
    if holder.pid is None:
        return None
    try:
        children = pathlib.Path(f"/proc/{holder.pid}/task/{holder.pid}/children").read_text().split()
    except FileNotFoundError:
        return None
    return int(children[0]) if children else None


def _host(*argv: str) -> None:
    result = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=30)
    if result.returncode != 0:
        raise NetworkError(f"{' '.join(argv)} failed: {result.stderr.strip()}")


def _wire(net: NodeNetwork, service_cidr: str) -> None:
    _host("ip", "link", "add", net.host_link, "type", "veth", "peer", "name", "eth0", "netns", str(net.pid))
    _host("ip", "addr", "add", f"{net.host_ip}/24", "dev", net.host_link)
    _host("ip", "link", "set", net.host_link, "up")
    net.run("ip", "link", "set", "lo", "up")
    net.run("ip", "addr", "add", f"{net.gateway_ip}/24", "dev", "eth0")
    net.run("ip", "link", "set", "eth0", "up")
    net.run("ip", "route", "add", "default", "via", net.host_ip)
    net.run("ip", "addr", "add", f"{net.dns_ip}/32", "dev", "lo")
    net.run("sysctl", "-qw", "net.ipv4.ip_forward=1")
    # Pods reach Services whose endpoints sit on their own bridge only through iptables.
    net.run("sh", "-c", "echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables || true")
    _host("ip", "route", "add", net.pod_cidr, "via", net.gateway_ip, "dev", net.host_link)
    # ClusterIPs exist only as kube-proxy's rules in the namespace: from the host, they are
    # routed there too, never to the host's default route. (Another cluster's node network may
    # hold that route already: also fine, it keeps them on this machine.)
    subprocess.run(
        ["ip", "route", "add", service_cidr, "via", net.gateway_ip, "dev", net.host_link],
        capture_output=True,
        check=False,
    )


def cni_config(net: NodeNetwork, index: int, ipam_dir: pathlib.Path) -> str:
    """Node ``index``'s CNI network: a bridge of its own, addresses from its pod CIDR."""
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": "kubetrain",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": f"ktbr{index}",
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": net.node_pod_cidr(index)}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(ipam_dir),
                    },
                }
            ],
        },
        indent=2,
    )
