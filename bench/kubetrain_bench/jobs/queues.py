"""Kueue for ``--kueue``: started beside the cluster, and a queue per namespace the jobs wait in.

Each namespace gets a ClusterQueue of its own over one ResourceFlavor, with cpu quota for every
job at once (the benchmark measures what each route costs, not waiting for quota), and the
LocalQueue :data:`~.bodies.QUEUE`. Kueue runs with the admin kubeconfig, so ``--audit`` tells its
requests from the operator's by user agent.
"""

from __future__ import annotations

import json
from typing import Any

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kueue, process
from kubetrain_bench.jobs.bodies import QUEUE

FLAVOR = "bench-flavor"


def start(c: devcluster.Cluster) -> process.Process:
    """Kueue on ``c`` (stopped with the cluster: it is one of its processes)."""
    return kueue.start(c, timeout=180)


def create(c: devcluster.Cluster, namespaces: list[str], *, cpu: int) -> None:
    """A ClusterQueue with ``cpu`` cpus and a LocalQueue in each of ``namespaces`` (made if missing)."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": kueue.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}}
    ]
    for ns in namespaces:
        c.kubectl("create", "namespace", ns, check=False)
        kueue.manage(c, ns)
        cq = f"bench-{ns}"
        objects += [
            {
                "apiVersion": kueue.API_VERSION,
                "kind": "ClusterQueue",
                "metadata": {"name": cq},
                "spec": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": cpu}]}
                            ],
                        }
                    ],
                },
            },
            {
                "apiVersion": kueue.API_VERSION,
                "kind": "LocalQueue",
                "metadata": {"name": QUEUE, "namespace": ns},
                "spec": {"clusterQueue": cq},
            },
        ]
    c.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        input="\n---\n".join(map(json.dumps, objects)),
    )
    for ns in namespaces:
        c.kubectl(
            "wait", "--for=condition=Active", "--timeout=60s", f"localqueues.kueue.x-k8s.io/{QUEUE}", "-n", ns
        )
