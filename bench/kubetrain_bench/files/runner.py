"""Each hostile file through every door, in a child process of its own: timed, measured, judged.

The parent has imported everything the doors use; for each case it writes the file and forks
a child that runs the five doors one after another (:mod:`~kubetrain_bench.files.doors`) —
on the file's path, or for one case in four on standard input (``-``) — and sends each
door's outcome back as it ends. The parent waits at most :data:`LIMIT_SECONDS` for each door
(a child that runs longer is killed: a hang), and reads the child's peak RSS from ``wait4``
when it exits: the peak of a process that inherited the parent's memory, so at least what a
``kubetrain`` process would need. The child's address space is capped (:data:`CAP_BYTES`
above the parent's), so that no case can take the machine with it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import resource
import select
import signal
import tempfile
import time
from collections.abc import Callable, Iterable

from kubetrain_bench.files import doors
from kubetrain_bench.files.generator import Case

LIMIT_SECONDS = 5.0  # every door must end within this
LIMIT_RSS = 300 << 20  # ... and within this peak RSS
CAP_BYTES = 2 << 30  # a child's address space beyond its parent's, a safety net only
STDIN_EVERY = 4  # one case in four is read from standard input


@dataclasses.dataclass
class Result:
    case: Case
    size: int  # bytes of the file
    stdin: bool
    outcomes: list[doors.Outcome]
    rss: int  # the child's peak, bytes
    problems: list[str]  # "door: what is wrong"


def _child(case: Case, path: str, kubeconfig: str, stdin: bool, write: int) -> None:
    limit = resource.getrlimit(resource.RLIMIT_AS)[1]
    cap = _vm_size() + CAP_BYTES
    resource.setrlimit(
        resource.RLIMIT_AS, (cap if limit == resource.RLIM_INFINITY else min(cap, limit), limit)
    )
    with doors.client_without_cluster() as c:
        for door in doors.DOORS:
            started = time.perf_counter()
            o = doors.run(door, "-" if stdin else path, kubeconfig, c, stdin=case.data if stdin else None)
            o.seconds = time.perf_counter() - started
            os.write(write, (json.dumps(dataclasses.asdict(o)) + "\n").encode())


def _vm_size() -> int:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def run_case(case: Case, directory: pathlib.Path, kubeconfig: str) -> Result:
    path = directory / f"case-{case.index}.yaml"
    path.write_bytes(case.data)
    stdin = case.index % STDIN_EVERY == STDIN_EVERY - 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read)
            _child(case, str(path), kubeconfig, stdin, write)
        except BaseException:
            code = 3
        os._exit(code)
    os.close(write)
    outcomes, hung = _collect(read, pid)
    os.close(read)
    _pid, _status, usage = os.wait4(pid, 0)
    path.unlink()
    rss = usage.ru_maxrss * 1024
    source = doors.STDIN if stdin else str(path)
    problems = [f"{o.door}: {p}" for o in outcomes if (p := doors.judge(case, o, source)) is not None]
    problems += [f"{o.door}: took {o.seconds:.1f}s" for o in outcomes if o.seconds > LIMIT_SECONDS]
    if hung is not None:
        problems.append(f"{hung}: did not end within {LIMIT_SECONDS * 2:g}s (killed)")
    elif len(outcomes) < len(doors.DOORS):
        problems.append(f"{doors.DOORS[len(outcomes)]}: the child died")
    if rss > LIMIT_RSS:
        problems.append(f"peak RSS {rss >> 20} MiB")
    return Result(case, len(case.data), stdin, outcomes, rss, problems)


def _collect(read: int, pid: int) -> tuple[list[doors.Outcome], str | None]:
    """The outcomes the child sends; the door it hung in, if it did (then it is killed)."""
    outcomes: list[doors.Outcome] = []
    buffer = b""
    deadline = time.monotonic() + 2 * LIMIT_SECONDS
    while True:
        ready, _, _ = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            return outcomes, doors.DOORS[len(outcomes)]
        chunk = os.read(read, 1 << 16)
        if not chunk:
            return outcomes, None
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            outcomes.append(doors.Outcome(**json.loads(line)))
            deadline = time.monotonic() + 2 * LIMIT_SECONDS


def run(
    cases: Iterable[Case], kubeconfig: str, progress: Callable[[Result], None] | None = None
) -> list[Result]:
    """Every case, one child at a time; ``progress`` is told each result."""
    results = []
    with tempfile.TemporaryDirectory(prefix="kubetrain-files-") as directory:
        for case in cases:
            result = run_case(case, pathlib.Path(directory), kubeconfig)
            # Keep what the figures need, not the bytes (10,000 cases are some 600 MB).
            result.case = dataclasses.replace(case, made=dataclasses.replace(case.made, data=b""))
            results.append(result)
            if progress is not None:
                progress(result)
    return results
