"""The jobs the fault benchmark runs: the repository's DDP and MPI samples, training for a while.

- ``ddp``: samples/v1beta1/pytorch-ddp.yaml (1 Master and 2 Workers: 3 ranks, torchrun, gloo)
  running ``ddp_train.py`` at a steady pace (``--step-seconds``), rank 0 saving a checkpoint every
  ``--checkpoint-every`` steps to a hostPath every node shares and each new attempt resuming from
  it, a step line every ``--log-every`` steps; restarted by making its pods again (Recreate).
- ``ddp-inplace``: the same, restarted in place (``failurePolicy.restartMethod: InPlace``).
- ``mpi``: samples/v1beta1/mpi-allreduce.yaml, its Launcher running ``mpirun`` a number of
  rounds, one allreduce over the 2 Workers each (the sample's one round, made to last); a round
  that fails restarts the job (a rule on the Launcher's exit codes, charged to user code), where
  the sample's policy would fail it for an exit code that only says a Worker went away.

Each keeps its sample's policy otherwise: the preempted rule (``DisruptionTarget``, evictions,
restarts uncharged), the infrastructure budget, ``cleanPodPolicy: Running``; ``backoffLimit`` is
raised to :data:`BACKOFF_LIMIT` (the sample's 3 is for one job's fault, not a run of them).
"""

from __future__ import annotations

from typing import Any

from kubetrain.operator import render
from kubetrain_bench import samples

KINDS = ("ddp", "ddp-inplace", "mpi")
SCRIPT = "/opt/kubetrain/examples/ddp_train.py"
BACKOFF_LIMIT = 10
# The ranks stop this fast when a pod is deleted: a restart does not wait out Kubernetes' 30 s.
TERMINATION_GRACE = 5
# The Launcher's pause between two mpirun rounds.
ROUND_PAUSE = 2


def body(kind: str, name: str, *, steps: int, step_seconds: float, every: int, shared: str) -> dict[str, Any]:
    """The job ``kind`` (:data:`KINDS`) named ``name``; DDP checkpoints into ``shared``."""
    if kind == "mpi":
        return _mpi(name, rounds=max(1, int(steps * step_seconds / 5)))
    out = samples.load("v1beta1", "pytorch-ddp")
    out["metadata"]["name"] = name
    spec = out["spec"]
    spec["runPolicy"]["backoffLimit"] = BACKOFF_LIMIT
    if kind == "ddp-inplace":
        spec["failurePolicy"]["restartMethod"] = "InPlace"
    flags = [
        f"--steps={steps}",
        "--checkpoint=/checkpoint",
        f"--checkpoint-every={every}",
        f"--step-seconds={step_seconds:g}",
        f"--log-every={max(1, every // 2)}",
    ]
    for rs in spec["replicaSpecs"].values():
        pod = rs["template"]["spec"]
        main = pod["containers"][0]
        main["command"] = ["torchrun", SCRIPT, *flags]
        main["volumeMounts"] = [{"name": "checkpoint", "mountPath": "/checkpoint"}]
        pod["volumes"] = [{"name": "checkpoint", "hostPath": {"path": shared, "type": "Directory"}}]
        pod["terminationGracePeriodSeconds"] = TERMINATION_GRACE
    return out


def _mpi(name: str, *, rounds: int) -> dict[str, Any]:
    out = samples.load("v1beta1", "mpi-allreduce")
    out["metadata"]["name"] = name
    spec = out["spec"]
    spec["runPolicy"]["backoffLimit"] = BACKOFF_LIMIT
    spec["failurePolicy"] = {
        "rules": [
            {
                "name": "round",
                "action": "Restart",
                "replicaTypes": ["Launcher"],
                "onExitCodes": {"ranges": [{"min": 1, "max": 255}]},
            }
        ]
    }
    for rs in spec["replicaSpecs"].values():
        rs["template"]["spec"]["terminationGracePeriodSeconds"] = TERMINATION_GRACE
    launcher = spec["replicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    # The ranks, started over ssh, see only what mpirun passes on: their attempt too (the check
    # that no rank of an old attempt meets a new world reads it from their lines).
    program, *flags = launcher["command"]
    mpirun = " ".join([program, *(f"-x {name}" for name in render.RESTART_ENV), *flags])
    launcher["command"] = [
        "/bin/sh",
        "-c",
        f"for i in $(seq {rounds}); do {mpirun} || exit $?; echo round $i of {rounds} done; "
        f"sleep {ROUND_PAUSE}; done",
    ]
    return out


def ranks(job: dict[str, Any]) -> int:
    """The pods of ``job``."""
    return sum(int(rs.get("replicas", 1)) for rs in job["spec"]["replicaSpecs"].values())


def limits(job: dict[str, Any]) -> dict[str, int | None]:
    """The budgets: ``userCode`` (backoffLimit) and ``infrastructure`` (None: unlimited)."""
    policy = job["spec"].get("failurePolicy") or {}
    infra = ((policy.get("budgets") or {}).get("infrastructure") or {}).get("limit")
    return {"userCode": int(job["spec"]["runPolicy"]["backoffLimit"]), "infrastructure": infra}
