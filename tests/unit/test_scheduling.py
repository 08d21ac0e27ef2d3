"""Gangs, the backends' group objects and pod marks, and the operator's choice of backend."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from testkit.builders import a_job, container, template

from kubetrain.api import naming, v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import mpi, pytorch
from kubetrain.operator.policies import refusal
from kubetrain.operator.scheduling import backend, coscheduling, gang, kueue_pods, native, registry, volcano


def torch_job(**policy: Any) -> v1beta1.TrainingJob:
    b = a_job("pt").uid("u-1").framework("pytorch").replicas("Master", 1).replicas("Worker", 3)
    if policy:
        b = b.with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=v1beta1.SchedulingPolicy(**policy)))
    return b.build()


def with_attempts(job: v1beta1.TrainingJob, **attempts: int) -> v1beta1.TrainingJob:
    statuses = {k: v1beta1.ReplicaStatus(attempt=a) for k, a in attempts.items()}
    return attrs.evolve(job, status=attrs.evolve(job.status, replica_statuses=statuses))


def objects(
    job: v1beta1.TrainingJob, b: backend.Backend, fw: Any = pytorch.FRAMEWORK
) -> dict[str, dict[str, Any]]:
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in render.render(job, fw, b)}


# --- gangs -------------------------------------------------------------------------------------


def test_the_first_attempt_is_one_gang_of_every_replica() -> None:
    gangs = gang.of_attempts(torch_job())
    assert {g.name for g in gangs.values()} == {"pt-gang-0"}
    assert gangs["Worker"].size == gangs["Worker"].min_count == 4


def test_min_available_sets_how_many_must_be_placed_together() -> None:
    g = gang.of_attempts(torch_job(min_available=2))["Master"]
    assert (g.size, g.min_count) == (4, 2)
    # More than the gang holds can never be met: capped at the gang.
    assert gang.of_attempts(torch_job(min_available=9))["Master"].min_count == 4


def test_a_replica_type_restart_makes_a_gang_of_the_restarted_type_only() -> None:
    gangs = gang.of_attempts(with_attempts(torch_job(), Master=0, Worker=1))
    assert (gangs["Master"].name, gangs["Master"].size) == ("pt-gang-0", 1)
    assert (gangs["Worker"].name, gangs["Worker"].size, gangs["Worker"].min_count) == ("pt-gang-1", 3, 3)


def test_replicas_started_late_are_not_waited_for() -> None:
    job = a_job("m").framework("mpi").replicas("Launcher", 1).replicas("Worker", 2).build()
    late = {k: mpi.FRAMEWORK.starts_late(k) for k in job.spec.replica_specs}
    assert late == {"Launcher": True, "Worker": False}
    g = gang.of_attempts(job, late)["Launcher"]
    # The launcher is created once the workers are ready: a gang waiting for it would deadlock.
    assert (g.size, g.min_count) == (2, 2)


# --- backends ----------------------------------------------------------------------------------


def test_native_renders_a_podgroup_the_pods_join_before_the_pods() -> None:
    out = render.render(torch_job(priority_class="high"), pytorch.FRAMEWORK, native.BACKEND)
    kinds = [o["kind"] for o in out]
    assert kinds.index("PodGroup") < kinds.index("Pod")
    group = next(o for o in out if o["kind"] == "PodGroup")
    assert group["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert group["spec"] == {"schedulingPolicy": {"gang": {"minCount": 4}}, "priorityClassName": "high"}
    assert group["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    for pod in (o for o in out if o["kind"] == "Pod"):
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": "pt-gang-0"}
        assert pod["spec"]["priorityClassName"] == "high"
        assert pod["metadata"]["labels"][naming.GANG] == "pt-gang-0"


def test_one_pod_created_into_a_placed_attempt_is_placed_alone() -> None:
    # A replacement must not join a gang whose other members may have ended: it would wait for
    # them for ever.
    job = torch_job(priority_class="high")
    out = render.render(job, pytorch.FRAMEWORK, native.BACKEND, pods={("Worker", 1)}, joining=("Worker",))
    (pod,) = (o for o in out if o["kind"] == "Pod")
    assert naming.GANG not in pod["metadata"]["labels"]
    assert "schedulingGroup" not in pod["spec"]
    assert pod["spec"]["priorityClassName"] == "high", "its priority stays"
    groups = [o["metadata"]["name"] for o in out if o["kind"] == "PodGroup"]
    assert groups == ["pt-gang-0"], "no gang of its own"


def test_several_pods_created_into_a_placed_attempt_are_a_gang_of_their_own() -> None:
    out = render.render(
        torch_job(),
        pytorch.FRAMEWORK,
        native.BACKEND,
        pods={("Worker", 2), ("Worker", 0)},
        joining=("Worker",),
    )
    group = next(o for o in out if o["kind"] == "PodGroup" and o["metadata"]["name"] != "pt-gang-0")
    assert group["metadata"]["name"] == "pt-gang-0-worker-0-2"
    assert group["spec"]["schedulingPolicy"]["gang"]["minCount"] == 2
    pods = [o for o in out if o["kind"] == "Pod"]
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {"pt-gang-0-worker-0-2"}
    assert gang.of_joiners(torch_job(), [("Worker", 0)], gang.of_attempts(torch_job())["Worker"]) is None


def test_coscheduling_labels_the_pods_and_names_its_scheduler() -> None:
    b = coscheduling.make("gangs")
    got = objects(torch_job(schedule_timeout_seconds=30), b)
    assert got["PodGroup/pt-gang-0"]["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert got["PodGroup/pt-gang-0"]["spec"] == {"minMember": 4, "scheduleTimeoutSeconds": 30}
    pod = got["Pod/pt-worker-2"]
    assert pod["metadata"]["labels"][coscheduling.LABEL] == "pt-gang-0"
    assert pod["spec"]["schedulerName"] == "gangs"


def test_volcano_takes_the_queue_and_priority_into_its_podgroup() -> None:
    got = objects(torch_job(queue="research", priority_class="high", min_available=3), volcano.BACKEND)
    assert got["PodGroup/pt-gang-0"]["spec"] == {
        "minMember": 3,
        "queue": "research",
        "priorityClassName": "high",
    }
    pod = got["Pod/pt-master-0"]
    assert pod["metadata"]["annotations"][volcano.ANNOTATION] == "pt-gang-0"
    assert pod["spec"]["schedulerName"] == "volcano"
    # Volcano's queue is not Kueue's.
    assert kueue_pods.QUEUE_NAME not in pod["metadata"]["labels"]


def pod_groups(b: backend.Backend) -> backend.Backend:
    """``b`` with a job in a Kueue queue waiting as plain-pod groups (the operator's --kueue=pods)."""
    return attrs.evolve(b, kueue=backend.POD_ROUTE)


@pytest.mark.parametrize("b", [native.BACKEND, coscheduling.make(), backend.NONE], ids=lambda b: b.name)
def test_a_queue_puts_the_gang_in_a_kueue_group(b: backend.Backend) -> None:
    got = objects(torch_job(queue="team-a"), pod_groups(b))
    for name in ("Pod/pt-master-0", "Pod/pt-worker-0"):
        meta = got[name]["metadata"]
        assert meta["labels"][kueue_pods.QUEUE_NAME] == "team-a"
        assert meta["labels"][kueue_pods.GROUP_NAME] == "pt-gang-0"
        assert meta["annotations"][kueue_pods.TOTAL_COUNT] == "4"


def test_a_late_replica_stays_out_of_the_kueue_group_it_would_block() -> None:
    job = (
        a_job("m")
        .framework("mpi")
        .replicas("Launcher", 1, tmpl=template(container("launcher")))
        .replicas("Worker", 2, tmpl=template(container("worker")))
        .with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=v1beta1.SchedulingPolicy(queue="q")))
        .build()
    )
    got = objects(job, pod_groups(native.BACKEND), mpi.FRAMEWORK)
    assert got["Pod/m-worker-1"]["metadata"]["annotations"][kueue_pods.TOTAL_COUNT] == "2"
    assert kueue_pods.QUEUE_NAME not in got["Pod/m-launcher-0"]["metadata"]["labels"]


def test_without_a_backend_nothing_is_grouped() -> None:
    got = objects(torch_job(min_available=2), backend.NONE)
    assert not [k for k in got if k.startswith("PodGroup/")]
    assert "schedulingGroup" not in got["Pod/pt-master-0"]["spec"]


# --- spreading -----------------------------------------------------------------------------------


def _selects(match_labels: dict[str, str], pod: dict[str, Any]) -> bool:
    labels = pod["metadata"]["labels"]
    return all(labels.get(k) == v for k, v in match_labels.items())


@pytest.mark.parametrize("host_names", list(v1beta1.HostNames))
def test_every_pod_says_how_the_jobs_pods_spread_so_the_scheduler_reads_no_service(
    host_names: v1beta1.HostNames,
) -> None:
    base = torch_job()
    job = attrs.evolve(base, spec=attrs.evolve(base.spec, network=v1beta1.NetworkSpec(host_names=host_names)))
    other = render.render(
        a_job("other").framework("pytorch").replicas("Master", 1).build(), pytorch.FRAMEWORK
    )
    pods = [o for o in render.render(job, pytorch.FRAMEWORK) if o["kind"] == "Pod"]
    assert len(pods) == 4
    for pod in pods:
        (c,) = pod["spec"]["topologySpreadConstraints"]
        # Soft, on the one key every node has: a cluster without zones loses no node's score.
        assert (c["topologyKey"], c["whenUnsatisfiable"]) == ("kubernetes.io/hostname", "ScheduleAnyway")
        (match_labels,) = c["labelSelector"].values()  # matchLabels only
        assert all(_selects(match_labels, p) for p in pods)
        assert not any(_selects(match_labels, o) for o in other if o["kind"] == "Pod")


@pytest.mark.parametrize(
    "own", [[], [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]]
)
def test_a_template_that_says_how_to_spread_keeps_what_it_says(own: list[dict[str, Any]]) -> None:
    tmpl = template(container("pytorch"))
    tmpl["spec"]["topologySpreadConstraints"] = own
    job = a_job("pt").framework("pytorch").replicas("Master", 1, tmpl=tmpl).replicas("Worker", 1).build()
    pods = {o["metadata"]["name"]: o for o in render.render(job, pytorch.FRAMEWORK) if o["kind"] == "Pod"}
    assert pods["pt-master-0"]["spec"]["topologySpreadConstraints"] == own
    assert pods["pt-worker-0"]["spec"]["topologySpreadConstraints"] != own


# --- the operator's choice -----------------------------------------------------------------------


def test_every_choice_but_auto_names_a_backend() -> None:
    assert [registry.get(n).name for n in registry.CHOICES[1:]] == [
        "native",
        "coscheduling",
        "volcano",
        "none",
    ]
    with pytest.raises(ValueError, match="unknown gang scheduler 'slurm'"):
        registry.get("slurm")


def test_an_unserved_backend_is_a_permanent_refusal_that_says_what_to_install() -> None:
    message = registry.not_served(volcano.BACKEND)
    assert "PodGroup scheduling.volcano.sh/v1beta1 is not served by this cluster" in message
    assert "install Volcano" in message
    assert "--gang-scheduler" in message
    kind = refusal.classify(404, message, refusal.NOT_SERVED_REASON)
    assert (kind.kind, kind.reason, kind.permanent) == (refusal.Kind.UNSERVED, "GangSchedulerNotServed", True)
    # A 404 that is not about the backend is still a namespace being made.
    assert refusal.classify(404, 'namespaces "x" not found').kind is refusal.Kind.WAITING


def test_the_native_podgroup_is_the_same_in_each_version_the_cluster_may_serve() -> None:
    assert [b.resource.api_version for b in native.BACKENDS if b.resource] == [
        "scheduling.k8s.io/v1beta1",
        "scheduling.k8s.io/v1alpha2",
    ], "newest first: the order the operator asks in"
    assert native.BACKEND.resource == native.RESOURCE
    newest, oldest = (
        objects(torch_job(priority_class="high"), b)["PodGroup/pt-gang-0"] for b in native.BACKENDS
    )
    assert newest.pop("apiVersion") == "scheduling.k8s.io/v1beta1"
    assert oldest.pop("apiVersion") == "scheduling.k8s.io/v1alpha2"
    assert newest == oldest
    assert "1.37" in native.BACKENDS[0].install
