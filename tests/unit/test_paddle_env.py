"""The Paddle env contract: what paddle.distributed.launch reads, collective and PS mode."""

from testkit.builders import a_job, container, template
from testkit.rendered import framework_env

from kubetrain.api import v1beta1, validation
from kubetrain.operator import render
from kubetrain.operator.frameworks import framework, paddle


def envs(job: v1beta1.TrainingJob) -> dict[str, dict[str, str]]:
    out = {}
    for o in render.render(job, paddle.FRAMEWORK):
        if o["kind"] == "Pod":
            c = framework.main_container(o, "paddle")
            assert c is not None
            out[o["metadata"]["name"]] = framework_env(c)
    return out


def test_collective_mode_meets_at_worker_zero() -> None:
    env = envs(a_job("pd").namespace("ml").framework("paddle").replicas("Worker", 3).build())
    assert env["pd-worker-0"] == {
        # The launcher starts its key-value master only for 127.0.0.1 or its own IP.
        "PADDLE_MASTER": "127.0.0.1:36543",
        "PADDLE_NNODES": "3",
        "PADDLE_JOB_ID": "pd",
        "PYTHONUNBUFFERED": "1",
        "PADDLE_RANK": "0",
    }
    for i in (1, 2):
        assert env[f"pd-worker-{i}"] == {
            "PADDLE_MASTER": "pd-worker-0.ml.svc:36543",
            "PADDLE_NNODES": "3",
            "PADDLE_JOB_ID": "pd",
            "PYTHONUNBUFFERED": "1",
            "PADDLE_RANK": str(i),
        }


def test_ps_mode_meets_at_master_zero() -> None:
    job = a_job("ps").framework("paddle").replicas("Master", 2).replicas("Worker", 2).build()
    env = envs(job)
    assert env["ps-master-0"]["PADDLE_MASTER"] == "127.0.0.1:36543"
    for name in ("ps-master-1", "ps-worker-0", "ps-worker-1"):
        assert env[name]["PADDLE_MASTER"] == "ps-master-0.default.svc:36543"
    for name, e in env.items():
        assert e["PADDLE_NNODES"] == "4"
        assert "PADDLE_RANK" not in e
        if "master" in name:
            assert (e.get("PADDLE_SERVER_NUM"), e.get("PADDLE_TRAINER_NUM")) == ("1", None)
        else:
            assert (e.get("PADDLE_SERVER_NUM"), e.get("PADDLE_TRAINER_NUM")) == (None, "1")


def test_the_rendezvous_port_follows_its_replica_spec() -> None:
    job = a_job("p").framework("paddle").replicas("Master", 1, port=37777).replicas("Worker", 1).build()
    env = envs(job)
    assert env["p-master-0"]["PADDLE_MASTER"] == "127.0.0.1:37777"
    assert env["p-worker-0"]["PADDLE_MASTER"] == "p-master-0.default.svc:37777"


def test_a_variable_the_user_set_is_kept() -> None:
    tmpl = template(container("paddle", env=[{"name": "PADDLE_JOB_ID", "value": "mine"}]))
    job = a_job("u").framework("paddle").replicas("Worker", 2, tmpl=tmpl).build()
    assert {e["PADDLE_JOB_ID"] for e in envs(job).values()} == {"mine"}
    pod = next(o for o in render.render(job, paddle.FRAMEWORK) if o["kind"] == "Pod")
    assert [e["name"] for e in pod["spec"]["containers"][0]["env"]].count("PADDLE_JOB_ID") == 1


def test_a_worker_is_required() -> None:
    job = a_job("v").framework("paddle").replicas("Master", 1).build()
    assert [
        (validation.format_path(e.path), e.message) for e in framework.validate(paddle.FRAMEWORK, job)
    ] == [("spec.replicaSpecs", "paddle needs at least 1 Worker")]


def test_success_follows_every_worker() -> None:
    job = a_job("s").framework("paddle").replicas("Master", 1).replicas("Worker", 2).build()
    assert paddle.FRAMEWORK.success(job.spec) == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="Worker"),)
    )


def test_defaults() -> None:
    fw = paddle.FRAMEWORK
    assert (fw.container, fw.port, fw.port_name) == ("paddle", 36543, "master")
    assert (fw.restart_policy, fw.restart_scope) == (
        v1beta1.RestartPolicy.EXIT_CODE,
        v1beta1.RestartScope.JOB,
    )
