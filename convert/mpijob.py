"""MPIJob — Kubeflow Training Operator v1's and MPI Operator v2beta1's — as a TrainingJob, and back.

Both are a ``Launcher`` that runs ``mpirun`` and ``Worker`` pods that host the ranks,
kubetrain's ``mpi`` framework exactly. ``slotsPerWorker`` becomes the framework's option
of that name, written out even where the MPIJob left it to its default of 1 (kubetrain
would count the GPUs a worker requests instead); ``mpiImplementation`` (v2beta1) too.

They reach their workers differently. kubeflow.org/v1 ran ``mpirun`` through
``kubectl exec`` (a ``kubexec.sh`` agent and a launcher ServiceAccount), and a worker
without a command slept; v2beta1 and kubetrain use ssh with a key pair per job, and a
v2beta1 worker without a command ran ``/usr/sbin/sshd -De``, which the converted job
says out loud. So a converted v1 job needs worker images that run sshd — a note says
so — and every job finds its hostfile at ``/etc/kubetrain`` instead of ``/etc/mpi``.
kubetrain always creates the launcher once every worker is Ready, which v2beta1 called
``launcherCreationPolicy: WaitForWorkersReady``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from kubetrain.api import v1beta1, validation
from kubetrain.convert import kinds, kubeflowjob, reader
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import mpi

__all__ = ["KINDS"]

V1 = f"{kubeflowjob.GROUP}/v1"
V2BETA1 = f"{kubeflowjob.GROUP}/v2beta1"
SSHD = ["/usr/sbin/sshd", "-De"]
SSH_PATH = "/root/.ssh"
OLD_MOUNT = "/etc/mpi"
_ROLE = "K_MPI_JOB_ROLE"

# mpi-operator's pkg/controller/mpi_job_controller.go: the launcher's env per implementation.
_LAUNCHER_ENV = {
    mpi.OPENMPI: (
        "OMPI_MCA_orte_keep_fqdn_hostnames",
        "OMPI_MCA_orte_default_hostfile",
        "OMPI_MCA_plm_rsh_args",
        "OMPI_MCA_orte_set_default_slots",
    ),
    mpi.INTEL: ("I_MPI_HYDRA_HOST_FILE", "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "I_MPI_PERHOST"),
    mpi.MPICH: ("HYDRA_HOST_FILE", "HYDRA_LAUNCH_EXTRA_ARGS"),
}
_NO_GPUS = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
_RETRIES = "kubetrain's ssh config retries connections itself"
_SLOTS = "the hostfile gives each worker its slots"
_WHY = {
    "OMPI_MCA_plm_rsh_args": _RETRIES,
    "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": _RETRIES,
    "HYDRA_LAUNCH_EXTRA_ARGS": _RETRIES,
    "OMPI_MCA_orte_set_default_slots": _SLOTS,
    "I_MPI_PERHOST": _SLOTS,
    "NVIDIA_VISIBLE_DEVICES": "Kubeflow emptied them on a launcher without GPUs",
    "NVIDIA_DRIVER_CAPABILITIES": "Kubeflow emptied them on a launcher without GPUs",
}

MPIJOB_V1 = kubeflowjob.Flavour(
    kind="MPIJob",
    framework="mpi",
    specs_field="mpiReplicaSpecs",
    types=("Launcher", "Worker"),
    restart_policy=v1beta1.RestartPolicy.NEVER,
    default_replicas={"Worker": 0},
    env_everywhere=False,  # the launcher's env went to its first container
)
MPIJOB_V2BETA1 = kubeflowjob.Flavour(
    kind="MPIJob",
    framework="mpi",
    specs_field="mpiReplicaSpecs",
    types=("Launcher", "Worker"),
    restart_policy=v1beta1.RestartPolicy.NEVER,
    restart_policies={"Launcher": v1beta1.RestartPolicy.ON_FAILURE},
    default_replicas={"Worker": 0},
    env_everywhere=False,
    legacy_run_policy=False,
    self_managed=f"{kubeflowjob.GROUP}/mpi-operator",
)


def _common(r: kubeflowjob.Reading) -> None:
    """What both versions share: slots, the first container, paths under /etc/mpi."""
    slots = r.spec.integer("slotsPerWorker", minimum=1)
    r.framework["options"] = {mpi.SLOTS_OPTION: slots or 1}
    for t in r.replicas:
        containers = r.containers(t)
        main = r.main_container(t)
        if containers and main is not None and main is not containers[0]:
            r.note(
                (*r.paths[t], "template", "spec", "containers"),
                f"Kubeflow's MPI env went to the first container, {containers[0].get('name')!r}; "
                f"kubetrain's goes to {main.get('name')!r}",
            )
        for i, c in enumerate(containers):
            for field in ("command", "args"):
                words = c.get(field)
                if isinstance(words, list) and any(OLD_MOUNT in str(w) for w in words):
                    r.note(
                        (*r.paths[t], "template", "spec", "containers", i, field),
                        f"refers to {OLD_MOUNT}: kubetrain mounts the hostfile and discover_hosts.sh at "
                        f"{fw_contract.CONFIG_MOUNT}",
                    )


def _v1(doc: reader.Reader) -> dict[str, Any]:
    r = kubeflowjob.begin(doc, MPIJOB_V1)
    _common(r)
    main_container = r.spec.text("mainContainer")
    if main_container and main_container != r.flavour.fw.container:
        r.spec.note(
            f"not carried over: ranks run where sshd runs; kubetrain's main container is the one named "
            f"{r.flavour.fw.container!r}, else the only one",
            "mainContainer",
        )
    if "Launcher" in r.paths:
        r.note(
            r.paths["Launcher"],
            "mpirun reaches the workers over ssh (OMPI_MCA_plm_rsh_agent=ssh), not kubectl exec, and reads "
            f"OMPI_MCA_orte_default_hostfile={mpi.HOSTFILE}",
        )
        launcher: tuple[str, ...] = ("OMPI_MCA_plm_rsh_agent", "OMPI_MCA_orte_default_hostfile")
        if not fw_contract.gpus_requested(r.main_container("Launcher") or {}):
            launcher += _NO_GPUS
        kubeflowjob.env_notes(r, {"Launcher": launcher}, _WHY)
    if "Worker" in r.paths:
        idle = not any(c.get("command") or c.get("args") for c in r.containers("Worker")[:1])
        r.note(
            r.paths["Worker"],
            "kubetrain reaches workers over ssh with a key in /root/.ssh: the worker must run sshd "
            f"(e.g. command: [{', '.join(SSHD)}])"
            + ("; Kubeflow ran 'sleep 365d' here and used kubectl exec" if idle else ""),
        )
    return r.finish()


def _v2beta1(doc: reader.Reader) -> dict[str, Any]:
    r = kubeflowjob.begin(doc, MPIJOB_V2BETA1)
    _common(r)
    implementation = r.spec.text("mpiImplementation", choices=mpi.IMPLEMENTATIONS)
    if implementation is not None:
        r.framework["options"][mpi.IMPLEMENTATION_OPTION] = implementation
    as_worker = bool(r.spec.truth("runLauncherAsWorker"))
    if as_worker:
        r.spec.note(
            "not carried over: kubetrain's launcher hosts no ranks; add a Worker for its share",
            "runLauncherAsWorker",
        )
    mount = r.spec.text("sshAuthMountPath")
    if mount and mount.rstrip("/") != SSH_PATH:
        r.spec.note(
            f"not carried over: kubetrain mounts the job's ssh key at {SSH_PATH} and runs ssh as root",
            "sshAuthMountPath",
        )
    policy = r.spec.text("launcherCreationPolicy", choices=("AtStartup", "WaitForWorkersReady"))
    waits = r.spec.truth("waitForWorkers")  # its name in early v2beta1
    if policy == "AtStartup" or waits is False:
        r.spec.note(
            "not carried over: kubetrain creates the launcher once every worker is Ready",
            "launcherCreationPolicy" if policy else "waitForWorkers",
        )
    worker = r.containers("Worker")[:1] if "Worker" in r.replicas else []
    for c in worker:
        if not c.get("command") and not c.get("args"):
            c["command"] = list(SSHD)  # what v2beta1 ran in a worker without a command
    if "Launcher" in r.paths:
        _v2beta1_env(r, implementation or mpi.OPENMPI, as_worker=as_worker)
    return r.finish()


def _v2beta1_env(r: kubeflowjob.Reading, implementation: str, *, as_worker: bool) -> None:
    hostfile = _LAUNCHER_ENV[implementation][1 if implementation == mpi.OPENMPI else 0]
    r.note(r.paths["Launcher"], f"{hostfile} is {mpi.HOSTFILE} (Kubeflow's: {OLD_MOUNT}/hostfile)")
    launcher = (_ROLE, *_LAUNCHER_ENV[implementation], *(() if as_worker else _NO_GPUS))
    kubeflowjob.env_notes(r, {"Launcher": launcher, "Worker": (_ROLE,)}, _WHY)


# --- writing back ----------------------------------------------------------------------------


def _slots(job: v1beta1.TrainingJob) -> int:
    """The slots kubetrain gives each worker: its option, else the GPUs a worker requests, else 1."""
    options: Mapping[str, Any] = job.spec.framework.options or {}
    if mpi.SLOTS_OPTION in options:
        return int(options[mpi.SLOTS_OPTION])
    workers = next((s for k, s in job.spec.replica_specs.items() if k.lower() == "worker"), None)
    if workers is None:
        return 1
    main = fw_contract.main_container(workers.template, mpi.FRAMEWORK.container) or {}
    return fw_contract.gpus_requested(main) or 1


def _write(flavour: kubeflowjob.Flavour, job: v1beta1.TrainingJob) -> dict[str, Any]:
    out, problems = kubeflowjob.write(job, flavour)
    implementation = mpi.implementation(job)
    if flavour is MPIJOB_V1 and implementation != mpi.OPENMPI:
        problems.append(
            validation.FieldError(
                path=("spec", "framework", "options", mpi.IMPLEMENTATION_OPTION),
                message="kubeflow.org/v1 MPIJob runs Open MPI only",
            )
        )
    if problems:
        raise kinds.Inexpressible(problems)
    written: dict[str, Any] = {"slotsPerWorker": _slots(job)}
    if flavour is MPIJOB_V2BETA1:
        # kubetrain always waits for its workers before it creates the launcher.
        written["launcherCreationPolicy"] = "WaitForWorkersReady"
        written["mpiImplementation"] = implementation
    out["spec"] = {**written, **out["spec"]}
    return out


KINDS: tuple[kinds.Kind, ...] = (
    kinds.Kind(kind="MPIJob", api_versions=(V1,), to_job=_v1, from_job=functools.partial(_write, MPIJOB_V1)),
    kinds.Kind(
        kind="MPIJob",
        api_versions=(V2BETA1,),
        to_job=_v2beta1,
        from_job=functools.partial(_write, MPIJOB_V2BETA1),
    ),
)
