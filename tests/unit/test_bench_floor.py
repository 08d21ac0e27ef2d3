"""The floor of any operator, in both benchmarks, is made of the operator's own objects.

A pod the operator renders (its env, labels, ports and owner reference) costs the apiserver about
40 % more per write than a bare one; a floor made of bare pods would charge the operator for what
any operator making these pods pays.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kubetrain_bench.jobs.bodies import job_body, operator_objects
from kubetrain_bench.writes.report import per_job

UID = str(uuid.uuid4())


def stored(name: str, host_names: str) -> dict[str, Any]:
    """The benchmark's TrainingJob as the apiserver answers its create."""
    job = job_body(name, 4, "bench", host_names)
    job["metadata"] = {
        "name": name,
        "namespace": "bench",
        "uid": UID,
        "generation": 1,
        "resourceVersion": "7",
    }
    return job


def test_the_floor_makes_the_pods_the_operator_renders_owned_by_the_job() -> None:
    pods, _, last = operator_objects([stored("job-00000", "PerJob")])
    names = [p["metadata"]["name"] for p in pods]
    assert names == ["job-00000-master-0", "job-00000-worker-0", "job-00000-worker-1", "job-00000-worker-2"]
    assert last == {"job-00000-worker-2"}
    for pod in pods:
        (owner,) = pod["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("TrainingJob", UID, True)
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        assert env["MASTER_ADDR"] == "job-00000-master-0.job-00000.bench.svc"
        assert env["WORLD_SIZE"] == "4"


def test_one_service_per_job_comes_before_its_first_pod() -> None:
    _, services, _ = operator_objects([stored("job-00000", "PerJob")])
    assert list(services) == ["job-00000-master-0"]
    assert services["job-00000-master-0"]["metadata"]["name"] == "job-00000"
    assert services["job-00000-master-0"]["spec"]["clusterIP"] == "None"


def test_a_service_per_replica_comes_before_its_own_pod() -> None:
    pods, services, _ = operator_objects([stored("job-00001", "PerReplica")])
    assert sorted(services) == sorted(p["metadata"]["name"] for p in pods)
    assert all(s["metadata"]["name"] == pod for pod, s in services.items())


def test_a_job_costs_its_own_writes_and_those_of_the_pods_the_operator_renders() -> None:
    ms = {"TrainingJob create": 2.0, "TrainingJob status: Created": 3.0, "TrainingJob status: Running": 4.0}
    ms["Service create"] = 0.5
    for kind, k in (("bare pod", 1.0), ("operator's pod", 2.0)):
        ms |= {f"{kind}: create": k, f"{kind}: binding": k, f"{kind}: status Running": k}
    job = per_job(ms, replicas=4, services=2)
    assert job["bare pods"] == pytest.approx(12.0)
    assert job["operator"] == pytest.approx(2.0 + 3.0 + 4.0 + 2 * 0.5 + 4 * 6.0)
    assert job["ratio"] == pytest.approx(34.0 / 12.0)
