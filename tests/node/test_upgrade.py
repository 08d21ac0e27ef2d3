"""A rolling upgrade of the operator while jobs run, on a real node, and the rollback.

The operator of the last release (``config/crd/released/commit``, checked out as a git worktree
and its image built here from it) is deployed with its ``config/default``; two long jobs run
under it: DDP from the torch-distributed runtime (two real torchrun ranks, a step every half
second) and a generic job whose replicas report a step a second. Then the Deployment is rolled
to the working tree's operator, its CRDs applied first (docs/deploy.md, "Upgrading"), and back.

Throughout, the jobs and their pods are watched (``kubectl get -w``, started again should the
apiserver end a watch when a CRD changes). After each roll: no job restarted (``status.restarts``
unchanged, no container restarted in place), no pod recreated (the same pod UIDs, no pod deleted
or added in the watch), no status went back (state, ``status.progress.step`` and
``status.observedGeneration`` never decrease, the state stays Running), the jobs' progress moved
on under the new operator, and every webhook answers: validation, conversion, the runtimes'
expansion. A cluster of its own, as ``test_deploy.py``'s: no other operator runs beside these.
"""

from __future__ import annotations

import functools
import json
import pathlib
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from testkit import fixtures, jobs
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import deploy, images
from kubetrain_bench import checkpoint_watch

NAMESPACE = "upgrade"
RELEASED_COMMIT = fixtures.ROOT / "config" / "crd" / "released" / "commit"
DDP, GENERIC = "ddp-through-upgrades", "generic-through-upgrades"
# A step a second, for as long as the test lasts.
STEPPER = """
import os, time
path, step = os.environ['KUBETRAIN_PROGRESS_FILE'], 0
while True:
    step += 1
    with open(path + '.tmp', 'w') as f:
        f.write(f'step={step} total=1000000\\n')
    os.replace(path + '.tmp', path)
    time.sleep(1)
"""


class Rewatch(checkpoint_watch.Watch):
    """:class:`~kubetrain_bench.checkpoint_watch.Watch`, started again whenever kubectl's watch
    ends (the apiserver ends every watch of a kind whose CRD changes); ``restarts`` counts them."""

    def __init__(self, c: devcluster.Cluster, kind: str, namespace: str) -> None:
        checkpoint_watch.Recorded.__init__(self)
        self._argv = [c.bins["kubectl"], f"--kubeconfig={c.kubeconfig}", "get", kind, "-n", namespace]
        self._argv += ["-w", "--output-watch-events", "-o", "json"]
        self._stopping, self._starting = threading.Event(), threading.Lock()
        self.restarts = 0
        self._proc = self._popen()
        self._thread = threading.Thread(target=self._again, name=f"rewatch-{kind}", daemon=True)
        self._thread.start()

    def _popen(self) -> subprocess.Popen[str]:
        return subprocess.Popen(self._argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def _again(self) -> None:
        while True:
            self._read()
            self._proc.wait()
            with self._starting:
                if self._stopping.is_set():
                    return
                self.restarts += 1
                self._proc = self._popen()

    def stop(self) -> None:
        with self._starting:
            self._stopping.set()
            super().stop()
        self._thread.join(timeout=10)


def git(*argv: str) -> str:
    """git in the repository; a failure fails the test with git's own words (CI runs on a clone
    of main with its history: the released commit must be there)."""
    r = subprocess.run(["git", "-C", str(fixtures.ROOT), *argv], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        pytest.fail(f"git {' '.join(argv)} failed (exit {r.returncode}): {r.stderr.strip()}", pytrace=False)
    return r.stdout


@pytest.fixture(scope="module")
def released_tree() -> Iterator[pathlib.Path]:
    """The released commit, checked out as a git worktree of its own."""
    commit = RELEASED_COMMIT.read_text().strip()
    tree = pathlib.Path(tempfile.mkdtemp(prefix="kubetrain-released-")) / "tree"
    git("worktree", "add", "--detach", str(tree), commit)
    try:
        assert git("-C", str(tree), "rev-parse", "HEAD").strip() == commit
        yield tree
    finally:
        git("worktree", "remove", "--force", str(tree))
        tree.parent.rmdir()


@pytest.fixture(scope="module")
def released(released_tree: pathlib.Path) -> Iterator[tuple[devcluster.Cluster, str]]:
    """A real node running the released operator as its Deployment, from its own image; the image."""
    started = time.monotonic()
    image = images.released_operator(released_tree, RELEASED_COMMIT.read_text().strip())
    archive = images.build(image)
    built = time.monotonic()
    # The node tier's image set: one seed serves every cluster of it (devcluster/noderoot.py).
    c = devcluster.start(
        devcluster.Tier.CLUSTER, nodes=0, real_nodes=1, root=fixtures.ROOT, timeout=300, seed_images=True
    )
    try:
        for node in c.real_nodes:
            images.load(c.bins["ctr"], str(node.socket), archive)
        deploy.in_cluster(c, released_tree / "config", image.ref)
        print(
            f"released operator: image {built - started:.0f} s, cluster and deployment "
            f"{time.monotonic() - built:.0f} s"
        )
        yield c, image.ref
    finally:
        c.stop()


def long_jobs() -> list[dict[str, Any]]:
    ddp: dict[str, Any] = yaml.safe_load((jobs.SHORT / "torch-distributed.yaml").read_text())
    ddp["metadata"]["name"] = DDP
    trainer = ddp["spec"]["trainer"]
    trainer["command"] = [*trainer["command"][:2], "--steps=1000000", "--step-seconds=0.5", "--log-every=100"]
    ddp["spec"]["progress"] = {}
    generic = jobs.sample("generic", progress={})
    generic["metadata"]["name"] = GENERIC
    generic["spec"]["replicaSpecs"]["Actor"]["replicas"] = 1
    for replica in generic["spec"]["replicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["command"] = ["python3", "-c", STEPPER]
    return [ddp, generic]


def snapshot(c: devcluster.Cluster) -> dict[str, Any]:
    """Per job: its restarts, and its pods' UIDs and container restart counts."""
    out: dict[str, Any] = {}
    for name in (DDP, GENERIC):
        pods = jobs.pods(c, NAMESPACE, name)
        out[name] = {
            "restarts": restarts(jobs.status(c, NAMESPACE, name)),
            "pods": {
                p["metadata"]["uid"]: sum(
                    s.get("restartCount", 0) for s in p["status"].get("containerStatuses", [])
                )
                for p in pods.values()
            },
        }
    return out


def restarts(status: dict[str, Any]) -> int:
    """The restarts a job's status counts, whatever paid for them."""
    return sum((status.get("restarts") or {}).values())


def step(c: devcluster.Cluster, name: str) -> int:
    return int((jobs.status(c, NAMESPACE, name).get("progress") or {}).get("step", 0))


def moved(c: devcluster.Cluster, name: str, past: int) -> bool:
    return step(c, name) > past


def caught_up(c: devcluster.Cluster, watch: checkpoint_watch.Recorded, kind: str, name: str) -> None:
    """Until the watch has seen ``name`` as it is now: the watch is live and missed nothing."""

    def now() -> bool:
        got = c.kubectl("get", kind, name, "-n", NAMESPACE, "-o", "jsonpath={.metadata.resourceVersion}")
        seen = watch.latest().get(name, {}).get("metadata", {}).get("resourceVersion")
        return bool(seen == got.stdout)

    eventually(f"the watch of {kind} to see {name} as it is", now, timeout=30, interval=0.2)


def went_back(events: list[tuple[float, str, dict[str, Any]]]) -> list[str]:
    """Every change of a job's status that went back, in the order watched."""
    last: dict[str, tuple[str, int, int, int]] = {}
    out = []
    for _, kind, obj in events:
        name = obj["metadata"]["name"]
        s = obj.get("status", {})
        now = (
            s.get("state", ""),
            int((s.get("progress") or {}).get("step", 0)),
            int(s.get("observedGeneration", 0)),
            restarts(s),
        )
        was = last.get(name)
        if kind == "DELETED":
            out.append(f"{name} deleted")
        elif was is not None:
            if was[0] == "Running" and now[0] != "Running":
                out.append(f"{name}: state {was[0]} -> {now[0]}")
            if now[1] < was[1]:
                out.append(f"{name}: progress step {was[1]} -> {now[1]}")
            if now[2] < was[2]:
                out.append(f"{name}: observedGeneration {was[2]} -> {now[2]}")
            if now[3] != was[3]:
                out.append(f"{name}: restarts {was[3]} -> {now[3]}")
        last[name] = now
    return out


def pod_changes(events: list[tuple[float, str, dict[str, Any]]], uids: set[str]) -> list[str]:
    """Pods of the jobs that came or went while watched."""
    return [
        f"{kind} {obj['metadata']['name']} ({obj['metadata']['uid'][:8]})"
        for _, kind, obj in events
        if kind == "DELETED" or obj["metadata"]["uid"] not in uids or obj["metadata"].get("deletionTimestamp")
    ]


def webhooks_answer(c: devcluster.Cluster) -> None:
    """The validating, conversion and mutating (runtime expansion) webhooks each answer."""
    bad = jobs.sample("mpi-allreduce")
    bad["metadata"]["name"] = "two-launchers"
    bad["spec"]["replicaSpecs"]["Launcher"]["replicas"] = 2

    def refused() -> bool:
        r = c.kubectl(
            "create", "--dry-run=server", "-n", NAMESPACE, "-f", "-", input=json.dumps(bad), check=False
        )
        return (
            r.returncode != 0
            and "denied the request" in r.stderr
            and "spec.replicaSpecs.Launcher" in r.stderr
        )

    eventually("the validating webhook to refuse two Launchers", refused, timeout=30, interval=0.5)
    alpha = c.kubectl(
        "get", f"trainingjobs.v1alpha1.training.kubetrain.dev/{GENERIC}", "-n", NAMESPACE, "-o", "json"
    )
    assert isinstance(json.loads(alpha.stdout)["spec"]["replicaSpecs"], list)
    short = yaml.safe_load((jobs.SHORT / "torch-distributed.yaml").read_text())
    expanded = json.loads(
        c.kubectl(
            "create", "--dry-run=server", "-n", NAMESPACE, "-o", "json", "-f", "-", input=json.dumps(short)
        ).stdout
    )
    assert sorted(expanded["spec"]["replicaSpecs"]) == ["Worker"]
    assert expanded["spec"]["runtimeRef"]["generation"] >= 1


def manager_images(c: devcluster.Cluster) -> list[str]:
    out = c.kubectl(
        "get", "pods", "-n", deploy.NAMESPACE, "-l", "control-plane=controller-manager", "-o", "json"
    )
    pods = json.loads(out.stdout)["items"]
    return sorted(
        p["spec"]["containers"][0]["image"] for p in pods if not p["metadata"].get("deletionTimestamp")
    )


def test_jobs_run_through_an_upgrade_and_a_rollback(
    released: tuple[devcluster.Cluster, str], released_tree: pathlib.Path
) -> None:
    c, old_image = released
    new_image = images.operator(fixtures.ROOT).ref
    c.kubectl("create", "namespace", NAMESPACE)
    c.kubectl("wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", NAMESPACE)
    for job in long_jobs():
        jobs.create(c, NAMESPACE, job)
    for name in (DDP, GENERIC):
        jobs.wait_state(c, NAMESPACE, name, "Running", timeout=180)
        eventually(f"{name} to report progress", functools.partial(moved, c, name, 0), timeout=120)
    before = snapshot(c)
    uids = {uid for job in before.values() for uid in job["pods"]}
    assert len(uids) == 4  # two DDP Workers, a Learner and an Actor
    job_watch = Rewatch(c, jobs.RESOURCE, NAMESPACE)
    pod_watch = Rewatch(c, "pods", NAMESPACE)
    try:
        for name in (DDP, GENERIC):
            caught_up(c, job_watch, jobs.RESOURCE, name)
        for config, image in ((fixtures.ROOT / "config", new_image), (released_tree / "config", old_image)):
            steps = {name: step(c, name) for name in (DDP, GENERIC)}
            started = time.monotonic()
            deploy.roll(c, config, image)
            rolled = time.monotonic() - started
            assert manager_images(c) == [image, image]
            webhooks_answer(c)
            # The new operator reads the jobs on: their progress moves on in its status.
            for name in (DDP, GENERIC):
                eventually(
                    f"{name}'s progress past {steps[name]}",
                    functools.partial(moved, c, name, steps[name]),
                    timeout=90,
                )
            print(
                f"rolled to {image} in {rolled:.0f} s; webhooks and progress after it {time.monotonic() - started - rolled:.0f} s"
            )
            for name in (DDP, GENERIC):
                caught_up(c, job_watch, jobs.RESOURCE, name)
            assert snapshot(c) == before
            assert went_back(job_watch.since()) == []
            assert pod_changes(pod_watch.since(), uids) == []
        print(f"watches started again: jobs {job_watch.restarts}, pods {pod_watch.restarts}")
        assert len(job_watch.since()) > 4  # the jobs' status moved while watched
    finally:
        job_watch.stop()
        pod_watch.stop()
