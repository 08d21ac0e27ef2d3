"""``kubetrain run --local`` and ``client.run_local``, end to end on small real processes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain import client
from kubetrain.cli import main

ROOT = Path(__file__).resolve().parents[2]


def job(command: list[str], *, replicas: int = 2, framework: str = "generic", **spec: Any) -> dict[str, Any]:
    main_container = {
        "name": "main" if framework == "generic" else framework,
        "image": "none",
        "command": command,
    }
    return {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": "lj"},
        "spec": {
            "framework": {"name": framework},
            "replicaSpecs": {
                "Worker": {"replicas": replicas, "template": {"spec": {"containers": [main_container]}}}
            },
            **spec,
        },
    }


def write(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def run(tmp_path: Path, *argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    # Free ports: another run side by side (another test's) may hold a job's own ports.
    code = main.main(["run", *argv, "--run-dir", str(tmp_path / "run"), "--free-ports"])
    out, err = capsys.readouterr()
    return code, out, err


PRINT_RANK = [sys.executable, "-c", "import os; print('hello from', os.environ['KUBETRAIN_RANK'])"]


def test_a_job_that_succeeds_prints_its_replicas_lines_its_states_and_describe_s_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(tmp_path, "--local", write(tmp_path, job(PRINT_RANK)), capsys=capsys)

    assert code == 0, err
    assert "worker-0 | hello from 0" in out.splitlines()
    assert "worker-1 | hello from 1" in out.splitlines()
    rows = [line.split() for line in out.splitlines() if line.startswith("lj ")]
    assert out.splitlines()[0].split() == ["NAME", "FRAMEWORK", "STATE", "REPLICAS", "RESTARTS", "AGE"]
    assert rows[-1][:3] == ["lj", "generic", "Succeeded"]
    assert "State:        Succeeded" in out  # describe's summary at the end
    assert "next:" not in out


def test_a_job_that_fails_exits_1_and_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        tmp_path,
        "--local",
        write(tmp_path, job([sys.executable, "-c", "raise SystemExit(3)"])),
        capsys=capsys,
    )

    assert code == 1
    assert "Reason:       PermanentExitCode" in out
    assert "Warning PodFailed:" in out


def test_what_cannot_run_is_one_error_line_each_and_nothing_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = job(["mpirun-that-is-not-here", "-np", "2"])
    del data["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"]
    data["spec"]["replicaSpecs"]["Launcher"] = {
        "template": {
            "spec": {"containers": [{"name": "main", "image": "x", "command": ["mpirun-that-is-not-here"]}]}
        }
    }
    code, out, err = run(tmp_path, "--local", write(tmp_path, data), capsys=capsys)

    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        "error: Launcher/0: mpirun-that-is-not-here: command not found on this machine's PATH",
        "error: Worker/0: container 'main' has no command: its image's entrypoint would run, and a local run "
        "pulls no image (give the container a command)",
        "error: Worker/1: container 'main' has no command: its image's entrypoint would run, and a local run "
        "pulls no image (give the container a command)",
    ]
    assert not (tmp_path / "run").exists()


def test_run_without_local_and_a_bad_file_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(tmp_path, write(tmp_path, job(PRINT_RANK)), capsys=capsys)
    assert code == 1
    assert err.startswith("error: give --local: run runs a job on this machine")

    bad = job(PRINT_RANK)
    bad["spec"]["replicaSpecs"]["Worker"]["replicas"] = -1
    code, _, err = run(tmp_path, "--local", write(tmp_path, bad), capsys=capsys)
    assert code == 1
    assert err.startswith("error: ")
    assert "job.yaml:" in err
    assert "spec.replicaSpecs.Worker.replicas" in err
    assert "Traceback" not in err


def test_a_job_made_from_a_runtime_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rank = "import os; print('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'])"
    code, out, err = run(
        tmp_path,
        "--local",
        "--runtime",
        "torch-distributed",
        "--runtimes",
        str(ROOT / "config" / "runtimes"),
        "--image",
        "none",
        "--nodes",
        "2",
        "--name",
        "short",
        "--",
        sys.executable,
        "-c",
        rank,
        capsys=capsys,
    )

    assert code == 0, err
    assert "worker-1 | rank 1 of 2" in out.splitlines()


def test_client_run_local_tells_what_happens_and_returns_the_outcome(tmp_path: Path) -> None:
    from kubetrain.operator import local

    told: list[Any] = []
    run = client.run_local(
        job(PRINT_RANK, replicas=1), run_dir=str(tmp_path / "run"), free_ports=True, tell=told.append
    )

    assert (run.code, run.state.value, run.stopped) == (0, "Succeeded", False)
    assert [s.text for s in told if isinstance(s, local.Line)] == ["hello from 0"]
    with pytest.raises(client.InvalidInput, match="has no command"):
        client.run_local(job([], replicas=1), run_dir=str(tmp_path / "run"))
