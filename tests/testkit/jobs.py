"""TrainingJobs on a cluster tier, as the tests see them through kubectl: create, read, wait."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import yaml

from kubetrain.api import naming
from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok
from kubetrain.operator import expansion
from testkit.kube import eventually

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples" / "v1beta1"
SHORT = SAMPLES / "short"
RUNTIMES = ROOT / "config" / "runtimes"
# The fields of spec.trainer: a change of :func:`short` that starts with one is the trainer's.
TRAINER_FIELDS = frozenset(
    {"image", "command", "args", "env", "numNodes", "resourcesPerNode", "procsPerNode"}
)
RESOURCE = "trainingjobs.v1beta1.training.kubetrain.dev"
JOB = naming.JOB_NAME
ATTEMPT = naming.ATTEMPT


def sample(name: str, restart_policy: str | None = None, **changes: Any) -> dict[str, Any]:
    """A v1beta1 sample; ``a__b=v`` sets ``spec.a.b``, ``restart_policy`` every replica type's."""
    job: dict[str, Any] = yaml.safe_load((SAMPLES / f"{name}.yaml").read_text())
    spec = job["spec"]
    if restart_policy is not None:
        for replica_spec in spec["replicaSpecs"].values():
            replica_spec["restartPolicy"] = restart_policy
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        node = spec
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return job


def short(name: str, **changes: Any) -> dict[str, Any]:
    """samples/v1beta1/short/NAME.yaml, changed, expanded against the shipped runtimes.

    A change whose first part is a trainer field sets it in ``spec.trainer`` (``numNodes=3``,
    ``args=[...]``); any other ``a__b=v`` sets ``spec.a.b``, as :func:`sample`'s do. The changes
    go into the short job, so the expansion merges the job-level ones over the runtime by its
    rules (objects key by key, lists of named items by name: a ``volumes`` or a container named
    as the runtime's merges into it). Then the job is expanded against config/runtimes by the
    code the operator's mutating webhook runs at creation: the cluster tiers' operator runs
    without webhooks, so a short job is created expanded, as a deployed cluster would store it.
    """
    job: dict[str, Any] = yaml.safe_load((SHORT / f"{name}.yaml").read_text())
    spec = job["spec"]
    for path, value in changes.items():
        parts = path.split("__")
        *parents, leaf = parts
        node = spec["trainer"] if parts[0] in TRAINER_FIELDS else spec
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return expansion.expand(job, shipped_runtimes()).obj


def shipped_runtimes() -> expansion.Resolve:
    """The ClusterTrainingRuntimes of config/runtimes, as the expansion reads them."""
    return expansion.from_documents(
        yaml.safe_load(p.read_text())
        for p in sorted(RUNTIMES.glob("*.yaml"))
        if p.name != "kustomization.yaml"
    )


def create(c: devcluster.Cluster, namespace: str, job: dict[str, Any]) -> str:
    c.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(job))
    return str(job["metadata"]["name"])


def get_job(c: devcluster.Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    return c.trainingjob(namespace, name)


def status(c: devcluster.Cluster, namespace: str, name: str) -> dict[str, Any]:
    job = get_job(c, namespace, name)
    return (job or {}).get("status", {})


def pods(c: devcluster.Cluster, namespace: str, name: str) -> dict[str, dict[str, Any]]:
    got = c.get(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": f"{JOB}={name}"})
    return {p["metadata"]["name"]: p for p in got["items"]}


def wait_state(
    c: devcluster.Cluster, namespace: str, name: str, state: str, timeout: float = 60
) -> dict[str, Any]:
    return eventually(
        f"{name} to be {state}",
        lambda: (s := status(c, namespace, name)).get("state") == state and s,
        timeout=timeout,
        evidence=lambda: summary(c, namespace, name),
    )


def summary(c: devcluster.Cluster, namespace: str, name: str) -> str:
    """A job's state, counts and last failures, and its pods: what a failed wait shows."""
    s = status(c, namespace, name)
    job = {k: s.get(k) for k in ("state", "restarts", "countedFailures")}
    job["failures"] = [
        {k: f.get(k) for k in ("pod", "exitCode", "reason", "class", "action")}
        for f in s.get("failures", [])[-4:]
    ]
    job["pods"] = {
        n: {
            "attempt": p["metadata"].get("labels", {}).get(ATTEMPT),
            "phase": p.get("status", {}).get("phase"),
            "deleting": "deletionTimestamp" in p["metadata"],
            "uid": p["metadata"]["uid"][:8],
        }
        for n, p in pods(c, namespace, name).items()
    }
    return json.dumps(job)


def running_pods(c: devcluster.Cluster, namespace: str, name: str, count: int) -> dict[str, dict[str, Any]]:
    def probe() -> dict[str, dict[str, Any]] | None:
        got = pods(c, namespace, name)
        up = {
            n: p
            for n, p in got.items()
            if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        }
        return up if len(up) == count and len(got) == count else None

    return eventually(
        f"{count} running pods of {name}", probe, timeout=60, evidence=lambda: summary(c, namespace, name)
    )


def condition(s: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next(c for c in s.get("conditions", []) if c["type"] == ctype)


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env", [])}


def events(c: devcluster.Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    out = c.kubectl(
        "get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}", "-o", "json"
    ).stdout
    return list(json.loads(out)["items"])


def run(c: devcluster.Cluster, namespace: str, job: dict[str, Any], count: int) -> dict[str, dict[str, Any]]:
    """Create ``job`` and wait until its ``count`` pods run and it shows Running; its pods."""
    name = create(c, namespace, job)
    running = running_pods(c, namespace, name, count)
    wait_state(c, namespace, name, "Running")
    return running


def finish(c: devcluster.Cluster, namespace: str, name: str, pod_names: list[str]) -> dict[str, Any]:
    """Every pod exits 0 (as a kubelet would report it); the job's status once Succeeded."""
    for pod in pod_names:
        try:
            kwok.finish_pod(c, namespace, pod, 0)
        except devcluster.KubectlError as e:
            # Once the pods that decide have succeeded, the job stops the rest itself.
            if "NotFound" not in str(e):
                raise
    return wait_state(c, namespace, name, "Succeeded")
