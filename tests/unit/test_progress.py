"""Progress and hangs: the line a rank writes, what the status makes of it, and a hang's course.

The policy's pure functions first (the line, the rank read, the status), then the pod as
rendered and read back, then the agent's own script run by a shell on files standing in for its
volumes, then hangs on the simulated cluster: charged once, to user code, restarted in place
where the job restarts in place, never within the startup grace nor while suspended.
"""

from __future__ import annotations

import datetime
import pathlib
import subprocess
import time
from typing import Any

import attrs
import pytest
from testkit.builders import a_ddp_job, a_job
from testkit.world import T0, World

from kubetrain.api import naming, observed, v1beta1
from kubetrain.api.v1beta1 import progress_types
from kubetrain.operator import agent, lifecycle, projection, render
from kubetrain.operator.frameworks import mpi, pytorch
from kubetrain.operator.frameworks import registry as fw_registry
from kubetrain.operator.policies import classify, failure, progress

S = v1beta1.JobState
M = v1beta1.RestartMethod
HUNG = progress_types.HUNG


def seconds(n: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=n)


# --- the line ------------------------------------------------------------------------------


def test_the_last_well_formed_line_of_the_tail_is_read() -> None:
    tail = (
        "kubetrain agent: attempt 0\n"
        "progress step=10 total=100 loss=0.5\n"
        "progress step=oops\n"
        "progress step=12 total=100 loss=0.4312345678 acc=9e-1\n"
        "kubetrain agent: attempt 1 begins\n"
    )
    r = progress.parse("p-0", tail)
    assert r == progress.Reading(
        pod="p-0", step=12, total=100, metrics=(("acc", "0.9"), ("loss", "0.431235"))
    )


@pytest.mark.parametrize(
    "line",
    [
        "",
        "step=1",  # not the agent's
        "progress step=-1",
        "progress total=3 step=1",
        "progress step=1 loss=abc",
        "progress step=1 9x=1",
        "progress step=" + "9" * 19,
        "progress step=1; rm -rf /",
    ],
)
def test_a_line_that_is_not_the_documented_form_is_not_read(line: str) -> None:
    assert progress.parse("p", line) is None


def test_metrics_are_capped_and_a_zero_total_is_none() -> None:
    names = " ".join(f"m{i}=1" for i in range(12))
    r = progress.parse("p", f"progress step=1 total=0 {names}")
    assert r is not None
    assert r.total is None
    assert len(r.metrics) == progress_types.MAX_METRICS


def test_the_first_rank_is_read_mpi_its_first_worker() -> None:
    def pods(*types: str) -> list[observed.Pod]:
        return [
            observed.Pod(name=f"j-{t}-0", uid=t, replica_type=t, index=0, phase="Running", running=True)
            for t in types
        ]

    job = a_ddp_job(2).with_spec(progress=v1beta1.ProgressSpec()).build()
    defaults = lifecycle.Defaults.of(pytorch.FRAMEWORK, job.spec)
    assert defaults.progress_from == "Master"
    found = progress.source(job, pods("master", "worker"), defaults.progress_from)
    assert found is not None
    assert found.name == "j-master-0"
    mpi_job = (
        a_job("m")
        .framework("mpi")
        .replicas("Launcher", 1)
        .replicas("Worker", 2)
        .with_spec(progress=v1beta1.ProgressSpec())
        .build()
    )
    assert lifecycle.Defaults.of(mpi.FRAMEWORK, mpi_job.spec).progress_from == "Worker"
    assert progress.source(a_ddp_job(2).build(), pods("master"), "Master") is None, "no spec.progress"
    done = attrs.evolve(job, status=v1beta1.TrainingJobStatus(state=S.SUCCEEDED))
    ended = [attrs.evolve(p, phase="Succeeded", running=False) for p in pods("master")]
    assert progress.source(job, ended, "Master") is None, "a running job reads a running rank"
    found = progress.source(done, ended, "Master")
    assert found is not None, "a finished job's first rank is read a last time"


# --- the status ----------------------------------------------------------------------------


def test_a_reading_that_says_nothing_new_writes_nothing() -> None:
    first = progress.update(None, progress.Reading(pod="p", step=5, total=100), T0)
    assert first.last_moved_time == T0
    assert first.steps_per_second is None
    again = progress.update(first, progress.Reading(pod="p", step=5, total=100), T0 + seconds(60))
    assert again is first


def test_the_rate_is_smoothed_and_the_end_estimated() -> None:
    s = progress.update(None, progress.Reading(pod="p", step=0, total=1000), T0)
    s = progress.update(s, progress.Reading(pod="p", step=100, total=1000), T0 + seconds(100))
    assert s.steps_per_second == "1"
    assert s.estimated_completion_time == T0 + seconds(100 + 900)
    s = progress.update(s, progress.Reading(pod="p", step=400, total=1000), T0 + seconds(200))
    assert s.steps_per_second == "2"  # (3 + 1) / 2
    assert s.estimated_completion_time == T0 + seconds(200 + 300)
    # Standing still: the step has not moved since, the rate is kept, metrics still show.
    still = progress.update(
        s, progress.Reading(pod="p", step=400, total=1000, metrics=(("loss", "1"),)), T0 + seconds(260)
    )
    assert still.last_moved_time == T0 + seconds(200)
    assert still.steps_per_second == "2"
    # Back to a checkpoint after a restart: no rate until it moves again.
    back = progress.update(still, progress.Reading(pod="p", step=380, total=1000), T0 + seconds(400))
    assert back.steps_per_second is None
    assert back.estimated_completion_time is None


# --- the pod -------------------------------------------------------------------------------


def rendered(spec: v1beta1.ProgressSpec | None, method: M | None = None) -> dict[str, Any]:
    job = (
        a_ddp_job(1)
        .with_spec(progress=spec, failure_policy=v1beta1.FailurePolicy(restart_method=method))
        .build()
    )
    objects = render.render(job, fw_registry.default().get("pytorch"), in_place=method is M.IN_PLACE)
    return next(o for o in objects if o["kind"] == "Pod")


def test_a_job_with_progress_gives_every_container_the_file_and_the_agent_reads_it() -> None:
    pod = rendered(v1beta1.ProgressSpec(deadline_seconds=60))
    [own] = pod["spec"]["initContainers"]
    assert own["name"] == naming.AGENT
    assert own["restartPolicy"] == "Always"
    assert "restartPolicyRules" not in own, "a recreated job's agent restarts no pod"
    assert f"exit {naming.HUNG_EXIT_CODE}" in own["command"][-1]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == naming.PROGRESS_VOLUME)
    assert volume == {"name": naming.PROGRESS_VOLUME, "emptyDir": {}}
    for c in (own, *pod["spec"]["containers"]):
        assert {"name": naming.PROGRESS_VOLUME, "mountPath": naming.PROGRESS_DIR} in c["volumeMounts"]
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env[naming.PROGRESS_FILE_ENV] == naming.PROGRESS_FILE


def test_without_progress_nothing_is_added_and_without_a_deadline_no_hang_is_said() -> None:
    plain = rendered(None)
    assert "initContainers" not in plain["spec"]
    assert naming.PROGRESS_FILE_ENV not in str(plain)
    reading = rendered(v1beta1.ProgressSpec())
    assert f"exit {naming.HUNG_EXIT_CODE}" not in reading["spec"]["initContainers"][0]["command"][-1]


@pytest.mark.parametrize(
    ("framework", "replicas", "read"),
    [
        ("pytorch", {"Master": 1, "Worker": 3}, "master-0"),
        ("mpi", {"Launcher": 1, "Worker": 3}, "worker-0"),
    ],
)
def test_without_a_deadline_only_the_rank_whose_progress_is_read_has_an_agent(
    framework: str, replicas: dict[str, int], read: str
) -> None:
    def agents(spec: v1beta1.ProgressSpec, method: M | None = None) -> set[str]:
        b = a_job("j").framework(framework)
        for rtype, n in replicas.items():
            b = b.replicas(rtype, n)
        job = b.with_spec(progress=spec, failure_policy=v1beta1.FailurePolicy(restart_method=method)).build()
        objects = render.render(job, fw_registry.default().get(framework), in_place=method is M.IN_PLACE)
        pods = [o for o in objects if o["kind"] == "Pod"]
        for pod in pods:  # every rank may write its file, read or not
            env = {e["name"] for c in pod["spec"]["containers"] for e in c.get("env", [])}
            assert naming.PROGRESS_FILE_ENV in env, pod["metadata"]["name"]
        return {
            pod["metadata"]["name"].split("-", 1)[1]
            for pod in pods
            if any(c["name"] == naming.AGENT for c in pod["spec"].get("initContainers") or [])
        }

    everyone = {f"{t.lower()}-{i}" for t, n in replicas.items() for i in range(n)}
    assert agents(v1beta1.ProgressSpec()) == {read}
    assert agents(v1beta1.ProgressSpec(deadline_seconds=60)) == everyone, "a hang may be any rank's"
    assert agents(v1beta1.ProgressSpec(), M.IN_PLACE) == everyone, "the agent restarts pods in place"


def test_in_place_and_progress_share_one_agent() -> None:
    pod = rendered(v1beta1.ProgressSpec(deadline_seconds=60), M.IN_PLACE)
    agent_, barrier = pod["spec"]["initContainers"][:2]
    assert (agent_["name"], barrier["name"]) == (naming.AGENT, naming.BARRIER)
    script = agent_["command"][-1]
    assert f"exit {naming.AGENT_EXIT_CODE}" in script
    assert f"exit {naming.HUNG_EXIT_CODE}" in script
    assert {m["name"] for m in agent_["volumeMounts"]} == {
        agent.VOLUME,
        agent.STATE_VOLUME,
        naming.PROGRESS_VOLUME,
    }


def agent_status(
    exit_code: int, finished: str = "2026-11-27T10:05:00Z", *, current: bool = False
) -> dict[str, Any]:
    end = {"terminated": {"exitCode": exit_code, "startedAt": "2026-11-27T10:00:00Z", "finishedAt": finished}}
    if current:
        return {"name": naming.AGENT, "restartCount": 1, "state": end}
    return {"name": naming.AGENT, "restartCount": 1, "state": {"running": {}}, "lastState": end}


@pytest.mark.parametrize("through", [lambda p: p, projection.pod], ids=["as is", "projected"])
def test_a_hang_is_read_from_the_agents_end_and_the_start_from_the_main_container(through: Any) -> None:
    pod = rendered(v1beta1.ProgressSpec(deadline_seconds=60))
    pod["metadata"].update(uid="u1")
    pod["status"] = {
        "phase": "Running",
        "initContainerStatuses": [agent_status(naming.HUNG_EXIT_CODE)],
        "containerStatuses": [
            {
                "name": "pytorch",
                "restartCount": 0,
                "state": {"running": {"startedAt": "2026-11-27T09:00:00Z"}},
            }
        ],
    }
    seen = observed.Pod.of(through(pod))
    assert seen.hung_at == datetime.datetime(2026, 11, 27, 10, 5, tzinfo=datetime.UTC)
    assert seen.started_at == datetime.datetime(2026, 11, 27, 9, 0, tzinfo=datetime.UTC)
    assert seen.restarts == 0, "the agent's ends are no failure of the pod"
    assert seen.exit_codes == {}
    pod["status"]["initContainerStatuses"] = [agent_status(naming.AGENT_EXIT_CODE)]
    assert observed.Pod.of(through(pod)).hung_at is None, "restarted in place since"
    pod["status"]["initContainerStatuses"] = [agent_status(naming.HUNG_EXIT_CODE, current=True)]
    assert observed.Pod.of(through(pod)).hung_at is not None, "waiting to start again"


# --- the agent itself -------------------------------------------------------------------------


def test_the_agent_prints_progress_then_says_hung(tmp_path: pathlib.Path) -> None:
    """Its script, run by a shell with its three volumes as directories and a 2 s deadline, in a
    pod that runs attempt 3 (its barrier's memory says so: the agent never restarts it for that)."""
    attempt, data, state = tmp_path / "attempt", tmp_path / "progress", tmp_path / "state"
    for d in (attempt, data, state):
        d.mkdir()
    (attempt / "attempt").write_text("3\n")
    (state / "state").write_text("running 3\n")
    script = (
        agent._agent_script(True, v1beta1.ProgressSpec(deadline_seconds=10, startup_grace_seconds=0))
        .replace(agent.MOUNT, str(attempt))
        .replace(agent.STATE, str(state))
        .replace(naming.PROGRESS_DIR, str(data))
        .replace("-ge 10", "-ge 2")
    )
    (data / "progress").write_text("step=99\n")  # the attempt before's: removed, never read
    run = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        (data / "progress").write_text("step=1 total=9 loss=0.5\n")
        code = run.wait(timeout=10)
    finally:
        run.kill()
    out = run.stdout.read() if run.stdout else ""
    assert code == naming.HUNG_EXIT_CODE
    assert "progress step=1 total=9 loss=0.5" in out
    assert "step=99" not in out
    assert "hung" in out.splitlines()[-1]


def test_the_agent_stopped_says_the_line_written_after_its_last_look(tmp_path: pathlib.Path) -> None:
    """The main container's last line, written just before the kubelet stops the agent (here
    between two looks 30 s apart), is the agent's last word."""
    data = tmp_path / "progress"
    data.mkdir()
    script = (
        agent._agent_script(False, v1beta1.ProgressSpec())
        .replace(naming.PROGRESS_DIR, str(data))
        .replace(f"sleep {agent.POLL_SECONDS} ", "sleep 30 ")
    )
    run = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)  # its first look, at nothing
        (data / "progress").write_text("step=200 total=200\n")
        run.terminate()
        assert run.wait(timeout=10) == 0
    finally:
        run.kill()
    out = run.stdout.read().splitlines() if run.stdout else []
    assert out == ["progress step=200 total=200"], out


# --- hangs on the simulated cluster ----------------------------------------------------------


def world(method: M | None = None, *, grace: int = 60, rules: tuple[v1beta1.FailureRule, ...] = ()) -> World:
    job = (
        a_ddp_job(2)
        .with_spec(
            progress=v1beta1.ProgressSpec(deadline_seconds=30, startup_grace_seconds=grace),
            failure_policy=v1beta1.FailurePolicy(
                restart_scope=v1beta1.RestartScope.JOB, restart_method=method, rules=rules
            ),
        )
        .build()
    )
    w = World(job, pytorch.FRAMEWORK, nodes=3)
    w.settle()
    assert w.state is S.RUNNING
    return w


@pytest.mark.parametrize("method", [M.RECREATE, M.IN_PLACE])
def test_a_hang_is_charged_once_to_user_code_and_restarts_the_job(method: M) -> None:
    w = world(method)
    uids = {n: p.uid for n, p in w.pods.items()}
    w.tick(90)
    w.hang("pt-worker-1")
    w.reconcile()
    [record] = w.status.failures
    assert (record.reason, record.failure_class, record.action) == (
        HUNG,
        v1beta1.FailureClass.USER_CODE,
        v1beta1.FailureAction.RESTART,
    )
    assert record.exit_code is None
    assert w.status.restarts.user_code == 1
    assert record.restart is method
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    assert w.status.restarts.user_code == 1, "charged once"
    assert len(w.status.failures) == 1
    kept = {n for n, p in w.pods.items() if p.uid == uids[n]}
    assert kept == (set(uids) if method is M.IN_PLACE else set()), "in place: the same pods"


def test_a_hang_within_the_startup_grace_or_after_a_container_restart_is_not_charged() -> None:
    w = world(grace=120)
    w.tick(60)
    w.hang("pt-worker-0")
    w.reconcile()
    assert w.status.failures == ()
    assert w.state is S.RUNNING
    # Past the grace the same report counts no more: it was the run's before.
    w.tick(120)
    w.reconcile()
    assert w.status.failures == ()
    # A later one does.
    w.hang("pt-worker-0")
    w.reconcile()
    assert [r.reason for r in w.status.failures] == [HUNG]


def test_no_hang_is_charged_while_suspended() -> None:
    w = world()
    w.tick(90)
    w.hang("pt-master-0")
    w.job = attrs.evolve(
        w.job, spec=attrs.evolve(w.job.spec, run_policy=attrs.evolve(w.job.spec.run_policy, suspend=True))
    )
    w.reconcile()
    assert w.status.failures == ()
    assert w.state is S.SUSPENDED


def test_a_rule_can_match_a_hang_and_restart_policy_never_does_not_fail_it() -> None:
    fail = v1beta1.FailureRule(name="hung", action=v1beta1.FailureAction.FAIL_JOB, on_reasons=(HUNG,))
    w = world(rules=(fail,))
    w.tick(90)
    w.hang("pt-worker-0")
    w.reconcile()
    assert w.state is S.FAILED
    assert w.status.failures[-1].rule == "hung"
    f = classify.Failure(
        pod=observed.Pod(name="p", uid="u", replica_type="worker", index=0),
        failure_class=v1beta1.FailureClass.USER_CODE,
        reason=HUNG,
        hung=True,
    )
    v = failure.verdict(
        f,
        replica_type="Worker",
        rules=(),
        restart_policy=v1beta1.RestartPolicy.NEVER,
        scope=v1beta1.RestartScope.JOB,
        container="pytorch",
    )
    assert v.action is v1beta1.FailureAction.RESTART


def test_progress_read_shows_in_status() -> None:
    w = world()
    assert w.report(7, 70)
    w.reconcile()
    assert w.status.progress is not None
    assert (w.status.progress.step, w.status.progress.pod) == (7, "pt-master-0")


def test_a_template_that_says_null_for_its_lists_still_gets_the_progress_file() -> None:
    """The hostile-input run found it: `volumes: null` crashed the webhook's rendering (a 500)."""
    job = a_ddp_job(1).with_spec(progress=v1beta1.ProgressSpec()).build()
    for rs in job.spec.replica_specs.values():
        rs.template["spec"].update(volumes=None, initContainers=None)
        rs.template["spec"]["containers"][0].update(volumeMounts=None)
    objects = render.render(job, fw_registry.default().get("pytorch"))
    pod = next(o for o in objects if o["kind"] == "Pod")
    assert [v["name"] for v in pod["spec"]["volumes"]] == [naming.PROGRESS_VOLUME]
    assert pod["spec"]["initContainers"][0]["name"] == naming.AGENT


def test_the_agent_says_a_checkpoint_s_answer_at_once(tmp_path: pathlib.Path) -> None:
    """A changed line waits out the 5 s between two prints; one that answers a request does not."""
    data = tmp_path / "progress"
    data.mkdir()
    script = agent._agent_script(False, v1beta1.ProgressSpec()).replace(naming.PROGRESS_DIR, str(data))
    run = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)  # the agent starts by removing what an attempt before left
        (data / "progress").write_text("step=1 loss=0.5\n")
        time.sleep(0.6)  # said: the first line
        (data / "progress").write_text("step=2 loss=0.4\n")
        time.sleep(0.6)  # not said: within 5 s of the last
        (data / "progress").write_text("step=2 loss=0.4 checkpoint=2 answered=1\n")
        time.sleep(0.6)  # said at once
    finally:
        run.terminate()
        run.wait(timeout=10)
    out = run.stdout.read().splitlines() if run.stdout else []
    said = [line for line in out if line.startswith("progress ")]
    assert said[:2] == ["progress step=1 loss=0.5", "progress step=2 loss=0.4 checkpoint=2 answered=1"], out
