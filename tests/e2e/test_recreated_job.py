"""A job deleted and made again under the same name while the operator is paused gets its own gang.

Issue 46, item 3. What the operator remembers of a job between passes (``operator/memory.py``)
includes the gang groups it has made, which no cache holds. Kept by namespace/name, it outlives
a job that is deleted and created again under the same name while no pass sees the name free:
the new job (a new UID) inherits the old job's ``{job}-gang-0`` as "made", so its own group is
never created. The old group, owned by the old UID, is garbage-collected with the old job, and
the new job's pods, which name the group, stay Pending for ever, the job ``Created``.

The operator is paused with SIGSTOP, not restarted: a restarted operator starts with no memory,
which would hide the defect. Native gangs (the scheduling.k8s.io PodGroup) are the operator's
default on this cluster tier (see test_gang_native.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
from collections.abc import Iterator
from typing import Any

from testkit import operator
from testkit.jobs import RESOURCE, create, get_job, pods, running_pods, sample, status, wait_state
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import process

PODGROUPS = "podgroups.scheduling.k8s.io"


def _state(pid: int) -> str:
    """The process's state letter in /proc (``T`` stopped by a signal)."""
    return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@contextlib.contextmanager
def paused(op: process.Process) -> Iterator[None]:
    """The operator's process stopped (SIGSTOP) for the block, then continued (SIGCONT).

    Its memory, its caches and its watches' connections are kept: on SIGCONT it reads what
    the apiserver sent meanwhile, as an operator whose pass took that long would.
    """
    assert op.pid is not None
    pid = op.pid
    os.killpg(pid, signal.SIGSTOP)
    try:
        process.wait_until("the operator to stop", lambda: _state(pid) == "T", timeout=10)
        yield
    finally:
        os.killpg(pid, signal.SIGCONT)


def _groups(c: devcluster.Cluster, namespace: str) -> dict[str, dict[str, Any]]:
    """The namespace's PodGroups by name."""
    out = c.kubectl("get", PODGROUPS, "-n", namespace, "-o", "json").stdout
    return {g["metadata"]["name"]: g for g in json.loads(out)["items"]}


def _controller(obj: dict[str, Any]) -> str | None:
    """The UID of the object's controller, if it has one."""
    return next((o["uid"] for o in obj["metadata"].get("ownerReferences", []) if o.get("controller")), None)


def _group_of(c: devcluster.Cluster, namespace: str, name: str, uid: str) -> dict[str, Any] | None:
    """The PodGroup ``name`` if it exists, is not being deleted, and ``uid`` controls it."""
    g = _groups(c, namespace).get(name)
    ok = g is not None and _controller(g) == uid and "deletionTimestamp" not in g["metadata"]
    return g if ok else None


def _seen(c: devcluster.Cluster, namespace: str, name: str) -> str:
    """What a failed wait shows: the job's UID and state, its pods, the namespace's PodGroups."""
    job = get_job(c, namespace, name) or {}
    return json.dumps(
        {
            "job": {
                "uid": job.get("metadata", {}).get("uid"),
                "state": status(c, namespace, name).get("state"),
            },
            "pods": {
                n: {
                    "owner": _controller(p),
                    "phase": p.get("status", {}).get("phase"),
                    "podGroupName": p["spec"].get("schedulingGroup", {}).get("podGroupName"),
                }
                for n, p in pods(c, namespace, name).items()
            },
            "podgroups": {
                n: {"owner": _controller(g), "deleting": "deletionTimestamp" in g["metadata"]}
                for n, g in _groups(c, namespace).items()
            },
        }
    )


def test_a_job_made_again_under_its_name_while_the_operator_was_paused_gets_its_own_gang(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = sample("pytorch-ddp", restart_policy="ExitCode", replicaSpecs__Worker__replicas=3)
    op = operator.start(cluster, namespace)  # auto: native is served here
    try:
        name = create(cluster, namespace, job)
        group = f"{name}-gang-0"
        running_pods(cluster, namespace, name, 4)
        wait_state(cluster, namespace, name, "Running")
        old = (get_job(cluster, namespace, name) or {})["metadata"]["uid"]
        eventually(
            f"the first job's PodGroup {group}",
            lambda: _group_of(cluster, namespace, group, old),
            evidence=lambda: _seen(cluster, namespace, name),
        )

        with paused(op):
            cluster.kubectl(
                "delete",
                RESOURCE,
                name,
                "-n",
                namespace,
                "--cascade=foreground",
                "--wait=true",
                "--timeout=90s",
            )
            eventually("the first job to be gone", lambda: get_job(cluster, namespace, name) is None)
            # Its pods and its group go with it (the garbage collector; the group's finalizer is
            # released once its pods are gone): nothing of it is left for the new job to meet.
            eventually(
                "the first job's pods and PodGroup to be gone",
                lambda: not pods(cluster, namespace, name) and group not in _groups(cluster, namespace),
                timeout=60,
                evidence=lambda: _seen(cluster, namespace, name),
            )
            create(cluster, namespace, job)
            new = (get_job(cluster, namespace, name) or {})["metadata"]["uid"]
            assert new != old

        # The operator goes on: its first pass over the new job makes the group, then the pods.
        eventually(
            f"the re-created job's 4 pods (owner uid {new})",
            lambda: (
                (got := pods(cluster, namespace, name))
                and len(got) == 4
                and all(_controller(p) == new for p in got.values())
            ),
            timeout=60,
            evidence=lambda: _seen(cluster, namespace, name),
        )
        made = eventually(
            f"a PodGroup {group} controlled by the re-created job (uid {new}): the job's pods name "
            "it and wait for it",
            lambda: _group_of(cluster, namespace, group, new),
            timeout=30,
            evidence=lambda: _seen(cluster, namespace, name),
        )
        assert made["spec"]["schedulingPolicy"]["gang"]["minCount"] == 4
        running = running_pods(cluster, namespace, name, 4)
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in running.values()} == {group}
        wait_state(cluster, namespace, name, "Running")
    finally:
        op.stop()
