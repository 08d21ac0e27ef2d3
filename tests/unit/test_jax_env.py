"""The JAX env contract: Trainer v2's JAX_* names and JAXJob v1's, from Worker 0."""

from testkit.builders import a_job, container, template
from testkit.rendered import framework_env

from kubetrain.api import v1beta1, validation
from kubetrain.operator import render
from kubetrain.operator.frameworks import framework, jax


def envs(job: v1beta1.TrainingJob) -> dict[str, dict[str, str]]:
    out = {}
    for o in render.render(job, jax.FRAMEWORK):
        if o["kind"] == "Pod":
            c = framework.main_container(o, "jax")
            assert c is not None
            out[o["metadata"]["name"]] = framework_env(c)
    return out


def test_every_worker_gets_the_coordinator_and_its_process_id() -> None:
    env = envs(a_job("jx").namespace("ml").framework("jax").replicas("Worker", 3).build())
    assert set(env) == {"jx-worker-0", "jx-worker-1", "jx-worker-2"}
    for i in range(3):
        assert env[f"jx-worker-{i}"] == {
            "JAX_COORDINATOR_ADDRESS": "jx-worker-0.ml.svc:6666",
            "JAX_NUM_PROCESSES": "3",
            "JAX_PROCESS_ID": str(i),
            "COORDINATOR_ADDRESS": "jx-worker-0.ml.svc",
            "COORDINATOR_PORT": "6666",
            "NUM_PROCESSES": "3",
            "PROCESS_ID": str(i),
            "PYTHONUNBUFFERED": "1",
        }


def test_the_coordinator_port_follows_the_replica_spec() -> None:
    env = envs(a_job("p").framework("jax").replicas("Worker", 2, port=1234).build())["p-worker-1"]
    assert env["JAX_COORDINATOR_ADDRESS"] == "p-worker-0.default.svc:1234"
    assert env["COORDINATOR_PORT"] == "1234"


def test_a_variable_the_user_set_is_kept() -> None:
    tmpl = template(container("jax", env=[{"name": "JAX_PROCESS_ID", "value": "7"}]))
    job = a_job("u").framework("jax").replicas("Worker", 2, tmpl=tmpl).build()
    for name, env in envs(job).items():
        assert env["JAX_PROCESS_ID"] == "7", name
        assert env["PROCESS_ID"] == name[-1]
    pod = next(o for o in render.render(job, jax.FRAMEWORK) if o["kind"] == "Pod")
    assert [e["name"] for e in pod["spec"]["containers"][0]["env"]].count("JAX_PROCESS_ID") == 1


def test_workers_only_and_at_least_one() -> None:
    job = a_job("v").framework("jax").replicas("Chief", 1).replicas("Worker", 0).build()
    assert [(validation.format_path(e.path), e.message) for e in framework.validate(jax.FRAMEWORK, job)] == [
        ("spec.replicaSpecs.Chief", "jax has no replica type Chief (allowed: Worker)"),
        ("spec.replicaSpecs", "jax needs at least 1 Worker"),
    ]


def test_success_follows_every_worker() -> None:
    job = a_job("s").framework("jax").replicas("Worker", 2).build()
    assert jax.FRAMEWORK.success(job.spec) == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="Worker"),)
    )


def test_defaults_restart_the_whole_job() -> None:
    fw = jax.FRAMEWORK
    assert (fw.container, fw.port, fw.port_name) == ("jax", 6666, "jaxjob-port")
    # One dead process hangs the collectives of all the others.
    assert (fw.restart_policy, fw.restart_scope) == (
        v1beta1.RestartPolicy.EXIT_CODE,
        v1beta1.RestartScope.JOB,
    )
