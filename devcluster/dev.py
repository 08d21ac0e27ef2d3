"""``kubetrain dev up|run|down|kubeconfig|images``: a local cluster for people.

``up`` runs in the foreground until Ctrl-C (or ``dev down`` from another shell), so its
processes can never be forgotten. The admin kubeconfig is copied to a stable path,
``$KUBETRAIN_CACHE/dev/kubeconfig``, printed by ``dev kubeconfig``. ``run`` does the
same and also deploys ``config/default``, applies the given samples and shows them the way
``kubectl get tj -w`` does, with every replica's log lines as they are written.

``run`` wants one real node: the operator then runs as the pods of its Deployment, from the
image built here, and the samples' containers really run. Where a real node cannot start (not
root, no mmdebstrap, ...) it says why and goes on with kwok nodes, where the operator runs as
a local process and nothing runs in the pods.

``images`` builds the images real nodes hold ahead of the first start that needs them (``make
test`` builds them while the control plane compiles); the sandbox's waits for the node parts.
"""

from __future__ import annotations

import faulthandler
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from kubetrain.api import naming, v1beta1
from kubetrain.devcluster import binaries, cluster, deploy, images, process

__all__ = ["build_images", "down", "kubeconfig_path", "state_dir", "up"]


def state_dir() -> pathlib.Path:
    return binaries.cache_dir() / "dev"


def kubeconfig_path() -> pathlib.Path:
    return state_dir() / "kubeconfig"


def _state_file() -> pathlib.Path:
    return state_dir() / "state.json"


def _running_pid() -> int | None:
    """The pid of the `dev up` that wrote the state file, if that very process still runs.

    A `dev up` killed outright leaves its state file behind, and its pid may since be another
    process's: that one must neither block the next `dev up` nor get `dev down`'s SIGTERM.
    """
    try:
        state = json.loads(_state_file().read_text())
        pid, started = int(state["pid"]), state.get("started")
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
    return pid if process.runs(pid, started) else None


def up(
    tier: cluster.Tier,
    nodes: int,
    *,
    real_nodes: int = 0,
    config_dir: pathlib.Path | None = None,
    samples: Sequence[pathlib.Path] = (),
    seed_images: bool = False,
) -> int:
    """Run a dev cluster in the foreground; with ``config_dir``, also the operator and samples; with
    ``seed_images``, real nodes also hold the stand-ins of the first operators' README images."""
    pid = _running_pid()
    if pid is not None:
        print(
            f"error: a dev cluster is already up (pid {pid}); run `kubetrain dev down` first", file=sys.stderr
        )
        return 1
    # `dev down` sends SIGTERM: treat it as Ctrl-C, so the same clean stop runs. Ctrl-C itself too,
    # even when started as a background job of a shell without job control (a script, CI): such a
    # shell starts it with SIGINT ignored, and Python then leaves it ignored.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # A stop that hangs can be asked where it is: SIGUSR1 prints every thread's stack.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    started = time.monotonic()
    c = _start(tier, nodes, real_nodes, seed_images)
    helpers: dict[str, subprocess.Popen[bytes]] = {}
    try:
        state_dir().mkdir(parents=True, exist_ok=True)
        shutil.copy(c.kubeconfig, kubeconfig_path())
        kubeconfig_path().chmod(0o600)
        me = os.getpid()
        state = {"pid": me, "started": process.started_at(me), "server": c.server, "tier": tier.value}
        _state_file().write_text(json.dumps(state))
        print(
            f"kubetrain dev cluster ({tier.value}, {c.nodes} kwok node(s), {len(c.real_nodes)} real node(s)) "
            f"up in {time.monotonic() - started:.1f}s at {c.server}"
        )
        print(f"export KUBECONFIG={kubeconfig_path()}")
        if config_dir is not None:
            helpers = _run_operator(c, config_dir, samples)
        print("Ctrl-C or `kubetrain dev down` stops it.", flush=True)
        followed: set[str] = set()
        while True:
            # The cluster's supervisor restarts its components; only the helpers are ours.
            for name, h in helpers.items():
                if h.poll() is not None and not name.startswith("logs "):
                    raise process.StartError(f"{name} exited with status {h.returncode}")
            if c.real_nodes and samples:
                helpers.update(_follow_logs(c, followed))
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


def _start(tier: cluster.Tier, nodes: int, real_nodes: int, seed_images: bool) -> cluster.Cluster:
    if real_nodes and tier is cluster.Tier.CLUSTER:
        try:
            print(
                f"starting {real_nodes} real node(s); the first run builds their images (a few minutes)",
                flush=True,
            )
            return cluster.start(
                tier,
                nodes=nodes,
                real_nodes=real_nodes,
                timeout=300 if seed_images else 180,
                seed_images=seed_images,
            )
        except (
            process.StartError,
            OSError,
            images.BuildError,
            binaries.BinariesNotFoundError,
            RuntimeError,
        ) as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            print(
                f"warning: a real node could not start ({first}); falling back to kwok nodes, "
                "where pods are simulated and nothing runs in them",
                file=sys.stderr,
                flush=True,
            )
    return cluster.start(tier, nodes=nodes or 2)


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
    """Deploy config/default and the manager; watch; apply the samples."""
    helpers: dict[str, subprocess.Popen[bytes]] = {}
    if c.real_nodes:
        image = images.operator(config_dir.resolve().parent).ref
        deploy.in_cluster(c, config_dir, image)
        print(
            f"deployed config/default with kustomize: {deploy.DEPLOYMENT} runs {image} on a real node, "
            "its webhooks called through their Service",
            flush=True,
        )
    else:
        helpers["kubetrain-operator"] = _local_operator(c, config_dir)
    watch = process.popen([c.bins["kubectl"], f"--kubeconfig={c.kubeconfig}", "get", "tj", "-A", "-w"])
    helpers["kubectl get tj -w"] = watch
    for sample in samples:
        print(c.kubectl("apply", "-f", str(sample)).stdout.strip(), flush=True)
    return helpers


def _local_operator(c: cluster.Cluster, config_dir: pathlib.Path) -> subprocess.Popen[bytes]:
    """The manager as a local process with the Deployment's ServiceAccount (kwok nodes)."""
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
    deploy.wait_defaults_given(c)
    print(
        f"kubetrain-operator runs as {deploy.NAMESPACE}/{deploy.SERVICE_ACCOUNT} (a local process)",
        flush=True,
    )
    return operator


def _follow_logs(c: cluster.Cluster, followed: set[str]) -> dict[str, subprocess.Popen[bytes]]:
    """``kubectl logs -f --prefix`` for every TrainingJob pod that has started and is not followed yet."""
    result = c.kubectl("get", "pods", "-A", "-l", naming.JOB_NAME, "-o", "json", check=False)
    if result.returncode != 0:
        return {}
    started = {}
    for pod in json.loads(result.stdout)["items"]:
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}/{pod['metadata']['uid']}"
        running = any(
            "running" in s.get("state", {}) or "terminated" in s.get("state", {})
            for s in pod.get("status", {}).get("containerStatuses", [])
        )
        if key in followed or not running:
            continue
        followed.add(key)
        started[f"logs {key}"] = process.popen(
            [
                c.bins["kubectl"],
                f"--kubeconfig={c.kubeconfig}",
                "logs",
                "-f",
                "--prefix",
                "--all-containers",
                "-n",
                pod["metadata"]["namespace"],
                pod["metadata"]["name"],
            ],
            stderr=subprocess.DEVNULL,
        )
    return started


def _webhooks_answer(c: cluster.Cluster) -> bool:
    # A v1alpha1 list goes through the conversion webhook once there is an object to convert;
    # a server-side dry-run create goes through the validating webhook always.
    probe = {
        "apiVersion": v1beta1.API_VERSION,
        "kind": v1beta1.KIND,
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


def build_images(*, seed_images: bool = False, root: pathlib.Path | None = None) -> int:
    """Build what real nodes hold (but the sandbox, which needs the node parts' pause program),
    two at a time, each said as it ends; what is cached is only named. 1 if one failed."""
    wanted = images.for_nodes(root or pathlib.Path.cwd(), None, seeds=seed_images)
    todo = [i for i in wanted if not images.cached(i)]
    for i in wanted:
        if i not in todo:
            print(f"==> [images] {i.ref}: cached", flush=True)
    for i in todo:
        print(f"==> [images] build {i.ref}", flush=True)
    failed = 0
    started = time.monotonic()
    for i, archive in images.build_each(todo):
        if isinstance(archive, pathlib.Path):
            print(f"==> [images] {i.ref}: built (at +{time.monotonic() - started:.0f}s)", flush=True)
            continue
        failed += 1
        first = str(archive).splitlines()[0] if str(archive) else type(archive).__name__
        print(f"error: image {i.ref}: {first}", file=sys.stderr, flush=True)
    return 1 if failed else 0
