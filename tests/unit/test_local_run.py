"""A local run's decisions, carried out on fake processes: the operator's own, from the same step.

Each job states in its template's env what its fake processes do (:mod:`testkit.fakeprocs`): exit
with a code after a while, in one attempt or one start, report steps, ignore SIGTERM. The runner
(:func:`kubetrain.operator.local.run`) observes them as pods, the step decides, and the executor
starts and stops them; the tests read the outcome, the job's status and what each process was
started with and sent.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from testkit.builders import a_job, container, template
from testkit.fakeprocs import Clock, FakeStart

from kubetrain.api import v1beta1
from kubetrain.operator import local
from kubetrain.operator.frameworks import registry

RP = v1beta1.RestartPolicy


def replica(framework: str, **env: str) -> dict[str, Any]:
    """A template whose main container runs ``true`` (a program every machine has) with ``env``."""
    c = container(framework, command=["true"], env=[{"name": k, "value": v} for k, v in env.items()])
    return template(c)


def run(
    job: v1beta1.TrainingJob, tmp_path: Path, *, stop_after: int | None = None
) -> tuple[local.Outcome, FakeStart, list[local.Said]]:
    clock = Clock()
    start = FakeStart(clock)
    fw = registry.default().get(job.spec.framework.name)
    options = local.Options(cwd=str(tmp_path), free_ports=True)
    ready = local.prepare(v1beta1.trainingjob_defaults.on_create(job), fw, options)
    told: list[local.Said] = []
    passes = iter(range(10**6))
    outcome = local.run(
        ready,
        told.append,
        clock=clock,
        start=start,
        poll=0,
        stopping=lambda: stop_after is not None and next(passes) >= stop_after,
    )
    return outcome, start, told


def reasons(job: v1beta1.TrainingJob) -> list[str]:
    return [f.reason or "" for f in job.status.failures]


def test_the_master_s_success_ends_the_job_and_stops_the_workers(tmp_path: Path) -> None:
    job = (
        a_job("ok")
        .framework("pytorch")
        .replicas("Master", 1, tmpl=replica("pytorch", FAKE_EXIT="0", FAKE_AFTER="2"))
        .replicas("Worker", 2, tmpl=replica("pytorch"))
        .build()
    )
    outcome, start, told = run(job, tmp_path)

    assert (outcome.state, outcome.code) == (v1beta1.JobState.SUCCEEDED, 0)
    for w in ("ok-worker-0", "ok-worker-1"):
        (p,) = start.of(w)
        assert p.signals[0] == signal.SIGTERM  # cleanPodPolicy Running: stopped as a kubelet stops a pod
    # Every replica reached at 127.0.0.1, each at a port of its own; the Master first.
    (master,) = start.of("ok-master-0")
    assert master.env["MASTER_ADDR"] == "127.0.0.1"
    assert len({p.env["MASTER_PORT"] for _, p in start.started}) == 1  # the Master's, for every rank
    assert [p.env["RANK"] for _, p in start.started] == ["0", "1", "2"]
    lines = [s for s in told if isinstance(s, local.Line)]
    assert {line.replica for line in lines} == {"master-0", "worker-0", "worker-1"}
    assert any(isinstance(s, local.Told) and s.event.reason == "SuccessPolicyMet" for s in told)


def test_a_retryable_exit_code_restarts_the_whole_world_with_the_restart_env(tmp_path: Path) -> None:
    job = (
        a_job("rc")
        .framework("pytorch")
        .replicas(
            "Master",
            1,
            restart_policy=RP.EXIT_CODE,
            tmpl=replica("pytorch", FAKE_EXIT_0="137", FAKE_EXIT="0"),
        )
        .replicas("Worker", 1, restart_policy=RP.EXIT_CODE, tmpl=replica("pytorch"))
        .build()
    )
    outcome, start, _ = run(job, tmp_path)

    assert outcome.code == 0
    assert outcome.job.status.restarts.total == 1
    assert reasons(outcome.job) == ["Error"]
    first, second = start.of("rc-worker-0")
    assert first.signals[0] == signal.SIGTERM  # scope Job: the healthy worker is replaced too
    assert second.env["KUBETRAIN_RESTART_ATTEMPT"] == "1"
    assert second.env["KUBETRAIN_RESTARTS"] == "1"
    assert second.env["KUBETRAIN_LAST_RESTART_REASON"] == "UserCode:Error"


def test_a_permanent_exit_code_fails_the_job_at_once(tmp_path: Path) -> None:
    job = (
        a_job("pe")
        .framework("jax")
        .replicas("Worker", 2, tmpl=replica("jax", FAKE_EXIT="1"))  # jax: ExitCode, scope Job
        .build()
    )
    outcome, start, _ = run(job, tmp_path)

    assert (outcome.state, outcome.code) == (v1beta1.JobState.FAILED, 1)
    failed = next(c for c in outcome.job.status.conditions if c.type == v1beta1.ConditionType.FAILED)
    assert failed.reason == "PermanentExitCode"
    assert len(start.of("pe-worker-0")) == 1  # never made again


def test_a_container_the_kubelet_restarts_in_place_is_charged_and_the_pod_kept(tmp_path: Path) -> None:
    job = (
        a_job("tf")
        .framework("tensorflow")  # OnFailure, scope Pod
        .replicas("Chief", 1, tmpl=replica("tensorflow", FAKE_EXIT="0", FAKE_AFTER="4"))
        .replicas("Worker", 1, tmpl=replica("tensorflow", FAKE_EXIT_RESTART_0="1"))
        .build()
    )
    outcome, start, told = run(job, tmp_path)

    assert outcome.code == 0
    assert outcome.job.status.restarts.total == 1
    assert len(start.of("tf-worker-0")) == 2  # the same pod's container, started again
    (pod,) = [p for p in outcome.pods if p.name == "tf-worker-0"]
    assert pod.restarts == 1
    notices = [s.text for s in told if isinstance(s, local.Line) and s.notice]
    assert "--- container restarted (restart 1) ---" in notices


def test_a_failure_past_the_budget_fails_the_job(tmp_path: Path) -> None:
    job = (
        a_job("bl")
        .framework("pytorch")
        .replicas("Master", 1, restart_policy=RP.EXIT_CODE, tmpl=replica("pytorch", FAKE_EXIT="137"))
        .with_spec(run_policy=v1beta1.RunPolicy(backoff_limit=1))
        .build()
    )
    outcome, start, _ = run(job, tmp_path)

    assert outcome.code == 1
    failed = next(c for c in outcome.job.status.conditions if c.type == v1beta1.ConditionType.FAILED)
    assert failed.reason == "BackoffLimitExceeded"
    assert len(start.of("bl-master-0")) == 2  # the first run, and the one restart the budget allows


def test_a_rank_whose_step_stops_moving_is_hung_and_restarted(tmp_path: Path) -> None:
    job = (
        a_job("hg")
        .framework("pytorch")
        .replicas(
            "Master",
            1,
            restart_policy=RP.EXIT_CODE,
            tmpl=replica("pytorch", FAKE_STEPS="3", FAKE_EXIT_1="0", FAKE_AFTER="5"),
        )
        .with_spec(progress=v1beta1.ProgressSpec(deadline_seconds=10, startup_grace_seconds=0))
        .build()
    )
    outcome, start, told = run(job, tmp_path)

    assert outcome.code == 0
    assert reasons(outcome.job) == ["ProgressDeadlineExceeded"]
    assert outcome.job.status.progress is not None  # the first rank's line, read as the agent's
    _, resumed = start.of("hg-master-0")
    assert resumed.env["KUBETRAIN_LAST_RESTART_REASON"] == "UserCode:ProgressDeadlineExceeded"
    assert any(isinstance(s, local.Line) and s.notice and "hung" in s.text for s in told)


def test_an_mpi_launcher_starts_once_the_workers_run_and_the_workers_run_no_process(tmp_path: Path) -> None:
    job = (
        a_job("hv")
        .framework("mpi")
        .replicas("Launcher", 1, tmpl=replica("mpi", FAKE_EXIT="0"))
        .replicas("Worker", 2, tmpl=replica("mpi"))
        .build()
    )
    outcome, start, _ = run(job, tmp_path)

    assert outcome.code == 0
    assert [pod for pod, _ in start.started] == ["hv-launcher-0"]  # mpirun starts every rank here
    (launcher,) = start.of("hv-launcher-0")
    hostfile = Path(launcher.env["OMPI_MCA_orte_default_hostfile"])
    assert hostfile.read_text() == "127.0.0.1 slots=2\n"


def test_stopping_a_run_stops_every_process_and_kills_what_outlives_its_grace(tmp_path: Path) -> None:
    slow = template(
        container(
            "pytorch",
            command=["true"],
            env=[{"name": "FAKE_IGNORES_TERM", "value": "1"}],
        )
    )
    slow["spec"]["terminationGracePeriodSeconds"] = 2
    job = a_job("st").framework("pytorch").replicas("Worker", 2, tmpl=slow).build()
    outcome, start, told = run(job, tmp_path, stop_after=5)

    assert (outcome.stopped, outcome.code) == (True, 130)
    for _, p in start.started:
        assert p.signals == [signal.SIGTERM, signal.SIGKILL]
    assert any(isinstance(s, local.Warned) and "stopping" in s.text for s in told)


@pytest.mark.parametrize("name", ["tensorflow", "xgboost", "mxnet", "paddle", "caffe2", "generic"])
def test_every_framework_renders_its_env_with_this_machine_s_addresses(name: str, tmp_path: Path) -> None:
    types = {
        "tensorflow": ("Chief", "Worker"),
        "xgboost": ("Master", "Worker"),
        "mxnet": ("Scheduler", "Server", "Worker"),
        "paddle": ("Worker",),
        "caffe2": ("Worker",),
        "generic": ("Worker",),
    }[name]
    b = a_job("fw").framework(name)
    for t in types:
        b = b.replicas(t, 2 if t == "Worker" else 1, tmpl=replica(name, FAKE_EXIT="0"))
    outcome, start, _ = run(b.build(), tmp_path)

    assert outcome.code == 0
    env = " ".join(v for _, p in start.started for k, v in p.env.items() if k not in ("PATH", "HOME"))
    assert ".svc" not in env  # no cluster name anywhere: every host is this machine
