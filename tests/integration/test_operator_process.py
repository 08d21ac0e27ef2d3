"""`kubetrain-operator` as a process: flags, probes, metrics, leadership, graceful SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request

from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import process


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status, r.read().decode()
    except OSError:
        return 0, ""


def test_the_operator_runs_leads_and_stops_cleanly(cluster: devcluster.Cluster, namespace: str) -> None:
    probes, metrics = process.free_port(), process.free_port()
    operator = subprocess.Popen(
        [
            sys.executable,
            "-P",
            "-m",
            "kubetrain.operator",
            f"--kubeconfig={cluster.kubeconfig}",
            f"--namespace={namespace}",
            "--leader-elect",
            f"--leader-election-namespace={namespace}",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
            f"--health-probe-bind-address=127.0.0.1:{probes}",
            "--webhook-port=0",
            "--kube-api-qps=50",
            "--kube-api-burst=100",
            "--log-format=json",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        eventually("/readyz", lambda: get(probes, "/readyz") == (200, "ok\n"), timeout=30)
        assert get(probes, "/healthz") == (200, "ok\n")
        eventually(
            "leadership",
            lambda: (
                "leader_election_master_status" in get(metrics, "/metrics")[1]
                and 'leader_election_master_status{name="' in get(metrics, "/metrics")[1]
            ),
            timeout=30,
        )
        lease = json.loads(
            cluster.kubectl("get", "lease", "kubetrain-operator-leader", "-n", namespace, "-o", "json").stdout
        )
        assert lease["spec"]["holderIdentity"]
        assert lease["spec"]["leaseDurationSeconds"] == 15
    finally:
        operator.send_signal(signal.SIGTERM)
        _, stderr = operator.communicate(timeout=30)
    assert operator.returncode == 0, stderr
    lease = json.loads(
        cluster.kubectl("get", "lease", "kubetrain-operator-leader", "-n", namespace, "-o", "json").stdout
    )
    assert not lease["spec"].get("holderIdentity"), "the Lease is released on a clean shutdown"
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert {"time", "level", "logger", "message"} <= set(lines[0])
    assert any("became leader" in entry["message"] for entry in lines)
    assert lines[-1]["message"] == "kubetrain-operator stopped"
