"""Progress on the local cluster: read from the first rank's agent log into the job's status, shown
by ``kubectl get`` and ``kubetrain describe``.

kwok serves ``pods/log`` as a kubelet does; every kwok pod's agent logs what the test writes
(:func:`kwok.write_agent_log`). The operator reads every 2 s here (``--progress-interval``), so
that a second reading, and with it a rate and an estimate, comes within the test.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from testkit import operator
from testkit.jobs import create, pods, sample, status, wait_state
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok


@pytest.fixture(scope="module", autouse=True)
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    op = operator.start(cluster, None, "--progress-interval=2")
    yield
    op.stop()


def test_the_first_ranks_progress_shows_in_status_get_and_describe(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    kwok.write_agent_log(cluster, ["kubetrain agent: attempt 0", "progress step=40 total=1000 loss=0.9"])
    name = create(cluster, namespace, sample("pytorch-ddp"))
    wait_state(cluster, namespace, name, "Running", timeout=120)
    first = eventually(
        "the first reading", lambda: status(cluster, namespace, name).get("progress") or None, timeout=60
    )
    assert first["step"] == 40
    assert first["totalSteps"] == 1000
    assert first["metrics"] == {"loss": "0.9"}
    assert first["pod"] == f"{name}-master-0"

    kwok.write_agent_log(
        cluster, ["progress step=40 total=1000 loss=0.9", "progress step=90 total=1000 loss=0.4"]
    )
    moved = eventually(
        "the step to move",
        lambda: (p := status(cluster, namespace, name).get("progress") or {}).get("step") == 90 and p,
        timeout=60,
    )
    assert float(moved["stepsPerSecond"]) > 0
    assert moved["estimatedCompletionTime"] > moved["lastMovedTime"]

    got = cluster.kubectl("get", "trainingjobs", name, "-n", namespace).stdout
    header, row = got.splitlines()[:2]
    at = header.index("STEP")  # columns line up under their headers; Scheduling is empty here
    assert row[at:].split()[0] == "90", got
    described = subprocess.run(
        [
            sys.executable,
            "-P",
            "-m",
            "kubetrain.cli",
            "describe",
            name,
            "-n",
            namespace,
            f"--kubeconfig={cluster.kubeconfig}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert described.returncode == 0, described.stderr
    assert "step 90 of 1,000 (9%)  loss=0.4" in described.stdout, described.stdout
    assert "Time left:" in described.stdout
    assert "Hang after:   300s" in described.stdout


def test_a_suspend_asks_every_pod_for_a_checkpoint_and_goes_once_the_first_rank_answers(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    kwok.write_agent_log(cluster, ["progress step=40 total=1000"])
    job = sample("pytorch-ddp", progress={}, checkpoint={"graceSeconds": 300})
    name = create(cluster, namespace, job)
    wait_state(cluster, namespace, name, "Running", timeout=120)
    cluster.kubectl(
        "patch",
        "trainingjob",
        name,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"runPolicy":{"suspend":true}}}',
    )
    key = "training.kubetrain.dev/checkpoint-request"

    def asked() -> dict[str, str] | None:
        got = pods(cluster, namespace, name)
        said = {n: (p["metadata"].get("annotations") or {}).get(key, "") for n, p in got.items()}
        return said if said and all(v == "1" for v in said.values()) else None

    said = eventually("every pod to be asked for checkpoint 1", asked, timeout=60)
    assert len(said) == 3
    waiting = status(cluster, namespace, name)
    assert waiting["checkpoint"]["requested"]["reason"] == "Suspended"
    assert waiting["state"] == "Running", "the pods stay while the first rank saves"
    assert not any(p["metadata"].get("deletionTimestamp") for p in pods(cluster, namespace, name).values())
    kwok.write_agent_log(cluster, ["progress step=52 total=1000 checkpoint=52 answered=1"])
    done = wait_state(cluster, namespace, name, "Suspended", timeout=60)
    assert done["checkpoint"]["checkpoints"][-1] == {
        "step": 52,
        "time": done["checkpoint"]["checkpoints"][-1]["time"],
        "answered": "Suspended",
    }
    assert done["checkpoint"]["answered"] == 1
    assert "requested" not in done["checkpoint"]
