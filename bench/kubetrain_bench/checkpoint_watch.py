"""What the checkpoint benchmark sees of the cluster while a job runs: objects watched, and the
first rank's log lines read where the kubelets write them.

:class:`Watch` runs ``kubectl get KIND -w`` in a thread and stamps every change with the time it
arrived (this machine's clock, to the microsecond): when a request's annotation reached a pod,
when a pod was deleted, when the job's status said what. :class:`NodeLogs` reads the real nodes'
pod-log files (one per container instance) from where it left off, over and over, so that the
lines of a pod deleted by a stop are kept: the kubelet removes them a few seconds after the pod.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import subprocess
import threading
import time
from typing import Any

from kubetrain.devcluster import cluster as devcluster

Obj = dict[str, Any]


class Recorded:
    """Changes of objects as (time, type, object), in the order they came."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[tuple[float, str, Obj]] = []

    def since(self, index: int = 0) -> list[tuple[float, str, Obj]]:
        with self._lock:
            return self.events[index:]

    def latest(self) -> dict[str, Obj]:
        """The last state seen of each object, by name (deleted ones left out)."""
        out: dict[str, Obj] = {}
        for _, kind, obj in self.since():
            name = obj.get("metadata", {}).get("name", "")
            if kind == "DELETED":
                out.pop(name, None)
            else:
                out[name] = obj
        return out


class Watch(Recorded):
    """``kubectl get KIND -n NAMESPACE -w``: every change as (time, type, object), in order."""

    def __init__(self, c: devcluster.Cluster, kind: str, namespace: str, *selector: str) -> None:
        super().__init__()
        argv = [c.bins["kubectl"], f"--kubeconfig={c.kubeconfig}", "get", kind, "-n", namespace]
        argv += [*selector, "-w", "--output-watch-events", "-o", "json"]
        self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._thread = threading.Thread(target=self._read, name=f"watch-{kind}", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        decoder, buffer = json.JSONDecoder(), ""
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            buffer += line
            while buffer.strip():
                try:
                    event, end = decoder.raw_decode(buffer.lstrip())
                except json.JSONDecodeError:
                    break  # not whole yet
                buffer = buffer.lstrip()[end:]
                with self._lock:
                    self.events.append((time.time(), event.get("type", ""), event.get("object") or {}))

    def stop(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()


class NodeLogs:
    """The lines the containers of a job's pods print, as ``(timestamp, pod, uid, container, text)``,
    read from every real node's pod-log files (``{namespace}_{pod}_{uid}/{container}/{n}.log``)."""

    def __init__(self, c: devcluster.Cluster, namespace: str, pod_prefix: str, containers: set[str]) -> None:
        self.c, self.namespace, self.prefix, self.containers = c, namespace, pod_prefix, containers
        self._offsets: dict[pathlib.Path, int] = {}
        self._partial: dict[pathlib.Path, str] = {}
        self.lines: list[tuple[datetime.datetime, str, str, str, str]] = []

    def poll(self) -> None:
        for node in self.c.real_nodes:
            for path in (node.dir / "pod-logs").glob(f"{self.namespace}_{self.prefix}*/*/*.log"):
                container = path.parent.name
                if container not in self.containers:
                    continue
                _, pod, uid = path.parent.parent.name.split("_")
                try:
                    with path.open("rb") as f:
                        f.seek(self._offsets.get(path, 0))
                        data = f.read()
                except FileNotFoundError:  # its pod went while it was listed
                    continue
                if not data:
                    continue
                self._offsets[path] = self._offsets.get(path, 0) + len(data)
                text = self._partial.pop(path, "") + data.decode(errors="replace")
                *whole, rest = text.split("\n")
                if rest:
                    self._partial[path] = rest
                for line in whole:
                    # CRI: {timestamp} {stream} {P|F} {text}
                    parts = line.split(" ", 3)
                    if len(parts) == 4:
                        self.lines.append((stamp(parts[0]), pod, uid, container, parts[3]))


def stamp(text: str) -> datetime.datetime:
    """An RFC 3339 timestamp with nanoseconds (a CRI log's), cut to microseconds, in UTC."""
    text = text.rstrip("Z")
    whole, _, fraction = text.partition(".")
    return datetime.datetime.fromisoformat(f"{whole}.{(fraction + '000000')[:6]}+00:00")


def parse_time(text: str) -> datetime.datetime:
    """A Kubernetes timestamp (``2026-12-02T06:37:20Z``, or with a fraction), in UTC."""
    return stamp(text) if "." in text else datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def at(seconds: float) -> datetime.datetime:
    """``time.time()`` as an aware UTC datetime."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC)
