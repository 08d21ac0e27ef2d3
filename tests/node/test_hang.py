"""A hang found on real nodes: a rank that stops reporting progress restarts the job in place.

A 3-rank PyTorch DDP job (``restartMethod: InPlace``, ``progress.deadlineSeconds: 20``) whose
last rank stops for good at step 130 of attempt 0, before that step's all-reduce, in which its
peers then wait: nothing exits, nothing crashes. An agent finds its rank's step unmoved for the
deadline and exits; the operator records one ``ProgressDeadlineExceeded`` failure, charged to
user code, and restarts the job in place. Every rank of attempt 1 knows why, resumes from the
checkpoint rank 0 saved before the hang, and the job succeeds; its status shows the first rank's
progress as last read, by an operator that reads it every few seconds.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterator

import pytest
from testkit import jobs, operator, resumed
from testkit.kube import eventually
from testkit.pods import logs, results

from kubetrain.api import naming
from kubetrain.api.v1beta1 import progress_types
from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")

HANG_AT_STEP = resumed.FAIL_AT_STEP  # where resumed.assert_resumed expects the restart
DEADLINE = 20
STEPS = 200  # the sample's --steps
PROGRESS_INTERVAL = 2
_HANGING = re.compile(rf"^(\S+) rank (\d+): hanging at step {HANG_AT_STEP} \(attempt 0\)$", re.MULTILINE)


@pytest.fixture(scope="module")
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    # Progress read every few seconds, not every minute: the job is over within one.
    op = operator.start(cluster, None, f"--progress-interval={PROGRESS_INTERVAL}")
    yield
    op.stop()


def test_a_hung_rank_is_found_by_its_deadline_and_the_job_restarts_in_place_and_resumes(
    cluster: devcluster.Cluster, namespace: str, shared_dir: str
) -> None:
    job = resumed.ddp_job(
        shared_dir,
        failurePolicy__restartMethod="InPlace",
        progress={"deadlineSeconds": DEADLINE, "startupGraceSeconds": 0},
    )
    for rs in job["spec"]["replicaSpecs"].values():
        main = rs["template"]["spec"]["containers"][0]
        assert f"--steps={STEPS}" in main["command"]
        fail = f"--fail-at-step={resumed.FAIL_AT_STEP}"
        main["command"] = [f"--hang-at-step={HANG_AT_STEP}" if a == fail else a for a in main["command"]]
    name = jobs.create(cluster, namespace, job)
    first = jobs.running_pods(cluster, namespace, name, 3)
    # Read while it hangs: the kubelet removes the containers a restart in place stops ("removed
    # because RestartAllContainers in place"), and their logs with them (no `kubectl logs -p`).
    hanging_pod, said = eventually(
        "a rank to say it hangs",
        lambda: _hanging(cluster, namespace, list(first)),
        timeout=300,
        interval=1,
        evidence=lambda: jobs.summary(cluster, namespace, name),
    )
    assert int(said[2]) == 2, said[0]
    hung_at = _time(said[1])

    s = jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=600)
    # One hang, one restart, in place: no rank's end was charged besides.
    [hung] = s["failures"]
    assert hung["reason"] == progress_types.HUNG, s["failures"]
    assert hung["class"] == "UserCode", hung
    assert hung["action"] == "Restart", hung
    assert hung["restart"] == "InPlace", hung
    assert s["restarts"] == {"userCode": 1}, s["restarts"]
    assert not [e for e in jobs.events(cluster, namespace, name) if e["reason"] == "InPlaceRestartFellBack"]

    pods = jobs.pods(cluster, namespace, name)
    assert sorted(pods) == sorted(first)
    for pod_name, pod in pods.items():
        assert pod["metadata"]["uid"] == first[pod_name]["metadata"]["uid"], pod_name
        assert pod["metadata"]["labels"][naming.ATTEMPT] == "1"
        main = next(c for c in pod["status"]["containerStatuses"] if c["name"] == "pytorch")
        assert main["restartCount"] >= 1, main

    # Found within the deadline and a little (the agent polls, the kubelet and the operator report).
    # Every rank stopped moving at once (the others wait in the all-reduce): any agent may be first.
    took = (_time(hung["time"]) - hung_at).total_seconds()
    print(
        f"\n{hanging_pod} hung at {hung_at.isoformat()}; {hung['reason']} recorded for {hung['pod']} "
        f"at {hung['time']}: {took:.1f}s later (deadline {DEADLINE}s)"
    )
    assert DEADLINE - 2 <= took <= DEADLINE + 15, (took, hung)

    resumed.assert_resumed(cluster, namespace, name)
    for pod_name in pods:
        (result,) = results(logs(cluster, namespace, pod_name))
        assert result["lastRestartReason"] == f"UserCode:{progress_types.HUNG}", result

    # The first rank's last line, read once more after the job finished: attempt 1 trains its
    # last 80 steps within a second or two, faster than its agent prints (every 5 s at most), and
    # the agent prints `step=200` as it is stopped, after the main container ended.
    master = f"{name}-master-0"
    progress = eventually(
        f"step {STEPS} read",
        lambda: (p := jobs.status(cluster, namespace, name).get("progress") or {}).get("step") == STEPS and p,
        timeout=60,
        evidence=lambda: _agent_log(cluster, namespace, master),
    )
    print(f"status.progress: {json.dumps(progress)}")
    assert progress["pod"] == master, progress
    assert progress["totalSteps"] == STEPS, progress


def _hanging(c: devcluster.Cluster, namespace: str, pods: list[str]) -> tuple[str, re.Match[str]] | None:
    """The pod whose main container said it hangs, and that line (led by its time), if one did."""
    for pod in pods:
        r = c.kubectl("logs", "-n", namespace, pod, "-c", "pytorch", "--timestamps", check=False)
        if m := _HANGING.search(r.stdout):
            return pod, m
    return None


def _agent_log(c: devcluster.Cluster, namespace: str, pod: str) -> str:
    return c.kubectl("logs", "-n", namespace, pod, "-c", naming.AGENT, "--timestamps").stdout


def _time(text: str) -> datetime.datetime:
    """An RFC 3339 time, its fraction cut to microseconds (kubectl prints nanoseconds)."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", text)
    assert m, text
    fraction = (m[2] or "")[:7]
    return datetime.datetime.fromisoformat(m[1] + fraction + ("+00:00" if m[3] == "Z" else m[3]))
