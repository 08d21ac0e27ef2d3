"""Where the control-plane binaries are: built by ``hack/build-control-plane.sh``.

Search order: the directories in ``KUBETRAIN_BIN_PATH`` (``os.pathsep``-separated; the
Makefile sets it to exactly what the build script printed), then the build cache
(``$KUBETRAIN_CACHE``, default ``~/.cache/kubetrain``), newest version first, then ``PATH``.
"""

from __future__ import annotations

import os
import pathlib
import shutil

import attrs

__all__ = ["NAMES", "Binaries", "BinariesNotFoundError", "find"]

NAMES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
    "kustomize",
)


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


def _version_key(path: pathlib.Path) -> tuple[int, ...]:
    digits = path.parent.name.lstrip("v").split(".")
    return tuple(int(d) if d.isdigit() else 0 for d in digits)


def _search_dirs() -> list[pathlib.Path]:
    dirs = [pathlib.Path(d) for d in os.environ.get("KUBETRAIN_BIN_PATH", "").split(os.pathsep) if d]
    cache = cache_dir()
    for component in ("k8s", "etcd"):
        dirs += sorted(cache.glob(f"{component}/*/bin"), key=_version_key, reverse=True)
    dirs.append(cache / "tools" / "bin")
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
            f"Build them with `hack/build-control-plane.sh` (or `make control-plane`). Searched:\n  {searched}"
        )
    return Binaries(found)
