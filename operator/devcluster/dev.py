"""``kubetrain dev up|down|kubeconfig``: a local control plane for people.

``up`` runs in the foreground until Ctrl-C (or ``dev down`` from another shell), so its
processes can never be forgotten. The admin kubeconfig is copied to a stable path,
``$KUBETRAIN_CACHE/dev/kubeconfig``, printed by ``dev kubeconfig``.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import sys
import time

from kubetrain.operator.devcluster import binaries, cluster, process

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


def up(tier: cluster.Tier, nodes: int) -> int:
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
        print("Ctrl-C or `kubetrain dev down` stops it.", flush=True)
        while True:
            for p in c.processes:
                p.check_alive()
            time.sleep(1)
    except KeyboardInterrupt:
        print("stopping", flush=True)
        return 0
    except process.StartError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        c.stop()
        _state_file().unlink(missing_ok=True)
        kubeconfig_path().unlink(missing_ok=True)


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
