"""The XGBoost env contract: XGBoostJob's MASTER_*/WORKER_* and rabit's DMLC_TRACKER_*."""

from testkit.builders import a_job, container, template
from testkit.rendered import framework_env

from kubetrain.api import v1beta1, validation
from kubetrain.operator import render
from kubetrain.operator.frameworks import framework, xgboost


def envs(job: v1beta1.TrainingJob) -> dict[str, dict[str, str]]:
    out = {}
    for o in render.render(job, xgboost.FRAMEWORK):
        if o["kind"] == "Pod":
            c = framework.main_container(o, "xgboost")
            assert c is not None
            out[o["metadata"]["name"]] = framework_env(c)
    return out


def test_master_is_rank_zero_and_workers_follow() -> None:
    job = a_job("xg").namespace("ml").framework("xgboost").replicas("Master", 1).replicas("Worker", 2).build()
    env = envs(job)
    assert set(env) == {"xg-master-0", "xg-worker-0", "xg-worker-1"}
    for name, rank in (("xg-master-0", "0"), ("xg-worker-0", "1"), ("xg-worker-1", "2")):
        assert env[name] == {
            "MASTER_ADDR": "xg-master-0.ml.svc",
            "MASTER_PORT": "9999",
            "WORLD_SIZE": "3",
            "RANK": rank,
            "WORKER_PORT": "9999",
            "WORKER_ADDRS": "xg-worker-0.ml.svc,xg-worker-1.ml.svc",
            "DMLC_TRACKER_URI": "xg-master-0.ml.svc",
            "DMLC_TRACKER_PORT": "9999",
            "DMLC_TASK_ID": rank,
            "DMLC_NUM_WORKER": "3",
            "PYTHONUNBUFFERED": "1",
        }


def test_a_master_alone_gets_no_worker_list() -> None:
    env = envs(a_job("m").framework("xgboost").replicas("Master", 1).build())["m-master-0"]
    assert env["WORLD_SIZE"] == env["DMLC_NUM_WORKER"] == "1"
    assert "WORKER_ADDRS" not in env
    assert "WORKER_PORT" not in env


def test_ports_come_from_each_replica_type() -> None:
    job = (
        a_job("p")
        .framework("xgboost")
        .replicas("Master", 1, port=9000)
        .replicas("Worker", 1, port=9100)
        .build()
    )
    env = envs(job)["p-worker-0"]
    assert env["MASTER_PORT"] == env["DMLC_TRACKER_PORT"] == "9000"
    assert env["WORKER_PORT"] == "9100"


def test_exactly_one_master() -> None:
    def errors(job: v1beta1.TrainingJob) -> list[tuple[str, str]]:
        return [
            (validation.format_path(e.path), e.message) for e in framework.validate(xgboost.FRAMEWORK, job)
        ]

    assert errors(a_job("n").framework("xgboost").replicas("Worker", 2).build()) == [
        ("spec.replicaSpecs", "xgboost needs at least 1 Master")
    ]
    assert errors(a_job("t").framework("xgboost").replicas("Master", 2).build()) == [
        ("spec.replicaSpecs.Master.replicas", "xgboost allows at most 1 Master")
    ]


def test_a_variable_the_user_set_is_kept() -> None:
    tmpl = template(container("xgboost", env=[{"name": "DMLC_TRACKER_PORT", "value": "9091"}]))
    job = a_job("u").framework("xgboost").replicas("Master", 1, tmpl=tmpl).replicas("Worker", 1).build()
    env = envs(job)
    assert env["u-master-0"]["DMLC_TRACKER_PORT"] == "9091"
    assert env["u-worker-0"]["DMLC_TRACKER_PORT"] == "9999"
    pod = next(o for o in render.render(job, xgboost.FRAMEWORK) if o["kind"] == "Pod")
    assert [e["name"] for e in pod["spec"]["containers"][0]["env"]].count("DMLC_TRACKER_PORT") == 1


def test_success_follows_the_master() -> None:
    job = a_job("s").framework("xgboost").replicas("Master", 1).replicas("Worker", 2).build()
    assert xgboost.FRAMEWORK.success(job.spec) == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="Master", index=0),)
    )


def test_defaults() -> None:
    fw = xgboost.FRAMEWORK
    assert (fw.container, fw.port, fw.port_name) == ("xgboost", 9999, "xgboostjob-port")
    assert (fw.restart_policy, fw.restart_scope) == (
        v1beta1.RestartPolicy.EXIT_CODE,
        v1beta1.RestartScope.JOB,
    )
    master = fw.type_of("master")
    assert master is not None
    assert master.master
