"""hack/concurrently.sh, which `make test` runs its build lanes through (and, with --keep-going,
test lanes that each run to their end)."""

from __future__ import annotations

import pathlib
import subprocess

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
