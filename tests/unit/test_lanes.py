"""hack/concurrently.sh, which `make test` runs its build lanes through (and, with --keep-going,
test lanes that each run to their end)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import time

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "hack" / "concurrently.sh"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_every_line_is_prefixed_with_its_job_and_success_is_zero() -> None:
    done = run("a", "echo one; echo two", "b b", "echo three")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == ["[a] one", "[a] two", "[b b] three"]
    assert "==> [a] done in" in done.stderr
    assert "==> [b b] done in" in done.stderr


def test_a_failure_stops_the_others_by_default(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "slow-finished"
    done = run("fails", "sleep 0.5; exit 3", "slow", f"sleep 5; touch {marker}")
    assert done.returncode == 1
    assert "FAILED: [fails] (exit 3)" in done.stderr
    assert "stopping the others: [slow]" in done.stderr
    assert not marker.exists()


def test_keep_going_lets_every_job_end_and_names_each_failure(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "slow-finished"
    done = run(
        "--keep-going",
        "first",
        "exit 1",
        "slow",
        f"sleep 1; touch {marker}; echo finished",
        "second",
        "sleep 0.3; exit 4",
    )
    assert done.returncode == 1
    assert marker.exists()
    assert "[slow] finished" in done.stdout
    assert "FAILED: [first] (exit 1)" in done.stderr
    assert "FAILED: [second] (exit 4)" in done.stderr
    assert done.stderr.rstrip().splitlines()[-1] == "==> FAILED: [first] [second], the output above"


def test_a_command_without_a_name_is_a_usage_error() -> None:
    done = run("--keep-going", "only-a-name")
    assert done.returncode == 2
    assert done.stderr.startswith("usage:")


BACKGROUND = SCRIPT.parent / "background.sh"


def test_background_runs_at_nice_19_in_a_session_of_its_own_with_its_status() -> None:
    done = subprocess.run(
        [str(BACKGROUND), "sh", "-c", "nice; cut -d' ' -f6 /proc/$$/stat; exit 3"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 3, done.stderr
    niceness, session = done.stdout.split()
    assert niceness == "19"
    assert int(session) != os.getsid(0)


def test_background_passes_a_stop_on_to_its_session(tmp_path: pathlib.Path) -> None:
    pidfile = tmp_path / "pid"
    running = subprocess.Popen([str(BACKGROUND), "sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"])
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    running.terminate()
    assert running.wait(timeout=10) == 143
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)
