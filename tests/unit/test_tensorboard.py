"""A job's TensorBoard: the volume it is found on, the objects rendered, its status and lifetime."""

from __future__ import annotations

import copy
import pathlib
import re
from typing import Any

import attrs
import pytest
from testkit.builders import a_job, container, template
from testkit.world import World

from kubetrain.api import crd, naming, scheme, v1alpha1, v1beta1, validation
from kubetrain.devcluster import images
from kubetrain.operator import lifecycle, render, tensorboard
from kubetrain.operator.frameworks import pytorch, registry
from kubetrain.operator.webhooks import dryrun, validating

PVC = {"name": "logs", "persistentVolumeClaim": {"claimName": "training-logs"}}
BOARD = v1beta1.TensorBoardSpec(log_dir="/logs/run")


def mounted(volume: dict[str, Any], mount_path: str = "/logs", **mount: Any) -> dict[str, Any]:
    tmpl = template(
        container("pytorch", volumeMounts=[{"name": volume["name"], "mountPath": mount_path, **mount}])
    )
    tmpl["spec"]["volumes"] = [volume]
    return tmpl


def job_with(
    volume: dict[str, Any] = PVC, board: v1beta1.TensorBoardSpec = BOARD, name: str = "tj", **mount: Any
) -> v1beta1.TrainingJob:
    return (
        a_job(name)
        .uid("u-1")
        .replicas("Master", 1, tmpl=mounted(volume, **mount))
        .replicas("Worker", 2)
        .with_spec(tensorboard=board)
        .build()
    )


def refusal(build: Any) -> list[str]:
    with pytest.raises(validation.ValidationError) as e:
        build()
    return str(e.value).splitlines()


def by_kind(job: v1beta1.TrainingJob) -> dict[str, dict[str, Any]]:
    return {o["kind"]: o for o in render.render(job, pytorch.FRAMEWORK) if tensorboard.is_tensorboard(o)}


# --- the volume is found, not repeated -------------------------------------------------------------


@pytest.mark.parametrize(
    "volume",
    [
        PVC,
        {"name": "logs", "hostPath": {"path": "/tmp/logs", "type": "DirectoryOrCreate"}},
        {"name": "logs", "nfs": {"server": "nfs.example.com", "path": "/exports"}},
        {"name": "logs", "csi": {"driver": "efs.csi.aws.com"}},
    ],
)
def test_a_log_dir_on_a_volume_the_pods_share_is_accepted(volume: dict[str, Any]) -> None:
    assert job_with(volume).spec.tensorboard == BOARD


@pytest.mark.parametrize(
    ("volume", "words"),
    [
        (
            {"name": "logs", "emptyDir": {}},
            "each pod gets its own emptyDir, so TensorBoard would see none of it",
        ),
        (
            {"name": "logs", "ephemeral": {"volumeClaimTemplate": {}}},
            "each pod gets its own ephemeral volume",
        ),
        ({"name": "logs", "configMap": {"name": "c"}}, "a configMap volume the replicas cannot write to"),
        ({"name": "logs", "secret": {"secretName": "s"}}, "a secret volume the replicas cannot write to"),
    ],
)
def test_a_log_dir_on_a_volume_of_each_pod_is_refused_with_what_to_use_instead(
    volume: dict[str, Any], words: str
) -> None:
    (message,) = refusal(lambda: job_with(volume))
    assert message.startswith("tensorboard.logDir: /logs/run is on volume 'logs' of replica type Master")
    assert words in message
    assert "ReadWriteMany persistentVolumeClaim, nfs, or hostPath" in message


def test_a_log_dir_on_no_mounted_volume_is_refused_at_spec_tensorboard_log_dir() -> None:
    doc = scheme.encode(job_with())
    doc["spec"]["tensorboard"]["logDir"] = "/elsewhere/run"
    with pytest.raises(validation.ValidationError) as e:
        scheme.decode(doc)
    (error,) = e.value.errors
    assert validation.format_path(error.path) == "spec.tensorboard.logDir"
    assert error.message.startswith(
        "/elsewhere/run is on no volume of the replicas: mount one the pods share"
    )


def test_a_mount_path_is_a_directory_not_a_prefix() -> None:
    # /logsdir is not under /logs.
    (message,) = refusal(lambda: job_with(board=v1beta1.TensorBoardSpec(log_dir="/logsdir")))
    assert "is on no volume" in message


def test_the_deepest_mount_decides_as_the_kernel_would() -> None:
    tmpl = mounted({"name": "scratch", "emptyDir": {}})
    tmpl["spec"]["containers"][0]["volumeMounts"].append({"name": "logs", "mountPath": "/logs/run"})
    tmpl["spec"]["volumes"].append(PVC)
    ok = a_job().replicas("Master", 1, tmpl=tmpl).with_spec(tensorboard=BOARD).build()
    assert by_kind(ok)["Deployment"]["spec"]["template"]["spec"]["volumes"] == [PVC]
    above = v1beta1.TensorBoardSpec(log_dir="/logs/other")  # on the emptyDir only
    assert (
        "emptyDir"
        in refusal(lambda: a_job().replicas("Master", 1, tmpl=tmpl).with_spec(tensorboard=above).build())[0]
    )


def test_a_mount_whose_volume_differs_per_pod_by_sub_path_expr_is_refused() -> None:
    (message,) = refusal(lambda: job_with(subPathExpr="$(POD_NAME)"))
    assert "subPathExpr, which differs per pod" in message


def test_the_tensorboard_needs_a_name_that_leaves_room_for_its_suffix() -> None:
    name = "a" * 52  # 52 + len("-tensorboard") = 64
    (message,) = refusal(lambda: job_with(name=name))
    assert message == (
        f"metadata.name: too long for a TensorBoard: Service name '{name}-tensorboard' has 64 characters, at most 63"
    )
    assert job_with(name="a" * 51).metadata.name


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"limit": {"cpu": "1"}}, "resources.limit: unknown field"),
        ({"limits": ["cpu"]}, "resources.limits: expected a map of resource quantities, got array"),
        (
            {"limits": {"cpu": "1x"}},
            "resources.limits.cpu: expected a quantity such as 2, '500m' or '1Gi', got '1x'",
        ),
        ({"requests": {"memory": True}}, "resources.requests.memory: expected a quantity"),
    ],
)
def test_resources_are_quantities(resources: dict[str, Any], expected: str) -> None:
    (message,) = refusal(lambda: v1beta1.TensorBoardSpec(log_dir="/logs", resources=resources))
    assert message.startswith(expected)


def test_a_relative_log_dir_is_refused() -> None:
    (message,) = refusal(lambda: v1beta1.TensorBoardSpec(log_dir="logs"))
    assert message.startswith("logDir: 'logs' does not match ^/")


# --- what runs -----------------------------------------------------------------------------------


def test_one_deployment_and_one_service_owned_by_the_job() -> None:
    objects = by_kind(job_with())
    assert set(objects) == {"Deployment", "Service"}
    for obj in objects.values():
        assert obj["metadata"]["name"] == "tj-tensorboard" == naming.tensorboard_name("tj")
        assert obj["metadata"]["namespace"] == "default"
        (owner,) = obj["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "TrainingJob",
            "tj",
            "u-1",
            True,
        )
        assert obj["metadata"]["labels"] == {naming.JOB_NAME: "tj", naming.JOB_ROLE: "tensorboard"}
    deployment = objects["Deployment"]["spec"]
    pod = deployment["template"]
    # The labels a client's port-forward selects the pod by; no replica labels: it is not a replica.
    assert (
        pod["metadata"]["labels"] == deployment["selector"]["matchLabels"] == naming.tensorboard_labels("tj")
    )
    assert naming.REPLICA_TYPE not in pod["metadata"]["labels"]
    assert objects["Service"]["spec"]["selector"] == naming.tensorboard_labels("tj")
    assert objects["Service"]["spec"]["ports"] == [
        {"name": "tensorboard", "port": 6006, "targetPort": "tensorboard"}
    ]
    (c,) = pod["spec"]["containers"]
    assert c["ports"] == [{"name": "tensorboard", "containerPort": 6006}]
    assert [c["image"], *c["command"], *c["args"]] == [
        "kubetrain.local/tensorboard:2.21.0",
        "tensorboard",
        "--logdir=/logs/run",
        "--bind_all",
        "--port=6006",
    ]
    assert c["resources"] == {"requests": {"cpu": "100m", "memory": "256Mi"}}
    # The replicas' volume, read-only, at the same path: logDir means the same in both.
    assert pod["spec"]["volumes"] == [PVC]
    assert c["volumeMounts"] == [{"name": "logs", "mountPath": "/logs", "readOnly": True}]


def test_image_resources_and_sub_path_are_the_jobs() -> None:
    board = v1beta1.TensorBoardSpec(
        log_dir="/logs/run", image="example.com/tb:1", resources={"limits": {"cpu": 1}}
    )
    (c,) = by_kind(job_with(board=board, subPath="team-a"))["Deployment"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert c["image"] == "example.com/tb:1"
    assert c["resources"] == {"limits": {"cpu": 1}}
    assert c["volumeMounts"] == [
        {"name": "logs", "mountPath": "/logs", "subPath": "team-a", "readOnly": True}
    ]


def test_a_job_without_a_tensorboard_renders_none() -> None:
    job = a_job("tj").replicas("Master", 1).build()
    assert by_kind(job) == {}
    assert tensorboard.status("tj", "default", job.spec) is None


# --- status and lifetime (the lifecycle step) ---------------------------------------------------------


def test_the_address_is_in_status_from_the_first_step_and_it_is_created_once() -> None:
    w = World(job_with(), pytorch.FRAMEWORK)
    first = w.reconcile()
    assert first.tensorboard
    assert w.status.tensorboard == v1beta1.TensorBoardStatus(
        name="tj-tensorboard", address="http://tj-tensorboard.default.svc:6006"
    )
    w.settle()
    assert w.tensorboards == 1
    assert w.state is v1beta1.JobState.RUNNING


def test_it_is_kept_when_the_job_finishes_and_through_its_ttl() -> None:
    job = job_with()
    job = attrs.evolve(
        job,
        spec=attrs.evolve(
            job.spec,
            run_policy=v1beta1.RunPolicy(
                clean_pod_policy=v1beta1.CleanPodPolicy.ALL, ttl_seconds_after_finished=60
            ),
        ),
    )
    w = World(job, pytorch.FRAMEWORK)
    w.settle()
    w.exit("tj-master-0", 0)
    finished = w.reconcile()
    assert w.state is v1beta1.JobState.SUCCEEDED
    # cleanPodPolicy All: every replica's pod, and nothing else.
    assert {d.pod for d in finished.delete} == {"tj-master-0", "tj-worker-0", "tj-worker-1"}
    assert w.status.tensorboard is not None
    assert not finished.tensorboard
    w.tick(61)
    assert w.reconcile().delete_job  # the garbage collector takes the TensorBoard with the job
    assert w.tensorboards == 1


def test_a_suspended_job_gets_its_tensorboard_on_resume_and_keeps_one_it_has() -> None:
    job = job_with()
    suspended = attrs.evolve(job, spec=attrs.evolve(job.spec, run_policy=v1beta1.RunPolicy(suspend=True)))
    w = World(suspended, pytorch.FRAMEWORK)
    assert not w.reconcile().tensorboard
    w.job = job
    assert w.reconcile().tensorboard
    w.job = suspended
    w.settle()
    assert w.tensorboards == 1  # kept, not made again


def test_a_tensorboard_whose_service_is_gone_is_created_again() -> None:
    step = lifecycle.step(World(job_with(), pytorch.FRAMEWORK).input())
    inp = attrs.evolve(World(job_with(), pytorch.FRAMEWORK).input(), status=step.status, tensorboard=False)
    assert lifecycle.step(inp).tensorboard
    assert not lifecycle.step(attrs.evolve(inp, tensorboard=True)).tensorboard


# --- admission --------------------------------------------------------------------------------------


def encoded(job: v1beta1.TrainingJob) -> dict[str, Any]:
    return copy.deepcopy(scheme.encode(job))


def test_a_tensorboard_may_be_added_but_not_changed_or_removed() -> None:
    job = job_with()
    without = encoded(attrs.evolve(job, spec=attrs.evolve(job.spec, tensorboard=None)))
    assert validating.errors(encoded(job), without) == []
    changed = encoded(
        attrs.evolve(job, spec=attrs.evolve(job.spec, tensorboard=v1beta1.TensorBoardSpec(log_dir="/logs")))
    )
    for new in (changed, without):
        (error,) = validating.errors(new, encoded(job))
        assert str(error).startswith("spec.tensorboard: field is immutable once set")


def test_the_dry_run_sends_the_tensorboard_and_maps_its_fields_to_spec_tensorboard() -> None:
    job = job_with()
    sent = [
        o for o in dryrun.samples(job, registry.default().get("pytorch")) if tensorboard.is_tensorboard(o)
    ]
    assert sorted(o["kind"] for o in sent) == ["Deployment", "Service"]
    deployment = next(o for o in sent if o["kind"] == "Deployment")
    where = "spec.template.spec.containers[0]"
    assert dryrun.job_path(job, deployment, f"{where}.resources.limits[cpu]") == (
        "spec",
        "tensorboard",
        "resources",
        "limits",
        "cpu",
    )
    assert dryrun.job_path(job, deployment, f"{where}.image") == ("spec", "tensorboard", "image")
    assert dryrun.job_path(job, deployment, "spec.template.spec.volumes[0]") == ("spec", "tensorboard")
    assert dryrun.job_path(job, deployment, "metadata.name") == ("metadata", "name")


# --- v1alpha1 and the CRD ---------------------------------------------------------------------------


def test_v1alpha1_says_the_same_and_converts_both_ways() -> None:
    hub = job_with()
    alpha = scheme.convert(hub, v1alpha1.API_VERSION)
    assert isinstance(alpha, v1alpha1.TrainingJob)
    assert alpha.spec.tensorboard == hub.spec.tensorboard
    assert scheme.encode(alpha)["spec"]["tensorboard"] == {"logDir": "/logs/run"}
    assert scheme.to_hub(alpha) == hub
    status = attrs.evolve(hub.status, tensorboard=tensorboard.status("tj", "default", hub.spec))
    with_status = attrs.evolve(hub, status=status)
    assert scheme.to_hub(scheme.convert(with_status, v1alpha1.API_VERSION)) == with_status


def test_v1alpha1_refuses_an_unshared_log_dir_too() -> None:
    alpha = scheme.encode(scheme.convert(job_with(), v1alpha1.API_VERSION))
    for r in alpha["spec"]["replicaSpecs"]:
        for v in r["template"]["spec"].get("volumes", []):
            v.pop("persistentVolumeClaim")
            v["emptyDir"] = {}
    with pytest.raises(validation.ValidationError) as e:
        scheme.decode(alpha)
    assert "spec.tensorboard.logDir: /logs/run is on volume 'logs' of replica type MASTER" in str(e.value)


def test_every_tensorboard_field_says_what_it_does_in_the_crd() -> None:
    for version in crd.custom_resource_definition()["spec"]["versions"]:
        root = version["schema"]["openAPIV3Schema"]
        spec = root["properties"]["spec"]["properties"]["tensorboard"]
        assert set(spec["properties"]) == {"logDir", "image", "resources"}
        for name, field in spec["properties"].items():
            assert len(field.get("description", "")) > 40, name
        assert spec["required"] == ["logDir"]
        assert any("-tensorboard must fit in 63" in r["message"] for r in root["x-kubernetes-validations"])
    (beta,) = (
        v["schema"]["openAPIV3Schema"]
        for v in crd.custom_resource_definition()["spec"]["versions"]
        if v["name"] == "v1beta1"
    )
    status = beta["properties"]["status"]["properties"]["tensorboard"]["properties"]
    assert {k: bool(v["description"]) for k, v in status.items()} == {"name": True, "address": True}


# --- the image ---------------------------------------------------------------------------------------


def test_the_default_image_is_the_one_built_here_from_pinned_wheels_and_loaded_on_real_nodes() -> None:
    image = images.tensorboard()
    assert image.ref == tensorboard.DEFAULT_IMAGE
    assert all(re.fullmatch(r"[a-z0-9-]+==[0-9.]+", r) for r in image.requirements), image.requirements
    assert "tensorboard==2.21.0" in image.requirements
    assert images.digest(attrs.evolve(image, requirements=image.requirements[:-1])) != images.digest(image)
    assert image.ref in {i.ref for i in images.for_nodes(pathlib.Path("."), pathlib.Path("pause"))}
