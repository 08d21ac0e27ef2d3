"""Training for real: PyTorch DDP and MPI in pods on real nodes, found through CoreDNS.

Nothing is injected into the pods but what kubetrain renders: no host files, no IPs. The
ranks meet at the Service names kubetrain creates, which CoreDNS resolves to pod IPs on the
nodes' bridges; what they print is read back with ``kubectl logs``.

The DDP and MPI jobs are short jobs (samples/v1beta1/short) made from the shipped runtimes
(config/runtimes: torch-distributed, mpi-distributed), expanded as the operator's mutating
webhook expands them at creation (``jobs.short``): what runs here is what a user of the
runtimes gets.
"""

from __future__ import annotations

import pytest
from testkit import jobs, resumed
from testkit.pods import logs, results

from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")


def test_pytorch_ddp_trains_to_a_lower_loss_and_succeeds(cluster: devcluster.Cluster, namespace: str) -> None:
    # torch-distributed: Workers only, rank 0 on Worker 0, one Service for the job (PerJob).
    # Workers may still be running when the job succeeds: keep their pods to read their logs.
    job = jobs.short("torch-distributed", numNodes=3, runPolicy__cleanPodPolicy="None")
    name = jobs.create(cluster, namespace, job)
    s = jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=240)
    assert s["replicaStatuses"]["Worker"]["succeeded"] == 3

    pods = jobs.pods(cluster, namespace, name)
    assert sorted(pods) == [f"{name}-worker-0", f"{name}-worker-1", f"{name}-worker-2"]
    first = f"{name}-worker-0.{name}.{namespace}.svc"  # Worker 0's host name under the job's Service
    outcome = {}
    for pod_name, pod in pods.items():
        # Only the cluster's DNS: no host aliases, and the nameserver is CoreDNS's address.
        assert not pod["spec"].get("hostAliases")
        assert pod["spec"].get("dnsPolicy", "ClusterFirst") == "ClusterFirst"
        assert jobs.env_of(pod)["MASTER_ADDR"] == first, pod_name
        text = logs(cluster, namespace, pod_name)
        assert f"resolving {first}: " in text, text
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
    # Worker 0's pod IP is what the last worker resolved.
    first_ip = pods[f"{name}-worker-0"]["status"]["podIP"]
    assert f"resolving {first}: {first_ip}" in logs(cluster, namespace, f"{name}-worker-2")


def test_a_restarted_ddp_job_resumes_from_its_checkpoint_and_each_rank_knows_why(
    cluster: devcluster.Cluster, namespace: str, shared_dir: str
) -> None:
    name = jobs.create(cluster, namespace, resumed.short_ddp_job(shared_dir))
    s = jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=300)
    assert s["restarts"].get("userCode", 0) >= 1, s
    for pod in jobs.pods(cluster, namespace, name).values():
        assert pod["metadata"]["labels"]["training.kubetrain.dev/restart-attempt"] == "1"
    resumed.assert_resumed(cluster, namespace, name)


@pytest.mark.parametrize("host_names", ["PerReplica", "PerJob"])
def test_mpirun_reaches_the_workers_over_the_rendered_hostfile(
    host_names: str, cluster: devcluster.Cluster, namespace: str
) -> None:
    # mpi-distributed: the Launcher runs the short job's mpirun, the runtime's Workers run sshd.
    name = jobs.create(cluster, namespace, jobs.short("mpi-distributed", network__hostNames=host_names))
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
