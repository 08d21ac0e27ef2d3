"""Start and stop a local control plane in one of two tiers.

``start(Tier.APISERVER)`` runs etcd and kube-apiserver, as envtest does. ``start(Tier.CLUSTER)``
adds kube-controller-manager, kube-scheduler and kwok with ``nodes`` fake nodes. Both
listen on free ports of 127.0.0.1 only, keep their state in a temporary directory, wait
until they are healthy before returning, and write an admin kubeconfig (a client
certificate in ``system:masters``). ``Cluster.stop()`` — or leaving the ``with`` block —
stops every process and removes the directory.
"""

from __future__ import annotations

import base64
import enum
import json
import pathlib
import shutil
import ssl
import subprocess
import tempfile
import urllib.request
from collections.abc import Callable, Sequence

import attrs
import yaml

from kubetrain.api import crd
from kubetrain.operator.devcluster import binaries as binaries_
from kubetrain.operator.devcluster import kwok, pki, process

__all__ = ["Cluster", "KubectlError", "Tier", "start"]

SERVICE_CIDR = "10.0.0.0/24"
# Controllers the tests rely on. node-lifecycle must run because taint eviction uses the pod
# index it registers; its grace periods are made so long that heartbeat-less kwok nodes never
# go NotReady.
CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "node-lifecycle-controller",
    "taint-eviction-controller",
    "pod-garbage-collector-controller",
    "root-ca-certificate-publisher-controller",
)
NEVER = "87600h"


class KubectlError(RuntimeError):
    pass


class Tier(enum.StrEnum):
    APISERVER = "apiserver"
    CLUSTER = "cluster"


@attrs.define
class Cluster:
    tier: Tier
    workdir: pathlib.Path
    bins: binaries_.Binaries
    nodes: int
    server: str = ""
    etcd_url: str = ""
    apiserver_args: tuple[str, ...] = ()
    processes: list[process.Process] = attrs.field(factory=list)
    _owns_workdir: bool = True
    _apiserver_ready: Callable[[], bool] | None = None

    @property
    def kubeconfig(self) -> pathlib.Path:
        return self.workdir / "admin.kubeconfig"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes if p.pid is not None]

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl as admin; with ``check``, a failure raises with kubectl's own message."""
        result = subprocess.run(
            [self.bins["kubectl"], f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True,
            text=True,
            input=input,
            timeout=60,
            check=False,
        )
        if check and result.returncode != 0:
            raise KubectlError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result

    def install_crds(self, config_dir: pathlib.Path, timeout: float = 60) -> None:
        """Apply ``config_dir/crd/bases`` (kustomize build | kubectl apply), and wait until served.

        That is the CRD without webhook conversion, for clusters where no webhook serves;
        ``config/default`` deploys it with the webhook.

        ``Established`` comes before the storage and the watch cache are ready (the apiserver
        answers 503 and 429 until then), so this waits until a watch works on every version.
        """
        manifest = subprocess.run(
            [self.bins["kustomize"], "build", str(config_dir / "crd" / "bases")],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        self.kubectl("apply", "--server-side", "-f", "-", input=manifest)
        self.kubectl(
            "wait",
            "--for=condition=Established",
            f"--timeout={timeout:.0f}s",
            f"crd/{crd.NAME}",
        )
        for version in ("v1beta1", "v1alpha1"):
            path = f"/apis/training.kubetrain.dev/{version}/trainingjobs?watch=1&timeoutSeconds=1"
            process.wait_until(
                f"TrainingJob {version} to serve watches",
                lambda path=path: self.kubectl("get", "--raw", path, check=False).returncode == 0,
                timeout=timeout,
                interval=0.2,
            )

    def restart_apiserver(self, timeout: float = 60) -> None:
        """Stop kube-apiserver and start it again on the same port, state kept in etcd."""
        apiserver = next(p for p in self.processes if p.name == "kube-apiserver")
        apiserver.stop()
        apiserver.start()
        assert self._apiserver_ready is not None
        process.wait_until(
            "kube-apiserver to be ready again", self._apiserver_ready, timeout=timeout, watch=[apiserver]
        )

    def compact_etcd(self) -> int:
        """Compact etcd up to its current revision (as the apiserver does every 5 minutes)."""

        def post(path: str, body: dict[str, object]) -> dict[str, object]:
            request = urllib.request.Request(
                f"{self.etcd_url}{path}",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as r:
                return dict(json.load(r))

        header = post("/v3/maintenance/status", {})["header"]
        assert isinstance(header, dict)
        revision = int(header["revision"])
        post("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def stop(self) -> None:
        for p in reversed(self.processes):
            p.stop()
        self.processes.clear()
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def start(
    tier: Tier = Tier.CLUSTER,
    *,
    nodes: int = 2,
    workdir: pathlib.Path | None = None,
    bins: binaries_.Binaries | None = None,
    timeout: float = 90,
    apiserver_args: tuple[str, ...] = (),
) -> Cluster:
    """Start a control plane; on any failure, stop what was started and raise StartError."""
    owns = workdir is None
    wd = pathlib.Path(tempfile.mkdtemp(prefix="kubetrain-cp-")) if workdir is None else workdir
    wd.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(
        tier=tier,
        workdir=wd,
        bins=bins or binaries_.find(),
        nodes=nodes,
        owns_workdir=owns,
        apiserver_args=apiserver_args,
    )
    try:
        _start(cluster, timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start(c: Cluster, timeout: float) -> None:
    certs = _write_pki(c.workdir)
    etcd_url = _start_etcd(c, timeout)
    _start_apiserver(c, etcd_url, certs, timeout)
    if c.tier is Tier.CLUSTER:
        _start_controller_manager(c, certs, timeout)
        _start_scheduler(c, timeout)
        kwok.start(c, timeout)


def _write_pki(wd: pathlib.Path) -> dict[str, pathlib.Path]:
    ca = pki.new_ca("kubetrain-local-ca")
    serving = pki.issue(
        ca,
        "kube-apiserver",
        server=True,
        hosts=(
            "127.0.0.1",
            "localhost",
            "10.0.0.1",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ),
    )
    admin = pki.issue(ca, "kubetrain-admin", organizations=("system:masters",), client=True)
    sa_key, sa_pub = pki.signing_key()
    files = {
        "ca.crt": ca.cert_pem,
        "ca.key": ca.key_pem,
        "apiserver.crt": serving.cert_pem,
        "apiserver.key": serving.key_pem,
        "admin.crt": admin.cert_pem,
        "admin.key": admin.key_pem,
        "sa.key": sa_key,
        "sa.pub": sa_pub,
    }
    pki_dir = wd / "pki"
    pki_dir.mkdir(exist_ok=True)
    paths = {}
    for name, data in files.items():
        path = pki_dir / name
        path.write_bytes(data)
        path.chmod(0o600)
        paths[name] = path
    return paths


def _start_etcd(c: Cluster, timeout: float) -> str:
    client, peer = process.free_port(), process.free_port()
    url = f"http://127.0.0.1:{client}"
    etcd = process.Process(
        "etcd",
        [
            c.bins["etcd"],
            "--name=kubetrain",
            f"--data-dir={c.workdir / 'etcd'}",
            f"--listen-client-urls={url}",
            f"--advertise-client-urls={url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=kubetrain=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
        c.workdir / "logs" / "etcd.log",
    )
    etcd.start()
    c.processes.append(etcd)

    def healthy() -> bool:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
            return bool(json.load(r).get("health") == "true")

    process.wait_until("etcd to be healthy", healthy, timeout=timeout, watch=[etcd])
    c.etcd_url = url
    return url


def _start_apiserver(c: Cluster, etcd_url: str, certs: dict[str, pathlib.Path], timeout: float) -> None:
    port = process.free_port()
    c.server = f"https://127.0.0.1:{port}"
    apiserver = process.Process(
        "kube-apiserver",
        [
            c.bins["kube-apiserver"],
            f"--etcd-servers={etcd_url}",
            f"--secure-port={port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--cert-dir={c.workdir / 'apiserver-certs'}",
            f"--tls-cert-file={certs['apiserver.crt']}",
            f"--tls-private-key-file={certs['apiserver.key']}",
            f"--client-ca-file={certs['ca.crt']}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={certs['sa.pub']}",
            f"--service-account-signing-key-file={certs['sa.key']}",
            "--api-audiences=https://kubernetes.default.svc.cluster.local",
            "--allow-privileged=true",
            # New nodes would wait for node-lifecycle to lift a not-ready taint; kwok nodes are ready at once.
            "--disable-admission-plugins=TaintNodesByCondition",
            "--enable-priority-and-fairness=false",
            "--v=1",
            *c.apiserver_args,
        ],
        c.workdir / "logs" / "kube-apiserver.log",
    )
    apiserver.start()
    c.processes.append(apiserver)
    _write_kubeconfig(c, certs)
    context = ssl.create_default_context(cafile=str(certs["ca.crt"]))
    context.load_cert_chain(str(certs["admin.crt"]), str(certs["admin.key"]))

    def ready() -> bool:
        with urllib.request.urlopen(f"{c.server}/readyz", timeout=2, context=context) as r:
            return bool(r.status == 200)

    c._apiserver_ready = ready
    process.wait_until("kube-apiserver to be ready", ready, timeout=timeout, watch=[apiserver])


def _write_kubeconfig(c: Cluster, certs: dict[str, pathlib.Path]) -> None:
    def b64(name: str) -> str:
        return base64.b64encode(certs[name].read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "kubetrain",
        "clusters": [
            {
                "name": "kubetrain",
                "cluster": {"server": c.server, "certificate-authority-data": b64("ca.crt")},
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {"client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")},
            }
        ],
        "contexts": [{"name": "kubetrain", "context": {"cluster": "kubetrain", "user": "admin"}}],
    }
    c.kubeconfig.write_text(yaml.safe_dump(config))
    c.kubeconfig.chmod(0o600)


def _component(c: Cluster, name: str, argv: Sequence[str]) -> process.Process:
    p = process.Process(name, argv, c.workdir / "logs" / f"{name}.log")
    p.start()
    c.processes.append(p)
    return p


def _start_controller_manager(c: Cluster, certs: dict[str, pathlib.Path], timeout: float) -> None:
    kcm = _component(
        c,
        "kube-controller-manager",
        [
            c.bins["kube-controller-manager"],
            f"--kubeconfig={c.kubeconfig}",
            f"--authentication-kubeconfig={c.kubeconfig}",
            f"--authorization-kubeconfig={c.kubeconfig}",
            f"--controllers={','.join(CONTROLLERS)}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={process.free_port()}",
            f"--service-account-private-key-file={certs['sa.key']}",
            f"--root-ca-file={certs['ca.crt']}",
            "--use-service-account-credentials=false",
            "--concurrent-gc-syncs=5",
            f"--node-monitor-grace-period={NEVER}",
            f"--node-startup-grace-period={NEVER}",
            "--v=1",
        ],
    )
    # The service-account controller is running once `default` has its ServiceAccount.
    process.wait_until(
        "kube-controller-manager to create default/default",
        lambda: c.kubectl("get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0,
        timeout=timeout,
        watch=[kcm],
        interval=0.5,
    )


def _start_scheduler(c: Cluster, timeout: float) -> None:
    port = process.free_port()
    scheduler = _component(
        c,
        "kube-scheduler",
        [
            c.bins["kube-scheduler"],
            f"--kubeconfig={c.kubeconfig}",
            f"--authentication-kubeconfig={c.kubeconfig}",
            f"--authorization-kubeconfig={c.kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--v=1",
        ],
    )
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE

    def healthy() -> bool:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=2, context=insecure) as r:
            return bool(r.status == 200)

    process.wait_until("kube-scheduler to be healthy", healthy, timeout=timeout, watch=[scheduler])
