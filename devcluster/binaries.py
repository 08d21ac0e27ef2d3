"""Where the local cluster's binaries are: built by ``hack/build-control-plane.sh`` and
``hack/build-node.sh``, or installed from Debian (runc, the CNI plugins).

Search order: the directories in ``KUBETRAIN_BIN_PATH`` (``os.pathsep``-separated; the
Makefile sets it to exactly what the build scripts printed), then the build cache
(``$KUBETRAIN_CACHE``, default ``~/.cache/kubetrain``), newest version first, then Debian's
CNI plugin directory, then ``PATH``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import shutil
from collections.abc import Iterator

import attrs

__all__ = [
    "NAMES",
    "NODE_NAMES",
    "SCHEDULER_NAMES",
    "Binaries",
    "BinariesNotFoundError",
    "find",
    "locked",
    "manifest",
]

NAMES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
    "kustomize",
)
# What real nodes add (hack/build-node.sh); ``host-local`` stands for Debian's CNI plugins (not
# ``bridge``: iproute2 has a command of that name in /usr/sbin).
NODE_NAMES = (
    "kubelet",
    "kube-proxy",
    "containerd",
    "containerd-shim-runc-v2",
    "ctr",
    "coredns",
    "pause",
    "runc",
    "host-local",
)
# The optional schedulers (hack/build-schedulers.sh): scheduler-plugins' scheduler and Kueue.
SCHEDULER_NAMES = ("coscheduling-scheduler", "kueue")


class BinariesNotFoundError(FileNotFoundError):
    pass


@attrs.frozen
class Binaries:
    paths: dict[str, pathlib.Path]

    def __getitem__(self, name: str) -> str:
        return str(self.paths[name])


def cache_dir() -> pathlib.Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(pathlib.Path.home() / ".cache")
    return pathlib.Path(os.environ.get("KUBETRAIN_CACHE") or pathlib.Path(base) / "kubetrain")


@contextlib.contextmanager
def locked(path: pathlib.Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing): one builder or allocator at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _version_key(path: pathlib.Path) -> tuple[int, ...]:
    digits = path.parent.name.lstrip("v").split(".")
    return tuple(int(d) if d.isdigit() else 0 for d in digits)


def _search_dirs() -> list[pathlib.Path]:
    dirs = [pathlib.Path(d) for d in os.environ.get("KUBETRAIN_BIN_PATH", "").split(os.pathsep) if d]
    cache = cache_dir()
    for component in ("k8s", "etcd"):
        dirs += sorted(cache.glob(f"{component}/*/bin"), key=_version_key, reverse=True)
    dirs += [cache / "tools" / "bin", cache / "node" / "bin", cache / "schedulers" / "bin"]
    dirs += [pathlib.Path("/usr/lib/cni")]
    return dirs


def find(names: tuple[str, ...] = NAMES) -> Binaries:
    found: dict[str, pathlib.Path] = {}
    dirs = _search_dirs()
    for name in names:
        for d in dirs:
            candidate = d / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                found[name] = candidate
                break
        else:
            on_path = shutil.which(name)
            if on_path:
                found[name] = pathlib.Path(on_path)
    missing = [n for n in names if n not in found]
    if missing:
        searched = "\n  ".join(str(d) for d in dirs)
        raise BinariesNotFoundError(
            f"control-plane binaries not found: {', '.join(missing)}.\n"
            "Build them with `hack/build-control-plane.sh`, `hack/build-node.sh` and `hack/build-schedulers.sh`"
            " (or `make control-plane`)."
            f" Searched:\n  {searched}"
        )
    return Binaries(found)


def manifest(relative: str, beside: str = "kueue") -> pathlib.Path:
    """A manifest hack/build-schedulers.sh keeps beside the schedulers (a CRD, webhooks):
    ``../manifests/relative`` from the binary ``beside``."""
    binary = pathlib.Path(find((beside,))[beside])
    path = binary.parent.parent / "manifests" / relative
    if not path.exists():
        raise BinariesNotFoundError(
            f"{path} is missing: run `hack/build-schedulers.sh` (or `make control-plane`)"
        )
    return path
