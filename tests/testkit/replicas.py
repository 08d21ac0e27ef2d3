"""Run the replicas of a rendered TrainingJob as local OS processes, with the env and files each Pod gets.

:func:`localize` takes what :func:`kubetrain.operator.render.render` returns and gives one
:class:`Replica` per Pod: the main container's ``env`` and the files of its ConfigMap and
Secret volumes, rewritten so that they work on this one machine without root, Docker or a
cluster. :class:`Processes` then starts commands with exactly that env, waits for them
with a timeout, and on any failure kills them all and shows what each printed.

What is mapped, and why:

- **Hosts.** Every name that cluster DNS would resolve to a pod becomes that pod's own
  loopback address: the first Pod gets 127.0.0.2, the next 127.0.0.3, and so on. Those
  names are a rendered Service's ``{svc}.{ns}.svc`` (also with ``.cluster.local``, and the
  shorter ``{svc}.{ns}`` and ``{svc}`` that the search path completes) when it selects
  exactly one pod, and ``{hostname}.{subdomain}.{ns}.svc`` of a pod whose subdomain is
  such a Service. A name no Service backs is left alone, so it fails here as it would
  there. In a cluster every pod has its own IP; here every replica does too (all of
  127.0.0.0/8 is local), so an MPI hostfile still names distinct hosts, and nothing
  needs an /etc/hosts edit.
- **Ports.** Every port the job uses (its Services' ports and the main containers'
  ``containerPort``) is replaced by one free local port, the same for every replica, as
  every pod listens on the same port at its own IP. A port is rewritten where it follows
  a mapped host that listens on it (``host:port``), where it is the whole value of a
  variable whose name ends in ``PORT``, and in ssh_config ``Port N`` lines — nowhere else,
  so that slot counts and sizes that happen to equal a port mostly stay as they are (a
  ``host:N`` slot count equal to that host's own port cannot be told apart, and maps).
- **Mounts.** ConfigMap and Secret volumes of the main container are written under the
  replica's own directory (``<workdir>/<pod>/<mountPath>``), Secret files with the
  volume's ``defaultMode``; every mention of a mount path in env values and in those
  files is rewritten to that directory.

The env a process gets is the Pod's env plus ``PATH``, ``HOME`` (the replica's
directory), ``LANG`` and what a test passes as ``extra`` (what an image would set) —
nothing else of the test runner's environment, so a stray variable cannot stand in for
one the plugin forgot.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from kubetrain.api import naming
from kubetrain.operator.frameworks import framework as fw_contract

__all__ = [
    "Finished",
    "LocalJob",
    "Processes",
    "Replica",
    "ReplicaError",
    "free_port",
    "localize",
    "wait_listening",
]

Object = dict[str, Any]
FIRST_ADDRESS = 2  # 127.0.0.1 stays the machine's own address
_TAIL = 4000


def free_port() -> int:
    """A TCP port that nothing listens on, at any address, right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class Replica:
    """One Pod, localized: where it lives and what its main container gets."""

    name: str  # the Pod's name
    type: str  # replica type, lower case (the replica-type label)
    index: int
    address: str  # the loopback address standing in for the pod's IP
    root: Path  # the replica's own directory (its HOME and working directory)
    env: Mapping[str, str]
    mounts: Mapping[str, Path]  # mountPath in the pod -> the local directory holding its files

    def file(self, path: str) -> Path:
        """The local file for ``path`` inside one of the pod's mounts."""
        for mount, local in self.mounts.items():
            if path.startswith(mount.rstrip("/") + "/"):
                return local / path[len(mount.rstrip("/")) + 1 :]
        raise KeyError(f"{path} is in no volume of {self.name} (mounts: {sorted(self.mounts)})")


@dataclass(frozen=True)
class LocalJob:
    """Every replica of a job, and the host and port maps they were localized with."""

    replicas: tuple[Replica, ...]
    hosts: Mapping[str, str]  # every name a pod is reached by -> its loopback address
    ports: Mapping[int, int]  # the job's ports -> the free local ports standing in for them

    def of_type(self, replica_type: str) -> tuple[Replica, ...]:
        return tuple(r for r in self.replicas if r.type == replica_type.lower())

    def one(self, replica_type: str, index: int = 0) -> Replica:
        return self.of_type(replica_type)[index]


def localize(objects: Sequence[Object], *, container: str, workdir: Path) -> LocalJob:
    """Localize rendered objects (see the module docstring); ``container`` names the main container."""
    pods = [o for o in objects if o["kind"] == "Pod"]
    addresses = {p["metadata"]["name"]: f"127.0.0.{FIRST_ADDRESS + i}" for i, p in enumerate(pods)}
    if len(pods) + FIRST_ADDRESS > 255:
        raise ValueError(f"{len(pods)} pods do not fit in 127.0.0.0/24")
    hosts: dict[str, str] = {}
    for svc in (o for o in objects if o["kind"] == "Service"):
        name, ns = svc["metadata"]["name"], svc["metadata"]["namespace"]
        selected = _selected(svc, pods)
        if len(selected) == 1:  # a name for several pods, or none, stands for no one address
            hosts.update(dict.fromkeys(_dns_names(name, ns), addresses[selected[0]["metadata"]["name"]]))
        for pod in selected:  # pods whose subdomain is this Service get {hostname}.{subdomain}...
            spec = pod["spec"]
            if spec.get("subdomain") == name and spec.get("hostname"):
                pod_ip = addresses[pod["metadata"]["name"]]
                hosts.update(dict.fromkeys(_dns_names(f"{spec['hostname']}.{name}", ns), pod_ip))
    listening = {addresses[p["metadata"]["name"]]: _pod_ports(p, objects, pods, container) for p in pods}
    ports: dict[int, int] = {}
    for p in sorted(set().union(*listening.values())):
        ports[p] = _fresh_port(set(ports.values()))
    mapper = _Mapper(hosts, ports, listening)
    return LocalJob(
        replicas=tuple(
            _replica(pod, objects, container, workdir, addresses[pod["metadata"]["name"]], mapper)
            for pod in pods
        ),
        hosts=hosts,
        ports=ports,
    )


def _dns_names(name: str, namespace: str) -> list[str]:
    """How a pod of ``namespace`` may spell ``name``, a Service (or subdomain) name, in DNS."""
    return [name, f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"]


def _selected(svc: Object, pods: Sequence[Object]) -> list[Object]:
    selector: Mapping[str, str] = svc["spec"].get("selector") or {}
    if not selector:
        return []
    return [
        p
        for p in pods
        if p["metadata"]["namespace"] == svc["metadata"]["namespace"]
        and selector.items() <= (p["metadata"].get("labels") or {}).items()
    ]


def _pod_ports(pod: Object, objects: Sequence[Object], pods: Sequence[Object], container: str) -> set[int]:
    """The ports a pod is reached at: its main container's, and those of Services selecting it alone."""
    main = fw_contract.main_container(pod, container) or {}
    ports = {int(p["containerPort"]) for p in main.get("ports") or []}
    for svc in (o for o in objects if o["kind"] == "Service"):
        if _selected(svc, pods) == [pod]:
            ports.update(int(p["port"]) for p in svc["spec"].get("ports") or [])
    return ports


def _fresh_port(taken: set[int]) -> int:
    while (port := free_port()) in taken:
        pass
    return port


class _Mapper:
    """Rewrites hosts, ports and mount paths in env values and file contents."""

    def __init__(
        self, hosts: Mapping[str, str], ports: Mapping[int, int], listening: Mapping[str, set[int]]
    ) -> None:
        self.hosts, self.ports, self.listening = hosts, ports, listening
        names = "|".join(re.escape(h) for h in sorted(hosts, key=len, reverse=True))
        # A host is a whole name: not part of a longer one on either side.
        self._host = re.compile(rf"(?<![\w.-])(?P<host>{names})(?![\w-])(?::(?P<port>\d+)(?!\d))?")
        self._ssh_port = re.compile(r"(?mi)^(?P<key>\s*Port\s+)(?P<port>\d+)\s*$")

    def _port(self, text: str) -> str:
        return str(self.ports.get(int(text), int(text)))

    def _host_sub(self, m: re.Match[str]) -> str:
        ip = self.hosts[m["host"]]
        if not m["port"]:
            return ip
        # Only a port that host listens on: "host:N" is also how hostfiles write slots.
        port = self._port(m["port"]) if int(m["port"]) in self.listening[ip] else m["port"]
        return f"{ip}:{port}"

    def text(self, text: str, mounts: Mapping[str, Path]) -> str:
        if self.hosts:
            text = self._host.sub(self._host_sub, text)
        for mount, local in sorted(mounts.items(), key=lambda kv: len(kv[0]), reverse=True):
            text = re.sub(rf"{re.escape(mount.rstrip('/'))}(?=/|$|[^\w.-])", str(local), text)
        return text

    def env(self, name: str, value: str, mounts: Mapping[str, Path]) -> str:
        if name.upper().endswith("PORT") and value.isdigit():
            return self._port(value)
        return self.text(value, mounts)

    def file(self, text: str, mounts: Mapping[str, Path]) -> str:
        text = self._ssh_port.sub(lambda m: m["key"] + self._port(m["port"]), text)
        return self.text(text, mounts)


def _replica(
    pod: Object, objects: Sequence[Object], container: str, workdir: Path, ip: str, mapper: _Mapper
) -> Replica:
    meta, spec = pod["metadata"], pod["spec"]
    main = fw_contract.main_container(pod, container)
    if main is None:
        raise ValueError(f"pod {meta['name']} has no main container {container!r}")
    root = workdir / meta["name"]
    root.mkdir(parents=True)
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    # First where each mount goes, so that files and env can name any of them.
    sources: dict[str, tuple[dict[str, str], int]] = {}
    mounts: dict[str, Path] = {}
    for vm in main.get("volumeMounts") or []:
        data = _volume_data(volumes.get(vm["name"], {}), objects, meta["namespace"])
        if data is not None:
            mounts[vm["mountPath"]] = root / vm["mountPath"].lstrip("/")
            sources[vm["mountPath"]] = data
    for mount, (files, mode) in sources.items():
        local = mounts[mount]
        local.mkdir(parents=True, exist_ok=True)
        for key, text in files.items():
            path = local / key
            path.write_text(mapper.file(text, mounts))
            path.chmod(mode)
    fields = {"metadata.name": meta["name"], "metadata.namespace": meta["namespace"], "status.podIP": ip}
    env = {e["name"]: mapper.env(e["name"], _env_value(e, fields), mounts) for e in main.get("env") or []}
    labels = meta.get("labels") or {}
    return Replica(
        name=meta["name"],
        type=labels.get(naming.REPLICA_TYPE, ""),
        index=int(labels.get(naming.REPLICA_INDEX, "0")),
        address=ip,
        root=root,
        env=env,
        mounts=mounts,
    )


def _env_value(var: Object, fields: Mapping[str, str]) -> str:
    """A variable's value; of ``valueFrom`` only the pod's own name, namespace and IP are known here."""
    if "valueFrom" not in var:
        return str(var.get("value", ""))
    path = str((var["valueFrom"].get("fieldRef") or {}).get("fieldPath"))
    if path not in fields:
        raise ValueError(f"{var['name']}: valueFrom {var['valueFrom']} cannot be resolved without a cluster")
    return fields[path]


def _volume_data(
    volume: Object, objects: Sequence[Object], namespace: str
) -> tuple[dict[str, str], int] | None:
    """The files of a ConfigMap or Secret volume and their mode, or None for other volumes."""

    def find(kind: str, name: str) -> Object:
        for o in objects:
            if (
                o["kind"] == kind
                and o["metadata"]["name"] == name
                and o["metadata"]["namespace"] == namespace
            ):
                return o
        raise KeyError(f"the pod mounts {kind} {name}, which was not rendered")

    if "configMap" in volume:
        source = volume["configMap"]
        return dict(find("ConfigMap", source["name"]).get("data") or {}), source.get("defaultMode", 0o644)
    if "secret" in volume:
        source = volume["secret"]
        data = find("Secret", source["secretName"]).get("data") or {}
        return {k: base64.b64decode(v).decode() for k, v in data.items()}, source.get("defaultMode", 0o644)
    return None


def wait_listening(address: str, port: int, timeout: float = 30) -> None:
    """Wait until something accepts TCP connections at ``address:port``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((address, port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {address}:{port} after {timeout}s") from None
            time.sleep(0.1)


@dataclass(frozen=True)
class Finished:
    """One process that exited: its replica, command, exit code and output."""

    replica: Replica
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class ReplicaError(AssertionError):
    """A replica failed or timed out; the message holds every process's output."""


@dataclass
class _Running:
    replica: Replica
    argv: tuple[str, ...]
    popen: subprocess.Popen[bytes]
    out: Path
    err: Path
    daemon: bool
    label: str = field(default="")

    def finished(self) -> Finished:
        return Finished(
            replica=self.replica,
            argv=self.argv,
            returncode=self.popen.returncode if self.popen.returncode is not None else -1,
            stdout=self.out.read_text(errors="replace"),
            stderr=self.err.read_text(errors="replace"),
        )


class Processes(contextlib.AbstractContextManager["Processes"]):
    """Processes started for replicas; leaving the ``with`` block kills any still running.

    Each process runs in its own session, with the replica's directory as working
    directory and HOME, so killing it kills what it started (torchrun's workers, mpirun's
    daemons) and nothing else.
    """

    def __init__(self) -> None:
        self._running: list[_Running] = []
        self.stopped: list[Finished] = []  # by :meth:`stop`

    def start(
        self,
        replica: Replica,
        argv: Sequence[str],
        *,
        extra: Mapping[str, str | None] | None = None,
        daemon: bool = False,
    ) -> None:
        """Start ``argv`` for ``replica``; a ``daemon`` serves the others and is killed at the end.

        ``extra`` adds to the pod's env what an image or a command line would; a ``None``
        value removes a variable.
        """
        label = f"{replica.name}{'-daemon' if daemon else ''}-{len(self._running)}"
        out, err = replica.root / f"{label}.stdout", replica.root / f"{label}.stderr"
        merged: dict[str, str | None] = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(replica.root),
            "LANG": "C.UTF-8",
            **replica.env,
            **(extra or {}),
        }
        env = {k: v for k, v in merged.items() if v is not None}
        with out.open("wb") as stdout, err.open("wb") as stderr:
            popen = subprocess.Popen(
                list(argv),
                env=env,
                cwd=replica.root,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
        self._running.append(_Running(replica, tuple(argv), popen, out, err, daemon, label))

    def wait(self, timeout: float) -> list[Finished]:
        """Wait until every non-daemon process exits 0; raise :class:`ReplicaError` otherwise.

        Fails as soon as one exits non-zero (its peers would only hang), when a daemon
        exits, or at ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        workers = [r for r in self._running if not r.daemon]
        while True:
            for r in self._running:
                code = r.popen.poll()
                if code is not None and (code != 0 or r.daemon):
                    what = "a daemon exited" if r.daemon else f"exit code {code}"
                    self._fail(f"{r.label}: {what}")
            if all(r.popen.returncode is not None for r in workers):
                return [r.finished() for r in workers]
            if time.monotonic() > deadline:
                pending = [r.label for r in workers if r.popen.returncode is None]
                self._fail(f"timed out after {timeout:.0f}s waiting for {', '.join(pending)}")
            time.sleep(0.05)

    def stop(self, replica: Replica, timeout: float = 30) -> Finished:
        """SIGTERM ``replica``'s process group, as a kubelet does when its pod is deleted, and
        wait for it; it leaves the processes :meth:`wait` waits for, whatever its exit code."""
        (r,) = [r for r in self._running if r.replica.name == replica.name and r.popen.returncode is None]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(r.popen.pid, signal.SIGTERM)
        r.popen.wait(timeout=timeout)
        self._running.remove(r)
        self.stopped.append(r.finished())
        return self.stopped[-1]

    def outputs(self, *, daemons: bool = False) -> list[Finished]:
        """What the processes (or only the daemons) printed so far; a running one has exit code -1."""
        return [r.finished() for r in self._running if r.daemon or not daemons]

    def _fail(self, reason: str) -> None:
        self.kill()
        parts = [reason]
        for r in self._running:
            f = r.finished()
            parts.append(
                f"--- {r.label} (exit {f.returncode}): {' '.join(r.argv)}\n"
                f"stdout (tail):\n{f.stdout[-_TAIL:]}\nstderr (tail):\n{f.stderr[-_TAIL:]}"
            )
        raise ReplicaError("\n".join(parts))

    def kill(self) -> None:
        """Kill every process group (what each process started too), then reap them."""
        for r in self._running:
            # A group outlives its leader while any member runs, and its id is not reused meanwhile.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(r.popen.pid, signal.SIGKILL)
        for r in self._running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                r.popen.wait(timeout=10)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.kill()
