"""Elastic PyTorch: the world grows and shrinks between its bounds, and no one pays for it.

Scaling is a change of ``spec.replicaSpecs.Worker.replicas`` (what the scale subresource
writes); torchrun re-forms the rendezvous itself. These tests pin what kubetrain does around
it: only the pods that join or leave are touched, nothing is charged, the job stays Running,
a lost worker is replaced alone, and the API keeps the count within the bounds.
"""

from __future__ import annotations

import copy

import attrs
import pytest
from testkit.builders import a_job
from testkit.world import World

from kubetrain.api import observed, scheme, v1beta1, validation
from kubetrain.operator import render
from kubetrain.operator.frameworks import framework, pytorch
from kubetrain.operator.policies import cleanup, pacing
from kubetrain.operator.scheduling import gang
from kubetrain.operator.webhooks import validating

S = v1beta1.JobState


def elastic_job(workers: int = 2, lo: int = 1, hi: int = 4, **elastic: object) -> v1beta1.TrainingJob:
    policy = v1beta1.ElasticPolicy(min_replicas=lo, max_replicas=hi, **elastic)  # type: ignore[arg-type]
    return (
        a_job("el")
        .framework("pytorch", pytorch=v1beta1.PyTorchOptions(elastic=policy))
        .replicas("Worker", workers)
        .build()
    )


def scaled(job: v1beta1.TrainingJob, workers: int) -> v1beta1.TrainingJob:
    spec = job.spec
    worker = attrs.evolve(spec.replica_specs["Worker"], replicas=workers)
    return attrs.evolve(job, spec=attrs.evolve(spec, replica_specs={"Worker": worker}))


def running(workers: int = 2) -> World:
    w = World(elastic_job(workers), pytorch.FRAMEWORK)
    w.settle()
    assert w.state is S.RUNNING
    return w


def test_scaling_up_creates_only_the_new_worker_and_the_job_keeps_running() -> None:
    w = running(2)
    before = {p.name: p.uid for p in w.pods.values()}
    w.job = scaled(w.job, 3)
    d = w.reconcile()
    assert d.create == (("Worker", 2),)
    assert d.delete == ()
    assert w.state is S.RUNNING
    w.settle()
    assert {n: w.pods[n].uid for n in before} == before, "the running workers are left alone"
    assert w.status.restarts == v1beta1.RestartCounts()
    # The new worker's count alone waits for the pacing period of a running job (15 s).
    assert w.status.replica_statuses["Worker"].active == 2
    w.tick(pacing.PERIOD.total_seconds())
    w.reconcile()
    assert w.status.replica_statuses["Worker"].active == 3


def test_scaling_down_deletes_the_highest_workers_uncharged_and_never_fails_the_job() -> None:
    w = running(3)
    w.job = scaled(w.job, 2)
    d = w.reconcile()
    assert [x.pod for x in d.delete] == ["el-worker-2"]
    w.settle()
    assert w.state is S.RUNNING
    assert sorted(w.pods) == ["el-worker-0", "el-worker-1"]
    assert w.status.restarts == v1beta1.RestartCounts()
    assert w.status.failures == ()
    assert w.status.replica_statuses["Worker"].active == 2


def test_a_lost_worker_is_replaced_alone_while_the_others_train_on() -> None:
    w = running(3)
    others = {n: w.pods[n].uid for n in ("el-worker-0", "el-worker-2")}
    w.exit("el-worker-1", 1)
    w.settle()
    assert {n: w.pods[n].uid for n in others} == others
    assert w.status.restarts.user_code == 1
    assert w.status.failures[-1].replica_type == "Worker"
    assert w.state is S.RUNNING


def test_a_fixed_size_pytorch_job_still_restarts_the_whole_world() -> None:
    job = a_job("pt").framework("pytorch").replicas("Master", 1).replicas("Worker", 2).build()
    assert pytorch.FRAMEWORK.restart_scope_of(job.spec) is v1beta1.RestartScope.JOB
    assert pytorch.FRAMEWORK.restart_scope_of(elastic_job().spec) is v1beta1.RestartScope.POD
    # Kubeflow's default: a container that fails is restarted in place, and that is charged.
    assert pytorch.FRAMEWORK.restart_policy is v1beta1.RestartPolicy.ON_FAILURE


def test_the_env_leaves_ranks_to_the_rendezvous_and_allows_many_membership_changes() -> None:
    job = attrs.evolve(elastic_job(3), metadata=attrs.evolve(elastic_job().metadata, uid="u-1"))
    world = framework.World.of(job, pytorch.FRAMEWORK)
    env = pytorch.FRAMEWORK.env(world, world.replicas[2])
    assert env["PET_NNODES"] == "1:4"
    # Worker 0 serves the store only if it sees its own host name there: its pod name.
    assert env["PET_RDZV_ENDPOINT"] == "el-worker-0:23456"
    assert env["PET_RDZV_ID"] == "u-1"
    assert env["PET_MAX_RESTARTS"] == str(pytorch.ELASTIC_MAX_RESTARTS)
    assert "PET_NODE_RANK" not in env
    explicit = elastic_job(3, max_restarts=7)
    world = framework.World.of(explicit, pytorch.FRAMEWORK)
    assert pytorch.FRAMEWORK.env(world, world.replicas[0])["PET_MAX_RESTARTS"] == "7"


def test_a_worker_count_outside_the_bounds_is_refused_with_the_field_named() -> None:
    with pytest.raises(validation.ValidationError) as e:
        elastic_job(workers=5, lo=1, hi=4)
    assert str(e.value) == (
        "replicaSpecs.Worker.replicas: an elastic job's Worker replicas must lie between "
        "framework.pytorch.elastic.minReplicas and maxReplicas (1..4)"
    )


def test_per_job_host_names_are_refused_for_an_elastic_job() -> None:
    per_job = v1beta1.NetworkSpec(host_names=v1beta1.HostNames.PER_JOB)
    with pytest.raises(validation.ValidationError) as e:
        attrs.evolve(elastic_job().spec, network=per_job)
    assert str(e.value) == (
        "network.hostNames: an elastic job (framework.pytorch.elastic) needs network.hostNames PerReplica"
    )


@pytest.mark.parametrize("key", ["Master", "worker"])
def test_an_elastic_job_is_workers_spelled_worker(key: str) -> None:
    policy = v1beta1.ElasticPolicy(min_replicas=1, max_replicas=2)
    job = a_job("el").framework("pytorch", pytorch=v1beta1.PyTorchOptions(elastic=policy)).replicas(key, 1)
    errors = framework.validate(pytorch.FRAMEWORK, job.build())
    assert [(e.path, e.message.split(" (")[0]) for e in errors] == [
        (("spec", "replicaSpecs", key), "an elastic job has only Worker replicas")
    ]


def test_admission_lets_an_elastic_job_scale_and_keeps_a_fixed_one_fixed() -> None:
    old = scheme.encode(elastic_job(2))
    new = copy.deepcopy(old)
    new["spec"]["replicaSpecs"]["Worker"]["replicas"] = 4
    assert validating.errors(new, old) == []
    fixed = scheme.encode(a_job("pt").framework("pytorch").replicas("Worker", 2).build())
    grown = copy.deepcopy(fixed)
    grown["spec"]["replicaSpecs"]["Worker"]["replicas"] = 3
    assert [str(e) for e in validating.errors(grown, fixed)] == [
        "spec.replicaSpecs.Worker.replicas: replicas change only while the job is suspended, "
        "or in an elastic job (framework.pytorch.elastic)"
    ]


def test_the_gang_waits_for_the_fewest_workers_the_job_trains_with() -> None:
    assert gang.of_attempts(elastic_job(3, lo=2, hi=4))["Worker"].min_count == 2
    fixed = a_job("pt").framework("pytorch").replicas("Worker", 3).build()
    assert gang.of_attempts(fixed)["Worker"].min_count == 3


def test_the_services_of_workers_scaled_away_are_let_go() -> None:
    job = elastic_job(3)
    services = [
        observed.Service.of(o) for o in render.render(job, pytorch.FRAMEWORK) if o["kind"] == "Service"
    ]
    assert cleanup.surplus_services(job.spec, services) == []
    assert cleanup.surplus_services(scaled(job, 1).spec, services) == ["el-worker-1", "el-worker-2"]
