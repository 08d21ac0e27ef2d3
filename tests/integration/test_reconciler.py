"""The TrainingJob reconciler against the real apiserver, with caches the test controls.

The informers are not run: each test fills their stores with snapshots it takes itself,
so it can make the cache lag exactly where it wants, and show that a lagging cache or a
restarted operator never duplicates a pod and never acts on a stale decision.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest
import yaml
from testkit import jobs
from testkit.builders import a_job
from testkit.reconciling import Caches, for_pods, pod_names

from kubetrain.api import scheme, v1beta1
from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator import trainingjob_controller
from kubetrain.operator.runtime import cache, client, reconcile


async def scenario(c: devcluster.Cluster, namespace: str) -> None:
    api = await for_pods(c, namespace)
    caches = Caches(api, namespace)
    job = (
        a_job("tj")
        .framework("tensorflow")
        .namespace(namespace)
        .replicas("Chief", 1)
        .replicas("Worker", 2)
        .build()
    )
    await caches.submit(job)
    request = reconcile.Request(namespace, "tj")
    expected = ["tj-chief-0", "tj-worker-0", "tj-worker-1"]

    first = caches.reconciler()
    await first.reconcile(request)
    assert await pod_names(api, namespace) == expected
    stored: dict[str, Any] = await api.get(client.TRAININGJOBS, "tj", namespace)
    assert stored["status"]["state"] == "Created"

    # The caches still show no pods and the job as it was before the status write: the
    # reconciler sees its own write, tries the same pods again, and the apiserver refuses.
    await first.reconcile(request)
    assert await pod_names(api, namespace) == expected

    # A restarted operator with the same stale caches: its decision is computed from an
    # old resourceVersion, so the status write is refused and nothing else is done.
    restarted = caches.reconciler()
    result = await restarted.reconcile(request)
    assert result.requeue_after is not None
    assert await pod_names(api, namespace) == expected
    again: dict[str, Any] = await api.get(client.TRAININGJOBS, "tj", namespace)
    assert again["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]

    # Once the caches catch up, it carries on from the stored status.
    await caches.snapshot()
    await restarted.reconcile(request)
    assert await pod_names(api, namespace) == expected
    listed = await api.list(client.SERVICES, namespace)
    assert sorted(s["metadata"]["name"] for s in listed["items"]) == expected


def test_a_lagging_cache_or_a_restart_never_duplicates_pods(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(scenario(cluster, namespace))


async def invalid(c: devcluster.Cluster, namespace: str) -> None:
    api = await client.Client.connect(str(c.kubeconfig))
    caches = Caches(api, namespace)
    # Valid for the schema, but tensorflow has no Launcher replica type.
    job = a_job("bad").framework("tensorflow").namespace(namespace).replicas("Launcher", 1).build()
    await caches.submit(job)
    await caches.reconciler().reconcile(reconcile.Request(namespace, "bad"))
    stored: dict[str, Any] = await api.get(client.TRAININGJOBS, "bad", namespace)
    (failed,) = stored["status"]["conditions"]
    assert (stored["status"]["state"], failed["type"], failed["reason"]) == (
        "Failed",
        "Failed",
        "InvalidSpec",
    )
    assert "spec.replicaSpecs.Launcher: tensorflow has no replica type Launcher" in failed["message"]
    assert await pod_names(api, namespace) == []
    events = await api.list(client.EVENTS, namespace)
    assert [e["reason"] for e in events["items"]] == ["InvalidSpec"]


def test_a_job_its_framework_cannot_run_fails_with_the_reason(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(invalid(cluster, namespace))


async def too_large(c: devcluster.Cluster, namespace: str) -> None:
    api = await client.Client.connect(str(c.kubeconfig))
    caches = Caches(api, namespace)
    # Stored with no webhook to weigh it: TF_CONFIG names 3,002 tasks in each of 3,002 pods.
    job = (
        a_job("huge").framework("tensorflow").namespace(namespace).replicas("PS", 2).replicas("Worker", 3000)
    )
    await caches.submit(job.build())
    await caches.reconciler().reconcile(reconcile.Request(namespace, "huge"))
    stored: dict[str, Any] = await api.get(client.TRAININGJOBS, "huge", namespace)
    (failed,) = stored["status"]["conditions"]
    assert (failed["type"], failed["reason"]) == ("Failed", "InvalidSpec")
    assert "over the 134,217,728 one job may store" in failed["message"]
    assert "env TF_CONFIG is" in failed["message"]
    assert await pod_names(api, namespace) == []
    listed = await api.list(client.SERVICES, namespace)
    assert listed["items"] == []


def test_a_new_job_too_large_to_store_fails_before_anything_is_made(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(too_large(cluster, namespace))


async def managed_elsewhere(c: devcluster.Cluster, namespace: str, where: str) -> None:
    api = await client.Client.connect(str(c.kubeconfig))
    caches = Caches(api, namespace)
    manager = "kueue.x-k8s.io/multikueue"
    owned = (
        {"managed_by": manager}
        if where == "managedBy"
        else {"run_policy": v1beta1.RunPolicy(managed_by=manager)}  # deprecated, still honoured
    )
    job = (
        a_job("queued")
        .framework("tensorflow")
        .namespace(namespace)
        .replicas("Chief", 1)
        .with_spec(**owned)
        .build()
    )
    created = await caches.submit(job)
    result = await caches.reconciler().reconcile(reconcile.Request(namespace, "queued"))
    assert result == reconcile.Result()
    stored: dict[str, Any] = await api.get(client.TRAININGJOBS, "queued", namespace)
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert "status" not in stored
    assert await pod_names(api, namespace) == []


@pytest.mark.parametrize("where", ["managedBy", "runPolicy.managedBy"])
def test_a_job_managed_by_another_controller_is_left_alone(
    cluster: devcluster.Cluster, namespace: str, where: str
) -> None:
    asyncio.run(managed_elsewhere(cluster, namespace, where))


async def queued_without_kueue(c: devcluster.Cluster, namespace: str) -> None:
    api = await client.Client.connect(str(c.kubeconfig))
    caches = Caches(api, namespace)
    policy = v1beta1.SchedulingPolicy(queue="team-q")
    job = (
        a_job("queued")
        .framework("tensorflow")
        .namespace(namespace)
        .replicas("Chief", 1)
        .with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=policy))
        .build()
    )
    await caches.submit(job)
    # The clock is the test's, on a whole second as the refusal's time is kept: the backoff is exact.
    now = [datetime.datetime.now(datetime.UTC).replace(microsecond=0)]
    # The Workload route, the default; no Kueue here.
    reconciler = caches.reconciler(clock=lambda: now[0])
    request = reconcile.Request(namespace, "queued")
    first = await reconciler.reconcile(request)
    assert first.requeue_after == 0.1, "what was refused is shown at once"
    await caches.snapshot(caches.jobs)
    now[0] += datetime.timedelta(seconds=0.25)
    again = await reconciler.reconcile(request)
    stored: dict[str, Any] = await api.get(client.TRAININGJOBS, "queued", namespace)
    conditions = {c["type"]: c for c in stored["status"]["conditions"]}
    assert stored["status"]["state"] == "Suspended"
    assert conditions["Suspended"]["reason"] == "Queued"
    refused = conditions["ReplicaFailure"]
    assert refused["status"] == "True"
    assert refused["message"].startswith("Workload trainingjob-queued-")
    assert "Workload kueue.x-k8s.io/v1beta2 is not served by this cluster" in refused["message"]
    assert "install Kueue" in refused["message"]
    assert again.requeue_after == pytest.approx(0.75), "tried again a second after the refusal, not at once"
    assert await pod_names(api, namespace) == []


def test_a_queued_job_on_a_cluster_without_kueue_says_so_and_makes_no_pod(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(queued_without_kueue(cluster, namespace))


# --- names that are not the job's ------------------------------------------------------------------


async def owners(api: client.Client, resource: client.Resource, namespace: str) -> dict[str, str]:
    listed = await api.list(resource, namespace)
    return {o["metadata"]["name"]: o["metadata"]["ownerReferences"][0]["uid"] for o in listed["items"]}


async def until_created(
    caches: Caches, r: trainingjob_controller.TrainingJobReconciler, request: reconcile.Request, uid: str
) -> dict[str, str]:
    """Reconcile as the work queue would (each requeue honoured) until pods of ``uid`` exist."""
    for _ in range(20):
        result = await r.reconcile(request)
        await caches.snapshot()
        pods = await owners(caches.api, client.PODS, caches.namespace)
        if pods and set(pods.values()) == {uid}:
            return pods
        await asyncio.sleep(result.requeue_after or 0.1)
    raise AssertionError(f"no pods of {uid} were created")


async def made_again(c: devcluster.Cluster, namespace: str) -> None:
    api = await for_pods(c, namespace)
    caches = Caches(api, namespace)
    job = a_job("tj").namespace(namespace).replicas("Master", 1).replicas("Worker", 1).build()
    request = reconcile.Request(namespace, "tj")
    r = caches.reconciler()
    old_uid = (await caches.submit(job))["metadata"]["uid"]
    await r.reconcile(request)
    # The first job's Worker fails, and the job is deleted. This tier runs no garbage
    # collector: its children stay, as a deleted job's pods do while their containers stop.
    killed = {"terminated": {"exitCode": 137, "reason": "Error"}}
    container = {
        "name": "pytorch",
        "image": "x",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "state": killed,
    }
    failed = {"status": {"phase": "Failed", "containerStatuses": [container]}}
    await api.merge_patch(client.PODS, "tj-worker-0", failed, namespace, subresource="status")
    await api.delete(client.TRAININGJOBS, "tj", namespace)
    await caches.snapshot()
    await r.reconcile(request)

    new_uid = (await caches.submit(job))["metadata"]["uid"]
    await r.reconcile(request)
    await caches.snapshot()
    await r.reconcile(request)
    stored: dict[str, Any] = await api.get(client.TRAININGJOBS, "tj", namespace)
    s = stored["status"]
    # The predecessor's failed Worker is not this job's failure.
    assert s["state"] == "Created"
    assert "restarts" not in s
    assert not s.get("replicaStatuses", {}).get("Worker", {}).get("failed")
    held = next(c for c in s["conditions"] if c["type"] == "ReplicaFailure")
    assert (held["status"], held["reason"]) == ("True", "NameHeld")
    assert f"the name is still held by TrainingJob tj (uid {old_uid}), until it is gone" in held["message"]
    assert set((await owners(api, client.PODS, namespace)).values()) == {old_uid}
    events = await api.list(client.EVENTS, namespace)
    assert "FailedCreate" in {e["reason"] for e in events["items"] if e["involvedObject"]["uid"] == new_uid}

    # Once they are gone, the job's own are made, and the condition says so.
    for resource in (client.PODS, client.SERVICES, client.CONFIGMAPS):
        for name in await owners(api, resource, namespace):
            await api.delete(resource, name, namespace)
    await caches.snapshot()
    pods = await until_created(caches, r, request, new_uid)
    assert sorted(pods) == ["tj-master-0", "tj-worker-0"]
    assert set((await owners(api, client.SERVICES, namespace)).values()) == {new_uid}
    await r.reconcile(request)  # as the new pods' events bring about
    stored = await api.get(client.TRAININGJOBS, "tj", namespace)
    cleared = next(c for c in stored["status"]["conditions"] if c["type"] == "ReplicaFailure")
    assert (cleared["status"], cleared["reason"]) == ("False", "Created")
    assert "restarts" not in stored["status"]


def test_a_job_made_again_under_its_name_waits_for_its_predecessors_children_and_never_counts_them(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(made_again(cluster, namespace))


async def name_taken(c: devcluster.Cluster, namespace: str) -> None:
    api = await for_pods(c, namespace)
    # A user's own Service, of the name the job's per-job Service would take.
    web = {"metadata": {"name": "pj"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    await api.create(client.SERVICES, web, namespace)
    caches = Caches(api, namespace)
    job = (
        a_job("pj")
        .namespace(namespace)
        .replicas("Master", 1)
        .with_spec(network=v1beta1.NetworkSpec(host_names=v1beta1.HostNames.PER_JOB))
        .build()
    )
    uid = (await caches.submit(job))["metadata"]["uid"]
    request = reconcile.Request(namespace, "pj")
    r = caches.reconciler()
    await r.reconcile(request)
    await caches.snapshot()
    await r.reconcile(request)
    stored: dict[str, Any] = await api.get(client.TRAININGJOBS, "pj", namespace)
    taken = next(c for c in stored["status"]["conditions"] if c["type"] == "ReplicaFailure")
    assert (taken["status"], taken["reason"]) == ("True", "NameTaken")
    assert taken["message"] == "Service pj: the name is taken by a Service that is no TrainingJob's"
    # No pod starts with its peers' names leading elsewhere.
    assert await pod_names(api, namespace) == []
    assert (await api.get(client.SERVICES, "pj", namespace))["spec"]["selector"] == {"app": "web"}

    await api.delete(client.SERVICES, "pj", namespace)
    await caches.snapshot()
    assert await until_created(caches, r, request, uid) == {"pj-master-0": uid}
    assert (await owners(api, client.SERVICES, namespace)) == {"pj": uid}


def test_a_name_another_object_holds_is_shown_and_no_pod_starts_until_it_is_free(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(name_taken(cluster, namespace))


async def tensorboard_taken(c: devcluster.Cluster, namespace: str) -> None:
    api = await for_pods(c, namespace)
    # A user's Deployment, of the name the job's TensorBoard would take. No cache holds
    # Deployments: the reconciler reads this one to tell it is not the job's.
    mine = {
        "metadata": {"name": "pytorch-tb-tensorboard"},
        "spec": {
            "selector": {"matchLabels": {"app": "mine"}},
            "template": {
                "metadata": {"labels": {"app": "mine"}},
                "spec": {"containers": [{"name": "c", "image": "mine"}]},
            },
        },
    }
    await api.create(client.DEPLOYMENTS, mine, namespace)
    doc = yaml.safe_load((jobs.SAMPLES / "pytorch-tensorboard.yaml").read_text())
    doc["metadata"]["namespace"] = namespace
    job = scheme.to_hub(scheme.decode(doc))
    caches = Caches(api, namespace)
    await caches.submit(job)
    r = caches.reconciler()
    await r.reconcile(reconcile.Request(namespace, "pytorch-tb"))
    await caches.snapshot()
    await r.reconcile(reconcile.Request(namespace, "pytorch-tb"))  # tells what the last pass met
    events = await api.list(client.EVENTS, namespace)
    assert [e["message"] for e in events["items"] if e["reason"] == "FailedCreate"] == [
        "Deployment pytorch-tb-tensorboard: the name is taken by an object; "
        "rename this job or delete that Deployment"
    ]
    # Its Service, which would say the TensorBoard is there, is not made; the replicas are.
    services = await api.list(client.SERVICES, namespace)
    assert "pytorch-tb-tensorboard" not in {s["metadata"]["name"] for s in services["items"]}
    assert await pod_names(api, namespace) == [
        f"pytorch-tb-{r}" for r in ("master-0", "worker-0", "worker-1")
    ]
    stored = await api.get(client.DEPLOYMENTS, "pytorch-tb-tensorboard", namespace)
    assert "ownerReferences" not in stored["metadata"]


def test_a_tensorboard_whose_name_another_deployment_holds_is_reported_and_that_one_left_alone(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asyncio.run(tensorboard_taken(cluster, namespace))


def test_every_per_job_map_empties_once_the_jobs_are_gone(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    async def go() -> None:
        api = await for_pods(cluster, namespace)
        caches = Caches(api, namespace)
        r = caches.reconciler(tombstones=cache.Tombstones(cache.by_owner()))
        names = ("first", "second")
        for name in names:
            await caches.submit(
                a_job(name).namespace(namespace).replicas("Master", 1).replicas("Worker", 1).build()
            )
            await r.reconcile(reconcile.Request(namespace, name))
        held = r.sizes()  # the pods made, not in the caches yet
        assert held["memory_jobs"] == 2, held
        assert held["memory_expected_pods"] > 0, held
        await caches.snapshot()
        for name in names:
            await r.reconcile(reconcile.Request(namespace, name))
        for name in names:
            await api.delete(client.TRAININGJOBS, name, namespace)
        await caches.snapshot()
        for name in names:
            await r.reconcile(reconcile.Request(namespace, name))
        assert set(r.sizes().values()) == {0}, r.sizes()

    asyncio.run(go())
