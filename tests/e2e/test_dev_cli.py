"""`kubetrain dev up|kubeconfig|down`, as a person runs them from two shells."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

from testkit.kube import eventually

from kubetrain.operator.devcluster import binaries, process


def kubetrain(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "kubetrain.operator.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_up_kubeconfig_down(tmp_path: pathlib.Path) -> None:
    env = {**os.environ, "KUBETRAIN_CACHE": str(tmp_path)}
    # Binaries are found through the real cache or KUBETRAIN_BIN_PATH, not the temporary one.
    env["KUBETRAIN_BIN_PATH"] = os.pathsep.join(
        str(pathlib.Path(binaries.find()[n]).parent) for n in binaries.NAMES
    )
    up = subprocess.Popen(
        [sys.executable, "-P", "-m", "kubetrain.operator.cli", "dev", "up", "--nodes", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
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
