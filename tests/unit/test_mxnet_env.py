"""The MXNet env contract: ps-lite's DMLC_* and MX_CONFIG, in dist and local mode."""

import json
from typing import Any

from testkit.builders import a_job, container, template
from testkit.rendered import framework_env

from kubetrain.api import v1beta1, validation
from kubetrain.operator import render
from kubetrain.operator.frameworks import framework, mxnet


def envs(job: v1beta1.TrainingJob) -> dict[str, dict[str, str]]:
    out = {}
    for o in render.render(job, mxnet.FRAMEWORK):
        if o["kind"] == "Pod":
            c = framework.main_container(o, "mxnet")
            assert c is not None
            out[o["metadata"]["name"]] = framework_env(c)
    return out


def dist(name: str = "mx", **scheduler: Any) -> v1beta1.TrainingJob:
    return (
        a_job(name)
        .namespace("ml")
        .framework("mxnet")
        .replicas("Scheduler", 1, **scheduler)
        .replicas("Server", 2)
        .replicas("Worker", 2)
        .build()
    )


def messages(job: v1beta1.TrainingJob) -> list[tuple[str, str]]:
    return [(validation.format_path(e.path), e.message) for e in framework.validate(mxnet.FRAMEWORK, job)]


def test_every_replica_learns_its_role_and_the_scheduler() -> None:
    env = envs(dist())
    roles = {
        "mx-scheduler-0": "scheduler",
        "mx-server-0": "server",
        "mx-server-1": "server",
        "mx-worker-0": "worker",
        "mx-worker-1": "worker",
    }
    assert set(env) == set(roles)
    for name, role in roles.items():
        assert env[name]["DMLC_ROLE"] == role
        assert env[name]["DMLC_PS_ROOT_URI"] == "mx-scheduler-0.ml.svc"
        assert env[name]["DMLC_PS_ROOT_PORT"] == "9091"
        assert env[name]["DMLC_NUM_SERVER"] == "2"
        assert env[name]["DMLC_NUM_WORKER"] == "2"
        assert env[name]["DMLC_USE_KUBERNETES"] == "1"


def test_workers_learn_their_byteps_worker_id_and_nobody_else_does() -> None:
    env = envs(dist())
    assert {name: e.get("DMLC_WORKER_ID") for name, e in env.items()} == {
        "mx-scheduler-0": None,
        "mx-server-0": None,
        "mx-server-1": None,
        "mx-worker-0": "0",
        "mx-worker-1": "1",
    }


def test_mx_config_lists_the_cluster_and_the_task() -> None:
    config = json.loads(envs(dist())["mx-worker-1"]["MX_CONFIG"])
    assert config == {
        "cluster": {
            "scheduler": [{"url": "mx-scheduler-0.ml.svc", "port": 9091}],
            "server": [
                {"url": "mx-server-0.ml.svc", "port": 9091},
                {"url": "mx-server-1.ml.svc", "port": 9091},
            ],
            "worker": [
                {"url": "mx-worker-0.ml.svc", "port": 9091},
                {"url": "mx-worker-1.ml.svc", "port": 9091},
            ],
        },
        "task": {"type": "worker", "index": 1},
    }
    assert json.loads(envs(dist())["mx-scheduler-0"]["MX_CONFIG"])["task"] == {
        "type": "scheduler",
        "index": 0,
    }


def test_the_root_port_is_the_schedulers_own_port() -> None:
    env = envs(dist(port=9000))
    assert env["mx-worker-0"]["DMLC_PS_ROOT_PORT"] == "9000"
    cluster = json.loads(env["mx-server-0"]["MX_CONFIG"])["cluster"]
    assert cluster["scheduler"] == [{"url": "mx-scheduler-0.ml.svc", "port": 9000}]
    assert cluster["worker"][0]["port"] == 9091


def test_labels_come_from_the_tuner_annotation() -> None:
    tuned = template(container("mxnet"))
    tuned["metadata"] = {"annotations": {"tuner-server-key": "tvm-a"}}
    job = (
        a_job("t")
        .framework("mxnet")
        .replicas("Scheduler", 1)
        .replicas("Server", 1, tmpl=tuned)
        .replicas("Worker", 1)
        .build()
    )
    assert json.loads(envs(job)["t-worker-0"]["MX_CONFIG"])["labels"] == {"server": "tvm-a"}


def test_local_mode_runs_one_worker_without_a_scheduler() -> None:
    job = a_job("l").framework("mxnet", options={"mode": "local"}).replicas("Worker", 1).build()
    env = envs(job)["l-worker-0"]
    assert env["DMLC_ROLE"] == "worker"
    assert env["DMLC_NUM_WORKER"] == "1"
    assert env["DMLC_NUM_SERVER"] == "0"
    assert "DMLC_PS_ROOT_URI" not in env
    assert "DMLC_PS_ROOT_PORT" not in env
    assert json.loads(env["MX_CONFIG"]) == {
        "cluster": {"worker": [{"url": "l-worker-0.default.svc", "port": 9091}]},
        "task": {"type": "worker", "index": 0},
    }


def test_dist_is_the_default_mode_and_needs_all_three_types() -> None:
    assert mxnet.mode(a_job().framework("mxnet").replicas("Worker", 1).build().spec) == "dist"
    job = a_job("d").framework("mxnet").replicas("Worker", 1).build()
    assert messages(job) == [
        ("spec.replicaSpecs", "mxnet dist mode needs exactly 1 Scheduler"),
        ("spec.replicaSpecs", "mxnet dist mode needs at least 1 Server"),
    ]


def test_at_most_one_scheduler() -> None:
    job = (
        a_job("d")
        .framework("mxnet")
        .replicas("Scheduler", 2)
        .replicas("Server", 1)
        .replicas("Worker", 1)
        .build()
    )
    assert messages(job) == [("spec.replicaSpecs.Scheduler.replicas", "mxnet allows at most 1 Scheduler")]


def test_local_mode_refuses_anything_but_one_worker() -> None:
    job = (
        a_job("l")
        .framework("mxnet", options={"mode": "local"})
        .replicas("Scheduler", 1)
        .replicas("Worker", 2)
        .build()
    )
    assert messages(job) == [
        ("spec.replicaSpecs.Scheduler", "local mode runs a single Worker, not a Scheduler"),
        ("spec.replicaSpecs.Worker.replicas", "local mode runs exactly 1 Worker, not 2"),
    ]
    servers_only = a_job("l").framework("mxnet", options={"mode": "local"}).replicas("Server", 1).build()
    assert messages(servers_only) == [
        ("spec.replicaSpecs.Server", "local mode runs a single Worker, not a Server"),
        ("spec.replicaSpecs", "local mode runs exactly 1 Worker, not 0"),
    ]


def test_an_unknown_mode_is_refused() -> None:
    job = a_job("x").framework("mxnet", options={"mode": "cluster"}).replicas("Worker", 1).build()
    assert messages(job) == [
        ("spec.framework.options.mode", "mxnet mode must be local or dist, not 'cluster'")
    ]


def test_a_variable_the_user_set_is_kept() -> None:
    tmpl = template(container("mxnet", env=[{"name": "DMLC_PS_ROOT_PORT", "value": "1234"}]))
    job = (
        a_job("u")
        .framework("mxnet")
        .replicas("Scheduler", 1)
        .replicas("Server", 1)
        .replicas("Worker", 1, tmpl=tmpl)
        .build()
    )
    pod = next(
        o
        for o in render.render(job, mxnet.FRAMEWORK)
        if o["metadata"]["name"] == "u-worker-0" and o["kind"] == "Pod"
    )
    env = pod["spec"]["containers"][0]["env"]
    assert [e for e in env if e["name"] == "DMLC_PS_ROOT_PORT"] == [
        {"name": "DMLC_PS_ROOT_PORT", "value": "1234"}
    ]
    assert {"name": "DMLC_ROLE", "value": "worker"} in env


def test_success_follows_every_worker() -> None:
    assert mxnet.FRAMEWORK.success(dist().spec) == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="Worker"),)
    )


def test_defaults() -> None:
    fw = mxnet.FRAMEWORK
    assert (fw.container, fw.port, fw.port_name) == ("mxnet", 9091, "mxjob-port")
    assert fw.restart_policy is v1beta1.RestartPolicy.EXIT_CODE
    assert fw.restart_scope is v1beta1.RestartScope.POD
    scheduler = fw.type_of("scheduler")
    assert scheduler is not None
    assert scheduler.master
    assert scheduler.max_replicas == 1
