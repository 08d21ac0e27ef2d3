"""Admission of runtimes and of jobs made from them, against a real kube-apiserver.

The runtimes are stored in the apiserver (their CRDs installed from config/crd); the
expanding webhook's review reads them through it, expands the job, dry-runs its pods there, and
answers with a JSON patch; the runtime webhook's review checks a runtime by a trial job. Nothing
but the runtimes is stored.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from kubetrain.api import v1beta1
from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator import intake
from kubetrain.operator.runtime import client
from kubetrain.operator.webhooks import expanding, runtimes


def a_runtime(name: str, kind: str = "ClusterTrainingRuntime", **container: Any) -> dict[str, Any]:
    return {
        "apiVersion": v1beta1.API_VERSION,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "framework": {"name": "pytorch"},
            "replicaSpecs": {
                "Worker": {"template": {"spec": {"containers": [{"name": "pytorch", **container}]}}}
            },
        },
    }


def short_job(namespace: str, ref: dict[str, Any], **trainer: Any) -> dict[str, Any]:
    return {
        "apiVersion": v1beta1.API_VERSION,
        "kind": "TrainingJob",
        "metadata": {"name": "short", "namespace": namespace},
        "spec": {"runtimeRef": ref, "trainer": {"image": "img:1", "command": ["python", "t.py"], **trainer}},
    }


def store(c: devcluster.Cluster, obj: dict[str, Any], namespace: str | None = None) -> None:
    args = ["-n", namespace] if namespace else []
    c.kubectl("apply", "--server-side", *args, "-f", "-", input=json.dumps(obj))


async def _review(c: devcluster.Cluster, webhook: str, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    api = await client.Client.connect(str(c.kubeconfig))
    body = {"request": {"uid": "u", "operation": "CREATE", "namespace": namespace, "object": obj}}
    hook = expanding.Expansion(api) if webhook == "job" else runtimes.RuntimeAdmission(api)
    response: dict[str, Any] = (await hook.review(body))["response"]
    return response


def review(c: devcluster.Cluster, webhook: str, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    return asyncio.run(_review(c, webhook, obj, namespace))


@pytest.fixture
def account(cluster: devcluster.Cluster, namespace: str) -> str:
    # This tier runs no controller-manager, which would have made the default ServiceAccount.
    cluster.kubectl("create", "serviceaccount", "default", "-n", namespace)
    return namespace


def test_a_short_job_is_answered_with_its_whole_spec_pinned_to_the_runtimes_generation(
    cluster: devcluster.Cluster, account: str
) -> None:
    name = f"torch-{account}"
    store(cluster, a_runtime(name, env=[{"name": "A", "value": "1"}]))
    store(cluster, {**a_runtime(name), "spec": {**a_runtime(name)["spec"], "runPolicy": {"backoffLimit": 2}}})
    response = review(cluster, "job", short_job(account, {"name": name}, numNodes=3), account)
    assert response["allowed"], response
    assert response["patchType"] == "JSONPatch"
    (op,) = json.loads(base64.b64decode(response["patch"]))
    assert (op["op"], op["path"]) == ("replace", "/spec")
    spec = op["value"]
    assert spec["runtimeRef"] == {"kind": "ClusterTrainingRuntime", "name": name, "generation": 2}
    assert spec["runPolicy"] == {"backoffLimit": 2}
    assert spec["replicaSpecs"]["Worker"]["replicas"] == 3
    job = intake.decode({**short_job(account, {"name": name}), "spec": spec}).job
    assert job.spec.replica_specs["Worker"].template["spec"]["containers"][0]["image"] == "img:1"
    assert cluster.kubectl("get", "trainingjobs,pods", "-n", account, "-o", "name").stdout == ""


def test_what_the_apiserver_refuses_in_a_runtimes_pod_is_refused_in_the_runtimes_terms(
    cluster: devcluster.Cluster, account: str
) -> None:
    name = f"badport-{account}"
    bad = a_runtime(name, ports=[{"name": "a-port-name-far-too-long", "containerPort": 1}])
    store(cluster, bad)
    response = review(cluster, "job", short_job(account, {"name": name}), account)
    assert not response["allowed"]
    message = response["status"]["message"]
    assert message.startswith(
        f"spec.runtimeRef: ClusterTrainingRuntime {name}: "
        "spec.replicaSpecs.Worker.template.spec.containers[0].ports[0].name: "
    ), message
    # The runtime itself is refused by its own webhook, in its own terms.
    verdict = review(cluster, "runtime", bad, "")
    assert not verdict["allowed"]
    assert verdict["status"]["message"].startswith(
        "spec.replicaSpecs.Worker.template.spec.containers[0].ports[0].name: "
    ), verdict


def test_a_missing_runtime_or_one_of_another_namespace_is_refused_at_admission(
    cluster: devcluster.Cluster, account: str
) -> None:
    missing = review(cluster, "job", short_job(account, {"name": "no-such-runtime"}), account)
    assert (
        missing["status"]["message"] == 'spec.runtimeRef: ClusterTrainingRuntime "no-such-runtime" not found'
    )
    store(cluster, a_runtime("mine", kind="TrainingRuntime"), account)
    ok = review(cluster, "job", short_job(account, {"kind": "TrainingRuntime", "name": "mine"}), account)
    assert ok["allowed"], ok
    other = review(
        cluster,
        "job",
        short_job(account, {"kind": "TrainingRuntime", "name": "mine", "namespace": "kube-system"}),
        account,
    )
    assert "a TrainingRuntime serves only its own namespace" in other["status"]["message"]


def test_a_runtime_is_refused_when_what_it_builds_on_loops_or_its_merge_cannot_run(
    cluster: devcluster.Cluster, account: str
) -> None:
    a, b = f"loop-a-{account}", f"loop-b-{account}"
    store(cluster, {**a_runtime(a), "spec": {"runtimeRef": {"name": b}}})
    looped = review(cluster, "runtime", {**a_runtime(b), "spec": {"runtimeRef": {"name": a}}}, "")
    assert looped["status"]["message"] == (
        f"spec.runtimeRef: a loop of runtimes: ClusterTrainingRuntime {b} → ClusterTrainingRuntime {a} → "
        f"ClusterTrainingRuntime {b}"
    )
    two_masters = a_runtime(f"masters-{account}")
    two_masters["spec"]["replicaSpecs"]["Master"] = {
        "replicas": 2,
        "template": {"spec": {"containers": [{"name": "pytorch"}]}},
    }
    refused = review(cluster, "runtime", two_masters, "")
    assert not refused["allowed"]
    assert refused["status"]["message"].startswith("spec.replicaSpecs.Master.replicas: "), refused
    good = review(cluster, "runtime", a_runtime(f"good-{account}"), "")
    assert good["allowed"], good


def test_a_short_job_named_by_the_apiserver_is_checked_under_a_name_as_long_as_its_own(
    cluster: devcluster.Cluster, account: str
) -> None:
    name = f"named-{account}"
    store(cluster, a_runtime(name))
    job = short_job(account, {"name": name})
    del job["metadata"]["name"]
    job["metadata"]["generateName"] = "gen-"
    response = review(cluster, "job", job, account)
    assert response["allowed"], response
    (op,) = json.loads(base64.b64decode(response["patch"]))
    assert op["path"] == "/spec"  # the name stays the apiserver's to give
    too_long = short_job(account, {"name": name})
    del too_long["metadata"]["name"]
    too_long["metadata"]["generateName"] = "g" * 50 + "-"
    refused = review(cluster, "job", too_long, account)
    assert "metadata.name" in refused["status"]["message"], refused
