"""`kubetrain dev up|kubeconfig|down`, as a person runs them from two shells, and killed outright."""

from __future__ import annotations

import json
import os
import pathlib
import queue
import subprocess
import sys
import threading
import time

from testkit.kube import eventually

from kubetrain.devcluster import binaries, process, workdir


def kubetrain(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "kubetrain.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


ROOT = pathlib.Path(__file__).resolve().parents[2]


def dev_process(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """`kubetrain dev ARGS` running in the background, its output readable line by line."""
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "kubetrain.cli", "dev", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def dev_run(env: dict[str, str], *samples: str) -> subprocess.Popen[str]:
    """`kubetrain dev run` on one kwok node, with the repository's config/ and ``samples``."""
    return dev_process(
        env, "run", "--real-nodes", "0", "--nodes", "1", "--config", str(ROOT / "config"), *samples
    )


def dev_env(cache: pathlib.Path) -> dict[str, str]:
    """A private dev-cluster state dir; binaries still come from the real cache."""
    env = {**os.environ, "KUBETRAIN_CACHE": str(cache)}
    env["KUBETRAIN_BIN_PATH"] = os.pathsep.join(
        str(pathlib.Path(binaries.find()[n]).parent) for n in binaries.NAMES
    )
    return env


def test_up_kubeconfig_down(tmp_path: pathlib.Path) -> None:
    env = dev_env(tmp_path)
    up = dev_process(env, "up", "--nodes", "1")
    try:
        kubeconfig = pathlib.Path(
            eventually(
                "dev up to write its kubeconfig",
                lambda: kubetrain(env, "dev", "kubeconfig").stdout.strip(),
                timeout=60,
            )
        )
        assert kubeconfig == tmp_path / "dev" / "kubeconfig"
        nodes = subprocess.run(
            [binaries.find()["kubectl"], f"--kubeconfig={kubeconfig}", "get", "nodes", "-o", "json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert [n["metadata"]["name"] for n in json.loads(nodes)["items"]] == ["kwok-node-0"]
        second = kubetrain(env, "dev", "up")
        assert second.returncode == 1
        assert "already up" in second.stderr
        state = json.loads((tmp_path / "dev" / "state.json").read_text())
        assert state["pid"] == up.pid
        down = kubetrain(env, "dev", "down")
        assert down.returncode == 0, down.stderr
        assert down.stdout.strip() == "dev cluster stopped"
        up.wait(30)
    finally:
        up.kill()
    assert up.returncode == 0
    assert not kubeconfig.exists()
    assert kubetrain(env, "dev", "kubeconfig").returncode == 1
    assert process.pids_alive([up.pid]) == []


def test_run_shows_a_sample_reconciled_by_the_operator(tmp_path: pathlib.Path) -> None:
    env = dev_env(tmp_path)
    run = dev_run(env, str(ROOT / "samples/v1beta1/pytorch-ddp.yaml"))
    assert run.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in run.stdout], daemon=True).start()  # type: ignore[union-attr]
    wanted = {
        "the operator runs it": lambda line: line.split()[:3] == ["default", "pytorch-ddp", "Running"],
        "kubectl applied it": lambda line: "trainingjob.training.kubetrain.dev/pytorch-ddp created" in line,
        "the -w view shows it": lambda line: line.split()[:2] == ["default", "pytorch-ddp"],
    }
    try:
        deadline = time.monotonic() + 90
        while wanted and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            wanted = {what: match for what, match in wanted.items() if not match(line)}
        assert not wanted, f"never saw: {', '.join(wanted)}"
        assert kubetrain(env, "dev", "down").returncode == 0
        run.wait(30)
    finally:
        run.kill()
    assert run.returncode == 0
    assert process.pids_alive([run.pid]) == []


def children_of(pid: int) -> list[int]:
    kids = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def test_a_killed_run_leaves_no_operator_behind(tmp_path: pathlib.Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    run = dev_run({**dev_env(tmp_path), "TMPDIR": str(temp)})
    assert run.stdout is not None
    for line in run.stdout:
        if "caches synced" in line:
            break
    # The manager says its caches are synced before `kubectl get -w` starts: wait for all seven
    # (etcd, apiserver, kcm, scheduler, kwok, operator, kubectl -w).
    helpers_and_components = eventually(
        "seven children",
        lambda: kids if len(kids := children_of(run.pid)) >= 7 else None,
        timeout=30,
        evidence=lambda: children_of(run.pid),
    )
    run.kill()
    run.wait()
    eventually(
        "every child to exit", lambda: not process.pids_alive(helpers_and_components) or None, timeout=15
    )
    # No finally ran: the cluster's directory stays, and the next cluster started here removes it.
    [left] = temp.glob(f"{workdir.PREFIX}*")
    assert workdir.sweep(temp) == [left]
    assert not left.exists()
