"""Elastic PyTorch with real torchrun agents: the world goes 2 -> 3 -> 2 while training goes on.

The job runs through the local runner (:mod:`testkit.localrun`) with two workers, then is scaled
to three and back to two while it runs, as ``kubectl scale`` scales it: the step creates the
third worker's pod and later deletes it (its agent gets SIGTERM), exactly as in a cluster.
torchrun reads ``PET_NNODES=2:3``, the c10d rendezvous at Worker 0 and ``PET_MAX_RESTARTS``,
with no flags. The script (samples/scripts/elastic_train.py, what the sample runs) resumes from a
checkpoint on a volume every worker mounts (a claim: one folder for the run), so the steps count
on while the world re-forms around them.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import attrs
from testkit import localrun
from testkit.builders import a_job

from kubetrain.api import v1beta1
from kubetrain.operator import local

SCRIPT = Path(__file__).parents[2] / "samples" / "scripts" / "elastic_train.py"
IMAGE_ENV = {"GLOO_SOCKET_IFNAME": "lo"}  # gloo on lo, whatever the host name resolves to
TIMEOUT = 180.0


def worlds(seen: list[dict[str, Any]]) -> list[int]:
    """The world sizes the steps ran in, each run of equal sizes once."""
    out: list[int] = []
    for s in seen:
        if not out or out[-1] != s["world"]:
            out.append(s["world"])
    return out


class Scaler:
    """Scales the job as its steps go: to 3 once it trained in a world of 2, back to 2 once it
    trained in a world of 3, and stops training once it trained in 2 again."""

    def __init__(self, stop_file: Path) -> None:
        self.steps: list[dict[str, Any]] = []
        self.stop_file = stop_file
        self.lock = threading.Lock()

    def watch(self, said: local.Said) -> None:
        if isinstance(said, local.Line) and said.text.startswith("KUBETRAIN-STEP "):
            with self.lock:
                self.steps.append(json.loads(said.text.split(" ", 1)[1]))

    def reached(self, world: int, after: int) -> int | None:
        seen = [s for s in self.steps if s["world"] == world and s["step"] > after + 5]
        return seen[-1]["step"] if seen else None

    def change(self, job: v1beta1.TrainingJob) -> v1beta1.TrainingJob:
        ws = worlds(sorted(self.steps, key=lambda s: s["step"]))
        workers = job.spec.replica_specs["Worker"].replicas
        if ws == [2] and workers == 2 and self.reached(2, 0):
            workers = 3
        elif ws == [2, 3] and workers == 3 and self.reached(3, 0):
            workers = 2
        elif ws == [2, 3, 2] and self.reached(2, max(s["step"] for s in self.steps if s["world"] == 3)):
            self.stop_file.touch()
        specs = dict(job.spec.replica_specs)
        specs["Worker"] = attrs.evolve(specs["Worker"], replicas=workers)
        return attrs.evolve(job, spec=attrs.evolve(job.spec, replica_specs=specs))


def test_torchrun_reforms_the_world_as_the_job_scales_and_training_carries_on(
    torch_version: str, tmp_path: Path
) -> None:
    elastic = v1beta1.ElasticPolicy(min_replicas=2, max_replicas=3, rdzv_conf={"last_call_timeout": "1"})
    run_dir = tmp_path / ".kubetrain" / "run" / "el"
    stop_file = run_dir / "claims" / "shared" / "stop"
    argv = [
        str(Path(sys.executable).with_name("torchrun")),
        str(SCRIPT),
        "--steps=100000",
        "--checkpoint=/shared/step",
        "--stop-file=/shared/stop",
        "--step-seconds=0.05",
    ]
    tmpl = localrun.with_command(
        "pytorch",
        argv,
        IMAGE_ENV,
        volumes=[{"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}}],
    )
    tmpl["spec"]["containers"][0]["volumeMounts"] = [{"name": "shared", "mountPath": "/shared"}]
    job = (
        a_job("el")
        .uid("5ca1e")
        .framework("pytorch", pytorch=v1beta1.PyTorchOptions(elastic=elastic))
        .replicas("Worker", 2, tmpl=tmpl)
        .build()
    )
    scaler = Scaler(stop_file)

    ran = localrun.run(job, tmp_path, timeout=TIMEOUT, change=scaler.change, watch=scaler.watch)

    w0 = ran.launches["el-worker-0"]
    assert w0.env["PET_NNODES"] == "2:3"
    assert "PET_NODE_RANK" not in w0.env
    # Without it, a node that joins a later round waits for a store address nobody writes.
    assert w0.env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] == "1"
    kept = {p.name: p for p in ran.outcome.pods}
    assert [kept[f"el-worker-{i}"].exit_codes.get("pytorch") for i in (0, 1)] == [0, 0], (
        "the job ends well on the workers it kept"
    )
    (left,) = [p for p in ran.outcome.gone if p.name == "el-worker-2"]
    assert left.exit_codes["pytorch"] != 0  # torchrun reports the signal; the pod was deleted, not failed
    assert ran.outcome.job.status.failures == ()  # a scale-down is no failure
    seen = sorted(scaler.steps, key=lambda s: s["step"])
    assert worlds(seen) == [2, 3, 2]
    numbers = [s["step"] for s in seen]
    # Training carried on: every step ran once, in order, across the three worlds.
    assert numbers == list(range(1, len(numbers) + 1))
