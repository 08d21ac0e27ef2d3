"""The checkpoint channel, both ends: what samples/scripts/kubetrain_progress.py writes on the
progress line and reads from the request file, and what the operator parses of that line."""

from __future__ import annotations

import importlib.util
import pathlib
import signal
import threading
from types import ModuleType

import pytest

from kubetrain.operator.policies import progress

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "samples" / "scripts" / "kubetrain_progress.py"


@pytest.fixture
def lib(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A fresh copy of the module (its memory of what it said is per process), in a pod of files."""
    monkeypatch.setenv("KUBETRAIN_PROGRESS_FILE", str(tmp_path / "progress"))
    monkeypatch.setenv("KUBETRAIN_CHECKPOINT_FILE", str(tmp_path / "request"))
    spec = importlib.util.spec_from_file_location("kubetrain_progress_under_test", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def line(tmp_path: pathlib.Path) -> str:
    return (tmp_path / "progress").read_text().strip()


def test_a_request_is_answered_once_and_the_answer_rides_on_every_line(
    lib: ModuleType, tmp_path: pathlib.Path
) -> None:
    lib.report(10, total=100, loss=0.5)
    assert lib.checkpoint_requested() is None  # the kubelet projects an empty file before any request
    (tmp_path / "request").write_text("")
    assert lib.checkpoint_requested() is None
    (tmp_path / "request").write_text("3")
    request = lib.checkpoint_requested()
    assert request == 3
    lib.checkpointed(10, request)
    assert line(tmp_path) == "step=10 total=100 loss=0.5 checkpoint=10 answered=3"
    assert lib.checkpoint_requested() is None, "answered: not asked again"
    lib.report(11, total=100)
    assert line(tmp_path) == "step=11 total=100 checkpoint=10 answered=3"
    reading = progress.parse("p", "progress " + line(tmp_path))
    assert reading is not None
    assert (reading.step, reading.checkpoint, reading.answered, reading.metrics) == (11, 10, 3, ())


def test_checkpoint_is_no_metric_and_a_bad_answer_is_not_read_as_one(lib: ModuleType) -> None:
    with pytest.raises(ValueError, match="checkpoint is not a metric"):
        lib.report(1, checkpoint=2)
    reading = progress.parse("p", "progress step=5 checkpoint=1.5 answered=-2 loss=1")
    assert reading is not None
    assert (reading.checkpoint, reading.answered, reading.metrics) == (None, None, (("loss", "1"),))


def test_the_resume_step_is_read_from_the_restart_env(
    lib: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert lib.resume_step() is None
    monkeypatch.setenv("KUBETRAIN_RESUME_STEP", "")
    assert lib.resume_step() is None
    monkeypatch.setenv("KUBETRAIN_RESUME_STEP", "420")
    assert lib.resume_step() == 420


def test_a_signal_is_raised_in_the_process_when_a_checkpoint_is_asked_for(
    lib: ModuleType, tmp_path: pathlib.Path
) -> None:
    got = threading.Event()
    old = signal.signal(signal.SIGUSR1, lambda *_: got.set())
    try:
        lib.on_checkpoint_request(signal.SIGUSR1, every=0.05)
        (tmp_path / "request").write_text("1")
        assert got.wait(5), "no signal raised for the request"
    finally:
        signal.signal(signal.SIGUSR1, old)
    with pytest.raises(ValueError, match="install a handler"):
        lib.on_checkpoint_request(signal.SIGUSR2)
