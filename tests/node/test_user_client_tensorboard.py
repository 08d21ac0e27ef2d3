"""``kubetrain tensorboard`` for real: a local port, through the apiserver and the kubelet, to the
TensorBoard the operator runs for a job, showing the runs its training wrote."""

from __future__ import annotations

import pytest
from testkit import jobs
from testkit.http import answers
from testkit.kube import eventually

from kubetrain import client
from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")


def test_a_local_port_reaches_the_jobs_tensorboard_and_its_runs(
    cluster: devcluster.Cluster, namespace: str, shared_dir: str
) -> None:
    job = jobs.sample("pytorch-tensorboard")
    for replica in job["spec"]["replicaSpecs"].values():
        (volume,) = replica["template"]["spec"]["volumes"]
        volume["hostPath"]["path"] = shared_dir
    with client.connect(str(cluster.kubeconfig), namespace=namespace) as c:
        name = c.create(job).metadata.name or ""
        c.wait(name, "Succeeded", timeout=300)
        with c.tensorboard(name, timeout=180) as url:
            assert url.startswith("http://127.0.0.1:")
            runs = eventually(
                "TensorBoard, through the forwarded port, to show every rank's run",
                lambda: (r := answers(f"{url}/data/runs")) and len(r) == 3 and r,
                timeout=90,
            )
            assert sorted(runs) == ["rank0", "rank1", "rank2"]
        # Closed with the block: nothing listens on that port any more.
        assert answers(f"{url}/data/runs") is None
        plain = jobs.sample("pytorch-ddp")
        plain["metadata"]["name"] = "plain"
        c.create(plain)
        with pytest.raises(client.Error, match=r"has no TensorBoard: add spec\.tensorboard"):  # noqa: SIM117
            with c.tensorboard("plain"):
                pass
