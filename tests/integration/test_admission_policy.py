"""config/defaults in a real kube-apiserver: what a job created as v1beta1 is given at admission.

The MutatingAdmissionPolicy is applied as ``kustomize build config/defaults`` gives it, and
removed again at the end (it is cluster-wide, and the other tests of this session create jobs
without it). The apiserver gives ``spec.network.hostNames: PerJob`` to a new v1beta1 job that
leaves it unset and is not elastic, keeps what a job sets, and never touches an update.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from testkit import fixtures
from testkit.builders import a_job
from testkit.kube import eventually

from kubetrain.api import scheme, v1beta1
from kubetrain.devcluster import cluster as devcluster


def _job(name: str, namespace: str, **network: Any) -> dict[str, Any]:
    obj = scheme.encode(a_job(name).framework("pytorch").replicas("Master", 1).replicas("Worker", 1).build())
    obj["metadata"]["namespace"] = namespace
    if network:
        obj["spec"]["network"] = network
    return obj


def _created(c: devcluster.Cluster, obj: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(c.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(obj)).stdout))


def _host_names(obj: dict[str, Any]) -> str | None:
    return obj["spec"].get("network", {}).get("hostNames")


def _given(c: devcluster.Cluster, namespace: str) -> bool:
    """Whether the apiserver gives the default now: its policies are read from a watch, and the
    first seconds after a CRD is installed it answers 503 (devcluster.deploy.wait_defaults_given)."""
    probe = json.dumps(_job("probe", namespace))
    r = c.kubectl("create", "-f", "-", "-o", "json", "--dry-run=server", input=probe, check=False)
    return r.returncode == 0 and _host_names(json.loads(r.stdout)) == "PerJob"


@pytest.fixture
def policy(cluster: devcluster.Cluster, namespace: str) -> Iterator[str]:
    """``config/defaults`` applied (its manifest) until the test ends."""
    manifest = subprocess.run(
        [cluster.bins["kustomize"], "build", str(fixtures.ROOT / "config" / "defaults")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    cluster.kubectl("apply", "--server-side", "-f", "-", input=manifest)
    try:
        eventually("the policy to take effect", lambda: _given(cluster, namespace), timeout=30)
        yield manifest
    finally:
        cluster.kubectl("delete", "-f", "-", "--wait=true", input=manifest)
        eventually("the policy to be gone", lambda: not _given(cluster, namespace), timeout=30)


@pytest.mark.usefixtures("policy")
def test_a_new_v1beta1_job_that_leaves_host_names_unset_is_given_per_job(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    stored = _created(cluster, _job("plain", namespace))
    assert _host_names(stored) == v1beta1.HostNames.PER_JOB.value
    # What `kubetrain render` gives a file is what the apiserver stored.
    local = v1beta1.trainingjob_defaults.on_create(scheme.to_hub(scheme.decode(_job("plain", namespace))))
    assert scheme.to_hub(scheme.decode(stored)).spec.network == local.spec.network


@pytest.mark.usefixtures("policy")
def test_what_a_job_says_is_kept_and_an_elastic_job_is_left_per_replica(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    asked = _created(cluster, _job("asked", namespace, hostNames="PerReplica"))
    assert _host_names(asked) == "PerReplica"
    empty = _job("empty", namespace)
    empty["spec"]["network"] = {}  # as unset
    empty = _created(cluster, empty)
    assert _host_names(empty) == "PerJob"
    elastic = _job("elastic", namespace)
    elastic["spec"]["framework"]["pytorch"] = {"elastic": {"minReplicas": 1, "maxReplicas": 2}}
    elastic["spec"]["replicaSpecs"] = {"Worker": elastic["spec"]["replicaSpecs"]["Worker"]}
    stored = _created(cluster, elastic)
    assert _host_names(stored) is None
    assert scheme.to_hub(scheme.decode(stored)).spec.network.hosts is v1beta1.HostNames.PER_REPLICA


def test_an_update_is_not_given_the_default(cluster: devcluster.Cluster, namespace: str, policy: str) -> None:
    """A job stored before the policy keeps Kubeflow's names through every later write."""
    binding = v1beta1.trainingjob_defaults.POLICY_NAME
    cluster.kubectl("delete", "mutatingadmissionpolicybinding", binding)
    eventually("the policy to be unbound", lambda: not _given(cluster, namespace), timeout=30)
    old = _job("old", namespace)
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(old))
    before = json.loads(cluster.kubectl("get", "trainingjob", "old", "-n", namespace, "-o", "json").stdout)
    assert _host_names(before) is None
    cluster.kubectl("apply", "--server-side", "-f", "-", input=policy)
    eventually("the policy to take effect", lambda: _given(cluster, namespace), timeout=30)
    cluster.kubectl("label", "trainingjob", "old", "-n", namespace, "touched=yes")
    after = json.loads(cluster.kubectl("get", "trainingjob", "old", "-n", namespace, "-o", "json").stdout)
    assert after["metadata"]["labels"]["touched"] == "yes"
    assert _host_names(after) is None


@pytest.mark.usefixtures("policy")
def test_a_mistyped_job_is_still_refused_by_the_schema_with_its_path(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    """The policy patches what it is given: it does not read the object through its schema first."""
    bad = _job("mistyped", namespace)
    bad["spec"]["replicaSpecs"]["Master"]["replicas"] = "two"
    refused = cluster.kubectl("create", "-f", "-", input=json.dumps(bad), check=False)
    assert refused.returncode != 0
    assert "spec.replicaSpecs.Master.replicas" in refused.stderr
    assert "must be of type integer" in refused.stderr
    assert "policy" not in refused.stderr
