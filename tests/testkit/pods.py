"""Reading real pods: their logs, the result lines the example scripts print, their nodes."""

from __future__ import annotations

import json
from typing import Any

from kubetrain.devcluster import cluster as devcluster

RESULT = "KUBETRAIN-RESULT "


def logs(c: devcluster.Cluster, namespace: str, pod: str, *, previous: bool = False) -> str:
    args = ["logs", "-n", namespace, pod] + (["--previous"] if previous else [])
    return c.kubectl(*args).stdout


def results(text: str) -> list[dict[str, Any]]:
    """The ``KUBETRAIN-RESULT {json}`` lines of a log."""
    return [json.loads(line[len(RESULT) :]) for line in text.splitlines() if line.startswith(RESULT)]


def restart_count(pod: dict[str, Any]) -> int:
    return sum(s.get("restartCount", 0) for s in pod.get("status", {}).get("containerStatuses", []))


def example_job(name: str, replicas: dict[str, dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """A generic-framework TrainingJob of the examples image; each replica type gives its command."""
    replica_specs = {}
    for rtype, r in replicas.items():
        container: dict[str, Any] = {"name": "main", "image": r.get("image", IMAGE), "command": r["command"]}
        template: dict[str, Any] = {"spec": {"containers": [container], "terminationGracePeriodSeconds": 2}}
        if "volume" in r:
            container["volumeMounts"] = [{"name": "scratch", "mountPath": r["volume"]}]
            template["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
        replica_specs[rtype] = {"replicas": r.get("replicas", 1), "template": template}
        if "restartPolicy" in r:
            replica_specs[rtype]["restartPolicy"] = r["restartPolicy"]
    return {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": name},
        "spec": {"framework": {"name": "generic"}, "replicaSpecs": replica_specs, **spec},
    }


IMAGE = "kubetrain.local/examples:v1"
