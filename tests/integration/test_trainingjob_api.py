"""The TrainingJob CRD in a real kube-apiserver: CRUD, watch, patch, status, columns, CEL."""

from __future__ import annotations

import json
import subprocess
import threading
from typing import Any

import kr8s
import pytest
from testkit import kube as k
from testkit.builders import a_job

from kubetrain.api import scheme, v1beta1
from kubetrain.devcluster import cluster as devcluster

CRD = "crd/trainingjobs.training.kubetrain.dev"


def job_named(name: str, namespace: str, workers: int = 2) -> v1beta1.TrainingJob:
    return a_job(name).namespace(namespace).replicas("Master", 1).replicas("Worker", workers).build()


def test_the_crd_is_established_with_both_versions(cluster: devcluster.Cluster) -> None:
    crd = json.loads(cluster.kubectl("get", CRD, "-o", "json").stdout)
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    assert crd["status"]["acceptedNames"]["shortNames"] == ["tj"]
    assert crd["status"]["storedVersions"] == ["v1beta1"]


def test_create_get_and_list(kube: kr8s.Api, namespace: str) -> None:
    k.create_job(kube, job_named("alpha", namespace))
    k.create_job(kube, job_named("beta", namespace))
    got = k.TrainingJob.get("alpha", namespace=namespace, api=kube)
    decoded = scheme.decode(got.raw)
    assert isinstance(decoded, v1beta1.TrainingJob)
    assert decoded.spec == job_named("alpha", namespace).spec
    assert decoded.metadata.uid
    names = sorted(j.name for j in kube.get(k.RESOURCE, namespace=namespace))
    assert names == ["alpha", "beta"]


def test_watch_sees_every_change(kube: kr8s.Api, namespace: str) -> None:
    seen: list[tuple[str, int]] = []
    ready = threading.Event()

    def watch() -> None:
        for event, obj in kube.watch(k.RESOURCE, namespace=namespace):
            ready.set()
            seen.append((event, obj.raw["spec"]["replicaSpecs"]["Worker"].get("replicas", 1)))
            if event == "DELETED":
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    k.create_job(kube, job_named("watched", namespace))
    ready.wait(15)
    job = k.TrainingJob.get("watched", namespace=namespace, api=kube)
    # Suspended, since a running fixed-size job's counts are fixed (tests/integration/test_scale.py).
    job.patch(
        {"spec": {"runPolicy": {"suspend": True}, "replicaSpecs": {"Worker": {"replicas": 5}}}}, type="merge"
    )
    job.delete()
    thread.join(30)
    assert seen == [("ADDED", 2), ("MODIFIED", 5), ("DELETED", 5)]


def test_a_spec_patch_bumps_the_generation(kube: kr8s.Api, namespace: str) -> None:
    job = k.create_job(kube, job_named("gen", namespace))
    job.refresh()
    before = job.raw["metadata"]["generation"]
    job.patch({"spec": {"runPolicy": {"suspend": True}}}, type="merge")
    job.refresh()
    assert job.raw["metadata"]["generation"] == before + 1
    assert job.raw["spec"]["runPolicy"] == {"suspend": True}


def test_status_is_a_subresource(kube: kr8s.Api, namespace: str) -> None:
    job = k.create_job(kube, job_named("st", namespace))
    job.refresh()
    generation = job.raw["metadata"]["generation"]
    # Status written through the main resource is ignored ...
    job.patch({"status": {"state": "Running"}}, type="merge")
    job.refresh()
    assert "status" not in job.raw
    # ... and through the status subresource it sticks, without touching spec or generation.
    job.patch(
        {
            "status": {"state": "Running", "restarts": {"userCode": 2}},
            "spec": {"runPolicy": {"suspend": True}},
        },
        subresource="status",
        type="merge",
    )
    job.refresh()
    assert job.raw["status"] == {"state": "Running", "restarts": {"userCode": 2}}
    assert "runPolicy" not in job.raw["spec"]
    assert job.raw["metadata"]["generation"] == generation


def test_printer_columns_as_kubectl_shows_them(
    kube: kr8s.Api, namespace: str, cluster: devcluster.Cluster
) -> None:
    job = k.create_job(kube, job_named("cols", namespace))
    job.patch(
        {
            "status": {
                "state": "Succeeded",
                "restarts": {"userCode": 3, "infrastructure": 1},
                "conditions": [_condition("Succeeded"), _condition("Running")],
            }
        },
        subresource="status",
        type="merge",
    )
    table = cluster.kubectl("get", "tj", "cols", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "STATE", "SCHEDULING", "STEP", "GOODPUT", "RESTARTS", "AGE"]
    # A job placed at once has no Scheduled condition: the column is blank.
    assert table[1].split()[:3] == ["cols", "Succeeded", "3"]
    wide = cluster.kubectl("get", "tj", "cols", "-n", namespace, "-o", "wide").stdout.splitlines()
    assert wide[0].split() == [
        "NAME",
        "STATE",
        "SCHEDULING",
        "STEP",
        "GOODPUT",
        "RESTARTS",
        "INFRA-RESTARTS",
        "AGE",
    ]
    assert wide[1].split()[:4] == ["cols", "Succeeded", "3", "1"]
    job.patch(
        {
            "status": {
                "conditions": [_condition("Succeeded"), {**_condition("Scheduled"), "reason": "Queued"}]
            }
        },
        subresource="status",
        type="merge",
    )
    queued = cluster.kubectl("get", "tj", "cols", "-n", namespace).stdout.splitlines()
    assert queued[1].split()[:3] == ["cols", "Succeeded", "Queued"]


def _condition(ctype: str) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": "True",
        "reason": "Test",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def apply_raw(cluster: devcluster.Cluster, doc: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("create", "--validate=strict", "-f", "-", input=json.dumps(doc), check=False)


def valid_doc(namespace: str, name: str = "bad") -> dict[str, Any]:
    return scheme.encode(job_named(name, namespace))


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda d: d["spec"]["replicaSpecs"]["Worker"].update(replicas=-1),
            "spec.replicaSpecs.Worker.replicas: Invalid value: -1: spec.replicaSpecs.Worker.replicas in body should be greater than or equal to 0",
        ),
        (
            lambda d: d["spec"]["replicaSpecs"].update(worker=d["spec"]["replicaSpecs"]["Worker"]),
            "types must differ in more than letter case",
        ),
        (
            lambda d: d["spec"]["replicaSpecs"].update({"Work-er": d["spec"]["replicaSpecs"]["Worker"]}),
            "keys must match ^[A-Za-z][A-Za-z0-9]*$",
        ),
        (
            lambda d: d["metadata"].update(name="m" * 56),
            "metadata.name is too long: every {name}-{type}-{index} must fit in 63 characters",
        ),
        (
            lambda d: d["spec"]["replicaSpecs"]["Worker"]["template"]["spec"].update(containers=[]),
            "spec.replicaSpecs.Worker.template.spec.containers: Invalid value: 0",
        ),
        (
            lambda d: d["spec"].update(successPolicy={"targets": [{"replicaType": "PS"}]}),
            "successPolicy.targets must name replica types of this job",
        ),
        (
            lambda d: d["spec"].update(
                failurePolicy={"rules": [{"name": "r", "action": "Restart", "replicaTypes": ["PS"]}]}
            ),
            "failurePolicy.rules[].replicaTypes must name replica types of this job",
        ),
        (
            lambda d: d["spec"].update(
                runPolicy={"backoffLimit": 1}, failurePolicy={"budgets": {"userCode": {"limit": 1}}}
            ),
            "set runPolicy.backoffLimit or failurePolicy.budgets.userCode.limit, not both",
        ),
        (
            lambda d: d["spec"]["framework"].update(tensorflow={}),
            "tensorflow options are only valid for framework tensorflow",
        ),
        (
            lambda d: d["spec"].update(
                failurePolicy={
                    "rules": [
                        {"name": "r", "action": "Restart", "onExitCodes": {"ranges": [{"min": 9, "max": 3}]}}
                    ]
                }
            ),
            "min must not exceed max",
        ),
        (
            lambda d: d["spec"]["replicaSpecs"]["Worker"].update(replicaz=3),
            'unknown field "spec.replicaSpecs.Worker.replicaz"',
        ),
        (
            lambda d: (
                d["metadata"].update(name="m" * 52),
                d["spec"].update(tensorboard={"logDir": "/logs"}),
            ),
            "metadata.name is too long for a TensorBoard: {name}-tensorboard must fit in 63 characters",
        ),
        (
            lambda d: d["spec"].update(tensorboard={"logDir": "logs"}),
            "spec.tensorboard.logDir in body should match '^/'",
        ),
        (
            lambda d: d["spec"].update(
                tensorboard={"logDir": "/logs", "resources": {"limits": {"cpu": "1x"}}}
            ),
            "spec.tensorboard.resources.limits.cpu in body should match",
        ),
    ],
)
def test_the_apiserver_refuses_what_the_types_refuse(
    cluster: devcluster.Cluster, namespace: str, mutate: Any, expected: str
) -> None:
    doc = valid_doc(namespace)
    mutate(doc)
    result = apply_raw(cluster, doc)
    assert result.returncode != 0
    assert expected in result.stderr, result.stderr
