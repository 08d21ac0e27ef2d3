"""kubetrain's doors for a file, run in this process, and the judgement of what came out.

A door is what a person hands a file to: ``kubetrain convert``, ``render`` and ``submit`` (with
a kubeconfig whose cluster is not there: a file must be refused before one is needed), the
client's ``create_from_file`` (on a connection to no cluster) and the reader they all share,
:func:`kubetrain.api.documents.load` (what a ``describe -f`` would read with). :func:`run` runs
one on a path — or on standard input, ``-`` — and returns its :class:`Outcome`; :func:`judge`
says what is wrong with an outcome for a case, if anything: a traceback, an exit status other
than 0 or 1, silence, an error line that is not ``error: FILE:LINE:COLUMN: ...``, a line past
the end of the file, a refused file accepted, a sample refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import sys
import traceback
from collections.abc import Iterator
from typing import Any, cast

from kubetrain import client
from kubetrain.api import documents
from kubetrain.cli import main
from kubetrain.client import connection, loop, session
from kubetrain_bench.files.generator import Case
from kubetrain_bench.files.kinds import ERROR, OK

DOORS = ("read", "convert", "render", "submit", "client")
STDIN = "<stdin>"
NO_CLUSTER = "cannot reach the cluster at https://127.0.0.1:9: connection refused (no cluster here)"


@dataclasses.dataclass
class Outcome:
    door: str
    code: int  # 0 done, 1 refused; anything else is a crash
    out: int  # characters on standard output
    err: list[str]  # lines on standard error
    crash: str | None = None  # the last line of a traceback that escaped
    seconds: float = 0.0


class _NoCluster:
    """A connection to no cluster: every request is :class:`~kubetrain.client.Unreachable`."""

    namespace = "default"

    async def request(self, *_: Any, **__: Any) -> Any:
        raise client.Unreachable(NO_CLUSTER)

    async def close(self) -> None:
        pass


@contextlib.contextmanager
def client_without_cluster() -> Iterator[client.Client]:
    c = session.Client(cast(connection.Connection, _NoCluster()), loop.Loop())
    try:
        yield c
    finally:
        c.close()


@contextlib.contextmanager
def _stdin(data: bytes | None) -> Iterator[None]:
    if data is None:
        yield
        return
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    try:
        yield
    finally:
        sys.stdin = saved


def run(door: str, path: str, kubeconfig: str, c: client.Client, stdin: bytes | None = None) -> Outcome:
    """``door`` on ``path`` (``-``: ``stdin``), its output captured."""
    out, err = io.StringIO(), io.StringIO()
    code, crash = 1, None
    with _stdin(stdin), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if door == "read":
                code = _read(path)
            elif door == "client":
                code = _client(c, path)
            else:
                argv = [door, path] + (["--kubeconfig", kubeconfig] if door == "submit" else [])
                code = main.main(argv)
        except BaseException as e:
            code = 99
            crash = "".join(traceback.format_exception_only(type(e), e)).strip().splitlines()[-1]
    return Outcome(door, code, len(out.getvalue()), err.getvalue().splitlines(), crash)


def warm(kubeconfig: str) -> None:
    """Every door once on a sample, so that what they import lazily is loaded (a child then
    inherits it, as a ``kubetrain`` process has it once it has started)."""
    from kubetrain_bench.files.generator import bases

    with client_without_cluster() as c:
        for base in (bases()[0], next(b for b in bases() if not b.trainingjob)):
            with _stdin(base.text.encode()):
                for door in DOORS:
                    run(door, "-", kubeconfig, c, stdin=base.text.encode())


def _read(path: str) -> int:
    try:
        docs = documents.load(path)
    except documents.DocumentError as e:
        for line in str(e).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 1
    print(len(docs))
    return 0


def _client(c: client.Client, path: str) -> int:
    try:
        c.create_from_file(path)
    except client.Error as e:
        for line in str(e).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 1
    return 0


# --- judging ----------------------------------------------------------------------------------

AT = re.compile(r"^error: (?P<source>.+?):(?P<line>\d+):(?P<column>\d+): (?P<message>.+)$")
WARNING = re.compile(r"^warning: .+?:\d+:\d+: .+$")
# No cluster: none answers there, or (the unit tier's quicker way) no kubeconfig at all.
UNREACHABLE = re.compile(
    r"^error: (cannot reach the cluster at \S+: .+|kubeconfig \S+: No such file or directory)$"
)
OLD_KIND = "is an old operator's kind, not a TrainingJob"


def judge(case: Case, o: Outcome, source: str) -> str | None:
    """What is wrong with ``o``, the outcome of ``case`` through its door; None if nothing."""
    if o.crash is not None:
        return f"traceback: {o.crash}"
    if o.code not in (0, 1):
        return f"exit status {o.code}"
    if any("Traceback" in line for line in o.err):
        return "a traceback on standard error"
    if o.code == 0:
        return _judge_done(case, o)
    return _judge_refused(case, o, source)


def _judge_done(case: Case, o: Outcome) -> str | None:
    if case.made.expect == ERROR:
        return "accepted what must be refused"
    if o.door in ("submit", "client"):
        return "done without a cluster"
    if o.out == 0:
        return "done, and printed nothing"
    if o.door == "render" and not case.base.trainingjob and case.made.expect == OK:
        return "rendered an old operator's kind"
    bad = [line for line in o.err if not WARNING.match(line)]
    return f"done, but said {bad[0]!r}" if bad else None


def _judge_refused(case: Case, o: Outcome, source: str) -> str | None:
    errors = [line for line in o.err if line.startswith("error: ")]
    if not errors:
        return "exit 1 and no error line"
    others = [line for line in o.err if not line.startswith(("error: ", "next: "))]
    if others:
        return f"a line that is neither error: nor next: {others[0]!r}"
    first = AT.match(errors[0])
    if first is None:
        if UNREACHABLE.match(errors[0]) and o.door in ("submit", "client"):
            return "needed the cluster for a file it must refuse" if case.made.expect == ERROR else None
        return f"an error without FILE:LINE:COLUMN: {errors[0]!r}"
    for line in errors:
        m = AT.match(line)
        if m is None:
            return f"an error without FILE:LINE:COLUMN: {line!r}"
        if m["source"] != source:
            return f"an error naming {m['source']!r}, not the file: {line!r}"
        if int(m["line"]) > _lines(case.data):
            return f"an error past the end of the file ({_lines(case.data)} lines): {line!r}"
    if case.made.expect == OK and not _may_refuse_sample(case, o):
        return f"refused a sample: {errors[0]!r}"
    if case.made.line is not None and int(first["line"]) != case.made.line:
        return f"the error is at line {first['line']}, not {case.made.line}: {errors[0]!r}"
    missing = [n for n in case.made.mentions if f"line {n}" not in first["message"]]
    if missing:
        return f"the error does not name line {missing[0]}: {errors[0]!r}"
    return None


def _may_refuse_sample(case: Case, o: Outcome) -> bool:
    """An old operator's job is not a TrainingJob: render points to convert, submit refuses it."""
    if case.base.trainingjob:
        return False
    return o.door in ("submit", "client") or (o.door == "render" and OLD_KIND in o.err[0])


def _lines(data: bytes) -> int:
    """Lines of the file as text in whichever encoding makes the most of them (at least 1): a
    bound for a line number, however the file is encoded."""
    most = 0
    for encoding in ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"):
        text = data.decode(encoding, errors="replace")
        most = max(most, text.count("\n") + (0 if text.endswith("\n") else 1))
    return max(1, most)
