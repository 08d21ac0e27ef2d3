"""kr8s object classes for kubetrain's kinds, and small waiting helpers."""

from __future__ import annotations

import pathlib
import socket
import time
from collections.abc import Callable
from typing import Any, TypeVar

import kr8s
import yaml
from kr8s.objects import new_class

from kubetrain.api import scheme, v1beta1

TrainingJob = new_class(
    kind="TrainingJob", version=v1beta1.API_VERSION, namespaced=True, plural="trainingjobs"
)
# Always name the version: a bare "trainingjobs" may resolve to the legacy v1alpha1.
RESOURCE = "trainingjobs.v1beta1.training.kubetrain.dev"

T = TypeVar("T")


def create_job(kube: kr8s.Api, job: v1beta1.TrainingJob) -> Any:
    obj = TrainingJob(scheme.encode(job), api=kube)
    obj.create()
    return obj


def eventually(
    what: str,
    probe: Callable[[], T | None],
    timeout: float = 30,
    interval: float = 0.2,
    evidence: Callable[[], object] | None = None,
) -> T:
    """Poll ``probe`` until it returns something truthy, and return that.

    On a timeout the error carries ``evidence()``: what was seen instead, so a failure seen only
    in CI can be told apart from its neighbours (a slow cluster, a restart charged twice).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(interval)
    seen = f"; seen instead: {evidence()}" if evidence is not None else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{seen}")


def unreachable_kubeconfig(directory: pathlib.Path) -> tuple[pathlib.Path, int]:
    """A kubeconfig whose server is a local port nothing listens on, and that port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]  # closed once the block ends: nothing listens there
    kubeconfig = directory / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return kubeconfig, port
