"""The `kubetrain` command's failures: `error:` lines and an exit status, never a traceback."""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import time

import pytest

from kubetrain import client
from kubetrain.cli import errors, main


def run_with(monkeypatch: pytest.MonkeyPatch, failure: BaseException) -> int:
    """`kubetrain list`, whose work raises ``failure``."""

    def fail(_: argparse.Namespace) -> int:
        raise failure

    monkeypatch.setattr("kubetrain.cli.jobs._get", fail)
    return main.main(["list"])


def test_a_bad_command_line_exits_1_with_an_error_line_and_where_help_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main.main(["wait"]) == 1
    assert capsys.readouterr().err == (
        "error: the following arguments are required: job\nSee 'kubetrain wait --help'.\n"
    )
    assert main.main(["wait", "x", "--timeout", "soon"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "error: argument --timeout: invalid duration 'soon': expected seconds or a duration"
    )
    assert main.main(["frobnicate"]) == 1
    assert capsys.readouterr().err.startswith("error: argument COMMAND: invalid choice: 'frobnicate'")


def test_the_clients_errors_are_error_lines_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        run_with(
            monkeypatch,
            client.Unreachable("cannot reach the cluster at https://127.0.0.1:1: connection refused"),
        )
        == 1
    )
    assert (
        capsys.readouterr().err
        == "error: cannot reach the cluster at https://127.0.0.1:1: connection refused\n"
    )
    assert (
        run_with(
            monkeypatch, client.InvalidInput("job.yaml:3: spec.x: unknown field\njob.yaml:9: spec.y: bad")
        )
        == 1
    )
    assert (
        capsys.readouterr().err
        == "error: job.yaml:3: spec.x: unknown field\nerror: job.yaml:9: spec.y: bad\n"
    )


def test_a_command_error_brings_its_exit_status_and_next_step(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_with(monkeypatch, errors.CommandError("timed out", code=2, hint="kubetrain logs x -f")) == 2
    assert capsys.readouterr().err == "error: timed out\nnext: kubetrain logs x -f\n"


def test_ctrl_c_exits_130_without_a_word(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_with(monkeypatch, KeyboardInterrupt()) == 130
    assert capsys.readouterr() == ("", "")


def test_a_missing_file_is_named(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_with(monkeypatch, FileNotFoundError(2, "No such file or directory", "job.yaml")) == 1
    assert capsys.readouterr().err == "error: job.yaml: No such file or directory\n"


def test_the_tools_gang_schedulers_are_the_operators() -> None:
    from kubetrain.cli import tools
    from kubetrain.operator import scheduling

    assert scheduling.registry.CHOICES[1:] == tools.GANG_SCHEDULERS


def test_the_job_verbs_load_neither_the_reconciler_nor_the_runtime_nor_the_dev_cluster() -> None:
    # The tools (render, migrate-storage) and dev import those only when they run.
    probe = (
        "import sys; from kubetrain.cli import main; main.parser(); "
        "print(sorted(m for m in sys.modules if m.startswith(('kubetrain.operator.runtime', "
        "'kubetrain.operator.trainingjob_controller', 'kubetrain.operator.lifecycle', "
        "'kubetrain.operator.render', 'kubetrain.devcluster'))))"
    )
    out = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "[]", out.stderr


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    with pytest.raises(SystemExit) as e:
        main.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"kubetrain {metadata.version('kubetrain')}\n"


def test_help_loads_neither_the_client_nor_the_api_and_answers_within_0_3_s() -> None:
    probe = (
        "import sys, contextlib, io\n"
        "from kubetrain.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
        "    main.main(['--help'])\n"
        "assert 'migrate-storage' in out.getvalue()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('kubetrain.api', 'kubetrain.client', "
        "'kubetrain.operator', 'kr8s', 'httpx', 'yaml', 'attrs'))))"
    )
    out = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "[]", out.stderr
    # The whole command, as a person runs it: the best of three, on a machine that may be busy.
    script = pathlib.Path(sys.executable).parent / "kubetrain"
    took = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([str(script), "--help"], capture_output=True, check=True)
        took.append(time.perf_counter() - started)
    assert min(took) < 0.3, took


def test_a_verbs_help_shows_its_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main.main(["wait", "--help"])
    out = capsys.readouterr().out
    assert "--for CONDITION" in out
    assert "Succeeded" in out
    assert "--kubeconfig FILE" in out


CLUSTER_VERBS = {
    "submit",
    "get",
    "list",
    "delete",
    "runtimes",
    "describe",
    "logs",
    "wait",
    "tensorboard",
    "render",  # a job made from a runtime reads it from the cluster, unless given --runtimes
    "run",  # run --local: as render, for a job made from a runtime
}


def test_every_verb_that_talks_to_a_cluster_words_its_cluster_flags_the_same() -> None:
    top = main.parser()
    (sub,) = (a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    seen: dict[str, set[tuple[tuple[str, ...], str | None, str | None]]] = {}
    for verb, p in sub.choices.items():
        p.built()
        for action in p._actions:
            if action.dest in ("kubeconfig", "context", "namespace"):
                seen.setdefault(verb, set()).add(
                    (tuple(action.option_strings), action.help, str(action.metavar))
                )
    assert {v for v, flags in seen.items() if len(flags) == 3} == CLUSTER_VERBS
    assert set(seen) == {*CLUSTER_VERBS, "migrate-storage"}
    wordings = {frozenset(flags) for v, flags in seen.items() if v in CLUSTER_VERBS}
    assert len(wordings) == 1
    assert seen["migrate-storage"] < next(iter(wordings))
