"""What `kubetrain describe` tells a person: the state and why, and what to do next."""

from __future__ import annotations

import types

import attrs
from testkit.builders import a_job
from testkit.statuses import NOW, ago, cond, with_status

from kubetrain import client
from kubetrain.api import v1beta1
from kubetrain.cli import describe, jobs, wait

C = v1beta1.ConditionType
FAILED_MESSAGE = "Worker 1 (pt-worker-1) failed: UserCode Error, exit code 1"


def record(index: int, exit_code: int, action: str, rule: str | None, age: float) -> v1beta1.FailureRecord:
    return v1beta1.FailureRecord(
        time=ago(age),
        replica_type="Worker",
        index=index,
        pod=f"pt-worker-{index}",
        node="node-a",
        exit_code=exit_code,
        reason="Error",
        failure_class=v1beta1.FailureClass.USER_CODE,
        rule=rule,
        action=v1beta1.FailureAction(action),
        restart=v1beta1.RestartMethod.IN_PLACE if action == "Restart" else None,
    )


def failed_job() -> v1beta1.TrainingJob:
    job = (
        a_job("pt")
        .replicas("Master", 1)
        .replicas("Worker", 2)
        .with_spec(run_policy=v1beta1.RunPolicy(backoff_limit=3))
        .build()
    )
    return with_status(
        job,
        conditions=(
            cond(C.CREATED, True, "TrainingJobCreated", "TrainingJob pt was created", age=290),
            cond(C.RUNNING, False, "Failed", "", age=30),
            cond(C.FAILED, True, "PermanentExitCode", FAILED_MESSAGE, age=30),
        ),
        replica_statuses={
            "Master": v1beta1.ReplicaStatus(active=0),
            "Worker": v1beta1.ReplicaStatus(failed=1, attempt=1),
        },
        restarts=v1beta1.RestartCounts(user_code=1),
        failures=(record(0, 137, "Restart", "signalled", 120), record(1, 1, "FailJob", None, 30)),
        start_time=ago(280),
        completion_time=ago(30),
    )


def pod(name: str, index: int, phase: str, exit_code: int | None = None) -> client.PodInfo:
    return client.PodInfo(
        name=name,
        replica=f"worker-{index}",
        replica_type="Worker",
        index=index,
        attempt=1,
        phase=phase,
        node="node-a",
        restarts=0,
        reason="Error" if exit_code else None,
        exit_code=exit_code,
    )


def event(reason: str, message: str, age: float, *, type: str = "Normal", count: int = 1) -> client.Event:
    return client.Event(
        time=ago(age), type=type, reason=reason, message=message, object="TrainingJob/pt", count=count
    )


def section(text: str, title: str) -> list[str]:
    """The lines of one section (title line through the blank line after it)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i]), len(lines))
    return lines[start:end]


def test_a_failed_job_says_why_which_rule_decided_and_where_to_look() -> None:
    job = failed_job()
    pods = [pod("pt-worker-1", 1, "Failed", 1)]
    events = [
        event("Rule:signalled", "Worker 0 restarted", 120, type="Warning"),
        event("PermanentExitCode", FAILED_MESSAGE, 30, type="Warning", count=2),
    ]
    text = describe.text(job, pods, events, NOW)
    head = section(text, "Name:")
    assert head[:6] == [
        "Name:         pt",
        "Namespace:    default",
        "Framework:    pytorch",
        "State:        Failed",
        "Reason:       PermanentExitCode",
        f"Message:      {FAILED_MESSAGE}",
    ]
    assert "Completed:    2026-11-24T11:59:30Z (30s ago)" in head
    assert section(text, "Conditions:")[4].split()[:4] == ["Failed", "True", "PermanentExitCode", "30s"]
    replicas = section(text, "Replicas:")
    assert replicas[1].split() == ["TYPE", "WANTED", "ACTIVE", "READY", "SUCCEEDED", "FAILED", "ATTEMPT"]
    assert replicas[3].split() == ["Worker", "2", "0", "0", "0", "1", "1"]
    assert section(text, "Pods:")[2].split() == [
        "pt-worker-1",
        "Worker/1",
        "1",
        "Failed",
        "node-a",
        "0",
        "1",
        "Error",
    ]
    assert section(text, "Restarts") == [
        "Restarts (restartMethod Recreate: pods made again):",
        "  CHARGED TO       SPENT    BUDGET",
        "  user code        1 of 3   runPolicy.backoffLimit",
        "  infrastructure   0        no limit",
        "  uncharged        0        rules with action RestartUncharged",
    ]
    failures = section(text, "Failures (oldest first):")
    assert failures[1].split() == [
        "AGE",
        "REPLICA",
        "POD",
        "NODE",
        "EXIT",
        "CLASS",
        "REASON",
        "RULE",
        "ACTION",
    ]
    assert failures[2].split() == [
        "2m",
        "Worker/0",
        "pt-worker-0",
        "node-a",
        "137",
        "UserCode",
        "Error",
        "signalled",
        "Restart",
        "(in",
        "place)",
    ]
    assert failures[3].split() == [
        "30s",
        "Worker/1",
        "pt-worker-1",
        "node-a",
        "1",
        "UserCode",
        "Error",
        "-",
        "FailJob",
    ]
    assert "30s (x2)   Warning   PermanentExitCode" in section(text, "Events:")[3]
    assert "Scheduling:" not in text
    assert text.endswith("next: kubetrain logs pt --replica Worker/1\n")


def test_the_next_step_repeats_the_namespace_the_user_named() -> None:
    assert describe.hint(failed_job(), "team-a") == "kubetrain logs pt -n team-a --replica Worker/1"


def test_a_long_history_shows_the_last_failures_and_says_so() -> None:
    job = failed_job()
    many = tuple(record(i % 2, 137, "Restart", "signalled", 500 - i) for i in range(30))
    job = with_status(job, conditions=job.status.conditions, failures=many)
    lines = section(describe.text(job, [], [], NOW), "Failures")
    assert lines[0] == f"Failures (oldest first, last {describe.HISTORY} of 30):"
    assert len(lines) == 2 + describe.HISTORY


def test_the_nodes_kept_off_are_listed_with_the_failure_that_put_them_there() -> None:
    job = failed_job()
    assert "Nodes kept off" not in describe.text(job, [], [], NOW)
    kept = (v1beta1.AvoidedNode(node="gpu-7", reason="Error", pod="pt-worker-0", time=ago(90)),)
    job = with_status(job, conditions=job.status.conditions, avoided_nodes=kept)
    lines = section(describe.text(job, [], [], NOW), "Nodes kept off")
    assert lines[1].split() == ["NODE", "REASON", "POD", "AGE"]
    assert lines[2].split() == ["gpu-7", "Error", "pt-worker-0", "90s"]


def test_a_queued_job_names_its_queue_and_its_scheduling_policy() -> None:
    policy = v1beta1.SchedulingPolicy(queue="team-q", min_available=3, priority_class="high")
    job = (
        a_job("q")
        .replicas("Worker", 4)
        .with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=policy))
        .build()
    )
    queued = with_status(
        job,
        conditions=(
            cond(C.CREATED, True, "TrainingJobCreated", age=100),
            cond(C.SCHEDULED, False, "Queued", "queued in team-q: 4 of 4 pods wait for admission", age=90),
        ),
    )
    text = describe.text(queued, [], [], NOW)
    assert section(text, "Scheduling:") == [
        "Scheduling:",
        "  Scheduled:         False, Queued for 90s: queued in team-q: 4 of 4 pods wait for admission",
        "  Queue:             team-q",
        "  Min available:     3",
        "  Priority class:    high",
    ]
    assert "Pods:  none" in text
    assert "Events:  none" in text
    assert text.endswith("next: it waits to be admitted in queue team-q (kubectl get localqueue team-q)\n")


def test_a_job_kueue_holds_as_its_workload_points_to_the_workload() -> None:
    policy = v1beta1.SchedulingPolicy(queue="team-q")
    job = (
        a_job("q")
        .replicas("Worker", 2)
        .with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=policy))
        .build()
    )
    for reason in ("Queued", "Evicted"):
        held = with_status(
            job,
            conditions=(
                cond(C.CREATED, True, "TrainingJobCreated", age=100),
                cond(C.SUSPENDED, True, reason, "waiting in Kueue LocalQueue team-q", age=90),
            ),
        )
        assert held.status.state is v1beta1.JobState.SUSPENDED
        assert jobs.state_cell(held) == f"Suspended ({reason})"
        assert describe.text(held, [], [], NOW).endswith(
            "next: it waits in queue team-q; it resumes when Kueue admits its Workload "
            "(kubectl get workloads -l training.kubetrain.dev/job-name=q)\n"
        )


def test_an_unschedulable_job_says_when_it_will_give_up() -> None:
    policy = v1beta1.SchedulingPolicy(schedule_timeout_seconds=120)
    job = (
        a_job("big")
        .replicas("Worker", 4)
        .with_spec(run_policy=v1beta1.RunPolicy(scheduling_policy=policy))
        .build()
    )
    stuck = with_status(
        job,
        conditions=(
            cond(C.CREATED, True, "TrainingJobCreated"),
            cond(
                C.SCHEDULED, False, "Unschedulable", "4 of 4 pods cannot be placed: 0/2 nodes are available"
            ),
        ),
    )
    scheduling = section(describe.text(stuck, [], [], NOW), "Scheduling:")
    assert scheduling[2:] == ["  Min available:     every replica", "  Schedule timeout:  120s"]
    assert describe.hint(stuck) == (
        "no room for its pods: free room on the nodes, or lower the pods' requests;"
        " it fails after scheduleTimeoutSeconds (120s)"
    )


def test_a_refused_create_passes_on_the_apiservers_words() -> None:
    job = a_job("quota").replicas("Worker", 1).build()
    refused = with_status(
        job,
        conditions=(
            cond(C.CREATED, True, "TrainingJobCreated"),
            cond(
                C.REPLICA_FAILURE,
                True,
                "QuotaExceeded",
                'Pod quota-worker-0: pods "quota-worker-0" is forbidden: exceeded quota',
            ),
        ),
    )
    assert describe.hint(refused) == (
        'the cluster refuses its pods (QuotaExceeded): Pod quota-worker-0: pods "quota-worker-0" is forbidden: '
        "exceeded quota"
    )


def test_states_that_call_for_no_step_or_another_one() -> None:
    job = a_job("s").replicas("Worker", 1).build()
    done = with_status(
        job,
        conditions=(
            cond(C.CREATED, True, "TrainingJobCreated"),
            cond(C.SUCCEEDED, True, "SuccessPolicyMet", "Worker 0 succeeded"),
        ),
    )
    assert describe.hint(done) is None
    assert "next:" not in describe.text(done, [], [], NOW)
    running = with_status(
        job, conditions=(cond(C.CREATED, True, "TrainingJobCreated"), cond(C.RUNNING, True, "Running"))
    )
    assert describe.hint(running) == "kubetrain logs s -f"
    suspended = with_status(job, conditions=(cond(C.SUSPENDED, True, "Suspended"),))
    assert describe.hint(suspended) == (
        """kubectl patch trainingjob s --type merge -p '{"spec":{"runPolicy":{"suspend":false}}}' resumes it"""
    )
    assert (
        describe.hint(job) == "the operator has not reconciled this job yet: is kubetrain-operator running?"
    )
    assert "State:        Pending (the operator has not reconciled it yet)" in describe.text(job, [], [], NOW)
    invalid = with_status(job, conditions=(cond(C.FAILED, True, "InvalidSpec", "spec.x: bad"),))
    assert (
        describe.hint(invalid)
        == "fix the spec as the message says, then kubetrain delete s and submit it again"
    )


def test_the_tensorboard_address_is_shown_when_the_status_has_one() -> None:
    job = failed_job()
    board = types.SimpleNamespace(name="pt-tensorboard", address="http://pt-tensorboard.default.svc:6006")
    with_board = types.SimpleNamespace(status=types.SimpleNamespace(tensorboard=board), metadata=job.metadata)
    assert describe.tensorboard_section(with_board) == (  # type: ignore[arg-type]
        "TensorBoard:  http://pt-tensorboard.default.svc:6006 (from here: kubetrain tensorboard pt)\n"
    )
    assert describe.tensorboard_section(job) == ""


def test_the_state_line_of_wait_carries_the_deciding_conditions_message() -> None:
    assert wait.state_line(failed_job()) == f"trainingjob.training.kubetrain.dev/pt Failed: {FAILED_MESSAGE}"
    line = wait.failure_line(failed_job().status.failures[-1])
    assert line == (
        "2026-11-24T11:59:30Z Worker/1 (pod pt-worker-1 on node-a): exit code 1, Error, UserCode, "
        "no rule matched -> FailJob"
    )


def test_the_header_names_the_runtime_the_job_was_made_from_and_its_generation() -> None:
    ref = v1beta1.RuntimeRef(name="torch-distributed", generation=3)
    made = a_job("short").replicas("Worker", 2).with_spec(runtime_ref=ref).build()
    assert describe.runtime_cell(made) == "ClusterTrainingRuntime torch-distributed (generation 3)"
    header = describe.text(made, [], [], NOW).splitlines()[:4]
    assert header[2:] == [
        "Framework:    pytorch",
        "Runtime:      ClusterTrainingRuntime torch-distributed (generation 3)",
    ]
    # What the operator recorded in the status is what it saw, and is said first.
    seen = v1beta1.RuntimeRef(kind=v1beta1.RuntimeKind.NAMESPACED, name="ours", generation=7)
    reconciled = with_status(made, runtime=seen)
    assert describe.runtime_cell(reconciled) == "TrainingRuntime ours (generation 7)"
    unpinned = a_job("s").replicas("Worker", 1).with_spec(runtime_ref=v1beta1.RuntimeRef(name="t")).build()
    assert describe.runtime_cell(unpinned) == "ClusterTrainingRuntime t"
    # A job written whole has no such line.
    assert describe.runtime_cell(failed_job()) is None
    assert "Runtime:" not in describe.text(failed_job(), [], [], NOW)


def test_where_the_time_went_is_told_by_cause_with_what_is_not_accounted_yet() -> None:
    assert describe.goodput_section(failed_job(), NOW) == "", "no goodput, no section"
    g = v1beta1.GoodputStatus(
        accounted_time=ago(60),
        productive_seconds=705,
        lost_seconds=v1beta1.LostSeconds(starting=65, restarting=30),
        share="88%",
        redo_owed_seconds=50,
    )
    running = with_status(
        a_job("pt").replicas("Worker", 2).build(),
        conditions=(cond(C.CREATED, True, "TrainingJobCreated", age=860), cond(C.RUNNING, True, "Running")),
        goodput=g,
    )
    text = describe.text(running, [], [], NOW)
    assert section(text, "Goodput:") == [
        "Goodput:      88% productive of 13m (accounted to 2026-11-24T11:59:00Z, 60s ago)",
        "  CAUSE        TIME   SHARE",
        "  productive   11m    88.1%",
        "  starting     65s    8.1%",
        "  restarting   30s    3.8%",
        "  not accounted yet: 60s, running (charged at the next status write)",
        "  redo owed: 50s of steps a restart threw away, charged to redone as they run again",
    ]
    assert text.index("Goodput:") < text.index("Conditions:")
    # A finished job's clock stopped: nothing is behind.
    done = with_status(
        running,
        conditions=(*running.status.conditions, cond(C.SUCCEEDED, True, "SuccessPolicyMet")),
        goodput=attrs.evolve(g, redo_owed_seconds=0),
    )
    assert "not accounted" not in describe.goodput_section(done, NOW)
