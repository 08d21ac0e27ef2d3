"""What the fault benchmark sees while its jobs run: the jobs' and pods' changes, the ranks' lines.

The jobs and the pods are watched (``kubectl get -w``, restarted when the apiserver restarts
under it: a watch ends with its connection) and every change kept with the time it came. The
ranks' lines are read where the kubelets write them (checkpoint_watch.NodeLogs), every
:data:`POLL` seconds while the run lasts, so the lines of a pod deleted by a restart are kept;
the kubelet removes its files a few seconds after the pod.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

from kubetrain.devcluster import cluster as devcluster
from kubetrain_bench.checkpoint_watch import NodeLogs, Recorded, Watch

JOBS = "trainingjobs.v1beta1.training.kubetrain.dev"
POLL = 1.0
# The containers whose lines are the ranks': DDP's and MPI's main containers.
CONTAINERS = {"pytorch", "mpi"}

Line = tuple[datetime.datetime, str, str, str, str]


class Observed:
    """The jobs, the pods and the ranks' lines of ``namespace``, gathered while :meth:`wait` runs."""

    def __init__(self, c: devcluster.Cluster, namespace: str) -> None:
        self.c, self.namespace = c, namespace
        self.logs = NodeLogs(c, namespace, "", CONTAINERS)
        self._jobs: list[Watch] = []
        self._pods: list[Watch] = []
        self._watch()

    def _watch(self) -> None:
        self._jobs.append(Watch(self.c, JOBS, self.namespace))
        self._pods.append(Watch(self.c, "pods", self.namespace))

    def poll(self) -> None:
        """Read the nodes' new lines; open the watches again if one ended (an apiserver restart)."""
        self.logs.poll()
        if any(w._proc.poll() is not None for w in (self._jobs[-1], self._pods[-1])):
            for w in (self._jobs[-1], self._pods[-1]):
                w.stop()
            self._watch()

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds``, polling."""
        deadline = time.monotonic() + seconds
        while True:
            self.poll()
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(POLL, left))

    def stop(self) -> None:
        self.poll()
        for w in self._jobs + self._pods:
            w.stop()

    @property
    def jobs(self) -> Recorded:
        return _merged(self._jobs)

    @property
    def pods(self) -> Recorded:
        return _merged(self._pods)

    @property
    def lines(self) -> list[Line]:
        return sorted(self.logs.lines)


def _merged(watches: list[Watch]) -> Recorded:
    out = Recorded()
    out.events = sorted((e for w in watches for e in w.since()), key=lambda e: e[0])
    return out


def pod_job(pod: dict[str, Any]) -> str:
    return str(pod.get("metadata", {}).get("labels", {}).get("training.kubetrain.dev/job-name", ""))
