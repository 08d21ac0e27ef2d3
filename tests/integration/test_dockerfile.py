"""The Dockerfile, verified without a Docker engine: its rules, and its install steps run for real.

The lint checks what the image promises: more than one stage, pinned base images, the
runtime stage copying only the built venv, a non-root numeric user (65532), and the
operator as an exec-form entrypoint. Then the build stage's own COPY and RUN steps are
carried out into a clean temporary directory (only the paths change), and the
operator is started from the resulting venv, with the runtime stage's ENV, against the
real apiserver — until it reports ready and stops cleanly on SIGTERM.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys

import attrs
from testkit import operator

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import process

ROOT = pathlib.Path(__file__).resolve().parents[2]


@attrs.define
class Stage:
    base: str
    name: str | None
    steps: list[tuple[str, str]] = attrs.Factory(list)  # (instruction, arguments)


def stages() -> list[Stage]:
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    out: list[Stage] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, args = line.partition(" ")
        if instruction.upper() == "FROM":
            base, _, name = args.partition(" AS ")
            out.append(Stage(base=base.strip(), name=name.strip() or None))
        else:
            out[-1].steps.append((instruction.upper(), args.strip()))
    return out


def test_the_dockerfile_builds_in_stages_and_runs_unprivileged() -> None:
    build, runtime = stages()
    for stage in (build, runtime):
        _image, _, tag = stage.base.partition(":")
        assert tag not in ("", "latest"), f"{stage.base}: pin the base image"
    assert build.name == "build"
    assert not any(i == "ADD" for s in (build, runtime) for i, _ in s.steps), "COPY, not ADD"
    copies = [a for i, a in runtime.steps if i == "COPY"]
    assert copies == ["--from=build /opt/kubetrain /opt/kubetrain"], "the runtime stage gets the venv only"
    users = [a for i, a in runtime.steps if i == "USER"]
    assert users == ["65532:65532"]
    (entrypoint,) = [a for i, a in runtime.steps if i == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["kubetrain-operator"], "exec form, so signals reach the operator"


def test_the_build_steps_install_an_operator_that_starts(
    cluster: devcluster.Cluster, tmp_path: pathlib.Path
) -> None:
    build, runtime = stages()
    src, venv = tmp_path / "src", tmp_path / "venv"
    src.mkdir()
    env = {**os.environ, "PATH": f"{pathlib.Path(sys.executable).parent}:{os.environ['PATH']}"}
    for instruction, args in build.steps:
        if instruction == "ENV":
            env.update(dict(kv.split("=", 1) for kv in shlex.split(args)))
        elif instruction == "COPY":
            *sources, _ = args.split()
            for source in sources:
                origin = ROOT / source
                target = src / source
                if origin.is_dir():
                    shutil.copytree(origin, target, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy(origin, target)
        elif instruction == "RUN":
            command = args.replace("/opt/kubetrain", str(venv))
            subprocess.run(
                ["bash", "-c", command], cwd=src, env=env, check=True, capture_output=True, timeout=900
            )
    runtime_env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    for instruction, args in runtime.steps:
        if instruction == "ENV":
            pairs = dict(kv.split("=", 1) for kv in shlex.split(args))
            runtime_env.update(
                {
                    k: v.replace("/opt/kubetrain", str(venv)).replace("$PATH", "/usr/bin:/bin")
                    for k, v in pairs.items()
                }
            )
    probes = process.free_port()
    manager = subprocess.Popen(
        [
            str(venv / "bin" / "kubetrain-operator"),
            f"--kubeconfig={cluster.kubeconfig}",
            "--webhook-port=0",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{probes}",
        ],
        cwd=tmp_path,
        env=runtime_env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        process.wait_until("the installed operator to be ready", lambda: operator.ready(probes), timeout=60)
        manager.send_signal(signal.SIGTERM)
        assert manager.wait(30) == 0
    finally:
        manager.kill()
        _, err = manager.communicate()
    assert "starting kubetrain-operator" in err
