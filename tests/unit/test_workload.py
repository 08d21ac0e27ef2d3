"""Kueue's Workload route: the Workload a job gets, how its admission reads, and what the step
does with it — held until admitted, resumed with the admission's placement, stopped uncharged on
an eviction and the quota given back once no pod is left, finished with the job."""

from __future__ import annotations

import datetime
from typing import Any

import attrs
import pytest
from testkit.builders import a_ddp_job, a_job, container, template
from testkit.world import World

from kubetrain.api import meta, naming, v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import pytorch
from kubetrain.operator.scheduling import backend, native
from kubetrain.operator.scheduling import workload as wl

S = v1beta1.JobState
C = v1beta1.ConditionType
T = datetime.datetime(2026, 11, 29, 12, tzinfo=datetime.UTC)
QUEUED = v1beta1.RunPolicy(scheduling_policy=v1beta1.SchedulingPolicy(queue="team-a", priority_class="high"))


def queued_job(workers: int = 2) -> v1beta1.TrainingJob:
    return a_ddp_job(workers).uid("u-1").with_spec(run_policy=QUEUED).build()


def world(workers: int = 2) -> World:
    return World(queued_job(workers), pytorch.FRAMEWORK, kueue=backend.WORKLOAD_ROUTE)


def condition(w: World, ctype: C) -> meta.Condition:
    return next(c for c in w.status.conditions if c.type == ctype)


# --- the Workload ------------------------------------------------------------------------------


def test_the_workload_has_a_pod_set_per_replica_type_from_its_first_pod_and_the_jobs_priority() -> None:
    job = queued_job(3)
    got = render.workload(job, pytorch.FRAMEWORK, native.BACKEND, priority=1000)
    assert got is not None
    assert got["metadata"]["name"] == wl.name_of("pt", "u-1")
    assert got["metadata"]["labels"] == {naming.JOB_NAME: "pt"}
    assert got["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    spec = got["spec"]
    assert spec["queueName"] == "team-a"
    assert spec["priorityClassRef"] == {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}
    assert spec["priority"] == 1000
    assert [(p["name"], p["count"]) for p in spec["podSets"]] == [("master", 1), ("worker", 3)]
    pods = {
        o["metadata"]["labels"][naming.REPLICA_TYPE]: o
        for o in render.render(job, pytorch.FRAMEWORK, native.BACKEND, pods={("Master", 0), ("Worker", 0)})
        if o["kind"] == "Pod"
    }
    for p in spec["podSets"]:
        assert p["template"]["spec"] == pods[p["name"]]["spec"], "charged as the pods will ask"
        assert "minCount" not in p
    # The pods of the Workload route join no Kueue pod group: Kueue's pod webhook would gate them.
    assert all(naming.KUEUE_QUEUE_NAME not in p["metadata"]["labels"] for p in pods.values())


def test_an_elastic_job_may_be_admitted_with_as_few_workers_as_it_trains_with() -> None:
    elastic = v1beta1.PyTorchOptions(elastic=v1beta1.ElasticPolicy(min_replicas=2, max_replicas=4))
    job = (
        a_job("el")
        .uid("u")
        .framework("pytorch", pytorch=elastic)
        .replicas("Worker", 4)
        .with_spec(run_policy=QUEUED)
        .build()
    )
    got = render.workload(job, pytorch.FRAMEWORK, backend.NONE)
    assert got is not None
    assert got["spec"]["podSets"][0] | {"template": None} == {
        "name": "worker",
        "count": 4,
        "minCount": 2,
        "template": None,
    }
    assert "priorityClassRef" not in got["spec"], "a PriorityClass whose value is unknown is not guessed"


def test_no_workload_off_the_route_or_outside_a_queue() -> None:
    pods_route = attrs.evolve(native.BACKEND, kueue=backend.POD_ROUTE)
    assert render.workload(queued_job(), pytorch.FRAMEWORK, pods_route) is None
    assert render.workload(a_ddp_job().build(), pytorch.FRAMEWORK, native.BACKEND) is None


def test_a_topology_asked_by_a_template_is_requested_and_an_assignment_gates_the_pods_for_kueue() -> None:
    block = "cloud.example.com/block"
    tas = {"metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": block}}}
    workers = template(container("pytorch")) | tas
    job = (
        a_job("t")
        .uid("u")
        .framework("pytorch")
        .replicas("Master", 1)
        .replicas("Worker", 2, tmpl=workers)
        .with_spec(run_policy=QUEUED)
        .build()
    )
    got = render.workload(job, pytorch.FRAMEWORK, native.BACKEND)
    assert got is not None
    master, worker = got["spec"]["podSets"]
    assert "topologyRequest" not in master
    assert worker["topologyRequest"] == {"required": block, "podIndexLabel": naming.REPLICA_INDEX}

    admitted = admitted_workload()
    admitted["status"]["admission"]["podSetAssignments"][1]["topologyAssignment"] = {"levels": [block]}  # type: ignore[index]
    seen = wl.Seen.of(admitted, FLAVORS.get)
    assert seen.assignments["master"].topology is None
    assert seen.assignments["worker"].topology == ("w", "worker")
    pod = {"metadata": {"labels": {}, "annotations": dict(tas["metadata"]["annotations"])}, "spec": {}}
    wl.apply(pod, seen.assignments["worker"])
    assert pod["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "worker"
    assert pod["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-required-topology": block,
        "kueue.x-k8s.io/workload": "w",
    }
    # A pod placed by topology without asking for one is marked as Kueue marks its own.
    bare: dict[str, Any] = {"metadata": {}, "spec": {}}
    wl.apply(bare, seen.assignments["worker"])
    assert bare["metadata"]["annotations"]["kueue.x-k8s.io/podset-unconstrained-topology"] == "true"


def test_a_workload_name_fits_and_tells_jobs_made_again_under_one_name_apart() -> None:
    long = "j" * 253
    assert len(wl.name_of(long, "a")) == 253
    assert wl.name_of("pt", "a") != wl.name_of("pt", "b")


def admitted_workload() -> dict[str, object]:
    return {
        "metadata": {"name": "w", "uid": "wu", "resourceVersion": "7", "generation": 1},
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "lastTransitionTime": "t0",
                },
                {"type": "Admitted", "status": "True", "reason": "Admitted", "lastTransitionTime": "t0"},
            ],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "master", "flavors": {"cpu": "spot", "memory": "spot"}, "count": 1},
                    {"name": "worker", "flavors": {"cpu": "spot"}, "count": 2},
                ],
            },
            "admissionChecks": [
                {
                    "name": "prov",
                    "state": "Ready",
                    "podSetUpdates": [
                        {"name": "worker", "nodeSelector": {"pool": "a"}, "labels": {"x": "1"}}
                    ],
                }
            ],
        },
    }


FLAVORS = {
    "spot": {
        "spec": {
            "nodeLabels": {"capacity": "spot"},
            "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
        }
    }
}


def test_an_admission_reads_as_each_pod_sets_flavor_and_check_updates() -> None:
    seen = wl.Seen.of(admitted_workload(), FLAVORS.get)
    assert seen.runs
    assert seen.reserved
    assert not seen.finished
    assert seen.cluster_queue == "cq"
    master, worker = seen.assignments["master"], seen.assignments["worker"]
    assert master.node_selector == {"capacity": "spot"}
    assert master.tolerations == ({"key": "spot", "operator": "Exists", "effect": "NoSchedule"},)
    assert worker.node_selector == {"capacity": "spot", "pool": "a"}
    assert (worker.count, worker.labels) == (2, {"x": "1"})
    pod = {"metadata": {"labels": {"x": "own"}}, "spec": {"nodeSelector": {"zone": "z"}}}
    wl.apply(pod, worker)
    assert pod["spec"]["nodeSelector"] == {"zone": "z", "capacity": "spot", "pool": "a"}
    assert pod["metadata"]["labels"] == {"x": "own"}, "a pod's own label is kept"


def test_an_evicted_workload_does_not_run_and_says_why() -> None:
    obj = admitted_workload()
    obj["status"]["conditions"].append(  # type: ignore[index]
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "by a higher priority"}
    )
    seen = wl.Seen.of(obj, FLAVORS.get)
    assert seen.evicted == ("Preempted", "by a higher priority")
    assert not seen.runs


def test_the_status_patches_keep_the_other_conditions_and_the_version_read() -> None:
    obj = admitted_workload()
    obj["status"]["conditions"].append(  # type: ignore[index]
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "by a higher priority"}
    )
    back = wl.requeued_status(obj, now=T)
    assert back["metadata"] == {"resourceVersion": "7"}
    assert back["status"]["admission"] is None
    by_type = {c["type"]: c for c in back["status"]["conditions"]}
    assert by_type["QuotaReserved"]["status"] == "False"
    assert by_type["QuotaReserved"]["lastTransitionTime"] == "2026-11-29T12:00:00Z"
    assert by_type["QuotaReserved"]["message"] == "by a higher priority"
    assert by_type["Admitted"]["status"] == "False"
    assert by_type["Admitted"]["reason"] == "NoReservationUnsatisfiedChecks"
    assert (by_type["Requeued"]["status"], by_type["Requeued"]["reason"]) == ("True", "Preempted")
    assert by_type["Evicted"]["status"] == "True", "Kueue's own condition stays"
    done = wl.finished_status(obj, succeeded=False, message="boom", now=T)
    finished = next(c for c in done["status"]["conditions"] if c["type"] == "Finished")
    assert (finished["status"], finished["reason"], finished["message"]) == ("True", "Failed", "boom")
    assert "admission" not in done["status"]


# --- the step ------------------------------------------------------------------------------------


def test_a_queued_job_makes_its_workload_and_no_pod_until_admitted() -> None:
    w = world()
    first = w.reconcile()
    assert first.workload is wl.Act.CREATE
    assert first.create == ()
    assert w.state is S.SUSPENDED
    assert condition(w, C.SUSPENDED).reason == "Queued"
    w.settle()
    assert not w.pods
    assert w.workload is not None
    said = condition(w, C.SUSPENDED).message
    assert said == f"waiting in Kueue LocalQueue team-a for Kueue to admit Workload {w.workload.name}"
    w.admit(checked=False)  # quota reserved, an admission check not ready yet
    w.settle()
    assert not w.pods
    w.admit()
    w.settle()
    assert w.state is S.RUNNING
    assert condition(w, C.SUSPENDED).reason == "Admitted"
    assert w.assigned == {
        n: wl.Assignment(count=c, node_selector={"flavor": "on-demand"})
        for n, c in (("pt-master-0", 1), ("pt-worker-0", 2), ("pt-worker-1", 2))
    }


def test_an_eviction_stops_the_job_uncharged_and_gives_the_quota_back_once_no_pod_is_left() -> None:
    w = world()
    w.settle()
    w.admit()
    w.settle()
    restarts = w.status.restarts
    attempt = w.status.replica_statuses["Worker"].attempt
    w.kueue_evicts()
    stop = w.reconcile()
    assert sorted(d.pod for d in stop.delete) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]
    assert stop.workload is None, "the quota is given back only once the pods are gone"
    assert w.state is S.SUSPENDED
    assert condition(w, C.SUSPENDED).reason == "Evicted"
    assert [e.reason for e in stop.events] == ["Evicted"]
    w.tick(31)
    w.kubelets()
    assert w.reconcile().workload is wl.Act.REQUEUE
    assert w.reconcile().workload is None, "given back once"
    w.settle()
    assert not w.pods
    w.admit()
    w.settle()
    assert w.state is S.RUNNING
    assert w.status.restarts == restarts, "an eviction is Kueue's decision: not charged"
    assert not w.status.failures
    assert {p.attempt for p in w.pods.values()} == {attempt + 1}, "a new attempt: the old pods' ends are none"


def test_an_admission_with_fewer_workers_runs_with_those() -> None:
    w = world(workers=3)
    w.settle()
    w.admit({"Worker": 2})
    w.settle()
    assert sorted(w.pods) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]
    assert w.state is S.RUNNING


def test_the_workload_is_finished_with_the_job_once() -> None:
    w = world()
    w.settle()
    w.admit()
    w.settle()
    w.exit("pt-master-0", 0)
    done = w.reconcile()
    assert w.state is S.SUCCEEDED
    assert done.workload is wl.Act.FINISH
    assert w.reconcile().workload is None


def test_a_workload_kueue_does_not_serve_is_shown_and_tried_again_with_backoff() -> None:
    w = world()
    w.reconcile()
    w.workload = None  # the create was refused: the cluster does not serve Workloads
    w.refused = (
        v1beta1.Refusal(
            kind="Workload",
            name="trainingjob-pt",
            code=404,
            message="Workload kueue.x-k8s.io/v1beta2 is not served by this cluster",
            time=w.now,
            observed_generation=w.job.metadata.generation,
        ),
    )
    d = w.reconcile()
    failure = condition(w, C.REPLICA_FAILURE)
    assert failure.status.value == "True"
    assert "is not served" in failure.message
    assert w.state is S.SUSPENDED
    assert d.workload is None, "the next try waits"
    assert d.requeue_after == pytest.approx(1)
    w.tick(1)
    assert w.reconcile().workload is wl.Act.CREATE


def test_off_the_route_a_queued_job_has_no_workload() -> None:
    w = World(queued_job(), pytorch.FRAMEWORK, kueue=backend.POD_ROUTE)
    w.settle()
    assert all(d.workload is None for d in w.decisions)
    assert w.state is S.RUNNING


def test_a_suspended_job_lets_its_workload_go_once_its_pods_are_gone_and_queues_again_on_resume() -> None:
    w = world()
    w.settle()
    w.admit()
    w.settle()
    run = w.job.spec.run_policy
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, run_policy=attrs.evolve(run, suspend=True)))
    stop = w.reconcile()
    assert stop.delete
    assert stop.workload is None, "its pods still run: the quota stays theirs"
    w.tick(31)
    w.kubelets()
    assert w.reconcile().workload is wl.Act.DELETE
    assert w.workload is None
    assert w.reconcile().workload is None, "nothing made while suspended"
    assert condition(w, C.SUSPENDED).reason == "Suspended"
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, run_policy=run))
    assert w.reconcile().workload is wl.Act.CREATE, "resumed, it queues again"
    assert condition(w, C.SUSPENDED).reason == "Queued"
    w.admit()
    w.settle()
    assert w.state is S.RUNNING


def test_on_a_worker_the_job_waits_for_multikueues_workload_adopts_it_and_finishes_it() -> None:
    w = world()
    w.prebuilt = "trainingjob-pt-abcde"  # MultiKueue made the job here, naming its Workload
    first = w.reconcile()
    assert first.workload is None, "MultiKueue's Workload is waited for, not made"
    assert condition(w, C.SUSPENDED).message == (
        "waiting in Kueue LocalQueue team-a for Workload trainingjob-pt-abcde, which MultiKueue makes"
    )
    w.workload = wl.Seen(name=w.prebuilt, owned=False)
    w.admit()
    taken = w.reconcile()
    assert taken.workload is wl.Act.ADOPT
    assert len(taken.create) == 3, "admitted: it runs while it adopts"
    w.settle()
    assert w.state is S.RUNNING
    w.exit("pt-master-0", 0)
    assert w.reconcile().workload is wl.Act.FINISH, "how the manager learns the job ended"


def test_a_suspended_worker_job_keeps_the_workload_multikueue_made() -> None:
    w = world()
    w.prebuilt = "mk"
    w.workload = wl.Seen(name="mk", owned=False)
    run = attrs.evolve(w.job.spec.run_policy, suspend=True)
    w.job = attrs.evolve(w.job, spec=attrs.evolve(w.job.spec, run_policy=run))
    w.settle()
    assert all(d.workload is None for d in w.decisions)
