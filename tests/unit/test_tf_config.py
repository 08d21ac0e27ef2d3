"""TF_CONFIG exactly as TfJob and the Kubeflow TFJob defined it."""

import json
from typing import Any

from testkit.builders import a_job, container, template
from testkit.rendered import framework_env

from kubetrain.api import v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import tensorflow


def env_of(pod: dict[str, Any], container_name: str = "tensorflow") -> dict[str, str]:
    c = next(c for c in pod["spec"]["containers"] if c["name"] == container_name)
    return framework_env(c)


def pods(job: v1beta1.TrainingJob) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in render.render(job, tensorflow.FRAMEWORK) if o["kind"] == "Pod"}


def test_master_worker_ps_cluster_and_task() -> None:
    job = (
        a_job("mnist")
        .namespace("ml")
        .framework("tensorflow")
        .replicas("Master", 1)
        .replicas("Worker", 2)
        .replicas("PS", 1)
        .build()
    )
    config = json.loads(env_of(pods(job)["mnist-worker-1"])["TF_CONFIG"])
    assert config == {
        "cluster": {
            "chief": ["mnist-master-0.ml.svc:2222"],
            "worker": ["mnist-worker-0.ml.svc:2222", "mnist-worker-1.ml.svc:2222"],
            "ps": ["mnist-ps-0.ml.svc:2222"],
        },
        "task": {"type": "worker", "index": 1},
        "environment": "cloud",
    }


def test_every_replica_sees_the_same_cluster_and_its_own_task() -> None:
    job = (
        a_job("j")
        .framework("tensorflow")
        .replicas("Chief", 1)
        .replicas("Worker", 2)
        .replicas("PS", 2)
        .build()
    )
    configs = {name: json.loads(env_of(p)["TF_CONFIG"]) for name, p in pods(job).items()}
    assert len({json.dumps(c["cluster"], sort_keys=True) for c in configs.values()}) == 1
    assert {(c["task"]["type"], c["task"]["index"]) for c in configs.values()} == {
        ("chief", 0),
        ("worker", 0),
        ("worker", 1),
        ("ps", 0),
        ("ps", 1),
    }


def test_the_evaluator_is_not_a_cluster_member() -> None:
    job = a_job("j").framework("tensorflow").replicas("Chief", 1).replicas("Evaluator", 1).build()
    config = json.loads(env_of(pods(job)["j-evaluator-0"])["TF_CONFIG"])
    assert config["cluster"] == {"chief": ["j-chief-0.default.svc:2222"]}
    assert config["task"] == {"type": "evaluator", "index": 0}


def test_ports_come_from_each_replica_type() -> None:
    job = a_job("j").framework("tensorflow").replicas("Worker", 1, port=3000).replicas("PS", 1).build()
    config = json.loads(env_of(pods(job)["j-ps-0"])["TF_CONFIG"])
    assert config["cluster"] == {"worker": ["j-worker-0.default.svc:3000"], "ps": ["j-ps-0.default.svc:2222"]}


def test_environment_option() -> None:
    job = (
        a_job("j")
        .framework("tensorflow", tensorflow=v1beta1.TensorFlowOptions(environment="local"))
        .replicas("Worker", 1)
        .build()
    )
    assert json.loads(env_of(pods(job)["j-worker-0"])["TF_CONFIG"])["environment"] == "local"


def test_only_the_tensorflow_container_gets_tf_config() -> None:
    tmpl = template(container("tensorflow"), container("sidecar"))
    job = a_job("j").framework("tensorflow").replicas("Worker", 1, tmpl=tmpl).build()
    pod = pods(job)["j-worker-0"]
    assert "TF_CONFIG" in env_of(pod)
    assert env_of(pod, "sidecar") == {}


def test_a_tf_config_set_by_the_user_is_kept() -> None:
    tmpl = template(container("tensorflow", env=[{"name": "TF_CONFIG", "value": "{}"}]))
    job = a_job("j").framework("tensorflow").replicas("Worker", 1, tmpl=tmpl).build()
    assert env_of(pods(job)["j-worker-0"]) == {"TF_CONFIG": "{}"}


def test_success_defaults_to_the_chief_then_worker_zero() -> None:
    with_chief = a_job("j").framework("tensorflow").replicas("Chief", 1).replicas("Worker", 2).build()
    workers_only = a_job("j").framework("tensorflow").replicas("Worker", 2).replicas("PS", 1).build()
    assert tensorflow.FRAMEWORK.success(with_chief.spec).targets == (
        v1beta1.SuccessTarget(replica_type="Chief", index=0),
    )
    assert tensorflow.FRAMEWORK.success(workers_only.spec).targets == (
        v1beta1.SuccessTarget(replica_type="Worker", index=0),
    )
