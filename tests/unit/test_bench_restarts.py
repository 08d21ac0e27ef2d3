"""The restart benchmark's pieces that need no cluster: its job, and reading kubectl's timestamps."""

from __future__ import annotations

import datetime

from kubetrain_bench import restarts


def test_the_jobs_are_the_samples_failing_in_every_measured_attempt() -> None:
    job = restarts.job("pytorch", "InPlace", 10, 8.0)
    assert job["metadata"]["name"] == "pytorch-ddp"
    assert job["spec"]["runPolicy"]["backoffLimit"] > 10, "the budget outlasts the measured restarts"
    assert job["spec"]["failurePolicy"]["rules"][0]["action"] == "Restart", "exit code 1 restarts"
    assert job["spec"]["failurePolicy"]["restartMethod"] == "InPlace"
    for rs in job["spec"]["replicaSpecs"].values():
        command = rs["template"]["spec"]["containers"][0]["command"]
        assert command[-2:] == ["--fail-after=8.0", "--fail-attempts=10"]
    mpi = restarts.job("mpi", "Recreate", 10, 8.0)
    launcher = mpi["spec"]["replicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert launcher[:7] == [
        "mpirun",
        *("-x", "KUBETRAIN_RESTART_ATTEMPT"),
        *("-x", "KUBETRAIN_RESTARTS"),
        *("-x", "KUBETRAIN_LAST_RESTART_REASON"),
    ], "mpirun passes the restart env on to the ranks: options before the program"
    assert launcher[-3:] == [
        "/opt/kubetrain/examples/mpi_allreduce.py",
        "--fail-after=8.0",
        "--fail-attempts=10",
    ]
    worker = mpi["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"]
    assert "sshd" in worker[-1], "the Workers still serve ssh"


def test_a_rank_joining_is_read_by_its_number() -> None:
    found = restarts.JOINED.search("2026-11-27T03:51:02Z rank 1/2 on w-0 joined the rendezvous")
    assert found is not None
    assert found.group(1) == "1"


def test_a_log_timestamp_reads_to_the_microsecond() -> None:
    line = "2026-11-27T03:51:02.123456789Z rank 2 fails at step 811"
    assert restarts._stamp(line) == datetime.datetime(2026, 11, 27, 3, 51, 2, 123456, tzinfo=datetime.UTC)
    assert restarts._stamp("2026-11-27T03:51:02Z x") == datetime.datetime(
        2026, 11, 27, 3, 51, 2, tzinfo=datetime.UTC
    )


def test_each_restart_is_read_from_the_ranks_own_lines_whichever_container_printed_them() -> None:
    logs = restarts.Logs(None, "pt")  # type: ignore[arg-type]
    logs.lines = {
        # The failing rank's pod: attempt 0's container, then attempt 1's (restarted in place).
        "pt-worker-1": {
            "2026-11-27T10:00:01Z rank 2/3 on w-1 joined the rendezvous at m",
            "2026-11-27T10:00:01.100Z rank 2 attempt 0 after 0 restart(s), last: -",
            "2026-11-27T10:00:09Z rank 2 fails at step 811",
            "2026-11-27T10:00:15Z rank 2/3 on w-1 joined the rendezvous at m",
            "2026-11-27T10:00:15.100Z rank 2 attempt 1 after 1 restart(s), last: UserCode:Error",
        },
        "pt-master-0": {
            "2026-11-27T10:00:01Z rank 0/3 on m joined the rendezvous at m",
            "2026-11-27T10:00:01.100Z rank 0 attempt 0 after 0 restart(s), last: -",
            "2026-11-27T10:00:14Z rank 0/3 on m joined the rendezvous at m",
            "2026-11-27T10:00:14.100Z rank 0 attempt 1 after 1 restart(s), last: UserCode:Error",
        },
    }
    joins, fails = logs._read()
    assert fails == {0: restarts._stamp("2026-11-27T10:00:09Z x")}
    assert joins[1] == {
        "2": restarts._stamp("2026-11-27T10:00:15Z x"),
        "0": restarts._stamp("2026-11-27T10:00:14Z x"),
    }
    assert sorted(joins) == [0, 1]


def test_the_containers_of_an_attempt_started_when_the_last_pods_first_did_after_the_failure() -> None:
    logs = restarts.Logs(None, "pt")  # type: ignore[arg-type]
    t = datetime.datetime(2026, 11, 27, 10, 0, 0, tzinfo=datetime.UTC)
    s = datetime.timedelta(seconds=1)
    logs.starts = {
        # Moved to attempt 1 while its old container still ran (started at t), restarted at t + 12.
        "pt-master-0": {(0, t), (1, t), (1, t + 12 * s)},
        # Made again: its container of attempt 1 started at t + 15, seen at two polls.
        "pt-worker-1": {(0, t), (1, t + 15 * s)},
    }
    failed = t + 9.4 * s
    assert logs.started(1, failed) == t + 15 * s
    assert logs.started(2, failed) is None, "not every pod was seen running in attempt 2"


def test_a_rank_that_says_the_attempt_before_is_counted_in_the_one_it_joined() -> None:
    logs = restarts.Logs(None, "mpi")  # type: ignore[arg-type]
    logs.lines = {
        "mpi-launcher-0": {
            "2026-11-29T10:00:01Z rank 1/2 on w-1 joined the rendezvous",
            "2026-11-29T10:00:01.100Z rank 1 attempt 0 after 0 restart(s), last: -",
            "2026-11-29T10:00:09Z rank 1 fails at step 0",
            "2026-11-29T10:00:14Z rank 1/2 on w-1 joined the rendezvous",
            "2026-11-29T10:00:14.100Z rank 1 attempt 1 after 1 restart(s), last: UserCode:Error",
            "2026-11-29T10:00:22Z rank 1 fails at step 0",
            # Attempt 2, started by a kubelet with the env of attempt 1.
            "2026-11-29T10:00:27Z rank 1/2 on w-1 joined the rendezvous",
            "2026-11-29T10:00:27.100Z rank 1 attempt 1 after 1 restart(s), last: UserCode:Error",
        }
    }
    joins, fails = logs._read()
    assert sorted(joins) == [0, 1, 2]
    assert joins[2]["1"] == restarts._stamp("2026-11-29T10:00:27Z x")
    assert fails[1] == restarts._stamp("2026-11-29T10:00:22Z x")
    assert logs.stale == 1
