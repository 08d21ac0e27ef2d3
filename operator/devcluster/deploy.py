"""kubetrain deployed on a local cluster the way a user deploys it: ``config/default``.

:func:`apply` builds the overlay with kustomize and applies it server-side. A local
cluster has neither cert-manager nor the Prometheus Operator, so their objects (the
overlay's optional, tagged parts) are left out unless ``optional=True`` — and the
manager then runs with ``--webhook-self-signed``. The manager itself runs as a local
process holding the Deployment's ServiceAccount token (:func:`service_account_kubeconfig`),
so RBAC applies to it as in a cluster; since the apiserver cannot reach a local process
through the webhook Service, :func:`point_webhooks_at` gives the CRD's conversion webhook
and the validating webhooks a URL on 127.0.0.1 instead.
"""

from __future__ import annotations

import json
import pathlib
import subprocess

import yaml

from kubetrain.api import crd
from kubetrain.operator import webhooks
from kubetrain.operator.devcluster import cluster as cluster_

__all__ = [
    "NAMESPACE",
    "OPTIONAL_KINDS",
    "apply",
    "manager_flags",
    "overlay",
    "point_webhooks_at",
    "service_account_kubeconfig",
]

NAMESPACE = "kubetrain-system"
SERVICE_ACCOUNT = "kubetrain-controller-manager"
OPTIONAL_KINDS = frozenset({"Certificate", "Issuer", "ServiceMonitor"})


def overlay(c: cluster_.Cluster, config_dir: pathlib.Path) -> str:
    """``kustomize build config/default``."""
    return subprocess.run(
        [c.bins["kustomize"], "build", str(config_dir / "default")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def apply(c: cluster_.Cluster, manifest: str, *, optional: bool = False) -> None:
    """Apply the overlay (without its optional parts, unless ``optional``) and wait for the CRD."""
    objects = [o for o in yaml.safe_load_all(manifest) if o and (optional or o["kind"] not in OPTIONAL_KINDS)]
    c.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(objects))
    c.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{crd.NAME}")


def point_webhooks_at(c: cluster_.Cluster, base: str) -> None:
    """Send the apiserver's webhook calls to ``base`` (``https://127.0.0.1:<port>``)."""
    crd_patch = {
        "spec": {"conversion": {"webhook": {"clientConfig": {"service": None, "url": f"{base}/convert"}}}}
    }
    c.kubectl("patch", "crd", crd.NAME, "--type=merge", "-p", json.dumps(crd_patch))
    vwc = json.loads(
        c.kubectl("get", "validatingwebhookconfiguration", webhooks.CONFIGURATION_NAME, "-o", "json").stdout
    )
    ops = [
        {
            "op": "replace",
            "path": f"/webhooks/{i}/clientConfig",
            "value": {"url": f"{base}{w['clientConfig']['service']['path']}"},
        }
        for i, w in enumerate(vwc["webhooks"])
        if "service" in w["clientConfig"]
    ]
    if ops:
        c.kubectl(
            "patch",
            "validatingwebhookconfiguration",
            webhooks.CONFIGURATION_NAME,
            "--type=json",
            "-p",
            json.dumps(ops),
        )


def service_account_kubeconfig(c: cluster_.Cluster, path: pathlib.Path) -> pathlib.Path:
    """A kubeconfig that authenticates as the manager's ServiceAccount (a bound token)."""
    token = c.kubectl("create", "token", SERVICE_ACCOUNT, "-n", NAMESPACE, "--duration=24h").stdout.strip()
    admin = yaml.safe_load(c.kubeconfig.read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": admin["clusters"][0]["cluster"]}],
        "users": [{"name": "manager", "user": {"token": token}}],
        "contexts": [{"name": "manager", "context": {"cluster": "local", "user": "manager"}}],
        "current-context": "manager",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def manager_flags(kubeconfig: pathlib.Path, cert_dir: pathlib.Path, port: int) -> list[str]:
    """The flags of the local manager: the ServiceAccount, its own CA, one leader."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--webhook-port={port}",
        f"--cert-dir={cert_dir}",
        "--webhook-self-signed",
        "--webhook-host=127.0.0.1",
        "--leader-elect",
        f"--leader-election-namespace={NAMESPACE}",
    ]
