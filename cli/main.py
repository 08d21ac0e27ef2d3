"""The ``kubetrain`` command: its parser, and the one place failures become exit statuses.

:data:`VERBS` lists every verb with the module that runs it and its line of help: ``jobs``
(submit, get, list, delete), ``runtimes``, ``describe``, ``logs``, ``wait``, ``tensorboard``, ``local``
(``run --local``: a job's replicas as processes on this machine), ``tools``
(render, manifests, migrate-storage: no cluster or an admin's), ``convert`` and ``dev`` (a
local cluster). A verb's module is imported, and its arguments added
(``arguments(verb, parser)``), only once the command line names that verb: ``kubetrain
--help`` and ``--version`` load neither the client nor the API, and answer at once.

Nothing reaches the user as a traceback. A failure is printed as ``error: ...`` lines on
standard error, perhaps with a ``next:`` line, and the command exits 1; 2 means a wait timed
out (``wait``, ``submit --wait``, ``delete --wait``), so a script can tell the two apart.
A command line that does not parse is an error too (exit 1, not argparse's 2). Ctrl-C ends
any verb with 130, as a shell reports a SIGINT, and without a word (on a terminal, a new
line for the prompt); a closed pipe
(``kubetrain logs JOB | head``) ends it quietly.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from kubetrain.cli import errors

__all__ = ["VERBS", "main", "parser"]

# verb, the module of kubetrain.cli that runs it, what `kubetrain --help` says of it
VERBS = (
    ("submit", "jobs", "create the TrainingJob(s) of a YAML file, or one made from a runtime (--runtime)"),
    ("get", "jobs", "show jobs by name as a table (-o yaml|json|name for the objects); no name lists them"),
    ("list", "jobs", "list the jobs of a namespace (-A: all) as a table, or -o yaml|json|name"),
    ("delete", "jobs", "delete jobs (their pods go with them)"),
    ("runtimes", "runtimes", "list the runtimes a job can be made from, and what a job must give each"),
    (
        "describe",
        "describe",
        "a job's state and why, conditions, replicas, restarts, failures, scheduling and Events",
    ),
    ("logs", "logs", "print a job's logs, every line prefixed by its replica"),
    (
        "wait",
        "wait",
        "wait until a job has a condition (exit 0), cannot get it any more (1), or time runs out (2)",
    ),
    ("tensorboard", "tensorboard", "forward a local port to a job's TensorBoard until Ctrl-C"),
    (
        "run",
        "local",
        "run a job's replicas as processes on this machine (--local), on the operator's own decisions",
    ),
    ("render", "tools", "print the objects the operator would create for a TrainingJob"),
    ("manifests", "tools", "regenerate the CRD and the admission defaults from the API types"),
    (
        "migrate-storage",
        "tools",
        "rewrite every stored TrainingJob as v1beta1, then drop v1alpha1 from storedVersions",
    ),
    ("convert", "convert", "write an old operator's job (TFJob, PyTorchJob, MXJob, ...) as a TrainingJob"),
    ("dev", "dev", "a local cluster (control plane, kwok and real nodes) for trying kubetrain"),
)


class Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is an :class:`errors.UsageError` for ``main`` to print,
    and a verb's arguments are added (``build``) only when the command line reaches it."""

    def __init__(self, *args: Any, build: Callable[[Parser], None] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._build = build

    def built(self) -> Parser:
        if self._build is not None:
            build, self._build = self._build, None
            build(self)
        return self

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        return super(Parser, self.built()).parse_known_args(args, namespace)

    def format_help(self) -> str:
        return super(Parser, self.built()).format_help()

    def error(self, message: str) -> NoReturn:
        raise errors.UsageError(message, self.prog)


class _Version(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        from importlib import metadata

        print(f"kubetrain {metadata.version('kubetrain')}")
        parser.exit()


def _arguments(module: str, verb: str) -> Callable[[Parser], None]:
    def build(p: Parser) -> None:
        importlib.import_module(f"kubetrain.cli.{module}").arguments(verb, p)

    return build


def parser() -> Parser:
    top = Parser(prog="kubetrain", description="Distributed training on Kubernetes.")
    top.add_argument("--version", action=_Version, nargs=0, help="print kubetrain's version and exit")
    sub = top.add_subparsers(required=True, metavar="COMMAND", parser_class=Parser)
    for verb, module, text in VERBS:
        sub.add_parser(verb, help=text, build=_arguments(module, verb))
    return top


def main(argv: Sequence[str] | None = None) -> int:
    # kr8s warns on every connection to a Kubernetes newer than it knows: noise to a person
    # at a terminal, who can do nothing about it (the Python API leaves warnings to its caller).
    warnings.filterwarnings("ignore", category=UserWarning, module=r"kr8s\b")
    try:
        args = parser().parse_args(argv)
        return int(args.run(args))
    except errors.UsageError as e:
        _error(str(e))
        print(f"See '{e.prog} --help'.", file=sys.stderr)
        return 1
    except errors.CommandError as e:
        _error(str(e), e.hint)
        return e.code
    except KeyboardInterrupt:
        # The terminal echoed ^C where the cursor was: the shell's prompt goes on a line of its own,
        # as after a command killed by SIGINT.
        if sys.stderr.isatty():
            print(file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Whoever read our output has gone: say nothing more, not even at interpreter exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as e:  # a file that is not there, a missing binary of the local cluster
        _error(_os_message(e))
        return 1
    except Exception as e:
        code = _client_failure(e)
        if code is None:
            raise
        return code


def _client_failure(e: Exception) -> int | None:
    """The exit status of the client's error ``e`` (printed), or None if it is not one. The
    client is looked at only when it was loaded: ``--help`` never loads it."""
    if "kubetrain.client" not in sys.modules:
        return None
    from kubetrain import client

    if not isinstance(e, client.Error):
        return None
    _error(str(e))
    return 2 if isinstance(e, client.WaitTimeout) else 1


def _error(message: str, hint: str | None = None) -> None:
    for line in message.splitlines() or [""]:
        print(f"error: {line}", file=sys.stderr)
    if hint:
        print(f"next: {hint}", file=sys.stderr)


def _os_message(e: OSError) -> str:
    if e.filename is not None and e.strerror:
        return f"{e.filename}: {e.strerror}"
    return str(e)


if __name__ == "__main__":
    sys.exit(main())
