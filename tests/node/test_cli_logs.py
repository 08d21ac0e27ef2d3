"""`kubetrain logs -f` in a terminal, reading real output from real nodes.

The command runs in tmux (its own server, so the shell gets this process's environment),
as a person would run it: the test types the command line (send-keys) and reads the
screen (capture-pane). Three replicas print numbered lines; one (``flaky-0``) is killed
after three lines, and its replica type restarts as the next attempt. What is on the screen
must be every replica's lines in order per replica, the new attempt's lines after a marked
notice, the replica names padded to one column, colour on the terminal — and the command
must end by itself when the job does. A second session ends `logs -f` with Ctrl-C: the
shell comes back with status 130 and not a line of traceback. `submit --follow` of a job
that fails prints its logs, then its outcome, and exits 1.
"""

from __future__ import annotations

import pathlib
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from testkit import jobs
from testkit.kube import eventually
from testkit.pods import IMAGE

from kubetrain.api import naming
from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")

LINES = 6
# Every replica prints LINES numbered lines; Flaky/0 ends after three with EXIT in attempt 0.
# A ReplicaType restart takes Flaky alone to attempt 1, as a gang of its own: a Pod-scope
# replacement would keep attempt 0 and wait for gang mates that have already finished.
SCRIPT = """
import os, sys, time
kind, index = os.environ["KUBETRAIN_REPLICA_TYPE"], os.environ["KUBETRAIN_REPLICA_INDEX"]
for i in range({lines}):
    print(f"{{kind.lower()}} {{index}} says line {{i}}", flush=True)
    time.sleep(0.5)
    if i == 2 and kind == "Flaky" and os.environ["ATTEMPT"] == "0":
        sys.exit({exit})
"""
SLEEPER = "import time; print('up', flush=True); time.sleep(600)"
END = "KUBETRAIN-TEST-EXIT="


class Terminal:
    """A tmux session on a private server, 200 x 50, running a login-less bash."""

    def __init__(self) -> None:
        self.socket = f"kt-cli-{uuid.uuid4().hex[:8]}"
        self.tmux("new-session", "-d", "-s", "t", "-x", "200", "-y", "50", "bash --norc --noprofile")
        self.tmux("set-option", "-t", "t", "history-limit", "5000")
        self.path = pathlib.Path(self.tmux("display-message", "-p", "#{socket_path}").strip())

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True, timeout=30
        ).stdout

    def type(self, line: str) -> None:
        self.tmux("send-keys", "-t", "t", "-l", line)
        self.tmux("send-keys", "-t", "t", "Enter")

    def screen(self, *, escapes: bool = False) -> str:
        """Everything printed so far (history included); with ``escapes``, colours as escape codes."""
        return self.tmux("capture-pane", "-p", "-J", "-t", "t", "-S", "-", *(["-e"] if escapes else []))

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        return eventually(
            f"{pattern!r} on the screen", lambda: re.search(pattern, self.screen()), timeout, 0.5
        )

    def close(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False, timeout=30
        )
        self.path.unlink(missing_ok=True)  # tmux leaves its socket file behind


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    t = Terminal()
    try:
        yield t
    finally:
        t.close()


def kubetrain(c: devcluster.Cluster, namespace: str, *args: str) -> str:
    """The command line a person types, ending with a line that shows its exit status."""
    argv = [
        sys.executable,
        "-P",
        "-m",
        "kubetrain.cli",
        *args,
        "-n",
        namespace,
        f"--kubeconfig={c.kubeconfig}",
    ]
    return f"unset NO_COLOR; {shlex.join(argv)}; echo {END}$?"


def job(name: str, command: list[str], types: dict[str, int], **spec: Any) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": IMAGE,
        "command": command,
        "env": [
            {
                "name": "ATTEMPT",
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{naming.ATTEMPT}']"}},
            }
        ],
    }
    replica_specs = {
        t: {
            "replicas": n,
            "restartPolicy": "ExitCode",
            "template": {"spec": {"containers": [container], "terminationGracePeriodSeconds": 2}},
        }
        for t, n in types.items()
    }
    return {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": name},
        "spec": {"framework": {"name": "generic"}, "replicaSpecs": replica_specs, **spec},
    }


def lines_job(name: str, exit_code: int) -> dict[str, Any]:
    return job(
        name,
        ["python3", "-c", SCRIPT.format(lines=LINES, exit=exit_code)],
        {"Worker": 2, "Flaky": 1},
        failurePolicy={"restartScope": "ReplicaType"},
        runPolicy={"cleanPodPolicy": "None"},
    )


def said(replica: str, lines: range = range(LINES)) -> list[str]:
    kind, index = replica.split("-")
    return [f"{kind} {index} says line {i}" for i in lines]


LINE = re.compile(r"^(\S+)( *) \| (.*)$")
# The exit status the shell echoes after the command (the typed line holds "$?", not digits).
EXITED = rf"(?m){END}(\d+)$"


def test_logs_follow_shows_every_replica_in_order_through_a_new_attempt_and_ends_with_the_job(
    cluster: devcluster.Cluster, namespace: str, terminal: Terminal
) -> None:
    jobs.create(cluster, namespace, lines_job("lines", 137))
    started = time.monotonic()
    terminal.type(kubetrain(cluster, namespace, "logs", "lines", "-f"))
    status = terminal.wait_for(EXITED, timeout=240)
    took = time.monotonic() - started
    screen = terminal.screen()
    assert status.group(1) == "0", screen
    assert "Traceback" not in screen
    assert jobs.status(cluster, namespace, "lines")["state"] == "Succeeded"

    rows = [m for m in map(LINE.match, screen.splitlines()) if m]
    by_replica: dict[str, list[str]] = {}
    for m in rows:
        by_replica.setdefault(m.group(1), []).append(m.group(3))
    assert sorted(by_replica) == ["flaky-0", "worker-0", "worker-1"], screen
    assert by_replica["worker-0"] == said("worker-0"), screen
    assert by_replica["worker-1"] == said("worker-1"), screen
    # The restarted replica: attempt 0's three lines, a notice naming attempt 1, then all of attempt 1.
    flaky = by_replica["flaky-0"]
    assert flaky[:3] == said("flaky-0", range(3)), screen
    assert re.fullmatch(r"--- .*attempt 1.* ---", flaky[3]), screen
    assert flaky[4:] == said("flaky-0"), screen
    # The text starts in one column, whatever the replica's name: "flaky-0" is padded.
    assert len({m.start(3) for m in rows}) == 1, screen
    assert any(m.group(1) == "flaky-0" and m.group(2) == " " for m in rows)
    # On a terminal each replica has its colour, and the notice is dim.
    coloured = terminal.screen(escapes=True)
    assert re.search(r"\x1b\[[0-9;]*m *worker-0", coloured), coloured
    assert re.search(r"\x1b\[2m--- .*attempt 1", coloured), coloured
    print(f"logs -f of a 3-replica job through a new attempt ended {took:.1f}s after it was typed")


def test_ctrl_c_ends_logs_follow_with_130_and_no_traceback(
    cluster: devcluster.Cluster, namespace: str, terminal: Terminal
) -> None:
    jobs.create(cluster, namespace, job("sleepy", ["python3", "-c", SLEEPER], {"Worker": 2}))
    terminal.type(kubetrain(cluster, namespace, "logs", "sleepy", "-f"))
    terminal.wait_for(r"(?m)^worker-1 \| up$", timeout=180)
    terminal.wait_for(r"(?m)^worker-0 \| up$", timeout=30)
    pressed = time.monotonic()
    terminal.tmux("send-keys", "-t", "t", "C-c")
    status = terminal.wait_for(EXITED, timeout=20)
    took = time.monotonic() - pressed
    screen = terminal.screen()
    assert status.group(1) == "130", screen
    assert "Traceback" not in screen
    assert "KeyboardInterrupt" not in screen
    assert took < 10, f"Ctrl-C took {took:.1f}s to end logs -f"
    # The job goes on: Ctrl-C stops reading, never the training.
    assert jobs.status(cluster, namespace, "sleepy")["state"] == "Running"
    print(f"Ctrl-C ended logs -f in {took:.2f}s")


def test_submit_follow_prints_the_logs_then_the_outcome_of_a_failing_job(
    cluster: devcluster.Cluster, namespace: str, tmp_path: pathlib.Path
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(lines_job("failing", 3)))
    argv = [sys.executable, "-P", "-m", "kubetrain.cli", "submit", str(path), "--follow", "-n", namespace]
    result = subprocess.run(
        [*argv, f"--kubeconfig={cluster.kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    out = result.stdout.splitlines()
    assert out[0] == "trainingjob.training.kubetrain.dev/failing created"
    message = "Flaky 0 (failing-flaky-0) failed: UserCode Error, exit code 3; FailJob"
    assert out[-1] == f"trainingjob.training.kubetrain.dev/failing Failed: {message}"
    flaky = [line for line in out if line.startswith("flaky-0  | ")]
    assert flaky == [f"flaky-0  | {x}" for x in said("flaky-0", range(3))]
    err = result.stderr.splitlines()
    assert err[0] == f"error: TrainingJob 'failing' failed: PermanentExitCode: {message}"
    assert err[1].startswith("error: last failure: ")
    assert " Flaky/0 (pod failing-flaky-0 on real-node-" in err[1]
    assert err[2] == f"next: kubetrain logs failing -n {namespace} --replica Flaky/0"
