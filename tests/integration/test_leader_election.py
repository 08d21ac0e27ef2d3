"""Two candidates, one leader: takeover after SIGKILL, fencing after SIGSTOP, release on SIGTERM."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster

TESTS = pathlib.Path(__file__).resolve().parents[1]
LEASE_DURATION, RETRY_PERIOD = 15.0, 2.0


class Candidates:
    def __init__(self, c: devcluster.Cluster, namespace: str) -> None:
        self.c, self.namespace = c, namespace
        self.procs: dict[str, subprocess.Popen[str]] = {}

    def start(self, identity: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(TESTS)}
        p = subprocess.Popen(
            [sys.executable, "-P", "-m", "testkit.elect", str(self.c.kubeconfig), self.namespace, identity],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        self.procs[identity] = p

    def holder(self) -> str | None:
        out = self.c.kubectl(
            "get",
            "lease",
            "candidates",
            "-n",
            self.namespace,
            "-o",
            "jsonpath={.spec.holderIdentity}",
            check=False,
        )
        return out.stdout.strip() or None if out.returncode == 0 else None

    def writes(self) -> dict[str, float]:
        data = json.loads(
            self.c.kubectl("get", "configmap", "writes", "-n", self.namespace, "-o", "json").stdout
        )
        return {k: float(v) for k, v in (data.get("data") or {}).items()}

    def writes_by(self, identity: str, after: float = 0.0) -> list[float]:
        return [t for k, t in self.writes().items() if k.rsplit("-", 1)[0] == identity and t > after]

    def stop_all(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()


@pytest.fixture
def candidates(cluster: devcluster.Cluster, namespace: str) -> Iterator[Candidates]:
    cluster.kubectl("create", "configmap", "writes", "-n", namespace)
    group = Candidates(cluster, namespace)
    yield group
    group.stop_all()


def test_one_leader_and_a_takeover_within_the_lease_after_sigkill(candidates: Candidates) -> None:
    candidates.start("alpha")
    candidates.start("beta")
    leader = eventually("a leader", candidates.holder)
    follower = "beta" if leader == "alpha" else "alpha"
    eventually("the leader to write", lambda: candidates.writes_by(leader))
    time.sleep(1)
    assert candidates.writes_by(follower) == []  # one leader at a time
    candidates.procs[leader].kill()
    killed_at = time.time()
    eventually(
        "the follower to take over", lambda: candidates.holder() == follower, timeout=LEASE_DURATION + 10
    )
    assert time.time() - killed_at <= LEASE_DURATION + RETRY_PERIOD + 1.5
    eventually("the new leader to write", lambda: candidates.writes_by(follower))


def test_a_paused_leader_writes_nothing_once_it_has_lost_the_lease(candidates: Candidates) -> None:
    candidates.start("alpha")
    eventually("alpha to lead", lambda: candidates.holder() == "alpha")
    candidates.start("beta")
    eventually("alpha to write", lambda: candidates.writes_by("alpha"))
    candidates.procs["alpha"].send_signal(signal.SIGSTOP)
    paused_at = time.time()
    eventually("beta to take over", lambda: candidates.holder() == "beta", timeout=LEASE_DURATION + 10)
    assert time.time() - paused_at <= LEASE_DURATION + RETRY_PERIOD + 1.5
    candidates.procs["alpha"].send_signal(signal.SIGCONT)
    # Resumed, alpha finds its lease stale: it steps down without a single write and exits.
    assert candidates.procs["alpha"].wait(10) == 1
    assert candidates.writes_by("alpha", after=paused_at) == []
    assert candidates.holder() == "beta"
    eventually("beta to write", lambda: candidates.writes_by("beta"))


def test_a_clean_shutdown_releases_the_lease(candidates: Candidates) -> None:
    candidates.start("gamma")
    eventually("gamma to lead", lambda: candidates.holder() == "gamma")
    candidates.start("delta")
    candidates.procs["gamma"].send_signal(signal.SIGTERM)
    assert candidates.procs["gamma"].wait(10) == 0
    released_at = time.time()
    eventually("delta to lead", lambda: candidates.holder() == "delta", timeout=LEASE_DURATION)
    # Released, not expired: delta needs only its retry period, not the lease duration.
    assert time.time() - released_at <= RETRY_PERIOD + 1.5
