"""Restarts in place: pods move to the new attempt where they are, held until none of the old runs.

Scenarios on the simulated cluster (its kubelets restart a moved pod's containers and hold it at
its barrier until it is opened), then the pod as rendered, and what the caches keep of it.
"""

from __future__ import annotations

import pathlib
import subprocess
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from testkit.builders import a_ddp_job, a_job
from testkit.world import World

from kubetrain.api import naming, observed, v1beta1
from kubetrain.operator import agent, projection, render
from kubetrain.operator.frameworks import mpi, pytorch
from kubetrain.operator.policies import inplace

S = v1beta1.JobState
M = v1beta1.RestartMethod


def torch(method: M | None = M.IN_PLACE, workers: int = 2) -> World:
    job = (
        a_ddp_job(workers)
        .with_spec(
            failure_policy=v1beta1.FailurePolicy(
                restart_scope=v1beta1.RestartScope.JOB, restart_method=method, termination_deadline_seconds=30
            )
        )
        .build()
    )
    return World(job, pytorch.FRAMEWORK, nodes=3)


def uids(w: World) -> dict[str, str]:
    return {name: p.uid for name, p in w.pods.items()}


def test_a_job_restart_restarts_every_pod_in_place_the_failed_one_too() -> None:
    w = torch()
    w.settle()
    before = uids(w)
    w.exit(naming.replica_name("pt", "Worker", 1), 137)
    assert w.pod("Worker", 1).held, "its rule restarted it in place; its barrier holds it"
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    # Every pod stayed (same UIDs), the failed one too: none was made again.
    assert uids(w) == before
    assert {p.attempt for p in w.pods.values()} == {1}
    assert all(p.running for p in w.pods.values())
    assert w.pod("Master", 0).restarts >= 1, "restarted by its kubelet"
    # Charged once, exactly as a recreate is, and said how it was carried out.
    assert w.status.restarts.user_code == 1
    [record] = w.status.failures
    assert record.restart is M.IN_PLACE
    assert record.exit_code == 137
    # The kubelet's restarts of the moved pods are not failures.
    w.tick(1)
    w.settle()
    assert w.status.restarts.total == 1
    assert len(w.status.failures) == 1


def test_moved_pods_are_opened_only_when_none_of_the_old_attempt_runs() -> None:
    w = torch()
    w.restarting = False  # the agents do not act yet: the moved pods keep running
    w.settle()
    w.exit(naming.replica_name("pt", "Worker", 1), 137)
    w.tick(1)
    decision = w.reconcile()
    assert {m.pod for m in decision.move} == {"pt-master-0", "pt-worker-0"}
    assert not decision.open
    w.kubelets()
    decision = w.reconcile()  # moved and still running; the failed pod is gone and made closed
    assert not decision.open
    assert decision.create == (("Worker", 1),)
    assert decision.closed
    assert w.running_attempts() == {"master": {0}, "worker": {0}}
    w.restarting = True
    w.kubelets()
    decision = w.reconcile()
    assert {m.pod for m in decision.open} == {"pt-master-0", "pt-worker-0", "pt-worker-1"}
    w.kubelets()
    assert w.running_attempts() == {"master": {1}, "worker": {1}}


def test_a_moved_pod_that_does_not_stop_in_time_is_made_again() -> None:
    w = torch()
    w.settle()
    w.restarting = False  # its kubelet cannot restart in place after all
    w.exit(naming.replica_name("pt", "Worker", 1), 137)
    w.tick(1)
    w.settle()
    assert w.state is S.RESTARTING
    master = w.pod("Master", 0).uid
    w.tick(inplace.STOP_TIMEOUT_SECONDS)
    decision = w.reconcile()
    assert {d.pod for d in decision.delete} == {"pt-master-0", "pt-worker-0"}
    assert [e.reason for e in decision.events] == ["InPlaceRestartFellBack"] * 2
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    assert w.pod("Master", 0).uid != master
    assert w.status.restarts.total == 1, "the fall-back is the same restart"


def test_moved_pods_wait_out_the_restart_backoff_as_made_ones_do() -> None:
    w = torch()
    backoff = v1beta1.RestartBackoff(initial_seconds=20)
    w.job = attrs.evolve(
        w.job,
        spec=attrs.evolve(
            w.job.spec, failure_policy=attrs.evolve(w.job.spec.failure_policy, restart_backoff=backoff)
        ),
    )
    w.settle()
    w.exit(naming.replica_name("pt", "Worker", 1), 137)
    w.tick(1)
    w.settle()
    assert w.state is S.RESTARTING
    assert {p.opened for p in w.pods.values()} <= {0, inplace.CLOSED}, "none opened within the backoff"
    w.tick(20)
    w.settle()
    assert w.state is S.RUNNING
    assert {p.opened for p in w.pods.values()} == {1}


def test_recreate_deletes_every_pod_as_before() -> None:
    w = torch(method=None)
    w.settle()
    before = uids(w)
    w.exit(naming.replica_name("pt", "Worker", 1), 137)
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    assert not set(before.values()) & set(uids(w).values())
    assert w.status.failures[0].restart is M.RECREATE


def test_pods_are_made_restartable_in_place_only_where_a_node_can() -> None:
    w = torch()
    w.in_place = False
    decision = w.reconcile()
    assert decision.create
    assert not decision.in_place
    w2 = torch()
    assert w2.reconcile().in_place


def rendered(
    closed: bool = False,
    env: list[dict[str, Any]] | None = None,
    policy: v1beta1.RestartPolicy = v1beta1.RestartPolicy.EXIT_CODE,
) -> dict[str, Any]:
    job = (
        a_job("pt")
        .framework("pytorch")
        .replicas("Master", 1, restart_policy=policy)
        .with_spec(failure_policy=v1beta1.FailurePolicy(restart_method=M.IN_PLACE))
        .build()
    )
    if env is not None:
        job.spec.replica_specs["Master"].template["spec"]["containers"][0]["env"] = env
    [pod] = [
        o for o in render.render(job, pytorch.FRAMEWORK, in_place=True, closed=closed) if o["kind"] == "Pod"
    ]
    return pod


def test_the_rendered_pod_has_its_agent_then_its_barrier() -> None:
    pod = rendered()
    agent_, barrier = pod["spec"]["initContainers"][:2]
    assert (agent_["name"], barrier["name"]) == (naming.AGENT, naming.BARRIER)
    assert agent_["restartPolicy"] == "Always"
    assert agent_["restartPolicyRules"] == [
        {
            "action": "RestartAllContainers",
            "exitCodes": {"operator": "In", "values": [naming.AGENT_EXIT_CODE]},
        }
    ]
    main = pod["spec"]["containers"][0]
    assert agent_["image"] == barrier["image"] == main["image"]
    assert pod["metadata"]["annotations"][naming.OPENED] == "0"
    assert rendered(closed=True)["metadata"]["annotations"][naming.OPENED] == "-1"
    env = {e["name"]: e["valueFrom"]["fileKeyRef"] for e in main["env"] if e["name"] in render.RESTART_ENV}
    assert env == {
        name: {
            "volumeName": agent.STATE_VOLUME,
            "path": agent.ENV_FILE,
            "key": name,
            **(
                {"optional": True} if name in (render.LAST_RESTART_REASON_ENV, render.RESUME_STEP_ENV) else {}
            ),
        }
        for name in render.RESTART_ENV
    }, "the restart env is what the barrier wrote; the reason is left out before any restart"
    [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == agent.STATE_VOLUME]
    assert volume == {"name": agent.STATE_VOLUME, "emptyDir": {}}, (
        "the kubelet reads fileKeyRef from an emptyDir"
    )


def test_a_restart_env_the_user_set_is_kept() -> None:
    pod = rendered(env=[{"name": render.RESTART_ATTEMPT_ENV, "value": "7"}])
    env = [e for e in pod["spec"]["containers"][0]["env"] if e["name"] == render.RESTART_ATTEMPT_ENV]
    assert env == [{"name": render.RESTART_ATTEMPT_ENV, "value": "7"}]


def test_a_move_sets_the_attempt_and_what_the_restart_env_reads() -> None:
    status = v1beta1.TrainingJobStatus(restarts=v1beta1.RestartCounts(user_code=2))
    md = render.moved(status, 3)
    assert md["labels"] == {naming.ATTEMPT: "3"}
    assert md["annotations"][naming.RESTARTS] == "2"


@pytest.mark.parametrize("through", [lambda p: p, projection.pod], ids=["as is", "projected"])
def test_a_moving_pod_is_read_from_its_metadata_and_container_states(through: Any) -> None:
    pod = rendered()
    pod["metadata"].update(uid="u1", creationTimestamp="2026-11-27T00:00:00Z")
    pod["metadata"]["labels"][naming.ATTEMPT] = "1"
    pod["spec"]["nodeName"] = "n1"
    pod["status"] = {
        "phase": "Running",
        "initContainerStatuses": [
            {"name": naming.AGENT, "restartCount": 4, "state": {"running": {}}},
            {"name": naming.BARRIER, "restartCount": 4, "state": {"terminated": {"exitCode": 137}}},
        ],
        "containerStatuses": [
            {"name": "pytorch", "restartCount": 1, "state": {"running": {"startedAt": "x"}}}
        ],
    }
    seen = observed.Pod.of(through(pod))
    assert seen.moving
    assert seen.running
    assert seen.restarts == 1, "kubetrain's own containers restart with the pod, not for a failure"
    assert seen.exit_codes == {}
    assert inplace.restartable(seen)


@pytest.mark.parametrize("method", [None, M.IN_PLACE])
def test_peers_that_crash_with_the_failed_rank_are_the_old_attempts_and_one_restart_is_charged_once(
    method: M | None,
) -> None:
    w = torch(method)
    w.settle()
    for name in ("pt-worker-1", "pt-master-0", "pt-worker-0"):  # a rank dies; its peers crash with it
        w.exit(name, 137)
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    assert w.status.restarts.user_code == 1
    assert len(w.status.failures) == 1


# --- MPI: the launcher starts every rank, and restarts alone ------------------------------------


def mpi_job(method: M | None) -> World:
    job = (
        a_job("mpi")
        .framework("mpi")
        .replicas("Launcher", 1)
        .replicas("Worker", 2)
        .with_spec(failure_policy=v1beta1.FailurePolicy(restart_method=method))
        .build()
    )
    return World(job, mpi.FRAMEWORK, nodes=3)


def test_a_failed_launcher_restarts_alone_in_place_and_the_workers_sshd_keeps_running() -> None:
    w = mpi_job(M.IN_PLACE)
    w.settle()
    before = uids(w)
    workers = {n: p.restarts for n, p in w.pods.items() if p.replica_type == "worker"}
    w.exit("mpi-launcher-0", 137)  # a rank died: mpirun stopped the others and ended
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    assert uids(w) == before, "no pod made again"
    launcher = w.pod("Launcher", 0)
    assert (launcher.attempt, launcher.running) == (1, True)
    assert {n: p.restarts for n, p in w.pods.items() if p.replica_type == "worker"} == workers
    assert {w.pod("Worker", i).attempt for i in range(2)} == {0}
    assert w.status.replica_statuses["Launcher"].attempt == 1
    assert w.status.replica_statuses["Worker"].attempt == 0
    [record] = w.status.failures
    assert (record.restart, record.exit_code, w.status.restarts.user_code) == (M.IN_PLACE, 137, 1)


def test_a_failed_worker_or_a_recreate_restarts_the_whole_mpi_job() -> None:
    w = mpi_job(M.IN_PLACE)
    w.settle()
    w.evict("mpi-worker-1")  # sshd's pod lost: the world needs a new host
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    assert {p.attempt for p in w.pods.values()} == {1}
    w = mpi_job(None)
    w.settle()
    before = uids(w)
    w.exit("mpi-launcher-0", 137)
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    assert not set(uids(w).values()) & set(before.values()), "Recreate makes every pod again"


def test_a_held_pod_whose_exit_code_was_not_seen_is_still_charged_once() -> None:
    """The operator was down while the kubelet showed the exit: after the restart in place every
    container's last end is the restart's (137, RestartingAllContainers), and the agent says the
    pod is held. The failure is charged once, as a restart: only codes the job restarts for have
    the kubelet restart a pod in place."""
    w = torch()
    w.settle()
    name = naming.replica_name("pt", "Worker", 1)
    pod = w.pods[name]
    w.pods[name] = attrs.evolve(
        pod,
        phase="Pending",
        running=False,
        ready=False,
        restarts=pod.restarts + 1,
        restarted_in_place=True,
        exit_codes={},
        reasons=(),
        held_signal="containerd://2",
    )
    w.reconcile()
    [record] = w.status.failures
    assert (record.reason, record.exit_code, record.restart) == ("RestartedInPlace", None, M.IN_PLACE)
    assert w.status.restarts.user_code == 1
    w.reconcile()  # seen again before the move shows: charged once
    assert w.status.restarts.user_code == 1


def test_an_attempt_that_ends_before_its_container_runs_again_is_still_charged() -> None:
    """The kubelet's restart counts miss an end (a container removed before it ran again is
    counted once for two ends): the agent's word, once per attempt, is what is charged."""
    w = torch()
    w.settle()
    name = naming.replica_name("pt", "Worker", 1)
    for attempt in (1, 2):
        w.exit(name, 137)
        w.tick(1)
        w.settle()
        assert w.pod("Worker", 1).attempt == attempt
    assert w.status.restarts.user_code == 2
    pod = w.pods[name]
    # Attempt 2 ends too, but its restart count does not grow.
    w.pods[name] = attrs.evolve(
        pod, phase="Pending", running=False, held_signal="containerd://99", held_attempt=2
    )
    w.tick(1)
    w.settle()
    assert w.status.restarts.user_code == 3
    assert w.pod("Worker", 1).attempt == 3
    assert w.pod("Worker", 1).running


def test_the_failed_pods_rule_names_the_codes_the_job_restarts_for() -> None:
    pod = rendered()  # ExitCode, scope Job: signals restart, 1-127 fail the job
    main = pod["spec"]["containers"][0]
    assert (
        "restartPolicyRules" not in rendered(policy=v1beta1.RestartPolicy.ON_FAILURE)["spec"]["containers"][0]
    )
    assert main["restartPolicy"] == "Never"
    [rule] = main["restartPolicyRules"]
    assert rule["action"] == "RestartAllContainers"
    assert rule["exitCodes"] == {"operator": "In", "values": list(range(128, 256))}
    assert {v["name"] for v in pod["spec"]["volumes"]} >= {agent.VOLUME, agent.STATE_VOLUME}
    rule = v1beta1.FailureRule(
        name="retryOne",
        action=v1beta1.FailureAction.RESTART,
        on_exit_codes=v1beta1.ExitCodeMatch(operator=v1beta1.ExitCodeOperator.IN, values=(1,)),
    )
    pod_scoped = attrs.evolve(rule, name="podThree", restart_scope=v1beta1.RestartScope.POD)
    codes = inplace.restart_codes(
        (rule, attrs.evolve(pod_scoped, on_exit_codes=attrs.evolve(rule.on_exit_codes, values=(3,)))),
        replica_type="Worker",
        restart_policy=v1beta1.RestartPolicy.EXIT_CODE,
        scope=v1beta1.RestartScope.JOB,
        container="pytorch",
    )
    assert codes[0] == 1
    assert 2 not in codes, "a permanent code fails the job: its pod ends and keeps its logs"
    assert 3 not in codes, "a Pod restart makes the pod again"


@pytest.mark.parametrize("through", [lambda p: p, projection.pod], ids=["as is", "projected"])
def test_a_held_pod_is_read_from_its_agents_end_and_a_restarts_137_is_no_exit_code(through: Any) -> None:
    pod = rendered()
    pod["metadata"].update(uid="u1")
    pod["spec"]["nodeName"] = "n1"
    restarted = {"terminated": {"exitCode": 137, "reason": observed.RESTARTED_IN_PLACE}}
    pod["status"] = {
        "phase": "Pending",
        "initContainerStatuses": [
            {
                "name": naming.AGENT,
                "restartCount": 2,
                "state": {"running": {}},
                "lastState": {
                    "terminated": {
                        "exitCode": naming.HELD_EXIT_CODE,
                        "message": "0\n",
                        "containerID": "c://1",
                    }
                },
            },
            {"name": naming.BARRIER, "restartCount": 1, "state": {"running": {}}, "lastState": restarted},
        ],
        "containerStatuses": [
            {
                "name": "pytorch",
                "restartCount": 1,
                "state": {"waiting": {"reason": "PodInitializing"}},
                "lastState": restarted,
            }
        ],
    }
    seen = observed.Pod.of(through(pod))
    assert seen.held
    assert (seen.held_signal, seen.held_attempt) == ("c://1", 0)
    assert seen.restarted_in_place
    assert seen.exit_codes == {}
    assert seen.reasons == ()
    # Without the exit's container ID, when it ended tells one word from the next: the cache keeps it.
    end = pod["status"]["initContainerStatuses"][0]["lastState"]["terminated"]
    del end["containerID"]
    end["finishedAt"] = "2026-11-29T11:31:18Z"
    assert observed.Pod.of(through(pod)).held_signal == "2026-11-29T11:31:18Z"
    assert inplace.restartable(seen)


def test_the_cache_keeps_the_end_a_restart_in_place_erases() -> None:
    def status(count: int, state: dict[str, Any], last: dict[str, Any] | None = None) -> dict[str, Any]:
        c: dict[str, Any] = {"name": "main", "restartCount": count, "state": state}
        if last is not None:
            c["lastState"] = {"terminated": last}
        return {"metadata": {"name": "p"}, "status": {"containerStatuses": [c]}}

    failed = {"exitCode": 3, "reason": "Error"}
    restart = {"exitCode": 137, "reason": observed.RESTARTED_IN_PLACE}
    ended = status(0, {"terminated": failed})
    held = projection.carry_pod(ended, status(1, {"waiting": {"reason": "PodInitializing"}}, restart))
    assert held["status"]["containerStatuses"][0]["lastState"] == {"terminated": failed}
    running = projection.carry_pod(held, status(1, {"running": {}}, restart))
    assert observed.Pod.of({**running, "metadata": {"name": "p"}}).exit_codes == {"main": 3}
    # A restart for a move (the container ran): nothing to keep.
    moved = status(2, {"waiting": {"reason": "PodInitializing"}}, restart)
    assert projection.carry_pod(status(1, {"running": {}}, failed), moved) is moved
    assert projection.carry_pod(None, moved) is moved


# --- the agent and the barrier, run by a shell --------------------------------------------------


class Pod:
    """A pod's three volumes as directories, and its agent's and barrier's scripts pointed at them."""

    def __init__(self, root: pathlib.Path) -> None:
        self.attempt, self.state = root / "attempt", root / "state"
        self.attempt.mkdir()
        self.state.mkdir()
        self.started: list[subprocess.Popen[str]] = []
        self.label(0)
        self.open(0)

    def label(self, attempt: int) -> None:
        (self.attempt / "attempt").write_text(f"{attempt}\n")

    def open(self, attempt: int) -> None:
        (self.attempt / "opened").write_text(f"{attempt}\n")

    def annotate(self, restarts: int, reason: str, resume: str = "") -> None:
        """The downward API writes a value as it is, with no newline."""
        (self.attempt / "restarts").write_text(str(restarts))
        (self.attempt / "reason").write_text(reason)
        (self.attempt / "resume").write_text(resume)

    def env(self) -> list[str]:
        return (self.state / agent.ENV_FILE).read_text().splitlines()

    def start(self, name: str) -> subprocess.Popen[str]:
        script = agent._agent_script(True, None) if name == "agent" else agent._BARRIER
        script = script.replace(agent.MOUNT, str(self.attempt)).replace(agent.STATE, str(self.state))
        self.started.append(subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, text=True))
        return self.started[-1]


@pytest.fixture
def pod(tmp_path: pathlib.Path) -> Iterator[Pod]:
    """A pod whose scripts are all stopped when the test ends, whatever happened (they loop)."""
    made = Pod(tmp_path)
    yield made
    for p in made.started:
        p.kill()
        p.wait()


def ends(p: subprocess.Popen[str], within: float = 3.0) -> int | None:
    try:
        return p.wait(timeout=within)
    except subprocess.TimeoutExpired:
        return None


def test_a_failed_pod_is_held_and_said_held_once_then_moved_and_opened(pod: Pod) -> None:
    assert ends(pod.start("barrier")) == 0, "attempt 0 is open: it starts"
    agent_ = pod.start("agent")
    assert ends(agent_, 0.6) is None, "attempt 0 runs: nothing to do"
    agent_.kill()
    # The main container failed; its rule restarted every container: the barrier holds the pod.
    barrier, agent_ = pod.start("barrier"), pod.start("agent")
    assert ends(barrier, 0.8) is None, "attempt 0 has run here"
    assert ends(agent_) == naming.HELD_EXIT_CODE, "the agent says so, once"
    agent_ = pod.start("agent")  # the kubelet starts it again
    pod.label(1)  # the operator moves the pod: nothing of attempt 0 runs, so no restart for it
    assert ends(agent_, 0.8) is None
    assert ends(barrier, 0.6) is None, "attempt 1 is not open yet"
    pod.open(1)
    assert ends(barrier) == 0
    pod.label(2)  # attempt 1 runs now: a move restarts the pod
    assert ends(agent_) == naming.AGENT_EXIT_CODE


def test_the_barrier_writes_the_restart_env_of_the_attempt_it_lets_start(pod: Pod) -> None:
    """What the main container's env reads (``fileKeyRef``), in the kubelet's format: a value in
    single quotes, which it cannot escape."""
    assert ends(pod.start("barrier")) == 0
    assert pod.env() == [
        f"{render.RESTART_ATTEMPT_ENV}='0'",
        f"{render.RESTARTS_ENV}='0'",
        f"{render.LAST_RESTART_REASON_ENV}=''",
        f"{render.RESUME_STEP_ENV}=''",
    ], "a pod made before the first restart: no reason, which the kubelet leaves out (optional)"
    barrier = pod.start("barrier")  # restarted in place; then moved, with what goes with the move
    pod.label(1)
    pod.annotate(3, "UserCode:it's OOMKilled", resume="1200")
    assert ends(barrier, 0.6) is None, "attempt 1 is not open yet"
    assert pod.env()[0] == f"{render.RESTART_ATTEMPT_ENV}='0'", "the file is the attempt that runs"
    pod.open(1)
    assert ends(barrier) == 0
    assert pod.env() == [
        f"{render.RESTART_ATTEMPT_ENV}='1'",
        f"{render.RESTARTS_ENV}='3'",
        f"{render.LAST_RESTART_REASON_ENV}='UserCode:its OOMKilled'",
        f"{render.RESUME_STEP_ENV}='1200'",
    ], "the next attempt resumes from the last checkpoint the operator saw"


def test_a_new_pod_made_closed_waits_and_its_agent_does_not_restart_it(pod: Pod) -> None:
    pod.open(-1)
    pod.label(3)
    barrier, agent_ = pod.start("barrier"), pod.start("agent")
    assert ends(agent_, 0.8) is None
    assert ends(barrier, 0.2) is None
    pod.open(3)
    assert ends(barrier) == 0
    assert (pod.state / "state").read_text().strip() == "running 3"
    agent_.kill()


def test_the_agents_word_is_charged_once_though_it_stays_until_the_pod_runs_again() -> None:
    """Moved and opened, a held pod still shows its agent's last word until its kubelet starts
    its containers again (and after): it is not a new end."""
    w = torch()
    w.settle()
    name = naming.replica_name("pt", "Worker", 1)
    w.exit(name, 137)
    for _ in range(4):  # charged and moved, opened, then looked at again before any kubelet acts
        w.reconcile()
    assert w.pod("Worker", 1).held
    assert w.pod("Worker", 1).attempt == 1
    assert w.status.restarts.user_code == 1
    w.settle()
    assert w.pod("Worker", 1).running
    assert w.status.restarts.user_code == 1


def test_an_agent_started_with_its_pod_does_not_restart_it_for_the_run_before(pod: Pod) -> None:
    """Restarted with the whole pod, the agent starts before the barrier does, and finds the state
    of the run before ("running 0"): moved meanwhile, the pod runs nothing of attempt 0 any more."""
    assert ends(pod.start("barrier")) == 0
    agent_ = pod.start("agent")  # the kubelet restarted every container; the barrier is not up yet
    pod.label(1)
    assert ends(agent_, 0.8) is None, "no second restart for a move"
    barrier = pod.start("barrier")
    pod.open(1)
    assert ends(barrier) == 0
    pod.label(2)
    assert ends(agent_) == naming.AGENT_EXIT_CODE, "attempt 1 runs: a move restarts the pod"


def test_an_agent_restarted_alone_after_its_word_still_restarts_the_pod_for_a_move(pod: Pod) -> None:
    """The kubelet starts an agent that said its pod is held again alone, at once or after a
    back-off: after the barrier let the next attempt start, it is that attempt's agent all the
    same (before, it took itself for one started with the pod, and never restarted the pod for a
    move: the job's next restart waited for the pod to stop, then made it again)."""
    assert ends(pod.start("barrier")) == 0
    pod.start("agent").kill()  # the main container failed: every container restarted
    barrier, agent_ = pod.start("barrier"), pod.start("agent")
    assert ends(agent_) == naming.HELD_EXIT_CODE
    pod.label(1)
    pod.open(1)
    assert ends(barrier) == 0, "attempt 1 starts while the agent waits out its back-off"
    agent_ = pod.start("agent")
    assert ends(agent_, 0.8) is None, "attempt 1 runs: nothing to do"
    pod.label(2)
    assert ends(agent_) == naming.AGENT_EXIT_CODE, "a move restarts the pod"


def test_peers_held_after_the_first_rank_was_charged_are_the_old_attempts() -> None:
    """Under ExitCode every rank of a DDP world ends when one does, and each pod's agent says so a
    moment apart: the first word restarts the job; the others, which the step then moves, are the
    old attempt's ends."""
    w = torch()
    w.settle()
    w.exit("pt-worker-1", 137)
    w.reconcile()  # charged: every pod moves to attempt 1
    assert w.status.restarts.user_code == 1
    w.exit("pt-master-0", 137)  # the peers' ends, said after the move
    w.exit("pt-worker-0", 137)
    w.tick(1)
    w.settle()
    assert w.state is S.RUNNING
    assert w.status.restarts.user_code == 1
    assert {p.attempt for p in w.pods.values()} == {1}
