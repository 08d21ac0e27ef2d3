"""The first operators' README jobs, converted by ``kubetrain convert``, train on real nodes.

Each seed file in samples/legacy is converted as a user would (``kubetrain convert FILE``) and
created as it comes out. The images their READMEs name are not reachable from here; the nodes
hold stand-ins built under the same names (``devcluster/images.py``: the framework, now, and a
script of samples/scripts that does what the image's program did), so the converted files run
verbatim. What each test reads back is the training's own output: peers found through the env
kubetrain rendered (``TF_CONFIG``, ``DMLC_*``, the MPI hostfile), and a loss that went down.
"""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any

import pytest
import yaml
from testkit import fixtures, jobs
from testkit.kube import eventually
from testkit.pods import logs

from kubetrain.cli import main as cli
from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")

LEGACY = fixtures.ROOT / "samples" / "legacy"
LOSS = re.compile(r"loss (\d+\.\d+) -> (\d+\.\d+)")


def converted(seed: str) -> dict[str, Any]:
    """``kubetrain convert samples/legacy/SEED``'s TrainingJob, as the CLI prints it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert cli.main(["convert", str(LEGACY / seed)]) == 0, err.getvalue()
    job = yaml.safe_load(out.getvalue())
    assert job["kind"] == "TrainingJob"
    return job


def loss(text: str) -> tuple[float, float]:
    first, last = LOSS.findall(text)[-1]
    return float(first), float(last)


def test_the_tfjob_readme_job_trains_with_parameter_servers_and_ends_with_its_chief(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = converted("tfjob-readme-default-ps.yaml")  # MASTER, WORKER and two template-less PS
    name = jobs.create(cluster, namespace, job)
    s = jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=300)
    assert s["replicaStatuses"]["Master"]["succeeded"] == 1
    chief = logs(cluster, namespace, f"{name}-master-0")
    # The chief coordinated through TF_CONFIG: one worker, both parameter servers holding variables.
    assert "coordinator up: 1 workers, 2 ps" in chief, chief
    assert "on /job:ps/replica:0/task:0" in chief, chief
    assert "on /job:ps/replica:0/task:1" in chief, chief
    first, last = loss(chief)
    assert last < first / 10, chief
    print(chief)  # for docs/migrating.md (pytest -s)
    # The Worker and the PS never exit by themselves: the chief's exit ended the job, and them.
    assert "Failed" not in {c["type"] for c in s["conditions"] if c["status"] == "True"}
    eventually(
        "the Worker and the PS to be gone",
        lambda: set(jobs.pods(cluster, namespace, name)) == {f"{name}-master-0"},
        timeout=60,
    )
    assert jobs.status(cluster, namespace, name)["state"] == "Succeeded"


def test_the_mxjob_readme_job_trains_with_dist_sync(cluster: devcluster.Cluster, namespace: str) -> None:
    job = converted("mxjob-readme-dist.yaml")  # SCHEDULER, SERVER, WORKER; no command: the image's
    for spec in job["spec"]["replicaSpecs"].values():
        # The README pulls Always; no registry is reachable here, and the stand-in is on the nodes.
        (container,) = spec["template"]["spec"]["containers"]
        assert container.pop("imagePullPolicy") == "Always"
    job["spec"].setdefault("runPolicy", {})["cleanPodPolicy"] = "None"  # keep the worker to read it
    name = jobs.create(cluster, namespace, job)
    jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=300)
    worker = logs(cluster, namespace, f"{name}-worker-0")
    # ps-lite found the scheduler at the DMLC_PS_ROOT_URI kubetrain rendered: a Service name.
    assert f"DMLC_PS_ROOT_URI={name}-scheduler-0" in worker, worker
    assert "kvstore dist_sync" in worker, worker
    first, last = loss(worker)
    assert last < first / 10, worker
    server = logs(cluster, namespace, f"{name}-server-0")
    assert "DMLC_ROLE=server" in server, server
    print(worker)  # for docs/migrating.md (pytest -s)


def test_the_chainerjob_readme_job_trains_with_chainermn_over_the_rendered_hostfile(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = converted("chainerjob-readme-mn.yaml")
    # The one change the converter asks for: the old mpiexec reached workers by kubectl exec into
    # a sleeping container, kubetrain's reaches them over ssh.
    for rtype, spec in job["spec"]["replicaSpecs"].items():
        if rtype.startswith("Worker"):
            (container,) = spec["template"]["spec"]["containers"]
            container["command"] = ["sh", "-c", "mkdir -p /run/sshd && exec /usr/sbin/sshd -De"]
            container["readinessProbe"] = {"tcpSocket": {"port": 22}, "periodSeconds": 2}
    name = jobs.create(cluster, namespace, job)
    jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=300)
    master = logs(cluster, namespace, f"{name}-master-0")
    # mpiexec -n 3 -N 1: one rank on each host of the hostfile, the master and both workers.
    ranks = set(re.findall(r"\[rank (\d)/3 (\S+) ", master))
    assert {r for r, _ in ranks} == {"0", "1", "2"}, master
    assert len({host for _, host in ranks}) == 3, ranks
    assert "weights identical across ranks: True" in master, master
    first, last = loss(master)
    assert last < first / 2, master
    print(master)  # for docs/migrating.md (pytest -s)
