"""Nothing a real-node cluster starts outlives it, however it ends.

``kubetrain dev up --real-nodes 1`` runs in a process of its own with a real container
running (with the node tier's images, so that a cold run builds one set of them, not two); the
process is then interrupted (Ctrl-C) or killed outright (SIGKILL, so none of
its clean-up code runs). Afterwards no process of it is left — containers included — nor
its veth, its routes, its mounts or its iptables rules (they lived in the node network's
namespaces, which died with their holder). Ctrl-C also removes its cgroups and working
directory; after SIGKILL, the next start of a real node sweeps the empty cgroups left behind,
and the next cluster's start the working directory.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading

import pytest
from testkit.kube import eventually

from kubetrain.devcluster import binaries, dev, process, realnode, workdir

KUBECTL_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "sleeper", "namespace": "default"},
    "spec": {
        "containers": [{"name": "main", "image": "kubetrain.local/examples:v1", "command": ["sleep", "600"]}],
        "terminationGracePeriodSeconds": 1,
    },
}


def pids_in_pid_namespace(ns: str) -> list[int]:
    """Live processes (zombies waiting to be reaped count as gone) in the PID namespace ``ns``."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "pid") == ns and process.pids_alive([int(entry.name)]):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def links() -> str:
    return subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout


def routes() -> str:
    return subprocess.run(["ip", "route"], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_a_killed_real_node_cluster_leaves_nothing_behind(
    how: signal.Signals, tmp_path: pathlib.Path
) -> None:
    kubetrain = pathlib.Path(sys.executable).parent / "kubetrain"
    # Started with SIGINT ignored, as a script's background job is (`dev up ... &` in CI): Ctrl-C
    # must stop it all the same.
    up = process.popen(
        ["sh", "-c", 'trap "" INT; exec "$0" dev up --real-nodes=1 --nodes=0 --seed-images', str(kubetrain)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert up.stdout is not None
        output = []
        for raw in up.stdout:
            output.append(raw.decode())
            if "Ctrl-C" in output[-1] or up.poll() is not None:
                break
        text = "".join(output)
        # Keep reading: what `dev up` says while it stops is the evidence if it hangs.
        rest = threading.Thread(
            target=lambda: output.extend(r.decode() for r in up.stdout or ()), daemon=True
        )
        rest.start()
        match = re.search(r"at https://10\.89\.(\d+)\.1:", text)
        assert match, text
        slot = int(match.group(1))
        kubectl = [binaries.find(("kubectl",))["kubectl"], f"--kubeconfig={dev.kubeconfig_path()}"]
        subprocess.run([*kubectl, "create", "-f", "-"], input=json.dumps(KUBECTL_POD).encode(), check=True)
        subprocess.run(
            [*kubectl, "wait", "--for=condition=Ready", "--timeout=120s", "pod/sleeper"],
            check=True,
            capture_output=True,
        )
        holder = next(
            int(pid)
            for pid in os.listdir("/proc")
            if pid.isdigit()
            and _cmdline(int(pid)).startswith("/")
            and _cmdline(int(pid)).endswith("/pause")
            and _parent_cmdline(int(pid)).startswith("unshare")
            and _ppid_chain_has(int(pid), up.pid)
        )
        pid_ns = os.readlink(f"/proc/{holder}/ns/pid")
        inside = pids_in_pid_namespace(pid_ns)
        # The holder, containerd, the kubelet, kube-proxy, CoreDNS, the pod's shim, pause and sleep.
        assert len(inside) >= 5, inside
        assert f"kt-{slot}" in links()
        kubelet = next(_cmdline(p) for p in inside if "--root-dir=" in _cmdline(p))
        root_dir = pathlib.Path(re.search(r"--root-dir=(\S+)", kubelet).group(1))  # type: ignore[union-attr]
        wd = root_dir.parents[2]  # <workdir>/nodes/real-node-0/kubelet
        os.kill(up.pid, how)
        try:
            up.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.kill(up.pid, signal.SIGUSR1)  # its threads' stacks, into the output
            rest.join(timeout=3)
            raise AssertionError("`kubetrain dev up` did not stop in 90 s:\n" + "".join(output)) from None
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()

    eventually("every process of the cluster to be gone", lambda: not process.pids_alive(inside), timeout=30)
    eventually("its PID namespace to be empty", lambda: not pids_in_pid_namespace(pid_ns), timeout=30)
    # The kernel tears a network namespace down after its last user is gone, asynchronously.
    eventually("its veth to be gone", lambda: f"kt-{slot}" not in links(), timeout=60, interval=0.5)
    assert f"10.{100 + slot}.0.0/16" not in routes()
    assert f"10.89.{slot}." not in subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    assert str(wd) not in pathlib.Path("/proc/self/mountinfo").read_text()
    cgroups = list(pathlib.Path("/sys/fs/cgroup").glob(f"*/kubetrain/{slot}"))
    if how is signal.SIGINT:
        assert not wd.exists()
        assert not cgroups
    else:
        # Nothing ran its clean-up: the empty cgroups stay until the next real node sweeps them,
        # and the working directory (gigabytes of unpacked images) until the next cluster does.
        realnode.remove_cgroups(stale_only=True)
        assert not list(pathlib.Path("/sys/fs/cgroup").glob(f"*/kubetrain/{slot}"))
        assert wd.exists()
        assert wd in workdir.sweep(wd.parent)
        assert not wd.exists()


def _cmdline(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def _parent_cmdline(pid: int) -> str:
    return _cmdline(_ppid(pid))


def _ppid_chain_has(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        pid = _ppid(pid)
    return False
