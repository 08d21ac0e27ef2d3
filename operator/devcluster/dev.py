"""``kubetrain dev up|run|down|kubeconfig``: a local control plane for people.

``up`` runs in the foreground until Ctrl-C (or ``dev down`` from another shell), so its
processes can never be forgotten. The admin kubeconfig is copied to a stable path,
``$KUBETRAIN_CACHE/dev/kubeconfig``, printed by ``dev kubeconfig``. ``run`` does the
same and also installs the CRD from ``config/crd``, starts ``kubetrain-operator``
against the cluster, applies the given samples and shows them the way
``kubectl get tj -w`` does.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from kubetrain.operator.devcluster import binaries, cluster, deploy, process

__all__ = ["down", "kubeconfig_path", "state_dir", "up"]


def state_dir() -> pathlib.Path:
    return binaries.cache_dir() / "dev"


def kubeconfig_path() -> pathlib.Path:
    return state_dir() / "kubeconfig"


def _state_file() -> pathlib.Path:
    return state_dir() / "state.json"


def _running_pid() -> int | None:
    try:
        pid = int(json.loads(_state_file().read_text())["pid"])
    except (FileNotFoundError, ValueError, KeyError):
        return None
    return pid if process.pids_alive([pid]) else None


def up(
    tier: cluster.Tier,
    nodes: int,
    *,
    config_dir: pathlib.Path | None = None,
    samples: Sequence[pathlib.Path] = (),
) -> int:
    """Run a dev cluster in the foreground; with ``config_dir``, also the operator and samples."""
    pid = _running_pid()
    if pid is not None:
        print(
            f"error: a dev cluster is already up (pid {pid}); run `kubetrain dev down` first", file=sys.stderr
        )
        return 1
    # `dev down` sends SIGTERM: treat it as Ctrl-C, so the same clean stop runs.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    started = time.monotonic()
    c = cluster.start(tier, nodes=nodes)
    helpers: dict[str, subprocess.Popen[bytes]] = {}
    try:
        state_dir().mkdir(parents=True, exist_ok=True)
        shutil.copy(c.kubeconfig, kubeconfig_path())
        kubeconfig_path().chmod(0o600)
        _state_file().write_text(json.dumps({"pid": os.getpid(), "server": c.server, "tier": tier.value}))
        print(
            f"kubetrain dev cluster ({tier.value}, {nodes} node(s)) up in {time.monotonic() - started:.1f}s "
            f"at {c.server}"
        )
        print(f"export KUBECONFIG={kubeconfig_path()}")
        if config_dir is not None:
            helpers = _run_operator(c, config_dir, samples)
        print("Ctrl-C or `kubetrain dev down` stops it.", flush=True)
        while True:
            for p in c.processes:
                p.check_alive()
            for name, h in helpers.items():
                if h.poll() is not None:
                    raise process.StartError(f"{name} exited with status {h.returncode}")
            time.sleep(1)
    except KeyboardInterrupt:
        print("stopping", flush=True)
        return 0
    except process.StartError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        for h in helpers.values():
            h.terminate()
            h.wait(10)
        c.stop()
        _state_file().unlink(missing_ok=True)
        kubeconfig_path().unlink(missing_ok=True)


def operator_argv(c: cluster.Cluster, *flags: str) -> list[str]:
    """``kubetrain-operator`` for a local cluster, in this interpreter, with ``flags`` added."""
    return [
        sys.executable,
        "-P",
        "-m",
        "kubetrain.operator",
        f"--kubeconfig={c.kubeconfig}",
        "--webhook-port=0",
        f"--health-probe-bind-address=127.0.0.1:{process.free_port()}",
        "--log-format=text",
        *flags,
    ]


def _run_operator(
    c: cluster.Cluster, config_dir: pathlib.Path, samples: Sequence[pathlib.Path]
) -> dict[str, subprocess.Popen[bytes]]:
    """Deploy config/default, run the manager as its ServiceAccount, watch, apply the samples."""
    deploy.apply(c, deploy.overlay(c, config_dir))
    print("deployed config/default with kustomize (CRD, RBAC, webhooks)", flush=True)
    port = process.free_port()
    deploy.point_webhooks_at(c, f"https://127.0.0.1:{port}")
    kubeconfig = deploy.service_account_kubeconfig(c, c.workdir / "manager.kubeconfig")
    operator = process.popen(
        operator_argv(
            c,
            f"--metrics-bind-address=127.0.0.1:{process.free_port()}",
            *deploy.manager_flags(kubeconfig, c.workdir / "webhook-certs", port),
        )
    )
    # The validating webhook refuses every job until the manager serves it.
    process.wait_until(
        "the manager's webhooks",
        lambda: operator.poll() is None and _webhooks_answer(c),
        timeout=60,
        interval=0.5,
    )
    print(f"kubetrain-operator runs as {deploy.NAMESPACE}/{deploy.SERVICE_ACCOUNT}", flush=True)
    watch = process.popen([c.bins["kubectl"], f"--kubeconfig={c.kubeconfig}", "get", "tj", "-A", "-w"])
    for sample in samples:
        print(c.kubectl("apply", "-f", str(sample)).stdout.strip(), flush=True)
    return {"kubetrain-operator": operator, "kubectl get tj -w": watch}


def _webhooks_answer(c: cluster.Cluster) -> bool:
    # A v1alpha1 list goes through the conversion webhook once there is an object to convert;
    # a server-side dry-run create goes through the validating webhook always.
    probe = {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": "probe", "namespace": "default"},
        "spec": {
            "framework": {"name": "tensorflow"},
            "replicaSpecs": {
                "Chief": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "x"}]}}}
            },
        },
    }
    result = c.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe), check=False)
    return result.returncode == 0


def down(timeout: float = 30) -> int:
    pid = _running_pid()
    if pid is None:
        print("no dev cluster is up")
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while process.pids_alive([pid]) and time.monotonic() < deadline:
        time.sleep(0.2)
    if process.pids_alive([pid]):
        print(f"error: pid {pid} did not stop within {timeout:.0f}s", file=sys.stderr)
        return 1
    print("dev cluster stopped")
    return 0
