"""The control plane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler.

Each listens on a free port of one host address only — 127.0.0.1, or the host's end of a
node network when real nodes need to reach it — keeps its state in the cluster's working
directory, and is waited for until healthy. :func:`write_pki` makes the CA, the serving and
client certificates and an admin kubeconfig (a client certificate in ``system:masters``).
A :class:`~process.Supervisor` restarts a component that exits (kube-scheduler does, after an
apiserver restart, on "Scheduler cache is corrupted"). Nodes — kwok's or real ones — are
:mod:`.cluster`'s business.
"""

from __future__ import annotations

import base64
import functools
import json
import pathlib
import shutil
import ssl
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import yaml

from kubetrain.api import crd, v1alpha1, v1beta1
from kubetrain.devcluster import binaries as binaries_
from kubetrain.devcluster import process
from kubetrain.operator import pki

__all__ = ["ControlPlane", "KubectlError"]

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
    # ResourceQuota admission counts against what this controller writes in the quota's status.
    "resourcequota-controller",
    # Removes a PodGroup's finalizer once its pods are gone; without it namespaces never finish deleting.
    "podgroup-protection-controller",
    # Scales an elastic TrainingJob through its scale subresource.
    "horizontal-pod-autoscaler-controller",
)
# Native gang scheduling (Workload and PodGroup), on every component: scheduling.k8s.io/v1alpha2
# behind two gates up to 1.36; from 1.37, v1beta1 behind GenericWorkload alone (GangScheduling is
# gone, and v1alpha2 with it: naming either stops the apiserver).
FEATURE_GATES = "--feature-gates=GenericWorkload=true,GangScheduling=true"
FEATURE_GATES_137 = "--feature-gates=GenericWorkload=true"


def gang_flags(minor: int) -> tuple[str, str]:
    """The feature gates every component gets, and the apiserver's runtime config, for 1.``minor``."""
    if minor >= 37:
        return FEATURE_GATES_137, "--runtime-config=scheduling.k8s.io/v1beta1=true"
    return FEATURE_GATES, "--runtime-config=scheduling.k8s.io/v1alpha2=true"


# What real nodes add: Services' endpoints for CoreDNS and kube-proxy, and Deployments.
REAL_NODE_CONTROLLERS = (
    "endpointslice-controller",
    "deployment-controller",
    "replicaset-controller",
)
NEVER = "87600h"


class KubectlError(RuntimeError):
    pass


@attrs.define
class ControlPlane:
    workdir: pathlib.Path
    bins: binaries_.Binaries
    # The one address every component listens on.
    host: str = "127.0.0.1"
    server: str = ""
    etcd_url: str = ""
    apiserver_args: tuple[str, ...] = ()
    scheduler_args: tuple[str, ...] = ()
    processes: list[process.Process] = attrs.field(factory=list)
    _owns_workdir: bool = True
    _apiserver_ready: Callable[[], bool] | None = None
    _admin: ssl.SSLContext | None = None  # the admin's client certificate, for :meth:`get`
    _supervisor: process.Supervisor | None = None

    @property
    def kubeconfig(self) -> pathlib.Path:
        return self.workdir / "admin.kubeconfig"

    @functools.cached_property
    def minor(self) -> int:
        """Kubernetes' minor version, as the kube-apiserver found says (``Kubernetes v1.36.3``)."""
        out = subprocess.run(
            [self.bins["kube-apiserver"], "--version"], capture_output=True, text=True, check=True
        )
        return int(out.stdout.split()[-1].lstrip("v").split(".")[1])

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

    def get(self, path: str, query: Mapping[str, str] | None = None, *, check: bool = True) -> Any:
        """The API's answer to a GET of ``path`` as admin (what ``kubectl get -o json`` prints, a list's
        items without their kind), without a process per call: the tiers poll jobs and pods many
        times a second, and a kubectl costs 60 ms of CPU each. Any failure, a 404 too, raises
        :class:`KubectlError` with ``check``, and is None without."""
        assert self._admin is not None, "kube-apiserver is not started"
        url = f"{self.server}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=60, context=self._admin) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            error = f"GET {path}: {e.code} {e.read().decode(errors='replace').strip()}"
        except (OSError, ValueError) as e:  # refused, reset, timed out, cut short
            error = f"GET {path}: {e}"
        if check:
            raise KubectlError(error)
        return None

    def trainingjob(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The TrainingJob ``name`` (v1beta1), or None: gone, or the apiserver not answering."""
        job: dict[str, Any] | None = self.get(
            f"/apis/{v1beta1.API_VERSION}/namespaces/{namespace}/trainingjobs/{name}", check=False
        )
        return job

    def wait_established(self, timeout: float = 60, name: str = crd.NAME) -> None:
        """Until the CRD ``name`` (the TrainingJob's, unless given) is Established.

        Not ``kubectl wait``: right after a create the CRD has no conditions yet, and
        ``kubectl wait`` fails on that ("accessor error") instead of waiting.
        """
        query = '{.status.conditions[?(@.type=="Established")].status}'
        process.wait_until(
            f"the CRD {name} to be Established",
            lambda: self.kubectl("get", "crd", name, "-o", f"jsonpath={query}", check=False).stdout == "True",
            timeout=timeout,
            interval=0.2,
        )

    def install_crds(self, config_dir: pathlib.Path, timeout: float = 60) -> None:
        """Apply ``config_dir/crd/bases`` (kustomize build | kubectl apply): the TrainingJob's CRD
        and the runtimes'; wait until they are Established and TrainingJobs are served.

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
        for definition in (crd.NAME, *crd.runtime_names()):
            self.wait_established(timeout, definition)
        for version in (v1beta1.VERSION, v1alpha1.VERSION):
            path = f"/apis/{v1beta1.GROUP}/{version}/{v1beta1.PLURAL}?watch=1&timeoutSeconds=1"
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

    def supervise(self) -> None:
        """From now on, restart what exits (see :class:`process.Supervisor`)."""
        self._supervisor = process.Supervisor(self.processes, self.workdir / "logs" / "supervisor.log")
        self._supervisor.start()

    def stop(self) -> None:
        self.stop_processes()
        self.remove_workdir()

    def stop_processes(self) -> None:
        if self._supervisor is not None:
            self._supervisor.pause()
        for p in reversed(self.processes):
            p.stop()
        if self._supervisor is not None:
            self._supervisor.stop()
        self.processes.clear()

    def remove_workdir(self) -> None:
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def write_pki(wd: pathlib.Path, host: str) -> dict[str, pathlib.Path]:
    ca = pki.new_ca("kubetrain-local-ca")
    serving = pki.issue(
        ca,
        "kube-apiserver",
        server=True,
        hosts=(
            host,
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
    # The apiserver's identity towards kubelets (logs, exec); kubelets trust the same CA.
    kubelet_client = pki.issue(
        ca, "kube-apiserver-kubelet-client", organizations=("system:masters",), client=True
    )
    sa_key, sa_pub = pki.signing_key()
    files = {
        "ca.crt": ca.cert_pem,
        "ca.key": ca.key_pem,
        "apiserver.crt": serving.cert_pem,
        "apiserver.key": serving.key_pem,
        "admin.crt": admin.cert_pem,
        "admin.key": admin.key_pem,
        "kubelet-client.crt": kubelet_client.cert_pem,
        "kubelet-client.key": kubelet_client.key_pem,
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


def start_etcd(c: ControlPlane, timeout: float) -> str:
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


def start_apiserver(c: ControlPlane, etcd_url: str, certs: dict[str, pathlib.Path], timeout: float) -> None:
    port = process.free_port(c.host)
    c.server = f"https://{c.host}:{port}"
    apiserver = process.Process(
        "kube-apiserver",
        [
            c.bins["kube-apiserver"],
            f"--etcd-servers={etcd_url}",
            f"--secure-port={port}",
            f"--bind-address={c.host}",
            f"--advertise-address={c.host}",
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
            *gang_flags(c.minor),
            # 1.37 refuses a loopback advertise address for the `kubernetes` Service's endpoints;
            # nothing on kwok nodes reads them (real nodes listen on the node network's address).
            *(["--endpoint-reconciler-type=none"] if c.minor >= 37 and c.host.startswith("127.") else []),
            f"--kubelet-client-certificate={certs['kubelet-client.crt']}",
            f"--kubelet-client-key={certs['kubelet-client.key']}",
            "--kubelet-preferred-address-types=InternalIP",
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

    c._apiserver_ready, c._admin = ready, context
    process.wait_until("kube-apiserver to be ready", ready, timeout=timeout, watch=[apiserver])


def _write_kubeconfig(c: ControlPlane, certs: dict[str, pathlib.Path]) -> None:
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


def component(c: ControlPlane, name: str, argv: Sequence[str]) -> process.Process:
    p = process.Process(name, argv, c.workdir / "logs" / f"{name}.log")
    p.start()
    c.processes.append(p)
    return p


def start_controller_manager(
    c: ControlPlane,
    certs: dict[str, pathlib.Path],
    timeout: float,
    *,
    controllers: Sequence[str] = CONTROLLERS,
    node_grace: str = NEVER,
) -> None:
    """``node_grace``: how long a node may go without a heartbeat before it is NotReady."""
    kcm = component(
        c,
        "kube-controller-manager",
        [
            c.bins["kube-controller-manager"],
            f"--kubeconfig={c.kubeconfig}",
            f"--authentication-kubeconfig={c.kubeconfig}",
            f"--authorization-kubeconfig={c.kubeconfig}",
            f"--controllers={','.join(controllers)}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={process.free_port()}",
            f"--service-account-private-key-file={certs['sa.key']}",
            f"--root-ca-file={certs['ca.crt']}",
            "--use-service-account-credentials=false",
            "--concurrent-gc-syncs=5",
            # An HPA acts within seconds, not the default 15 s, so tests of it stay short.
            "--horizontal-pod-autoscaler-sync-period=2s",
            gang_flags(c.minor)[0],
            f"--node-monitor-grace-period={node_grace}",
            f"--node-startup-grace-period={NEVER if node_grace == NEVER else '60s'}",
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


def start_scheduler(c: ControlPlane, timeout: float) -> None:
    port = process.free_port()
    scheduler = component(
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
            gang_flags(c.minor)[0],
            "--v=1",
            *c.scheduler_args,
        ],
    )
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE

    def healthy() -> bool:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=2, context=insecure) as r:
            return bool(r.status == 200)

    process.wait_until("kube-scheduler to be healthy", healthy, timeout=timeout, watch=[scheduler])
