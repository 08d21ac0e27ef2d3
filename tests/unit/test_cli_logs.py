"""`kubetrain logs`: every line prefixed by its replica, aligned; colour on a terminal only."""

from __future__ import annotations

import io

from testkit.builders import a_job

from kubetrain import client
from kubetrain.cli import logs, output

JOB = a_job("pt").replicas("Master", 1).replicas("Worker", 11).build()


def line(replica: str, text: str, *, notice: bool = False) -> client.LogLine:
    rtype, _, index = replica.partition("-")
    return client.LogLine(
        replica=replica,
        replica_type=rtype.capitalize(),
        index=int(index),
        attempt=0,
        pod=f"pt-{replica}",
        text=text,
        notice=notice,
    )


def test_every_line_is_prefixed_by_its_replica_padded_to_the_longest_name() -> None:
    out = io.StringIO()
    lines = [line("master-0", "step 1"), line("worker-10", "step 1"), line("worker-1", "loss 2.3")]
    logs.print_lines(lines, logs.Printer(JOB, output.palette(out)), out)
    assert out.getvalue() == "master-0  | step 1\nworker-10 | step 1\nworker-1  | loss 2.3\n"


def test_notices_stand_apart_from_the_programs_output() -> None:
    printer = logs.Printer(JOB, output.Palette(False))
    assert printer.format(line("worker-1", "--- attempt 1: a new pod ---", notice=True)) == (
        "worker-1  | --- attempt 1: a new pod ---"
    )
    # A notice is marked even if its text is not.
    assert printer.format(line("worker-1", "restarted", notice=True)) == "worker-1  | --- restarted ---"
    # The program's own "---" lines are left as written.
    assert printer.format(line("worker-1", "--- epoch 2 ---")) == "worker-1  | --- epoch 2 ---"


def test_on_a_terminal_each_replica_has_its_colour_and_notices_are_dim() -> None:
    printer = logs.Printer(JOB, output.Palette(True))
    master, worker = printer.format(line("master-0", "a")), printer.format(line("worker-0", "b"))
    assert master.startswith("\033[36mmaster-0 ")
    assert worker.startswith("\033[33mworker-0 ")
    assert printer.format(line("worker-0", "--- x ---", notice=True)).endswith("| \033[2m--- x ---\033[0m")


def test_no_escape_codes_reach_a_pipe() -> None:
    out = io.StringIO()
    logs.print_lines(
        [line("worker-0", "x", notice=True), line("worker-0", "y")],
        logs.Printer(JOB, output.palette(out)),
        out,
    )
    assert "\033" not in out.getvalue()


def test_a_replica_the_spec_does_not_name_still_lines_up() -> None:
    printer = logs.Printer(JOB, output.Palette(False))
    assert printer.format(line("tensorboard-0", "serving")) == "tensorboard-0 | serving"
    assert printer.format(line("worker-1", "x")) == "worker-1      | x"
