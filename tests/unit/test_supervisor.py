"""The local cluster's supervisor restarts a component that exits, and logs why."""

from __future__ import annotations

import pathlib

from testkit.kube import eventually

from kubetrain.devcluster import process


def test_an_exited_component_is_restarted_and_its_exit_logged(tmp_path: pathlib.Path) -> None:
    # Exits 3 at once the first time, then runs until stopped.
    marker = tmp_path / "ran"
    script = f"[ -e {marker} ] && exec sleep 60; touch {marker}; exit 3"
    p = process.Process("flaky", ["sh", "-c", script], tmp_path / "flaky.log")
    processes = [p]
    supervisor = process.Supervisor(processes, tmp_path / "supervisor.log", interval=0.05)
    p.start()
    supervisor.start()
    try:
        eventually("a restart", lambda: p.exits == [3] and p.alive(), timeout=10)
        log = (tmp_path / "supervisor.log").read_text()
        assert "flaky exited with status 3; restarting in 1s" in log
        assert "flaky restarted" in log
        assert "flaky exited with status 3" in (tmp_path / "flaky.log").read_text()
    finally:
        supervisor.pause()
        p.stop()
        supervisor.stop()
    assert not p.alive()


def test_a_stopped_component_is_left_alone(tmp_path: pathlib.Path) -> None:
    p = process.Process("quiet", ["sleep", "60"], tmp_path / "quiet.log")
    supervisor = process.Supervisor([p], tmp_path / "supervisor.log", interval=0.05)
    p.start()
    supervisor.start()
    try:
        p.stop()
        import time

        time.sleep(0.5)
        assert not p.alive()
        assert p.exits == []
    finally:
        supervisor.stop()
