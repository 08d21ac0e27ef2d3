"""The Caffe2 env contract: shards, run id, CAFFE2_CONFIG and each rendezvous backend."""

import json
import re
from typing import Any

import attrs
import pytest
from testkit.builders import a_job, container, template
from testkit.rendered import framework_env

from kubetrain.api import naming, v1beta1, validation
from kubetrain.operator import render
from kubetrain.operator.frameworks import caffe2, framework

REDIS = v1beta1.Caffe2BackendType.REDIS
RUN = "$(KUBETRAIN_RESTART_ATTEMPT)"  # the attempt, as the kubelet fills it in


def envs(job: v1beta1.TrainingJob) -> dict[str, dict[str, str]]:
    out = {}
    for o in render.render(job, caffe2.FRAMEWORK):
        if o["kind"] == "Pod":
            c = framework.main_container(o, "caffe2")
            assert c is not None
            out[o["metadata"]["name"]] = framework_env(c)
    return out


def job_with(
    workers: int, backend: v1beta1.Caffe2Backend | None = None, name: str = "c2"
) -> v1beta1.TrainingJob:
    options = v1beta1.Caffe2Options(backend=backend)
    return a_job(name).framework("caffe2", caffe2=options).replicas("Worker", workers).build()


def test_one_worker_defaults_to_no_backend() -> None:
    env = envs(job_with(1))["c2-worker-0"]
    assert {k: v for k, v in env.items() if k != "CAFFE2_CONFIG"} == {
        "SHARD_ID": "0",
        "NUM_SHARDS": "1",
        "RUN_ID": f"c2-{RUN}",
    }
    assert json.loads(env["CAFFE2_CONFIG"]) == {
        "cluster": {"worker": ["c2-worker-0.default.svc:2222"]},
        "task": {"type": "worker", "index": 0},
        "backend": {"type": "none"},
        "shard": {"id": 0, "count": 1},
        "runId": f"c2-{RUN}",
    }


def test_more_workers_default_to_gloo_with_worker_zero_as_rendezvous() -> None:
    env = envs(job_with(3))
    for i in range(3):
        shard = env[f"c2-worker-{i}"]
        assert shard["SHARD_ID"] == shard["RANK"] == str(i)
        assert shard["NUM_SHARDS"] == shard["WORLD_SIZE"] == "3"
        assert shard["MASTER_ADDR"] == "c2-worker-0.default.svc"
        assert shard["MASTER_PORT"] == "2222"
    config = json.loads(env["c2-worker-2"]["CAFFE2_CONFIG"])
    assert config["backend"] == {"type": "gloo", "masterAddr": "c2-worker-0.default.svc", "masterPort": 2222}
    assert config["shard"] == {"id": 2, "count": 3}
    assert config["task"] == {"type": "worker", "index": 2}
    assert len(config["cluster"]["worker"]) == 3


def test_redis_backend_with_the_default_port() -> None:
    env = envs(job_with(2, v1beta1.Caffe2Backend(type=REDIS, redis_host="redis.ml.svc")))["c2-worker-1"]
    assert env["REDIS_HOST"] == "redis.ml.svc"
    assert env["REDIS_PORT"] == "6379"
    assert "MASTER_ADDR" not in env
    assert "NFS_PATH" not in env
    assert json.loads(env["CAFFE2_CONFIG"])["backend"] == {
        "type": "redis",
        "redisHost": "redis.ml.svc",
        "redisPort": 6379,
    }


def test_redis_backend_with_a_port() -> None:
    backend = v1beta1.Caffe2Backend(type=REDIS, redis_host="r", redis_port=7000)
    assert envs(job_with(2, backend))["c2-worker-0"]["REDIS_PORT"] == "7000"


def test_nfs_backend() -> None:
    backend = v1beta1.Caffe2Backend(type=v1beta1.Caffe2BackendType.NFS, nfs_path="/mnt/rdzv")
    env = envs(job_with(2, backend))["c2-worker-0"]
    assert env["NFS_PATH"] == "/mnt/rdzv"
    assert "REDIS_HOST" not in env
    assert "MASTER_ADDR" not in env
    assert json.loads(env["CAFFE2_CONFIG"])["backend"] == {"type": "nfs", "nfsPath": "/mnt/rdzv"}


def test_run_id_is_the_runtime_id_the_uid_and_the_attempt() -> None:
    by_runtime = (
        a_job("r").uid("u-1").framework("caffe2").replicas("Worker", 1).with_spec(runtime_id="abc1").build()
    )
    by_uid = a_job("r").uid("u-1").framework("caffe2").replicas("Worker", 1).build()
    by_name = a_job("r").framework("caffe2").replicas("Worker", 1).build()  # no UID yet: a file rendered
    assert [envs(j)["r-worker-0"]["RUN_ID"] for j in (by_runtime, by_uid, by_name)] == [
        f"abc1-u-1-{RUN}",
        f"u-1-{RUN}",
        f"r-{RUN}",
    ]
    assert json.loads(envs(by_runtime)["r-worker-0"]["CAFFE2_CONFIG"])["runId"] == f"abc1-u-1-{RUN}"


def started(container: dict[str, Any], labels: dict[str, str]) -> dict[str, str]:
    """The env a container starts with, as the kubelet makes it: ``$(NAME)`` of a variable set
    earlier in the list is replaced by its value, a later or unknown one is left as written, and
    the attempt read from the barrier's file (a pod restarted in place) is the pod's label."""
    out: dict[str, str] = {}
    for e in container["env"]:
        if "value" in e:
            out[e["name"]] = re.sub(r"\$\((\w+)\)", lambda m: out.get(m[1], m[0]), e["value"])
        else:
            key = e["valueFrom"]["fileKeyRef"]["key"]
            out[e["name"]] = labels[naming.ATTEMPT] if key == render.RESTART_ATTEMPT_ENV else ""
    return out


@pytest.mark.parametrize("in_place", [False, True])
def test_every_restart_is_a_new_run_and_a_new_job_of_the_same_name_too(in_place: bool) -> None:
    # Caffe2's redis store refuses a key set before ("perhaps you reused a run ID"), and its NFS
    # store hands a new run the old run's keys: a rendezvous needs an id no earlier one had.
    def run_ids(job: v1beta1.TrainingJob) -> set[str]:
        pods = [o for o in render.render(job, caffe2.FRAMEWORK, in_place=in_place) if o["kind"] == "Pod"]
        return {
            started(framework.main_container(p, "caffe2") or {}, p["metadata"]["labels"])["RUN_ID"]
            for p in pods
        }

    first = a_job("c2").uid("u-1").framework("caffe2").replicas("Worker", 2).build()
    again = attrs.evolve(
        first, status=v1beta1.TrainingJobStatus(replica_statuses={"Worker": v1beta1.ReplicaStatus(attempt=1)})
    )
    recreated = a_job("c2").uid("u-2").framework("caffe2").replicas("Worker", 2).build()
    assert [run_ids(j) for j in (first, again, recreated)] == [{"u-1-0"}, {"u-1-1"}, {"u-2-0"}]


def test_a_shard_restarted_in_place_reads_the_attempt_it_was_moved_to() -> None:
    # Its env is the one it was made with; only the label changes when it moves to attempt 3.
    job = a_job("c2").uid("u-1").framework("caffe2").replicas("Worker", 1).build()
    (pod,) = [o for o in render.render(job, caffe2.FRAMEWORK, in_place=True) if o["kind"] == "Pod"]
    main = framework.main_container(pod, "caffe2")
    assert main is not None
    env = started(main, {**pod["metadata"]["labels"], naming.ATTEMPT: "3"})
    assert env["RUN_ID"] == "u-1-3"
    assert json.loads(env["CAFFE2_CONFIG"])["runId"] == "u-1-3"


def test_the_none_backend_runs_a_single_worker() -> None:
    job = job_with(2, v1beta1.Caffe2Backend(type=v1beta1.Caffe2BackendType.NONE))
    errors = framework.validate(caffe2.FRAMEWORK, job)
    assert [(validation.format_path(e.path), e.message) for e in errors] == [
        (
            "spec.framework.caffe2.backend.type",
            "the none backend runs a single Worker, not 2; use redis, nfs or gloo",
        )
    ]
    with pytest.raises(validation.ValidationError, match="none backend runs a single Worker"):
        render.render(job, caffe2.FRAMEWORK)


def test_backend_fields_are_validated_by_the_api_not_again_here() -> None:
    with pytest.raises(validation.ValidationError) as redis:
        v1beta1.Caffe2Backend(type=REDIS)
    assert [(e.path, e.message) for e in redis.value.errors] == [
        (("redisHost",), "the redis backend needs redisHost")
    ]
    for backend in (
        v1beta1.Caffe2Backend(type=REDIS, redis_host="r"),
        v1beta1.Caffe2Backend(type=v1beta1.Caffe2BackendType.NFS, nfs_path="/p"),
        v1beta1.Caffe2Backend(type=v1beta1.Caffe2BackendType.GLOO),
        v1beta1.Caffe2Backend(type=v1beta1.Caffe2BackendType.NONE),
    ):
        assert framework.validate(caffe2.FRAMEWORK, job_with(1, backend)) == []


def test_only_workers_and_at_least_one() -> None:
    job = a_job("c").framework("caffe2").replicas("Master", 1).replicas("Worker", 0).build()
    assert [
        (validation.format_path(e.path), e.message) for e in framework.validate(caffe2.FRAMEWORK, job)
    ] == [
        ("spec.replicaSpecs.Master", "caffe2 has no replica type Master (allowed: Worker)"),
        ("spec.replicaSpecs", "caffe2 needs at least 1 Worker"),
    ]


def test_a_variable_the_user_set_is_kept() -> None:
    tmpl = template(container("caffe2", env=[{"name": "REDIS_HOST", "value": "mine"}]))
    backend = v1beta1.Caffe2Backend(type=REDIS, redis_host="theirs")
    job = a_job("u").framework("caffe2", caffe2=v1beta1.Caffe2Options(backend=backend))
    pods = [
        o
        for o in render.render(job.replicas("Worker", 2, tmpl=tmpl).build(), caffe2.FRAMEWORK)
        if o["kind"] == "Pod"
    ]
    for pod in pods:
        env = pod["spec"]["containers"][0]["env"]
        assert [e["value"] for e in env if e["name"] == "REDIS_HOST"] == ["mine"]
        assert any(e["name"] == "REDIS_PORT" for e in env)


def test_success_and_restart_defaults() -> None:
    assert caffe2.FRAMEWORK.success(job_with(2).spec) == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="Worker"),)
    )
    fw = caffe2.FRAMEWORK
    assert (fw.container, fw.port, fw.port_name) == ("caffe2", 2222, "caffe2-port")
    assert (fw.restart_policy, fw.restart_scope) == (
        v1beta1.RestartPolicy.EXIT_CODE,
        v1beta1.RestartScope.JOB,
    )
