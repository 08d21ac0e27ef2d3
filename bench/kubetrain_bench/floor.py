"""The kubelet's own floor under a restart in place, with no operator and no program.

A bare pod, as a pod of a job restarted in place is made (``restartPolicy: Never``, a sidecar,
and a main container whose rule ``RestartAllContainers`` takes its exit 1), whose main container
writes the node's uptime when it starts and just before it exits 1, a moment after it started,
``restarts`` times. With ``init``, a regular init container that exits at once stands before the
main container, as kubetrain's barrier does when it lets an attempt start without waiting. The
seconds from each exit to the next start are what the kubelet takes by itself: no operator, no
barrier waiting, no program starting can make a restart in place shorter.
"""

from __future__ import annotations

import itertools
import json
import time

from kubetrain.devcluster import cluster as devcluster
from kubetrain_bench import console

# What each start and each end of the main container writes: ``start|end {uptime}``.
_LOG = "/floor/log"
_RUNS_FOR = 2  # seconds each start of the main container runs before it exits 1


def measure(
    c: devcluster.Cluster, namespace: str, image: str, restarts: int, *, init: bool
) -> list[dict[str, float]]:
    """One record per restart: seconds from the main container's exit to its next start."""
    kind = "one init container" if init else "no init container"
    console.log(f"==> the kubelet alone, {kind}: {restarts} restarts in place of a bare pod")
    name = "floor-init" if init else "floor"
    stamp = f"read -r up _ < /proc/uptime; echo {{}} $up >> {_LOG}"
    main = (
        f"{stamp.format('start')}; [ $(grep -c start {_LOG}) -gt {restarts} ] && exec sleep 3600; "
        f"sleep {_RUNS_FOR}; {stamp.format('end')}; exit 1"
    )
    mount = [{"name": "floor", "mountPath": "/floor"}]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "volumes": [{"name": "floor", "emptyDir": {}}],
            "initContainers": [
                {
                    "name": "sidecar",
                    "image": image,
                    "restartPolicy": "Always",
                    "command": ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"],
                },
                *([{"name": "gate", "image": image, "command": ["true"]}] if init else []),
            ],
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "command": ["sh", "-c", main],
                    "volumeMounts": mount,
                    "restartPolicy": "Never",
                    "restartPolicyRules": [
                        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}
                    ],
                }
            ],
        },
    }
    c.kubectl("apply", "-f", "-", input=json.dumps(pod))
    try:
        log = ""
        deadline = time.monotonic() + 120 + restarts * (_RUNS_FOR + 4)
        while log.count("start") <= restarts:
            if time.monotonic() > deadline:
                raise SystemExit(f"error: the bare pod {name} restarted in place {log.count('end')} times")
            time.sleep(2)
            got = c.kubectl("exec", "-n", namespace, name, "-c", "main", "--", "cat", _LOG, check=False)
            log = got.stdout if got.returncode == 0 else log
    finally:
        c.kubectl("delete", "pod", name, "-n", namespace, "--wait=false", check=False)
    rows = [line.split() for line in log.splitlines()]
    gaps = [
        float(b[1]) - float(a[1]) for a, b in itertools.pairwise(rows) if (a[0], b[0]) == ("end", "start")
    ]
    out = [{"attempt": i + 1, "seconds": gap} for i, gap in enumerate(gaps)]
    for r in out:
        console.log(
            f"    restart {r['attempt']:.0f}/{restarts}: started again {r['seconds']:.2f} s after its exit"
        )
    return out
