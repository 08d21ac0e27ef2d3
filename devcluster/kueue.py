"""Kueue on a local cluster: the release ``hack/build-schedulers.sh`` builds, run as a local process.

Kueue is a controller manager like any other, so it runs here as one more component of the
cluster (:func:`controlplane.component`), with the admin kubeconfig (controller-runtime's
``--kubeconfig``) and a configuration file written into the cluster's working directory.
:func:`start` does, in order, what Kueue's kustomize deployment and cert-manager would:

- it applies Kueue's CRDs (server-side: they are too large for a client-side apply's
  annotation) and waits until every one is Established;
- it issues Kueue a serving certificate for 127.0.0.1 from a CA of its own
  (:mod:`kubetrain.operator.pki`), since Kueue's own certificate management
  (``internalCertManagement``) makes certificates for its Service's DNS name and expects a
  kubelet to mount them, and there is neither Service nor kubelet here;
- it applies Kueue's webhook configurations, renamed ``kueue-...`` (the prefix its
  kustomization gives them), with ``clientConfig.url: https://127.0.0.1:<port>/<path>`` and
  the CA bundle instead of a Service, and keeps only the webhooks for Kueue's own kinds and
  for pods — the only integration enabled is ``pod`` (Kueue's plain-pod groups, what
  kubetrain's ``--kueue=pods`` route uses; its default route makes Workloads of its own, which
  need no integration), and the webhooks of disabled integrations would only answer "nothing
  to do";
- it starts Kueue and waits until its webhooks answer: its readiness probe (webhook server
  listening), then a server-side dry-run create of a ClusterQueue, which goes through
  Kueue's mutating and validating webhooks.

For MultiKueue, a manager's Kueue is started with the custom kinds it dispatches
(``multiKueue.externalFrameworks``), and :func:`add_worker` gives it a worker cluster — the
worker's own kubeconfig (certificates inline, the apiserver at 127.0.0.1) in a Secret of Kueue's
namespace, and a MultiKueueCluster naming it; the worker runs a Kueue of its own.

The cluster is shared by every test of a session, so Kueue touches only pods in namespaces
labelled ``<namespace_label>=true`` (:func:`manage`): its ``managedJobsNamespaceSelector``
says so, and the pod webhooks carry the same ``namespaceSelector``, so no other pod is ever
sent to Kueue — not even while it is stopped. Nothing listens beyond 127.0.0.1: the webhook
server is bound there, the health probes too, and metrics and the visibility API server
(``VisibilityOnDemand``, on 0.0.0.0:8082 by default) are off.

One wrinkle: without its own certificate management, Kueue's binary reads its metrics
certificate from a fixed path, ``/etc/kueue/metrics/certs/tls.{crt,key}``, and exits if it
is missing — even with metrics off. Rather than write into the host's ``/etc``, Kueue runs in
a mount namespace of its own (``unshare --mount``) where ``/etc`` is a directory of the
working directory holding just that certificate. Kueue reads nothing else there: it talks to
the apiserver by IP, with the CA from the kubeconfig.

:func:`stop` undoes it all, for a test module that is done with Kueue: it stops the process,
deletes the webhook configurations (their ``failurePolicy`` is ``Fail``: left behind, they
would refuse every create of a Kueue object and of a pod in a labelled namespace), and takes
Kueue's finalizers off what is left of its objects and of the pods it managed, so that
namespaces and cluster-scoped objects can still be deleted. The CRDs stay, as the
TrainingJob CRD does.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import urllib.request
from typing import Any

import yaml

from kubetrain.devcluster import binaries, controlplane, process
from kubetrain.operator import pki

__all__ = [
    "API_VERSION",
    "GROUP",
    "NAMESPACE_LABEL",
    "WEBHOOK_CONFIGURATIONS",
    "add_worker",
    "manage",
    "start",
    "stop",
]

GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"
# Namespaces whose pods Kueue manages carry this label, set to "true".
NAMESPACE_LABEL = "kubetrain.dev/kueue"
CONFIGURATION_PREFIX = "kueue-"
WEBHOOK_CONFIGURATIONS = {
    "MutatingWebhookConfiguration": f"{CONFIGURATION_PREFIX}mutating-webhook-configuration",
    "ValidatingWebhookConfiguration": f"{CONFIGURATION_PREFIX}validating-webhook-configuration",
}
# Kueue's own namespace (where it would run; nothing is created there out of cluster).
KUEUE_NAMESPACE = "kueue-system"
# Where Kueue reads its metrics certificate when it does not manage certificates itself.
METRICS_CERTS = pathlib.PurePosixPath("kueue/metrics/certs")  # under /etc
# The finalizers Kueue puts on pods (``kueue.x-k8s.io/managed``) and on its own objects.
FINALIZER_PREFIX = f"{GROUP}/"
# Kueue kinds whose objects carry Kueue's finalizers.
KINDS_WITH_FINALIZERS = (
    "workloads",
    "localqueues",
    "clusterqueues",
    "resourceflavors",
    "cohorts",
    "admissionchecks",
)


def start(
    c: controlplane.ControlPlane,
    timeout: float = 90,
    *,
    namespace_label: str = NAMESPACE_LABEL,
    multikueue_kinds: tuple[str, ...] = (),
) -> process.Process:
    """Install and start Kueue (pod integration, namespaces labelled ``namespace_label=true``);
    ``multikueue_kinds`` (``Kind.version.group``) are the custom kinds MultiKueue dispatches."""
    # Raises BinariesNotFoundError naming hack/build-schedulers.sh if Kueue was not built.
    kueue = binaries.find(("kueue",))["kueue"]
    crds = binaries.manifest("kueue/crd")
    webhooks = binaries.manifest("kueue/webhooks.yaml")
    install_crds(c, crds, timeout)

    home = c.workdir / "kueue"
    etc = home / "etc"
    cert_dir = home / "serving-certs"
    ca = pki.new_ca("kueue-webhook-ca")
    serving = pki.issue(ca, "kueue-webhook", hosts=("127.0.0.1",), server=True)
    for d in (cert_dir, etc / METRICS_CERTS):
        d.mkdir(parents=True, exist_ok=True)
        (d / "tls.crt").write_bytes(serving.cert_pem)
        (d / "tls.key").write_bytes(serving.key_pem)
        (d / "tls.key").chmod(0o600)

    port = process.free_port()
    probes = process.free_port()
    config = home / "config.yaml"
    config.write_text(
        yaml.safe_dump(configuration(port, probes, cert_dir, namespace_label, multikueue_kinds))
    )
    apply_webhooks(
        c, webhooks, base=f"https://127.0.0.1:{port}", ca=ca.cert_pem, namespace_label=namespace_label
    )

    argv = [kueue, f"--config={config}", f"--kubeconfig={c.kubeconfig}"]
    proc = controlplane.component(c, "kueue", _with_own_etc(etc, argv))
    try:
        process.wait_until(
            "Kueue to be ready (its webhook server listening)",
            lambda: _ready(probes),
            timeout=timeout,
            watch=[proc],
            interval=0.3,
        )
        process.wait_until(
            "Kueue's webhooks to answer (a dry-run create of a ClusterQueue)",
            lambda: _webhooks_answer(c),
            timeout=timeout,
            watch=[proc],
            interval=0.3,
        )
    except BaseException:
        stop(c, proc)
        raise
    return proc


def manage(c: controlplane.ControlPlane, namespace: str, *, namespace_label: str = NAMESPACE_LABEL) -> None:
    """Let Kueue manage the pods of ``namespace`` (those with a queue label)."""
    c.kubectl("label", "namespace", namespace, "--overwrite", f"{namespace_label}=true")


def stop(c: controlplane.ControlPlane, proc: process.Process) -> None:
    """Stop Kueue, delete its webhook configurations and release what its finalizers hold."""
    try:
        proc.stop()
        if proc in c.processes:
            c.processes.remove(proc)
    finally:
        for kind, name in WEBHOOK_CONFIGURATIONS.items():
            c.kubectl("delete", kind.lower(), name, "--ignore-not-found", check=False)
        _drop_finalizers(c)


def configuration(
    port: int,
    probes: int,
    cert_dir: pathlib.Path,
    namespace_label: str,
    multikueue_kinds: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) for a local process."""
    managed = {"matchLabels": {namespace_label: "true"}}
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{probes}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "managedJobsNamespaceSelector": managed,
        "integrations": {"frameworks": ["pod"]},
        # The visibility API server listens on 0.0.0.0:8082 and wants an APIService: not here.
        "featureGates": {"VisibilityOnDemand": False},
        "clientConnection": {"qps": 50, "burst": 100},
    }
    if multikueue_kinds:
        # MultiKueue's generic adapter (gate MultiKueueAdaptersForCustomJobs, on since 0.15).
        config["multiKueue"] = {"externalFrameworks": [{"name": k} for k in multikueue_kinds]}
    return config


def add_worker(manager: controlplane.ControlPlane, worker: controlplane.ControlPlane, name: str) -> None:
    """Make ``worker`` a MultiKueue worker cluster of ``manager``'s Kueue, as ``name``: its
    kubeconfig in a Secret of Kueue's namespace, and a MultiKueueCluster reading it."""
    manager.kubectl("create", "namespace", KUEUE_NAMESPACE, check=False)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{name}-kubeconfig", "namespace": KUEUE_NAMESPACE},
        "data": {"kubeconfig": base64.b64encode(pathlib.Path(worker.kubeconfig).read_bytes()).decode()},
    }
    cluster = {
        "apiVersion": API_VERSION,
        "kind": "MultiKueueCluster",
        "metadata": {"name": name},
        "spec": {
            "clusterSource": {"kubeConfig": {"locationType": "Secret", "location": f"{name}-kubeconfig"}}
        },
    }
    manager.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", input=yaml.safe_dump_all([secret, cluster])
    )


def install_crds(c: controlplane.ControlPlane, crd_dir: pathlib.Path, timeout: float) -> None:
    """Apply Kueue's CRDs server-side and wait until each is Established."""
    files = sorted(crd_dir.glob("*.yaml"))
    if not files:
        raise binaries.BinariesNotFoundError(f"no CRDs in {crd_dir}: run `hack/build-schedulers.sh`")
    manifest = "\n---\n".join(f.read_text() for f in files)
    c.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=manifest)
    names = [yaml.safe_load(f.read_text())["metadata"]["name"] for f in files]
    for name in names:
        c.wait_established(timeout, name)


def webhook_configurations(
    manifest: str, *, base: str, ca: bytes, namespace_label: str
) -> list[dict[str, Any]]:
    """Kueue's webhook configurations, pointed at ``base`` and limited to Kueue's kinds and pods."""
    bundle = base64.b64encode(ca).decode()
    out = []
    for doc in yaml.safe_load_all(manifest):
        if not doc:
            continue
        doc["metadata"] = {"name": WEBHOOK_CONFIGURATIONS[doc["kind"]]}
        kept = []
        for w in doc["webhooks"]:
            groups = {g for r in w["rules"] for g in r["apiGroups"]}
            resources = {res for r in w["rules"] for res in r["resources"]}
            pods = groups == {""} and resources == {"pods"}
            if groups != {GROUP} and not pods:
                continue
            w["clientConfig"] = {"url": f"{base}{w['clientConfig']['service']['path']}", "caBundle": bundle}
            if pods:
                w["namespaceSelector"] = {"matchLabels": {namespace_label: "true"}}
            kept.append(w)
        doc["webhooks"] = kept
        out.append(doc)
    return out


def apply_webhooks(
    c: controlplane.ControlPlane, path: pathlib.Path, *, base: str, ca: bytes, namespace_label: str
) -> None:
    docs = webhook_configurations(path.read_text(), base=base, ca=ca, namespace_label=namespace_label)
    c.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=yaml.safe_dump_all(docs))


def _with_own_etc(etc: pathlib.Path, argv: list[str]) -> list[str]:
    """``argv`` in a private mount namespace whose ``/etc`` is ``etc`` (see the module's docstring).

    ``unshare`` and ``sh`` exec, so the process is Kueue itself; without root, a user namespace
    maps the user to root in it, which is enough for a bind mount.
    """
    user = [] if os.geteuid() == 0 else ["--map-root-user"]
    return [
        "unshare",
        *user,
        "--mount",
        "--propagation=private",
        "--",
        "sh",
        "-c",
        'mount --bind "$0" /etc && exec "$@"',
        str(etc),
        *argv,
    ]


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def _webhooks_answer(c: controlplane.ControlPlane) -> bool:
    probe = {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": "kubetrain-webhook-probe"},
        "spec": {"namespaceSelector": {}},
    }
    r = c.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe), check=False)
    return r.returncode == 0


def _drop_finalizers(c: controlplane.ControlPlane) -> None:
    """Take Kueue's finalizers off its objects and off pods: nothing will remove them now."""
    kinds = [f"{k}.{GROUP}" for k in KINDS_WITH_FINALIZERS] + ["pods"]
    for kind in kinds:
        r = c.kubectl("get", kind, "--all-namespaces", "-o", "json", check=False)
        if r.returncode != 0:
            continue
        for obj in json.loads(r.stdout)["items"]:
            meta = obj["metadata"]
            finalizers = meta.get("finalizers") or []
            kept = [f for f in finalizers if not f.startswith(FINALIZER_PREFIX)]
            if kept == finalizers:
                continue
            patch = [
                {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
                {"op": "replace", "path": "/metadata/finalizers", "value": kept},
            ]
            where = ["-n", meta["namespace"]] if meta.get("namespace") else []
            c.kubectl(
                "patch", kind, meta["name"], *where, "--type=json", "-p", json.dumps(patch), check=False
            )
