"""The objects a job owns: names, labels, owners, DNS, restart policies, ports, the Secret."""

import base64
from typing import Any

import attrs
import pytest
from testkit.builders import a_job, container, template
from testkit.world import T0

from kubetrain.api import naming, v1beta1, validation
from kubetrain.operator import render
from kubetrain.operator.frameworks import pytorch, tensorflow


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def test_one_pod_and_one_headless_service_per_replica() -> None:
    job = a_job("tj").namespace("ns").replicas("Master", 1).replicas("Worker", 2).build()
    objects = render.render(job, pytorch.FRAMEWORK)
    names = {"tj-master-0", "tj-worker-0", "tj-worker-1"}
    assert set(by_kind(objects, "Pod")) == names
    assert set(by_kind(objects, "Service")) == names
    service = by_kind(objects, "Service")["tj-worker-1"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"] == {
        naming.JOB_NAME: "tj",
        naming.REPLICA_TYPE: "worker",
        naming.REPLICA_INDEX: "1",
    }


def test_pods_have_stable_hostnames_resolvable_through_their_service() -> None:
    pod = by_kind(render.render(a_job("tj").replicas("Worker", 1).build(), pytorch.FRAMEWORK), "Pod")[
        "tj-worker-0"
    ]
    assert pod["spec"]["hostname"] == "tj-worker-0"
    assert pod["spec"]["subdomain"] == "tj-worker-0"


def per_job(builder: Any) -> v1beta1.TrainingJob:
    return builder.with_spec(network=v1beta1.NetworkSpec(host_names=v1beta1.HostNames.PER_JOB)).build()


def test_per_job_host_names_are_one_headless_service_for_the_job_and_every_pods_subdomain() -> None:
    job = per_job(a_job("tj").namespace("ns").replicas("Master", 1).replicas("Worker", 2))
    objects = render.render(job, pytorch.FRAMEWORK)
    (service,) = by_kind(objects, "Service").values()
    assert service["metadata"]["name"] == "tj"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"] == {naming.JOB_NAME: "tj"}
    assert "ports" not in service["spec"]
    # Its selector and labels are separate dicts: YAML output shows no anchors.
    assert service["spec"]["selector"] is not service["metadata"]["labels"]
    pods = by_kind(objects, "Pod")
    assert {n: (p["spec"]["hostname"], p["spec"]["subdomain"]) for n, p in pods.items()} == {
        "tj-master-0": ("tj-master-0", "tj"),
        "tj-worker-0": ("tj-worker-0", "tj"),
        "tj-worker-1": ("tj-worker-1", "tj"),
    }
    env = {e["name"]: e["value"] for e in pods["tj-worker-1"]["spec"]["containers"][0]["env"] if "value" in e}
    assert env["MASTER_ADDR"] == "tj-master-0.tj.ns.svc"


def test_per_job_host_names_reach_every_frameworks_peer_lists() -> None:
    job = per_job(a_job("tf").namespace("ns").framework("tensorflow").replicas("PS", 1).replicas("Worker", 2))
    pod = by_kind(render.render(job, tensorflow.FRAMEWORK), "Pod")["tf-worker-0"]
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert '"tf-ps-0.tf.ns.svc:2222"' in str(env["TF_CONFIG"])
    assert '"tf-worker-1.tf.ns.svc:2222"' in str(env["TF_CONFIG"])


def test_labels_keep_the_templates_own_and_add_kubetrains() -> None:
    tmpl = template(container("pytorch"), labels={"team": "vision", naming.JOB_NAME: "spoofed"})
    job = a_job("tj").replicas("Master", 1, tmpl=tmpl).build()
    pod = by_kind(render.render(job, pytorch.FRAMEWORK), "Pod")["tj-master-0"]
    assert pod["metadata"]["labels"] == {
        "team": "vision",
        naming.JOB_NAME: "tj",
        naming.REPLICA_TYPE: "master",
        naming.REPLICA_INDEX: "0",
        naming.JOB_ROLE: "master",
        naming.ATTEMPT: "0",
        naming.GANG: "tj-gang-0",
    }


def test_pods_carry_the_restart_attempt_of_their_replica_type() -> None:
    job = a_job("tj").replicas("Master", 1).replicas("Worker", 1).build()
    job = attrs.evolve(
        job, status=v1beta1.TrainingJobStatus(replica_statuses={"Worker": v1beta1.ReplicaStatus(attempt=3)})
    )
    pods = by_kind(render.render(job, pytorch.FRAMEWORK), "Pod")
    assert pods["tj-master-0"]["metadata"]["labels"][naming.ATTEMPT] == "0"
    assert pods["tj-worker-0"]["metadata"]["labels"][naming.ATTEMPT] == "3"


def test_children_are_controlled_by_the_job_once_it_has_a_uid() -> None:
    job = a_job("tj").uid("u-1").replicas("Worker", 1).build()
    for obj in render.render(job, pytorch.FRAMEWORK):
        (owner,) = obj["metadata"]["ownerReferences"]
        assert owner == {
            "apiVersion": v1beta1.API_VERSION,
            "kind": "TrainingJob",
            "name": "tj",
            "uid": "u-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    assert all(
        "ownerReferences" not in o["metadata"]
        for o in render.render(a_job("tj").replicas("Worker", 1).build(), pytorch.FRAMEWORK)
    )


@pytest.mark.parametrize(
    ("policy", "pod_policy"),
    [
        (v1beta1.RestartPolicy.ALWAYS, "Always"),
        (v1beta1.RestartPolicy.ON_FAILURE, "OnFailure"),
        (v1beta1.RestartPolicy.NEVER, "Never"),
        (v1beta1.RestartPolicy.EXIT_CODE, "Never"),
    ],
)
def test_restart_policy_reaches_the_pod(policy: v1beta1.RestartPolicy, pod_policy: str) -> None:
    job = a_job("tj").replicas("Worker", 1, restart_policy=policy).build()
    assert (
        by_kind(render.render(job, pytorch.FRAMEWORK), "Pod")["tj-worker-0"]["spec"]["restartPolicy"]
        == pod_policy
    )


def test_framework_default_restart_policy() -> None:
    job = a_job("tj").framework("tensorflow").replicas("Worker", 1).build()
    pod = by_kind(render.render(job, tensorflow.FRAMEWORK), "Pod")["tj-worker-0"]
    assert pod["spec"]["restartPolicy"] == "OnFailure"


def test_the_framework_port_is_declared_once() -> None:
    tmpl = template(container("pytorch", ports=[{"containerPort": 23456, "name": "mine"}]))
    job = a_job("tj").replicas("Worker", 1, tmpl=tmpl).replicas("Master", 1).build()
    pods = by_kind(render.render(job, pytorch.FRAMEWORK), "Pod")
    assert pods["tj-worker-0"]["spec"]["containers"][0]["ports"] == [{"containerPort": 23456, "name": "mine"}]
    assert pods["tj-master-0"]["spec"]["containers"][0]["ports"] == [
        {"name": "pytorchjob-port", "containerPort": 23456}
    ]


def test_rendering_does_not_touch_the_job() -> None:
    job = a_job("tj").replicas("Worker", 2).build()
    before = repr(job)
    render.render(job, pytorch.FRAMEWORK)
    assert repr(job) == before


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (
            a_job("tj").replicas("PS", 1).build(),
            "spec.replicaSpecs.PS: pytorch has no replica type PS (allowed: Master, Worker)",
        ),
        (
            a_job("tj").replicas("Master", 2).build(),
            "spec.replicaSpecs.Master.replicas: pytorch allows at most 1 Master",
        ),
        (
            a_job("tj").replicas("Worker", 1, tmpl=template(container("a"), container("b"))).build(),
            "spec.replicaSpecs.Worker.template.spec.containers: name one container 'pytorch', or keep a single container",
        ),
        (
            a_job("tj").framework("tensorflow").replicas("Chief", 1).replicas("Master", 1).build(),
            "spec.replicaSpecs: tensorflow takes a Chief or a Master, not both",
        ),
        (
            a_job("tj").framework("tensorflow").replicas("PS", 2).build(),
            "spec.replicaSpecs: tensorflow needs a Chief, a Master or a Worker",
        ),
    ],
)
def test_jobs_a_framework_cannot_run_are_refused_with_the_field(
    job: v1beta1.TrainingJob, message: str
) -> None:
    fw = tensorflow.FRAMEWORK if job.spec.framework.name == "tensorflow" else pytorch.FRAMEWORK
    with pytest.raises(validation.ValidationError) as e:
        render.render(job, fw)
    assert message in str(e.value).splitlines()


def test_a_single_container_need_not_be_named_after_the_framework() -> None:
    job = a_job("tj").replicas("Worker", 1, tmpl=template(container("trainer"))).build()
    pod = by_kind(render.render(job, pytorch.FRAMEWORK), "Pod")["tj-worker-0"]
    assert any(e["name"] == "RANK" for e in pod["spec"]["containers"][0]["env"])


def test_a_framework_without_a_secret_renders_none_and_mounts_nothing() -> None:
    objects = render.render(
        a_job("tj").replicas("Master", 1).replicas("Worker", 1).build(), pytorch.FRAMEWORK
    )
    assert by_kind(objects, "Secret") == {}
    for pod in by_kind(objects, "Pod").values():
        assert "volumes" not in pod["spec"]
        assert "volumeMounts" not in pod["spec"]["containers"][0]


def test_a_framework_secret_is_one_owned_secret_mounted_read_only_in_every_main_container() -> None:
    fw = attrs.evolve(
        pytorch.FRAMEWORK, secret=lambda world: {"token": f"for {world.name}"}, secret_mount="/var/run/peer"
    )
    tmpl = template(container("pytorch"), container("sidecar"))
    job = a_job("tj").uid("u-1").replicas("Master", 1).replicas("Worker", 1, tmpl=tmpl).build()
    objects = render.render(job, fw)
    (secret,) = by_kind(objects, "Secret").values()
    assert secret["metadata"]["name"] == naming.secret_name("tj") == "tj-ssh"
    assert secret["metadata"]["labels"] == {naming.JOB_NAME: "tj"}
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"token": base64.b64encode(b"for tj").decode()}
    for pod in by_kind(objects, "Pod").values():
        assert pod["spec"]["volumes"] == [
            {"name": "kubetrain-secret", "secret": {"secretName": "tj-ssh", "defaultMode": 0o600}}
        ]
        main, *others = pod["spec"]["containers"]
        assert main["volumeMounts"] == [
            {"name": "kubetrain-secret", "mountPath": "/var/run/peer", "readOnly": True}
        ]
        assert all("volumeMounts" not in c for c in others)


def test_every_rank_knows_its_attempt_the_restarts_and_why_the_last_happened() -> None:
    job = a_job("tj").framework("pytorch").replicas("Master", 1).replicas("Worker", 1).build()
    fresh = {
        e["name"]: e["value"]
        for e in by_kind(render.render(job, pytorch.FRAMEWORK), "Pod")["tj-worker-0"]["spec"]["containers"][
            0
        ]["env"]
    }
    assert [fresh[n] for n in render.RESTART_ENV] == ["0", "0", "", ""]
    record = v1beta1.FailureRecord(
        time=T0,
        replica_type="Worker",
        index=0,
        pod="tj-worker-0",
        exit_code=137,
        reason="OOMKilled",
        failure_class=v1beta1.FailureClass.USER_CODE,
        action=v1beta1.FailureAction.RESTART,
    )
    tolerated = attrs.evolve(record, reason="Evicted", action=v1beta1.FailureAction.TOLERATE)
    status = v1beta1.TrainingJobStatus(
        replica_statuses={
            "Master": v1beta1.ReplicaStatus(attempt=2),
            "Worker": v1beta1.ReplicaStatus(attempt=2),
        },
        restarts=v1beta1.RestartCounts(user_code=1, uncharged=1),
        failures=(record, tolerated),
    )
    pod = by_kind(render.render(attrs.evolve(job, status=status), pytorch.FRAMEWORK), "Pod")["tj-worker-0"]
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert [env[n] for n in render.RESTART_ENV] == ["2", "2", "UserCode:OOMKilled", ""], (
        "a tolerated failure is no restart"
    )
    assert pod["metadata"]["labels"][naming.ATTEMPT] == env[render.RESTART_ATTEMPT_ENV]
    user = template(container("pytorch", env=[{"name": render.RESTARTS_ENV, "value": "mine"}]))
    mine = a_job("tj").framework("pytorch").replicas("Master", 1, tmpl=user).build()
    kept = by_kind(render.render(mine, pytorch.FRAMEWORK), "Pod")["tj-master-0"]["spec"]["containers"][0][
        "env"
    ]
    assert [e["value"] for e in kept if e["name"] == render.RESTARTS_ENV] == ["mine"], "the user's value wins"


@pytest.mark.parametrize(
    ("given", "rendered"),
    [
        ({"hostNetwork": True}, "ClusterFirstWithHostNet"),
        ({"hostNetwork": True, "dnsPolicy": "Default"}, "Default"),
        ({"hostNetwork": True, "dnsPolicy": "ClusterFirst"}, "ClusterFirst"),
        ({"hostNetwork": False}, None),
        ({}, None),
    ],
)
def test_a_pod_on_the_hosts_network_resolves_service_names_through_the_cluster_dns(
    given: dict[str, Any], rendered: str | None
) -> None:
    # ClusterFirst on the host's network falls back to the node's resolv.conf, where the peers'
    # Service names are unknown; a dnsPolicy the template sets is kept.
    tmpl = template(container("pytorch"))
    tmpl["spec"].update(given)
    job = a_job("tj").replicas("Master", 1, tmpl=tmpl).build()
    pod = by_kind(render.render(job, pytorch.FRAMEWORK), "Pod")["tj-master-0"]
    assert pod["spec"].get("dnsPolicy") == rendered


def test_the_restart_env_comes_before_the_frameworks_so_its_values_may_name_the_attempt() -> None:
    # The kubelet expands $(NAME) only for a variable set earlier in the container's env.
    job = a_job("tj").replicas("Master", 1).build()
    for in_place in (False, True):
        pod = by_kind(render.render(job, pytorch.FRAMEWORK, in_place=in_place), "Pod")["tj-master-0"]
        names = [e["name"] for e in pod["spec"]["containers"][0]["env"]]
        assert names.index(render.RESTART_ATTEMPT_ENV) < names.index("MASTER_ADDR"), in_place
