"""Every v1beta1 sample runs on the local cluster: all its pods, the job Running, then Succeeded.

One operator serves the module. For MPI, the launcher is created only once every worker
is ready, and the job's ssh Secret and hostfile exist.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator

import pytest
import yaml
from testkit import operator
from testkit.jobs import SAMPLES, create, finish, pods, running_pods, wait_state

from kubetrain.api import scheme, wire
from kubetrain.devcluster import cluster as devcluster

SAMPLE_NAMES = sorted(p.stem for p in SAMPLES.glob("*.yaml"))


@pytest.fixture(scope="module", autouse=True)
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    op = operator.start(cluster)
    yield
    op.stop()


def replica_count(path: pathlib.Path) -> int:
    job = scheme.to_hub(scheme.decode(yaml.safe_load(path.read_text())))
    return sum(r.replicas for r in job.spec.replica_specs.values())


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_the_sample_runs(cluster: devcluster.Cluster, namespace: str, name: str) -> None:
    job = yaml.safe_load((SAMPLES / f"{name}.yaml").read_text())
    job_name = create(cluster, namespace, job)
    running = running_pods(cluster, namespace, job_name, replica_count(SAMPLES / f"{name}.yaml"))
    wait_state(cluster, namespace, job_name, "Running")
    status = finish(cluster, namespace, job_name, sorted(running))
    assert status["completionTime"]


def test_the_mpi_launcher_starts_after_its_workers_are_ready(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = yaml.safe_load((SAMPLES / "mpi-horovod.yaml").read_text())
    name = create(cluster, namespace, job)
    running = running_pods(cluster, namespace, name, replica_count(SAMPLES / "mpi-horovod.yaml"))
    launcher = next(p for n, p in running.items() if "-launcher-" in n)
    created = wire.parse_time(launcher["metadata"]["creationTimestamp"])
    for n, p in running.items():
        if "-worker-" in n:
            ready = next(c for c in p["status"]["conditions"] if c["type"] == "Ready")
            assert wire.parse_time(ready["lastTransitionTime"]) <= created, (
                f"{n} was not ready before the launcher"
            )
    secret = json.loads(cluster.kubectl("get", "secret", f"{name}-ssh", "-n", namespace, "-o", "json").stdout)
    assert {"authorized_keys"} <= set(secret["data"])
    config = json.loads(
        cluster.kubectl("get", "configmap", f"{name}-config", "-n", namespace, "-o", "json").stdout
    )
    assert f"{name}-worker-0.{namespace}.svc slots=" in config["data"]["hostfile"]
    assert sorted(pods(cluster, namespace, name)) == sorted(running)
