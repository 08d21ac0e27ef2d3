"""A DDP job that fails once and resumes: the sample with a shared checkpoint, and what its ranks say.

The last rank of samples/v1beta1/pytorch-ddp.yaml (:func:`ddp_job`), or of the short job
samples/v1beta1/short/torch-distributed.yaml on three nodes (:func:`short_ddp_job`, through the
shipped runtime), fails at step 130 of attempt 0; rank 0 checkpoints every 20 steps to a hostPath
both real nodes share. The whole world restarts (PyTorch's scope), and every rank of attempt 1
must go on from the checkpoint — however the restart was carried out.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster import cluster as devcluster
from testkit import jobs
from testkit.pods import logs, results

FAIL_AT_STEP = 130
FLAGS = ["--checkpoint=/checkpoint", f"--fail-at-step={FAIL_AT_STEP}"]


def ddp_job(shared_dir: str, **changes: Any) -> dict[str, Any]:
    """The DDP sample, checkpointing to ``shared_dir``, its last rank failing once; ``changes`` as
    :func:`testkit.jobs.sample`'s."""
    job = jobs.sample("pytorch-ddp", runPolicy__cleanPodPolicy="None", runPolicy__backoffLimit=10, **changes)
    for rs in job["spec"]["replicaSpecs"].values():
        spec = rs["template"]["spec"]
        main = spec["containers"][0]
        main["command"] = [*main["command"], *FLAGS]
        main["volumeMounts"] = [{"name": "checkpoint", "mountPath": "/checkpoint"}]
        spec["volumes"] = [{"name": "checkpoint", "hostPath": {"path": shared_dir, "type": "Directory"}}]
    return job


def short_ddp_job(shared_dir: str, **changes: Any) -> dict[str, Any]:
    """The torch-distributed short job on three nodes (ranks 0-2, rank 0 on Worker 0) through the
    shipped runtime, checkpointing to ``shared_dir``, its last rank failing once; ``changes`` as
    :func:`testkit.jobs.short`'s.

    The trainer's ``args`` follow the short job's command; the volume is a job-level override,
    merged into the runtime's ``pytorch`` container by name."""
    checkpoint = {
        "containers": [
            {"name": "pytorch", "volumeMounts": [{"name": "checkpoint", "mountPath": "/checkpoint"}]}
        ],
        "volumes": [{"name": "checkpoint", "hostPath": {"path": shared_dir, "type": "Directory"}}],
    }
    return jobs.short(
        "torch-distributed",
        **{
            "numNodes": 3,
            "args": FLAGS,
            "runPolicy__cleanPodPolicy": "None",
            "runPolicy__backoffLimit": 10,
            "replicaSpecs__Worker__template__spec": checkpoint,
            **changes,
        },
    )


def assert_resumed(c: devcluster.Cluster, namespace: str, name: str) -> None:
    """Every rank of the finished job ran attempt 1, knew why, went on from the checkpoint rank 0
    saved before the failure (not from step 0) and ended with the others' weights."""
    outcome = {}
    for pod_name in jobs.pods(c, namespace, name):
        (result,) = results(logs(c, namespace, pod_name))
        outcome[result["rank"]] = result
    assert sorted(outcome) == [0, 1, 2]
    for r in outcome.values():
        assert r["attempt"] == 1, r
        assert r["restarts"] >= 1, r
        assert r["lastRestartReason"].startswith("UserCode:"), r
        # Its first loss is already far below the first loss the job ever had.
        assert FAIL_AT_STEP - 30 <= r["startStep"] <= FAIL_AT_STEP, r
        assert r["firstLoss"] < r["initialLoss"] / 10, r
        assert r["finalLoss"] < r["initialLoss"] / 100, r
    assert len({round(r["weight"], 5) for r in outcome.values()}) == 1
