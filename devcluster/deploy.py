"""kubetrain deployed on a local cluster the way a user deploys it: ``config/default``.

:func:`apply` builds the overlay with kustomize and applies it server-side. A local
cluster has neither cert-manager nor the Prometheus Operator, so their objects (the
overlay's optional, tagged parts) are left out unless ``optional=True``. Then, either:

- on real nodes, :func:`in_cluster`: the manager runs as the pods of its Deployment, from
  the operator image built here (``kustomize edit set image`` done on the built overlay),
  and :func:`issue_serving_certificate` does what cert-manager and its CA injector would —
  the ``webhook-server-cert`` Secret the Deployment mounts, and the CA in the CRD and the
  ValidatingWebhookConfiguration — so the apiserver calls the webhooks through the Service
  and both replicas serve them;
- on kwok nodes, the manager runs as a local process holding the Deployment's ServiceAccount
  token (:func:`service_account_kubeconfig`), so RBAC applies to it as in a cluster, with
  ``--webhook-self-signed``; since the apiserver cannot reach a local process through the
  webhook Service, :func:`point_webhooks_at` gives the CRD's conversion webhook and the
  validating webhooks a URL on 127.0.0.1 instead.

:func:`roll` rolls a deployed operator to another release (its CRDs first), as an upgrade does.

Once the webhooks answer, :func:`wait_defaults_given` waits until the apiserver gives a new job
its defaults (``config/defaults``): the policy's type converter learns a new CRD's schema from
``/openapi/v3``, which it polls every 5 s, and until then a create it matches is answered 503.
"""

from __future__ import annotations

import base64
import concurrent.futures
import json
import pathlib
import subprocess
from collections.abc import Callable
from typing import Any

import yaml

from kubetrain.api import crd, v1beta1
from kubetrain.devcluster import controlplane, process
from kubetrain.operator import pki, webhook_endpoints

__all__ = [
    "NAMESPACE",
    "OPTIONAL_KINDS",
    "apply",
    "in_cluster",
    "issue_serving_certificate",
    "manager_flags",
    "overlay",
    "point_webhooks_at",
    "roll",
    "service_account_kubeconfig",
    "wait_defaults_given",
]

NAMESPACE = "kubetrain-system"
SERVICE_ACCOUNT = "kubetrain-controller-manager"
DEPLOYMENT = "kubetrain-controller-manager"
# The Secret the Deployment mounts and cert-manager's Certificate writes (no prefix: kustomize does not
# rename a Secret it does not build).
SERVING_SECRET = "webhook-server-cert"
OPTIONAL_KINDS = frozenset({"Certificate", "Issuer", "ServiceMonitor"})


def overlay(c: controlplane.ControlPlane, config_dir: pathlib.Path) -> str:
    """``kustomize build config/default``."""
    return subprocess.run(
        [c.bins["kustomize"], "build", str(config_dir / "default")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def apply(
    c: controlplane.ControlPlane, manifest: str, *, optional: bool = False, image: str | None = None
) -> None:
    """Apply the overlay (without its optional parts, unless ``optional``) and wait for the CRD.

    ``image`` replaces the manager's placeholder image, as ``kustomize edit set image`` would.
    """
    objects = [o for o in yaml.safe_load_all(manifest) if o and (optional or o["kind"] not in OPTIONAL_KINDS)]
    if image is not None:
        for o in objects:
            if o["kind"] == "Deployment" and o["metadata"]["name"] == DEPLOYMENT:
                for container in o["spec"]["template"]["spec"]["containers"]:
                    if container["name"] == "manager":
                        container["image"] = image
    first, later = phases(objects)
    c.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(first))
    for definition in (o for o in first if o["kind"] == "CustomResourceDefinition"):
        c.wait_established(name=definition["metadata"]["name"])
        # Established comes before the storage serves (429 "storage is (re)initializing").
        name = definition["metadata"]["name"]
        process.wait_until(
            f"{name} to be served",
            lambda name=name: c.kubectl("get", name, "-A", check=False).returncode == 0,
            timeout=60,
            interval=0.2,
        )
    # Each in an apply of its own, all at once: before the manager answers, the runtimes' webhook
    # (failurePolicy Ignore) may wait out its timeout for each (no kube-proxy routes to its Service
    # here), which eleven in one apply would add up past kubectl's minute.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(later))) as pool:
        done = [
            pool.submit(c.kubectl, "apply", "--server-side", "-f", "-", input=yaml.safe_dump(obj))
            for obj in later
        ]
        for future in done:
            future.result()


def phases(objects: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``objects`` in two applies: objects of a kind the overlay itself defines (the shipped
    runtimes) go second, once their CRDs are established — in one apply, kubectl would not yet
    know their kinds."""
    defined = {o["spec"]["names"]["kind"] for o in objects if o["kind"] == "CustomResourceDefinition"}
    return [o for o in objects if o["kind"] not in defined], [o for o in objects if o["kind"] in defined]


def point_webhooks_at(c: controlplane.ControlPlane, base: str) -> None:
    """Send the apiserver's webhook calls to ``base`` (``https://127.0.0.1:<port>``)."""
    url = f"{base}{webhook_endpoints.CONVERT_PATH}"
    crd_patch = {"spec": {"conversion": {"webhook": {"clientConfig": {"service": None, "url": url}}}}}
    c.kubectl("patch", "crd", crd.NAME, "--type=merge", "-p", json.dumps(crd_patch))
    _patch_webhooks(
        c,
        lambda i, w: (
            [
                {
                    "op": "replace",
                    "path": f"/webhooks/{i}/clientConfig",
                    "value": {"url": f"{base}{w['clientConfig']['service']['path']}"},
                }
            ]
            if "service" in w["clientConfig"]
            else []
        ),
    )


def _patch_webhooks(
    c: controlplane.ControlPlane, ops_for: Callable[[int, dict[str, Any]], list[dict[str, Any]]]
) -> None:
    """A JSON patch of each webhook configuration: ``ops_for(index, webhook)`` for each webhook."""
    for kind, name in (
        ("validatingwebhookconfiguration", webhook_endpoints.CONFIGURATION_NAME),
        ("mutatingwebhookconfiguration", webhook_endpoints.MUTATING_CONFIGURATION_NAME),
    ):
        config = json.loads(c.kubectl("get", kind, name, "-o", "json").stdout)
        ops = [op for i, w in enumerate(config["webhooks"]) for op in ops_for(i, w)]
        if ops:
            c.kubectl("patch", kind, name, "--type=json", "-p", json.dumps(ops))


def service_account_kubeconfig(c: controlplane.ControlPlane, path: pathlib.Path) -> pathlib.Path:
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


def issue_serving_certificate(c: controlplane.ControlPlane) -> None:
    """cert-manager's part: the webhook Service's certificate in its Secret, and the CA injected."""
    ca = pki.new_ca("kubetrain-webhook-ca")
    service = f"{webhook_endpoints.SERVICE}.{NAMESPACE}.svc"
    serving = pki.issue(ca, "kubetrain-webhook", hosts=(service, f"{service}.cluster.local"), server=True)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": SERVING_SECRET, "namespace": NAMESPACE},
        "data": {
            "tls.crt": base64.b64encode(serving.cert_pem).decode(),
            "tls.key": base64.b64encode(serving.key_pem).decode(),
            "ca.crt": base64.b64encode(ca.cert_pem).decode(),
        },
    }
    c.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(secret))
    bundle = base64.b64encode(ca.cert_pem).decode()
    crd_patch = {"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": bundle}}}}}
    c.kubectl("patch", "crd", crd.NAME, "--type=merge", "-p", json.dumps(crd_patch))
    _patch_webhooks(
        c, lambda i, _w: [{"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle}]
    )


def in_cluster(
    c: controlplane.ControlPlane, config_dir: pathlib.Path, image: str, timeout: float = 180
) -> None:
    """``config/default`` with the manager as pods of its Deployment, from ``image``; wait until available."""
    apply(c, overlay(c, config_dir), image=image)
    issue_serving_certificate(c)
    process.wait_until(
        f"deployment/{DEPLOYMENT} to be available",
        lambda: _available(c),
        timeout=timeout,
        interval=1,
    )
    wait_defaults_given(c)


def roll(c: controlplane.ControlPlane, config_dir: pathlib.Path, image: str, timeout: float = 180) -> None:
    """Roll the deployed operator to ``config_dir``'s ``config/default`` and ``image``, as
    docs/deploy.md's "Upgrading" says: the CRDs applied first (and established), then the whole
    overlay with the new image; until every replica of the Deployment runs ``image`` and no other
    is left. The serving certificate and the CA injected stay: the overlay does not own them."""
    manifest = overlay(c, config_dir)
    definitions = [o for o in yaml.safe_load_all(manifest) if o and o["kind"] == "CustomResourceDefinition"]
    c.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(definitions))
    for definition in definitions:
        c.wait_established(name=definition["metadata"]["name"])
    apply(c, manifest, image=image)
    process.wait_until(
        f"deployment/{DEPLOYMENT} to run {image} only",
        lambda: _rolled(c, image),
        timeout=timeout,
        interval=1,
    )


def _rolled(c: controlplane.ControlPlane, image: str) -> bool:
    deployment = json.loads(c.kubectl("get", "deployment", DEPLOYMENT, "-n", NAMESPACE, "-o", "json").stdout)
    (container,) = (x for x in deployment["spec"]["template"]["spec"]["containers"] if x["name"] == "manager")
    status = deployment.get("status", {})
    wanted = deployment["spec"].get("replicas", 1)
    return bool(
        container["image"] == image
        and status.get("observedGeneration") == deployment["metadata"]["generation"]
        and status.get("replicas") == status.get("updatedReplicas") == wanted
        and status.get("availableReplicas", 0) >= wanted
    )


def _available(c: controlplane.ControlPlane) -> bool:
    deployment = json.loads(c.kubectl("get", "deployment", DEPLOYMENT, "-n", NAMESPACE, "-o", "json").stdout)
    status = deployment.get("status", {})
    wanted = deployment["spec"].get("replicas", 1)
    return bool(status.get("availableReplicas", 0) >= wanted and status.get("updatedReplicas", 0) >= wanted)


def wait_defaults_given(c: controlplane.ControlPlane, timeout: float = 60) -> None:
    """Until a job created now is given ``config/defaults``' host names (a server-side dry run)."""
    probe = {
        "apiVersion": v1beta1.API_VERSION,
        "kind": v1beta1.KIND,
        "metadata": {"name": "defaults-probe", "namespace": "default"},
        "spec": {
            "framework": {"name": "pytorch"},
            "replicaSpecs": {
                "Master": {"template": {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}}
            },
        },
    }
    given = v1beta1.trainingjob_defaults.HOST_NAMES.value

    def ready() -> bool:
        r = c.kubectl(
            "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(probe), check=False
        )
        return r.returncode == 0 and json.loads(r.stdout)["spec"].get("network", {}).get("hostNames") == given

    process.wait_until("new jobs to be given config/defaults", ready, timeout=timeout, interval=0.5)
