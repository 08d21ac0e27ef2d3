"""The generic env contract: any replica types, each replica told only where it stands."""

from typing import Any

import pytest
from testkit.builders import a_job, container, template
from testkit.rendered import framework_env

from kubetrain.api import v1beta1, validation
from kubetrain.operator import render
from kubetrain.operator.frameworks import framework, generic


def pods(job: v1beta1.TrainingJob) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in render.render(job, generic.FRAMEWORK) if o["kind"] == "Pod"}


def env_of(pod: dict[str, Any], name: str) -> dict[str, str]:
    c = next(c for c in pod["spec"]["containers"] if c["name"] == name)
    return framework_env(c)


def test_types_in_name_order_then_index() -> None:
    main = template(container("main"))
    job = (
        a_job("g")
        .framework("generic")
        .replicas("Trainer", 2, tmpl=main)
        .replicas("Actor", 1, tmpl=main)
        .replicas("learner", 1, tmpl=main)
        .build()
    )
    env = {name: env_of(p, "main") for name, p in pods(job).items()}
    expected = [("g-actor-0", "Actor", 0), ("g-trainer-0", "Trainer", 0), ("g-trainer-1", "Trainer", 1)]
    expected.append(("g-learner-0", "learner", 0))  # lower case sorts after upper case
    for rank, (name, rtype, index) in enumerate(expected):
        assert env[name] == {
            "KUBETRAIN_REPLICA_TYPE": rtype,
            "KUBETRAIN_REPLICA_INDEX": str(index),
            "KUBETRAIN_RANK": str(rank),
            "KUBETRAIN_WORLD_SIZE": "4",
        }


def test_the_only_container_is_the_main_one() -> None:
    job = a_job("o").framework("generic").replicas("Node", 1, tmpl=template(container("trainer"))).build()
    assert env_of(pods(job)["o-node-0"], "trainer")["KUBETRAIN_WORLD_SIZE"] == "1"


def test_with_several_containers_main_gets_the_env() -> None:
    tmpl = template(container("sidecar"), container("main"))
    pod = pods(a_job("s").framework("generic").replicas("Node", 1, tmpl=tmpl).build())["s-node-0"]
    assert env_of(pod, "sidecar") == {}
    assert env_of(pod, "main")["KUBETRAIN_RANK"] == "0"
    assert {"name": "generic-port", "containerPort": 2222} in pod["spec"]["containers"][1]["ports"]


def test_several_containers_without_main_are_refused() -> None:
    tmpl = template(container("a"), container("b"))
    job = a_job("x").framework("generic").replicas("Node", 1, tmpl=tmpl).build()
    assert [
        (validation.format_path(e.path), e.message) for e in framework.validate(generic.FRAMEWORK, job)
    ] == [
        (
            "spec.replicaSpecs.Node.template.spec.containers",
            "name one container 'main', or keep a single container",
        )
    ]
    with pytest.raises(validation.ValidationError):
        render.render(job, generic.FRAMEWORK)


def test_a_job_without_replicas_is_refused() -> None:
    job = a_job("z").framework("generic").replicas("Node", 0).build()
    assert [
        (validation.format_path(e.path), e.message) for e in framework.validate(generic.FRAMEWORK, job)
    ] == [("spec.replicaSpecs", "generic needs at least 1 replica")]


def test_a_variable_the_user_set_is_kept() -> None:
    tmpl = template(container("main", env=[{"name": "KUBETRAIN_RANK", "value": "9"}]))
    job = a_job("u").framework("generic").replicas("Node", 2, tmpl=tmpl).build()
    for name, pod in pods(job).items():
        env = pod["spec"]["containers"][0]["env"]
        assert [e["value"] for e in env if e["name"] == "KUBETRAIN_RANK"] == ["9"], name
        assert {"name": "KUBETRAIN_REPLICA_INDEX", "value": name[-1]} in env


def test_success_needs_every_replica_of_every_type_that_has_some() -> None:
    job = a_job("s").framework("generic").replicas("B", 2).replicas("A", 1).replicas("C", 0).build()
    assert generic.FRAMEWORK.success(job.spec) == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="A"), v1beta1.SuccessTarget(replica_type="B"))
    )


def test_defaults() -> None:
    fw = generic.FRAMEWORK
    assert fw.replica_types == ()
    assert (fw.container, fw.port, fw.port_name) == ("main", 2222, "generic-port")
    assert (fw.restart_policy, fw.restart_scope) == (
        v1beta1.RestartPolicy.EXIT_CODE,
        v1beta1.RestartScope.JOB,
    )
