"""Operator-wide accelerator config: env and volumes for containers that request a device.

As the first TfJob operator did for NVIDIA drivers, a cluster admin can tell kubetrain,
once, what a container using a given extended resource needs — say, the host's driver
libraries and ``LD_LIBRARY_PATH`` for ``nvidia.com/gpu``. The operator reads a YAML file
(``kubetrain-operator --accelerator-config FILE``)::

    nvidia.com/gpu:
      env:
        LD_LIBRARY_PATH: /usr/local/nvidia/lib64
      volumes:
      - name: nvidia-libs
        hostPath: /usr/local/nvidia
        mountPath: /usr/local/nvidia

and :func:`apply` adds that env and those volumes to every container of a pod that
requests the resource (in limits or requests), and its ``tolerations`` to the pod. The user's
own env and volume mounts win: a variable or mount path the container already sets is left as
it is, and a toleration the pod has is not added twice. A runtime says the same per runtime
(``spec.accelerators``, :class:`kubetrain.api.v1beta1.AcceleratorProfile`); a job made from it
gets the runtime's first, so this file is the default beneath it.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import Any

import yaml

from kubetrain.api import v1beta1, validation, wire

__all__ = ["Accelerator", "Config", "HostVolume", "apply", "load"]


# The runtime's accelerator profiles (spec.accelerators) and this file say the same things.
HostVolume = v1beta1.HostVolume
Accelerator = v1beta1.AcceleratorProfile

Config = Mapping[str, Accelerator]


def load(path: pathlib.Path) -> dict[str, Accelerator]:
    """Read a config file; a bad one raises ValidationError naming the field."""
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, Mapping):
        raise validation.ValidationError.at((), "an accelerator config maps resource names to settings")
    return {str(k): wire.structure(v, Accelerator) for k, v in data.items()}


def apply(pod: dict[str, Any], config: Config) -> None:
    """Add each requested accelerator's env, volumes and tolerations to ``pod`` (in place)."""
    spec = pod["spec"]
    for container in spec.get("containers", []):
        resources = container.get("resources") or {}
        requested = {*(resources.get("limits") or {}), *(resources.get("requests") or {})}
        for resource in sorted(requested & set(config)):
            _add(spec, container, config[resource])


def _add(spec: dict[str, Any], container: dict[str, Any], acc: Accelerator) -> None:
    env = container.setdefault("env", [])
    set_by_user = {e.get("name") for e in env}
    env.extend({"name": k, "value": v} for k, v in acc.env.items() if k not in set_by_user)
    mounts = container.setdefault("volumeMounts", [])
    mounted = {m.get("mountPath") for m in mounts}
    volumes = spec.setdefault("volumes", [])
    for v in acc.volumes:
        if v.mount_path in mounted:
            continue
        if not any(existing.get("name") == v.name for existing in volumes):
            volumes.append({"name": v.name, "hostPath": {"path": v.host_path}})
        mounts.append({"name": v.name, "mountPath": v.mount_path, "readOnly": v.read_only})
    tolerations = spec.setdefault("tolerations", []) if acc.tolerations else []
    tolerations.extend(dict(t) for t in acc.tolerations if t not in tolerations)
