"""The runtimes kubetrain ships (config/runtimes), and the short jobs made from them.

Every file of config/runtimes is a ClusterTrainingRuntime that decodes, labelled with its
framework; every built-in framework but ``generic`` has one. Every short sample
(samples/v1beta1/short, one per runtime) is expanded against them as admission expands it
(:mod:`kubetrain.operator.expansion`), then taken in as a job is (``intake.decode`` with
``weigh=True``) and rendered: its pods hold the image and the command the short job gave, and as
many nodes of the runtime's node type as it asked for.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml

from kubetrain.api import naming, v1beta1, wire
from kubetrain.api.v1beta1 import runtime_types
from kubetrain.operator import expansion, intake, render
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import registry

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNTIMES = ROOT / "config" / "runtimes"
SHORT = ROOT / "samples" / "v1beta1" / "short"
RUNTIME_FILES = sorted(p for p in RUNTIMES.glob("*.yaml") if p.name != "kustomization.yaml")
SHORT_SAMPLES = sorted(SHORT.glob("*.yaml"))
# Replica types whose count a runtime fixes: everything but its node type (trainer.replicaType).
FIXED = 1
GPU = "nvidia.com/gpu"


def load(path: pathlib.Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


def runtimes() -> list[dict[str, Any]]:
    return [load(p) for p in RUNTIME_FILES]


def runtime_named(name: str) -> dict[str, Any]:
    return next(r for r in runtimes() if r["metadata"]["name"] == name)


def expanded(job: dict[str, Any]) -> intake.Decoded:
    """``job`` expanded from the shipped runtimes, and taken in as admission takes it."""
    obj = expansion.expand(job, expansion.from_documents(runtimes())).obj
    assert "runtimeRef" in obj["spec"]
    assert "framework" in obj["spec"]
    return intake.decode(obj, weigh=True)


def pods_of(decoded: intake.Decoded) -> list[dict[str, Any]]:
    return [o for o in render.render(decoded.job, decoded.framework) if o["kind"] == "Pod"]


def main_of(pod: dict[str, Any], fw: fw_contract.Framework) -> dict[str, Any]:
    main = fw_contract.main_container(pod, fw.container)
    assert main is not None, pod["metadata"]["name"]
    return main


def type_of(pod: dict[str, Any], job: v1beta1.TrainingJob) -> str:
    """The replica type of ``pod`` as the job spells it."""
    label = pod["metadata"]["labels"][naming.REPLICA_TYPE]
    return next(t for t in job.spec.replica_specs if t.lower() == label)


# --- the runtimes ------------------------------------------------------------------------------


def test_there_is_a_runtime_for_every_built_in_framework_but_generic() -> None:
    shipped = {r["spec"]["framework"]["name"] for r in runtimes()}
    assert {fw.name for fw in registry.BUILTINS} - {"generic"} <= shipped


def test_the_kustomization_lists_every_runtime() -> None:
    listed = load(RUNTIMES / "kustomization.yaml")["resources"]
    assert sorted(listed) == [p.name for p in RUNTIME_FILES]


@pytest.mark.parametrize("path", RUNTIME_FILES, ids=lambda p: p.stem)
def test_a_runtime_decodes_as_a_cluster_training_runtime_named_after_its_file(path: pathlib.Path) -> None:
    doc = load(path)
    runtime = wire.structure(doc, v1beta1.ClusterTrainingRuntime)
    assert runtime.metadata.name == path.stem
    # Cluster-scoped: no namespace of its own, whatever kustomize's namespace says.
    assert runtime.metadata.namespace is None
    assert runtime.spec.framework is not None
    assert runtime.metadata.labels == {runtime_types.FRAMEWORK_LABEL: runtime.spec.framework.name}


@pytest.mark.parametrize("path", RUNTIME_FILES, ids=lambda p: p.stem)
def test_a_runtime_leaves_the_image_to_the_job_and_fixes_every_replica_type_but_its_nodes(
    path: pathlib.Path,
) -> None:
    runtime = wire.structure(load(path), v1beta1.ClusterTrainingRuntime)
    assert runtime.spec.framework is not None
    assert runtime.spec.replica_specs
    fw = registry.default().get(runtime.spec.framework.name)
    node = runtime.spec.trainer.replica_type or "Worker"
    assert node in runtime.spec.replica_specs
    for t, replica in runtime.spec.replica_specs.items():
        (main,) = replica.template["spec"]["containers"]
        assert main["name"] == fw.container, t
        assert "image" not in main, f"{t}: the job's trainer.image fills it"
        if t != node:
            assert replica.replicas == FIXED, t


def test_every_runtime_has_one_short_sample_that_names_it() -> None:
    named = {p.stem: load(p)["spec"]["runtimeRef"]["name"] for p in SHORT_SAMPLES}
    assert named == {p.stem: p.stem for p in RUNTIME_FILES}


# --- the short samples -------------------------------------------------------------------------


@pytest.mark.parametrize("path", SHORT_SAMPLES, ids=lambda p: p.stem)
def test_a_short_sample_expands_into_a_job_whose_pods_run_its_trainer(path: pathlib.Path) -> None:
    short = load(path)
    trainer = short["spec"]["trainer"]
    runtime = runtime_named(short["spec"]["runtimeRef"]["name"])
    decoded = expanded(short)
    job, fw = decoded.job, decoded.framework
    assert job.spec.framework.name == runtime["spec"]["framework"]["name"]
    node = runtime["spec"]["trainer"].get("replicaType", "Worker")
    # The runtime's, else the framework's default (every type: MPI's and Chainer's runtimes name theirs).
    command_types = runtime["spec"]["trainer"].get("commandReplicaTypes") or list(job.spec.replica_specs)
    assert set(command_types) <= set(job.spec.replica_specs)

    pods = pods_of(decoded)
    assert len(pods) == sum(s.replicas for s in job.spec.replica_specs.values())
    assert sum(type_of(p, job) == node for p in pods) == trainer["numNodes"]
    for pod in pods:
        t, main = type_of(pod, job), main_of(pod, fw)
        assert main["image"] == trainer["image"], pod["metadata"]["name"]
        if t in command_types:
            for field in ("command", "args"):
                if field in trainer:
                    assert main[field] == trainer[field], (pod["metadata"]["name"], field)
        else:
            # A type that does not run the trainer's command keeps the runtime's (the workers' sshd).
            template = runtime["spec"]["replicaSpecs"][t]["template"]["spec"]["containers"][0]
            assert main["command"] == template["command"], pod["metadata"]["name"]


@pytest.mark.parametrize("path", SHORT_SAMPLES, ids=lambda p: p.stem)
def test_a_short_job_that_asks_for_gpus_gets_them_on_its_nodes_and_may_go_to_gpu_nodes(
    path: pathlib.Path,
) -> None:
    short = load(path)
    short["spec"]["trainer"]["resourcesPerNode"] = {"limits": {GPU: 2}}
    runtime = runtime_named(short["spec"]["runtimeRef"]["name"])
    node = runtime["spec"]["trainer"].get("replicaType", "Worker")
    decoded = expanded(short)
    for pod in pods_of(decoded):
        limits = (main_of(pod, decoded.framework).get("resources") or {}).get("limits") or {}
        tolerations = pod["spec"].get("tolerations") or []
        gpu_toleration = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
        if type_of(pod, decoded.job) == node:
            assert limits.get(GPU) == 2
            assert gpu_toleration in tolerations, pod["metadata"]["name"]
        else:
            assert GPU not in limits
            assert gpu_toleration not in tolerations, pod["metadata"]["name"]


def test_an_elastic_short_job_keeps_the_runtimes_per_replica_host_names() -> None:
    decoded = expanded(load(SHORT / "torch-elastic.yaml"))
    assert decoded.job.spec.network.host_names is v1beta1.HostNames.PER_REPLICA
    assert decoded.job.spec.framework.elastic is not None


def test_a_short_job_that_says_nothing_of_host_names_is_given_per_job() -> None:
    decoded = expanded(load(SHORT / "torch-distributed.yaml"))
    assert decoded.job.spec.network.host_names is v1beta1.HostNames.PER_JOB


def test_procs_per_node_is_pytorchs_nproc_per_node_and_mpis_slots() -> None:
    torch = load(SHORT / "torch-distributed.yaml")
    torch["spec"]["trainer"]["procsPerNode"] = "4"
    pytorch = expanded(torch).job.spec.framework.pytorch
    assert pytorch is not None
    assert pytorch.nproc_per_node == "4"
    mpi = load(SHORT / "mpi-distributed.yaml")
    mpi["spec"]["trainer"]["procsPerNode"] = "4"
    decoded = expanded(mpi)
    assert decoded.job.spec.framework.options == {"mpiImplementation": "OpenMPI", "slotsPerWorker": 4}
    (config_map,) = [o for o in render.render(decoded.job, decoded.framework) if o["kind"] == "ConfigMap"]
    assert config_map["data"]["hostfile"].count("slots=4\n") == mpi["spec"]["trainer"]["numNodes"]
