"""Training for real: PyTorch DDP and MPI in pods on real nodes, found through CoreDNS.

Nothing is injected into the pods but what kubetrain renders: no host files, no IPs. The
ranks meet at the Service names kubetrain creates, which CoreDNS resolves to pod IPs on the
nodes' bridges; what they print is read back with ``kubectl logs``.
"""

from __future__ import annotations

import pytest
from testkit import jobs, resumed
from testkit.pods import logs, results

from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")


def test_pytorch_ddp_trains_to_a_lower_loss_and_succeeds(cluster: devcluster.Cluster, namespace: str) -> None:
    # Workers may still be running when the Master succeeds: keep their pods to read their logs.
    name = jobs.create(cluster, namespace, jobs.sample("pytorch-ddp", runPolicy__cleanPodPolicy="None"))
    s = jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=240)
    assert s["replicaStatuses"]["Master"]["succeeded"] == 1

    pods = jobs.pods(cluster, namespace, name)
    assert sorted(pods) == [f"{name}-master-0", f"{name}-worker-0", f"{name}-worker-1"]
    outcome = {}
    for pod_name, pod in pods.items():
        # Only the cluster's DNS: no host aliases, and the nameserver is CoreDNS's address.
        assert not pod["spec"].get("hostAliases")
        assert pod["spec"].get("dnsPolicy", "ClusterFirst") == "ClusterFirst"
        text = logs(cluster, namespace, pod_name)
        assert f"resolving {name}-master-0.{namespace}.svc" in text or f"resolving {name}-master-0" in text, (
            text
        )
        (result,) = results(text)
        outcome[result["rank"]] = result
    assert sorted(outcome) == [0, 1, 2]
    assert all(r["world"] == 3 for r in outcome.values())
    for r in outcome.values():
        assert r["finalLoss"] < r["firstLoss"] / 100, r
    # DDP averages gradients each step: every rank ends with the same model, close to y = 3x + 2.
    weights = {round(r["weight"], 5) for r in outcome.values()}
    assert len(weights) == 1
    assert abs(outcome[0]["weight"] - 3) < 0.05
    assert abs(outcome[0]["bias"] - 2) < 0.05
    # The master's pod IP is what the workers resolved.
    master_ip = pods[f"{name}-master-0"]["status"]["podIP"]
    assert f": {master_ip}" in logs(cluster, namespace, f"{name}-worker-1")


def test_a_restarted_ddp_job_resumes_from_its_checkpoint_and_each_rank_knows_why(
    cluster: devcluster.Cluster, namespace: str, shared_dir: str
) -> None:
    name = jobs.create(cluster, namespace, resumed.ddp_job(shared_dir))
    s = jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=300)
    assert s["restarts"].get("userCode", 0) >= 1, s
    for pod in jobs.pods(cluster, namespace, name).values():
        assert pod["metadata"]["labels"]["training.kubetrain.dev/restart-attempt"] == "1"
    resumed.assert_resumed(cluster, namespace, name)


@pytest.mark.parametrize("host_names", ["PerReplica", "PerJob"])
def test_mpirun_reaches_the_workers_over_the_rendered_hostfile(
    host_names: str, cluster: devcluster.Cluster, namespace: str
) -> None:
    name = jobs.create(cluster, namespace, jobs.sample("mpi-allreduce", network__hostNames=host_names))
    jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=180)
    services = cluster.kubectl("get", "services", "-n", namespace, "-o", "name").stdout.split()
    if host_names == "PerJob":  # one Service for the job, whose name is every pod's subdomain
        assert services == [f"service/{name}"]
    else:
        assert len(services) == 3, services
    launcher = logs(cluster, namespace, f"{name}-launcher-0")
    got = results(launcher)
    assert sorted(r["rank"] for r in got) == [0, 1], launcher
    assert all(r["sum"] == r["expected"] == 3 for r in got)
    # One rank on each Worker: the hostfile's hosts are the Workers' Service names, reached by ssh.
    assert {r["host"] for r in got} == {f"{name}-worker-0", f"{name}-worker-1"}


def test_every_replica_of_a_generic_job_prints_its_rank(cluster: devcluster.Cluster, namespace: str) -> None:
    name = jobs.create(cluster, namespace, jobs.sample("generic"))
    jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=120)
    printed = sorted(logs(cluster, namespace, p).strip() for p in jobs.pods(cluster, namespace, name))
    assert printed == ["0 of 3", "1 of 3", "2 of 3"]
