"""What kubetrain renders for Volcano, checked by a real apiserver against Volcano's own schema.

Volcano's modules do not build here, so its scheduler never runs in these tests; its PodGroup
CRD (from the volcano.sh/volcano module archive, kept by hack/build-schedulers.sh) is installed
in the apiserver tier, and every object the Volcano backend renders is created with strict field
validation: an unknown or mistyped field is refused, not pruned in silence.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from testkit.builders import a_job

from kubetrain.api import v1beta1
from kubetrain.devcluster import binaries
from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator import render
from kubetrain.operator.frameworks import mpi, pytorch
from kubetrain.operator.scheduling import volcano


@pytest.fixture(scope="module")
def volcano_crd(cluster: devcluster.Cluster) -> None:
    cluster.kubectl("apply", "--server-side", "-f", str(binaries.manifest("volcano-podgroup-crd.yaml")))
    cluster.wait_established(name="podgroups.scheduling.volcano.sh")


def create_strict(c: devcluster.Cluster, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    out = c.kubectl(
        "create", "-n", namespace, "--validate=strict", "-o", "json", "-f", "-", input=json.dumps(obj)
    )
    return dict(json.loads(out.stdout))


@pytest.mark.usefixtures("volcano_crd")
@pytest.mark.parametrize(
    ("fw", "replicas"),
    [(pytorch.FRAMEWORK, {"Master": 1, "Worker": 3}), (mpi.FRAMEWORK, {"Launcher": 1, "Worker": 2})],
    ids=["pytorch", "mpi"],
)
def test_volcano_podgroups_and_pods_are_valid_as_volcano_defines_them(
    cluster: devcluster.Cluster, namespace: str, fw: Any, replicas: dict[str, int]
) -> None:
    b = a_job("vc").framework(fw.name)
    for t, n in replicas.items():
        b = b.replicas(t, n)
    policy = v1beta1.SchedulingPolicy(
        min_available=2, queue="research", priority_class="system-cluster-critical"
    )
    job = b.with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=policy)).namespace(namespace).build()
    objects = render.render(job, fw, volcano.BACKEND)
    group = next(o for o in objects if o["kind"] == "PodGroup")
    stored = create_strict(cluster, namespace, group)
    assert stored["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    # Nothing was pruned: what Volcano reads is what kubetrain wrote.
    assert stored["spec"] == {
        "minMember": 2,
        "queue": "research",
        "priorityClassName": "system-cluster-critical",
    }
    # No controller-manager in this tier: the ServiceAccount pods need is made by hand.
    cluster.kubectl("create", "serviceaccount", "default", "-n", namespace)
    for pod in (o for o in objects if o["kind"] == "Pod"):
        pod_stored = create_strict(cluster, namespace, pod)
        assert pod_stored["metadata"]["annotations"][volcano.ANNOTATION] == "vc-gang-0"
        assert pod_stored["spec"]["schedulerName"] == "volcano"
        assert pod_stored["spec"]["priorityClassName"] == "system-cluster-critical"


@pytest.mark.usefixtures("volcano_crd")
def test_a_field_volcano_does_not_define_would_be_refused(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    # The check above can fail: strict validation refuses what the schema does not have.
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "bad"},
        "spec": {"minMember": 1, "minCount": 1},
    }
    result = cluster.kubectl(
        "create", "-n", namespace, "--validate=strict", "-f", "-", input=json.dumps(group), check=False
    )
    assert result.returncode != 0
    assert 'unknown field "spec.minCount"' in result.stderr
